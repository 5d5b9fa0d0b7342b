// Session glue: converts feeds (numpy arrays, already made contiguous and native-endian
// by the Python layer) to borrowed tensors, runs without the GIL, and returns outputs as
// numpy arrays that own the result buffers (no copy).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "errors.h"
#include "runtime/session.h"

namespace nb = nanobind;

namespace nxrt::py {
namespace {

using Array = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

// Type as (kind, elem dtype code, dims): dims entries are int, str (symbolic) or None.
nb::tuple describe_type(const ir::TypeInfo& type) {
  nb::list dims;
  for (const ir::Dim& d : type.dims) {
    if (d.value >= 0) dims.append(nb::int_(d.value));
    else if (!d.param.empty()) dims.append(nb::str(d.param.c_str()));
    else dims.append(nb::none());
  }
  const char* kind = "tensor";
  switch (type.kind) {
    case ir::TypeInfo::Kind::kSequence: kind = "seq"; break;
    case ir::TypeInfo::Kind::kOptional: kind = "optional"; break;
    case ir::TypeInfo::Kind::kMap: kind = "map"; break;
    case ir::TypeInfo::Kind::kSparseTensor: kind = "sparse_tensor"; break;
    default: break;
  }
  return nb::make_tuple(kind, int(type.elem_type), type.has_shape ? nb::object(dims) : nb::none());
}

nb::list describe_values(const std::vector<ir::ValueInfo>& values) {
  nb::list out;
  for (const auto& v : values) out.append(nb::make_tuple(v.name, describe_type(v.type)));
  return out;
}

nb::dlpack::dtype dlpack_dtype(DataType type) {
  using nb::dlpack::dtype_code;
  auto make = [](dtype_code code, int bits) {
    return nb::dlpack::dtype{uint8_t(code), uint8_t(bits), 1};
  };
  switch (type) {
    case DataType::kFloat: return make(dtype_code::Float, 32);
    case DataType::kDouble: return make(dtype_code::Float, 64);
    case DataType::kFloat16: return make(dtype_code::Float, 16);
    case DataType::kBFloat16: return make(dtype_code::UInt, 16);  // viewed as bfloat16 in Python
    case DataType::kInt8: return make(dtype_code::Int, 8);
    case DataType::kInt16: return make(dtype_code::Int, 16);
    case DataType::kInt32: return make(dtype_code::Int, 32);
    case DataType::kInt64: return make(dtype_code::Int, 64);
    case DataType::kUint8: return make(dtype_code::UInt, 8);
    case DataType::kUint16: return make(dtype_code::UInt, 16);
    case DataType::kUint32: return make(dtype_code::UInt, 32);
    case DataType::kUint64: return make(dtype_code::UInt, 64);
    case DataType::kBool: return make(dtype_code::Bool, 8);
    default: return make(dtype_code::UInt, 8);
  }
}

// One output: (dtype code, numpy array) or, for strings, (code, (list of str, shape)).
nb::object to_python(Tensor&& tensor) {
  const int code = int(tensor.dtype());
  if (tensor.dtype() == DataType::kString) {
    nb::list items;
    const auto* s = tensor.data<std::string>();
    for (int64_t i = 0; i < tensor.numel(); ++i) items.append(nb::bytes(s[i].data(), s[i].size()));
    nb::list shape;
    for (int64_t d : tensor.shape()) shape.append(d);
    return nb::make_tuple(code, nb::make_tuple(items, shape));
  }
  auto* owned = new Tensor(std::move(tensor));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  std::vector<size_t> shape(owned->shape().begin(), owned->shape().end());
  nb::ndarray<nb::numpy> array(owned->raw(), shape.size(), shape.data(), owner, nullptr,
                               dlpack_dtype(owned->dtype()));
  return nb::make_tuple(code, array.cast());
}

// A flag another thread can set to stop a run (RunOptions.terminate).
struct TerminateFlag {
  std::shared_ptr<std::atomic<bool>> flag = std::make_shared<std::atomic<bool>>(false);
};

class PySession {
 public:
  explicit PySession(std::unique_ptr<Session> session) : session_(std::move(session)) {}

  static SessionConfig config_from(const nb::dict& options) {
    SessionConfig config;
    if (options.contains("intra_op_num_threads"))
      config.intra_op_num_threads = nb::cast<int>(options["intra_op_num_threads"]);
    if (options.contains("inter_op_num_threads"))
      config.inter_op_num_threads = nb::cast<int>(options["inter_op_num_threads"]);
    if (options.contains("graph_optimization_level"))
      config.graph_optimization_level = nb::cast<int>(options["graph_optimization_level"]);
    if (options.contains("config_entries"))
      config.config_entries = nb::cast<std::map<std::string, std::string>>(options["config_entries"]);
    return config;
  }

