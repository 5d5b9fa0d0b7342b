// ONNX protobuf writer with protozero (the decoder's library): field numbers from
// onnx.proto, one function per message.
#include "onnx/encoder.h"

#include <cstdio>
#include <limits>
#include <memory>
#include <protozero/pbf_writer.hpp>
#include <unordered_set>

namespace nxrt::onnx {
namespace {

namespace pz = protozero;

// Protobuf's hard limit on one message; onnxruntime and onnx refuse larger files.
constexpr size_t kMaxProtobufBytes = size_t(std::numeric_limits<int32_t>::max());

struct EncodeError {
  std::string what;
};

void write_graph(pz::pbf_writer& out, const ir::Graph& graph, bool constant_initializers = false);

// ONNX packs the sub-byte types, first element in the lowest bits; nxrt holds one per byte.
std::string packed_sub_byte(const Tensor& t) {
  const int bits = dtype_packed_bits(t.dtype());
  const int per_byte = 8 / bits;
  const int mask = (1 << bits) - 1;
  const auto* in = t.data<uint8_t>();
  std::string out(size_t((t.numel() + per_byte - 1) / per_byte), '\0');
  for (int64_t i = 0; i < t.numel(); ++i)
    out[size_t(i / per_byte)] = char(uint8_t(out[size_t(i / per_byte)]) |
                                     uint8_t((in[i] & mask) << ((i % per_byte) * bits)));
  return out;
}

void write_tensor(pz::pbf_writer& out, const Tensor& t, const std::string& name) {
  const Shape& shape = t.shape();
  std::vector<int64_t> dims(shape.begin(), shape.end());
  out.add_packed_int64(1, dims.begin(), dims.end());
  out.add_int32(2, int32_t(t.dtype()));
  if (!name.empty()) out.add_string(8, name);
  if (t.numel() == 0) return;
  if (t.raw() == nullptr)
    throw EncodeError{"tensor '" + name + "' has no data (its weights were released)"};
  if (t.dtype() == DataType::kString) {
    const auto* s = t.data<std::string>();
    for (int64_t i = 0; i < t.numel(); ++i) out.add_bytes(6, s[i]);
  } else if (dtype_packed_bits(t.dtype()) != 0) {
    out.add_bytes(9, packed_sub_byte(t));
  } else {
    if (t.nbytes() > kMaxProtobufBytes)
      throw EncodeError{"tensor '" + name + "' takes " + std::to_string(t.nbytes()) +
                        " bytes, over protobuf's 2 GiB (external data is not written)"};
    out.add_bytes(9, static_cast<const char*>(t.raw()), t.nbytes());
  }
}

void write_type(pz::pbf_writer& out, const ir::TypeInfo& type) {
  using Kind = ir::TypeInfo::Kind;
  auto write_shaped = [&](pz::pbf_tag_type tag) {
    pz::pbf_writer m(out, tag);
    m.add_int32(1, int32_t(type.elem_type));
    if (!type.has_shape) return;
    // protozero drops an empty submessage, but an empty shape (a scalar) and an empty
    // dim (unknown size) carry meaning: those are written as zero-length messages.
    if (type.dims.empty()) {
      m.add_message(2, "", 0);
      return;
    }
    pz::pbf_writer shape(m, 2);
    for (const ir::Dim& d : type.dims) {
      if (d.value < 0 && d.param.empty()) {
        shape.add_message(1, "", 0);
        continue;
      }
      pz::pbf_writer dim(shape, 1);
      if (d.value >= 0)
        dim.add_int64(1, d.value);
      else
        dim.add_string(2, d.param);
    }
  };
  auto write_inner = [&](pz::pbf_tag_type tag) {
    pz::pbf_writer m(out, tag);
    if (type.inner) {
      pz::pbf_writer elem(m, 1);
      write_type(elem, *type.inner);
    }
  };
  switch (type.kind) {
    case Kind::kTensor:
      write_shaped(1);
      break;
    case Kind::kSparseTensor:
      write_shaped(8);
      break;
    case Kind::kSequence:
      write_inner(4);
      break;
    case Kind::kOptional:
      write_inner(9);
      break;
    case Kind::kMap: {
      pz::pbf_writer m(out, 5);
      m.add_int32(1, int32_t(type.elem_type));
      if (type.inner) {
        pz::pbf_writer value(m, 2);
        write_type(value, *type.inner);
      }
      break;
    }
    case Kind::kUnknown:
      break;
  }
}

void write_value_info(pz::pbf_writer& out, pz::pbf_tag_type tag, const ir::ValueInfo& info) {
  pz::pbf_writer m(out, tag);
  m.add_string(1, info.name);
  if (info.type.kind != ir::TypeInfo::Kind::kUnknown) {
    pz::pbf_writer type(m, 2);
    write_type(type, info.type);
  }
}

void write_attribute(pz::pbf_writer& out, pz::pbf_tag_type tag, const ir::Attribute& a) {
  using T = ir::Attribute::Type;
  pz::pbf_writer m(out, tag);
  m.add_string(1, a.name);
  m.add_int32(20, int32_t(a.type));
  if (!a.ref_attr_name.empty()) {
    m.add_string(21, a.ref_attr_name);
    return;
  }
  switch (a.type) {
    case T::kFloat:
      m.add_float(2, a.f);
      break;
    case T::kInt:
      m.add_int64(3, a.i);
      break;
    case T::kString:
      m.add_bytes(4, a.s);
      break;
    case T::kTensor: {
      pz::pbf_writer t(m, 5);
      write_tensor(t, a.t, "");
      break;
    }
    case T::kGraph: {
      if (!a.g) throw EncodeError{"attribute '" + a.name + "' has no graph"};
      pz::pbf_writer g(m, 6);
      write_graph(g, *a.g);
      break;
    }
    case T::kFloats:
      m.add_packed_float(7, a.floats.begin(), a.floats.end());
      break;
    case T::kInts:
      m.add_packed_int64(8, a.ints.begin(), a.ints.end());
      break;
    case T::kStrings:
      for (const std::string& s : a.strings) m.add_bytes(9, s);
      break;
    case T::kTensors:
      for (const Tensor& tensor : a.tensors) {
        pz::pbf_writer t(m, 10);
        write_tensor(t, tensor, "");
      }
      break;
    case T::kGraphs:
      for (const auto& graph : a.graphs) {
        pz::pbf_writer g(m, 11);
        write_graph(g, *graph);
      }
      break;
    case T::kTypeProto: {
      pz::pbf_writer tp(m, 14);
      write_type(tp, a.tp);
      break;
    }
    default:
      throw EncodeError{"attribute '" + a.name + "' has type " + std::to_string(int(a.type)) +
                        ", which nxrt does not write"};
  }
}

void write_node(pz::pbf_writer& out, pz::pbf_tag_type tag, const ir::Node& node) {
  pz::pbf_writer m(out, tag);
  for (const std::string& in : node.inputs) m.add_string(1, in);
  for (const std::string& o : node.outputs) m.add_string(2, o);
  if (!node.name.empty()) m.add_string(3, node.name);
  m.add_string(4, node.op_type);
  for (const ir::Attribute& a : node.attributes) write_attribute(m, 5, a);
  if (!node.domain.empty()) m.add_string(7, node.domain);
}

// Values the graph reads: node inputs, its subgraphs' outer reads, its inputs and outputs.
std::unordered_set<std::string> values_read(const ir::Graph& graph) {
  std::unordered_set<std::string> names;
  for (const ir::Node& node : graph.nodes) {
    names.insert(node.inputs.begin(), node.inputs.end());
    for (const ir::Graph* g : ir::subgraphs_of(node))
      for (std::string& outer : ir::outer_names(*g)) names.insert(std::move(outer));
  }
  for (const ir::ValueInfo& v : graph.inputs) names.insert(v.name);
  for (const ir::ValueInfo& v : graph.outputs) names.insert(v.name);
  return names;
}

// `constant_initializers`: leave initializers out of the inputs (a model of IR version 3
// lists every initializer as an input yet cannot feed them; it is written as version 4,
// where the passes' new initializers need not be inputs, with the same meaning).
void write_graph(pz::pbf_writer& out, const ir::Graph& graph, bool constant_initializers) {
  for (const ir::Node& node : graph.nodes) write_node(out, 1, node);
  out.add_string(2, graph.name);
  // Initializers the passes left unread (weights folded into others) are not written.
  const std::unordered_set<std::string> read = values_read(graph);
  for (const ir::Initializer& init : graph.initializers) {
    if (!read.count(init.name)) continue;
    pz::pbf_writer t(out, 5);
    write_tensor(t, init.tensor, init.name);
  }
  std::unordered_set<std::string> initializers;
  if (constant_initializers)
    for (const ir::Initializer& init : graph.initializers) initializers.insert(init.name);
  for (const ir::ValueInfo& v : graph.inputs)
    if (!initializers.count(v.name)) write_value_info(out, 11, v);
  for (const ir::ValueInfo& v : graph.outputs) write_value_info(out, 12, v);
  for (const ir::ValueInfo& v : graph.value_info) write_value_info(out, 13, v);
}

void write_opset(pz::pbf_writer& out, pz::pbf_tag_type tag, const std::string& domain,
                 int64_t version) {
  pz::pbf_writer m(out, tag);
  m.add_string(1, domain);
  m.add_int64(2, version);
}

void write_function(pz::pbf_writer& out, const ir::Function& f) {
  pz::pbf_writer m(out, 25);
  m.add_string(1, f.name);
  for (const std::string& in : f.inputs) m.add_string(4, in);
  for (const std::string& o : f.outputs) m.add_string(5, o);
  for (const std::string& a : f.attribute_names) m.add_string(6, a);
  for (const ir::Node& node : f.nodes) write_node(m, 7, node);
  for (const auto& [domain, version] : f.opset_imports) write_opset(m, 9, domain, version);
  m.add_string(10, f.domain);
  for (const ir::Attribute& a : f.attribute_defaults) write_attribute(m, 11, a);
}

}  // namespace

Expected<std::string> encode_model(const ir::Model& model) {
  std::string bytes;
  try {
    pz::pbf_writer m(bytes);
    constexpr int64_t kInitializersNeedNotBeInputs = 4;  // IR version
    const bool lift = model.ir_version < kInitializersNeedNotBeInputs;
    m.add_int64(1, lift ? kInitializersNeedNotBeInputs : model.ir_version);
    if (!model.producer_name.empty()) m.add_string(2, model.producer_name);
    if (!model.producer_version.empty()) m.add_string(3, model.producer_version);
    if (!model.domain.empty()) m.add_string(4, model.domain);
    if (model.model_version != 0) m.add_int64(5, model.model_version);
    if (!model.doc_string.empty()) m.add_string(6, model.doc_string);
    {
      pz::pbf_writer g(m, 7);
      write_graph(g, model.graph, lift);
    }
    for (const auto& [domain, version] : model.opset_imports) write_opset(m, 8, domain, version);
    for (const auto& [key, value] : model.metadata_props) {
      pz::pbf_writer kv(m, 14);
      kv.add_string(1, key);
      kv.add_string(2, value);
    }
    for (const ir::Function& f : model.functions) write_function(m, f);
  } catch (const EncodeError& e) {
    return make_error(StatusCode::kNotImplemented, "cannot write the model: ", e.what);
  }
  if (bytes.size() > kMaxProtobufBytes)
    return make_error(StatusCode::kNotImplemented, "cannot write the model: it takes ",
                      bytes.size(), " bytes, over protobuf's 2 GiB (external data is not written)");
  return bytes;
}

// Written beside `path` and renamed over it: `path` may be the model being loaded, whose
// mapped pages the session still reads (truncating it in place would fault them), and a
// failed write leaves no half file.
Status write_model_file(const ir::Model& model, const std::string& path) {
  NXRT_ASSIGN_OR_RETURN(std::string bytes, encode_model(model));
  const std::string temp = path + ".nxrt-partial";
  {
    std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(temp.c_str(), "wb"), &std::fclose);
    if (!file) return make_error(StatusCode::kFail, "cannot open '", path, "' to write the model");
    const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), file.get()) == bytes.size() &&
                    std::fflush(file.get()) == 0;
    if (!ok) {
      file.reset();
      std::remove(temp.c_str());
      return make_error(StatusCode::kFail, "writing the model to '", path, "' failed");
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::remove(temp.c_str());
    return make_error(StatusCode::kFail, "cannot replace '", path, "' with the written model");
  }
  return Status();
}

}  // namespace nxrt::onnx
