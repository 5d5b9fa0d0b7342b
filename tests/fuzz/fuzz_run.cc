// Target (b): one run of a fixed seed model (tests/fuzz/corpus/models, chosen by the first
// byte) with fuzzed feeds. The sessions live across iterations, so a run that leaves bad
// state behind shows up in later ones.
//
// Input layout, per graph input in session order after the model byte:
//   flags byte: bit 0 set: use the declared dims (a byte each for symbolic ones);
//               bits 1-3: rank otherwise (at most 6), one byte per dim;
//               bit 4 on an optional input: feed nothing; bits 5-6: sequence length
//   element data: dtype-sized chunks (strings: a length byte, then the bytes); data that
//   runs out reads as zeros.
// tests/fuzz/make_corpus.py writes the ONNX node tests' own inputs in this layout.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_common.h"

namespace {

using namespace nxrt;

struct Reader {
  const uint8_t* p;
  size_t n;
  uint8_t byte() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  void bytes(void* out, size_t count) {
    const size_t take = std::min(count, n);
    std::memcpy(out, p, take);
    std::memset(static_cast<char*>(out) + take, 0, count - take);
    p += take;
    n -= take;
  }
};

std::vector<std::unique_ptr<Session>>& sessions() {
  static std::vector<std::unique_ptr<Session>> all = [] {
    std::vector<std::unique_ptr<Session>> out;
    const char* env = std::getenv("NXRT_FUZZ_MODELS");
    const std::filesystem::path dir = env ? env : NXRT_FUZZ_MODEL_DIR;
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
      if (entry.path().extension() == ".onnx") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      auto s = Session::create_from_file(f.string(), fuzz::fuzz_config());
      if (!s) {
        fprintf(stderr, "fuzz_run: seed model %s fails to load: %s\n", f.c_str(),
                s.status().message().c_str());
        abort();
      }
      out.push_back(std::move(s).value());
    }
    if (out.empty()) {
      fprintf(stderr, "fuzz_run: no seed models in %s\n", dir.c_str());
      abort();
    }
    return out;
  }();
  return all;
}

// Reads one tensor's dims; false when over the harness's size budget.
bool read_dims(Reader& in, uint8_t flags, const ir::TypeInfo& type, Shape& shape) {
  shape = Shape();
  if ((flags & 1) && type.has_shape) {
    for (const ir::Dim& d : type.dims) shape.push_back(d.value >= 0 ? d.value : in.byte());
  } else {
    const int rank = std::min((flags >> 1) & 7, 6);
    for (int i = 0; i < rank; ++i) shape.push_back(in.byte());
  }
  const int64_t numel = checked_numel(shape.span());
  return numel >= 0 && numel <= 4096;
}

bool read_tensor(Reader& in, DataType dtype, const Shape& shape, Tensor& out) {
  auto t = Tensor::allocate(dtype, shape);
  if (!t) return false;
  const int64_t n = t->numel();
  if (dtype == DataType::kString) {
    auto* s = t->data<std::string>();
    for (int64_t i = 0; i < n; ++i) {
      s[i].resize(in.byte() % 16);
      in.bytes(s[i].data(), s[i].size());
    }
  } else if (dtype == DataType::kBool) {
    auto* b = t->data<bool>();
    for (int64_t i = 0; i < n; ++i) b[i] = in.byte() & 1;  // numpy bools are 0 or 1
  } else {
    in.bytes(t->raw(), t->nbytes());
  }
  out = std::move(t).value();
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto& all = sessions();
  Reader in{data, size};
  const Session& session = *all[in.byte() % all.size()];
  std::vector<std::string> names;
  std::vector<Value> values;
  // The product of the feeds' sizes bounds what broadcasting and matrix products can
  // produce, keeping legitimate results far below libFuzzer's memory limit.
  double product = 1;
  for (const ir::ValueInfo& info : session.inputs()) {
    const uint8_t flags = in.byte();
    const ir::TypeInfo* type = &info.type;
    if (type->kind == ir::TypeInfo::Kind::kOptional && type->inner) {
      if (flags & 16) continue;
      type = type->inner.get();
    }
    Value value;
    if (type->kind == ir::TypeInfo::Kind::kSequence && type->inner) {
      const ir::TypeInfo& elem = *type->inner;
      Shape shape;
      if (!read_dims(in, flags, elem, shape)) return 0;
      auto seq = std::make_shared<TensorSequence>();
      for (int i = 0; i < ((flags >> 5) & 3); ++i) {
        Tensor t;
        if (!read_tensor(in, elem.elem_type, shape, t)) return 0;
        product *= std::max<int64_t>(t.numel(), 1);
        seq->push_back(std::move(t));
      }
      value = Value(std::shared_ptr<const TensorSequence>(std::move(seq)));
    } else {
      Shape shape;
      if (!read_dims(in, flags, *type, shape)) return 0;
      Tensor t;
      if (!read_tensor(in, type->elem_type, shape, t)) return 0;
      product *= std::max<int64_t>(t.numel(), 1);
      value = Value(std::move(t));
    }
    if (product > double(1 << 24)) return 0;
    names.push_back(info.name);
    values.push_back(std::move(value));
  }
  std::vector<Value> outputs;
  Status status = session.run(names, values, {}, outputs);
  (void)status;
  return 0;
}