  static PySession* from_path(const std::string& path, const nb::dict& options) {
    const SessionConfig config = config_from(options);
    Expected<std::unique_ptr<Session>> session = Status();
    {
      nb::gil_scoped_release release;
      session = Session::create_from_file(path, config);
    }
    return new PySession(unwrap(std::move(session)));
  }

  static PySession* from_bytes(nb::bytes data, const nb::dict& options) {
    const SessionConfig config = config_from(options);
    return new PySession(
        unwrap(Session::create_from_bytes(data.c_str(), data.size(), config)));
  }

  nb::list inputs() const { return describe_values(session_->inputs()); }
  nb::list outputs() const { return describe_values(session_->outputs()); }
  nb::list overridable_initializers() const {
    return describe_values(session_->overridable_initializers());
  }

  nb::dict metadata() const {
    const ir::Model& m = session_->model();
    nb::dict out;
    out["producer_name"] = m.producer_name;
    out["graph_name"] = m.graph.name;
    out["domain"] = m.domain;
    out["description"] = m.doc_string;
    out["version"] = m.model_version;
    nb::dict custom;
    for (const auto& [k, v] : m.metadata_props) custom[nb::str(k.c_str())] = v;
    out["custom_metadata_map"] = custom;
    nb::dict opsets;
    for (const auto& [k, v] : m.opset_imports) opsets[nb::str(k.c_str())] = v;
    out["opset_imports"] = opsets;
    out["ir_version"] = m.ir_version;
    return out;
  }

  // feeds: list of (name, dtype code, array or None, strings or None, shape list).
  nb::list run(const std::vector<std::string>& output_names, nb::list feeds,
               const TerminateFlag* terminate) {
    std::vector<std::string> names;
    std::vector<Tensor> values;
    std::vector<std::shared_ptr<std::string[]>> string_storage;
    names.reserve(feeds.size());
    values.reserve(feeds.size());
    for (nb::handle feed : feeds) {
      nb::tuple t = nb::cast<nb::tuple>(feed);
      names.push_back(nb::cast<std::string>(t[0]));
      const auto dtype = DataType(nb::cast<int>(t[1]));
      if (dtype == DataType::kString) {
        auto strings = nb::cast<std::vector<std::string>>(t[3]);
        auto dims = nb::cast<std::vector<int64_t>>(t[4]);
        std::shared_ptr<std::string[]> storage(new std::string[strings.size() + 1]);
        for (size_t i = 0; i < strings.size(); ++i) storage[i] = std::move(strings[i]);
        values.emplace_back(dtype, Shape(dims), storage.get());
        string_storage.push_back(std::move(storage));
        continue;
      }
      Array array = nb::cast<Array>(t[2]);
      Shape shape;
      for (size_t d = 0; d < array.ndim(); ++d) shape.push_back(int64_t(array.shape(d)));
      values.emplace_back(dtype, std::move(shape), const_cast<void*>(array.data()));
    }
    std::vector<Tensor> outputs;
    Status status;
    RunFlags flags;
    std::shared_ptr<std::atomic<bool>> keep_flag;
    if (terminate) {
      keep_flag = terminate->flag;
      flags.terminate = keep_flag.get();
    }
    {
      nb::gil_scoped_release release;
      status = session_->run(names, values, output_names, outputs, flags);
    }
    if (!status.ok()) throw_status(status);
    nb::list result;
    for (Tensor& t : outputs) result.append(to_python(std::move(t)));
    return result;
  }

 private:
  std::unique_ptr<Session> session_;
};

}  // namespace

void bind_session(nb::module_& m) {
  nb::class_<TerminateFlag>(m, "TerminateFlag")
      .def(nb::init<>())
      .def("set", [](TerminateFlag& f, bool v) { f.flag->store(v); })
      .def("get", [](TerminateFlag& f) { return f.flag->load(); });

  nb::class_<PySession>(m, "Session")
      .def_static("from_path", &PySession::from_path, nb::arg("path"), nb::arg("options"))
      .def_static("from_bytes", &PySession::from_bytes, nb::arg("data"), nb::arg("options"))
      .def("inputs", &PySession::inputs)
      .def("outputs", &PySession::outputs)
      .def("overridable_initializers", &PySession::overridable_initializers)
      .def("metadata", &PySession::metadata)
      .def("run", &PySession::run, nb::arg("output_names"), nb::arg("feeds"),
           nb::arg("terminate").none() = nb::none());
}

}  // namespace nxrt::py
