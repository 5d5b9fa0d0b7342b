// Writes small ONNX models with protozero for unit tests (no Python, no onnx package).
#pragma once

#include <cmath>
#include <protozero/pbf_writer.hpp>
#include <string>
#include <vector>

namespace nxrt::testing {

struct NodeSpec {
  std::string op;
  std::vector<std::string> inputs = {};
  std::vector<std::string> outputs = {};
  std::string name = {};
  std::vector<std::pair<std::string, int64_t>> int_attrs = {};
  std::vector<std::pair<std::string, std::vector<int64_t>>> ints_attrs = {};
};

// Values sin(i * scale) + offset: smooth, signed, and unlike from element to element.
inline std::vector<float> ramp(size_t n, float scale, float offset) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(float(i) * scale) + offset;
  return v;
}

struct InitSpec {
  std::string name;
  std::vector<int64_t> dims;
  std::vector<float> values;
};

// A float-typed model: graph inputs and outputs are float tensors of unknown shape, or
// inputs of the fixed shapes `input_dims` gives (aligned with `inputs`) when not empty.
inline std::string build_model(const std::vector<NodeSpec>& nodes,
                               const std::vector<std::string>& inputs,
                               const std::vector<std::string>& outputs,
                               const std::vector<InitSpec>& inits = {}, int64_t opset = 17,
                               int64_t ir_version = 8,
                               const std::vector<std::vector<int64_t>>& input_dims = {}) {
  std::string model;
  protozero::pbf_writer m(model);
  m.add_int64(1, ir_version);
  {
    std::string graph;
    protozero::pbf_writer g(graph);
    for (const NodeSpec& n : nodes) {
      std::string node;
      protozero::pbf_writer w(node);
      for (const auto& i : n.inputs) w.add_string(1, i);
      for (const auto& o : n.outputs) w.add_string(2, o);
      w.add_string(3, n.name);
      w.add_string(4, n.op);
      for (const auto& [key, value] : n.int_attrs) {
        std::string attr;
        protozero::pbf_writer a(attr);
        a.add_string(1, key);
        a.add_int64(3, value);
        a.add_int32(20, 2);  // INT
        w.add_message(5, attr);
      }
      for (const auto& [key, values] : n.ints_attrs) {
        std::string attr;
        protozero::pbf_writer a(attr);
        a.add_string(1, key);
        for (int64_t v : values) a.add_int64(8, v);
        a.add_int32(20, 7);  // INTS
        w.add_message(5, attr);
      }
      g.add_message(1, node);
    }
    g.add_string(2, "test_graph");
    for (const InitSpec& init : inits) {
      std::string tensor;
      protozero::pbf_writer t(tensor);
      t.add_packed_int64(1, init.dims.begin(), init.dims.end());
      t.add_int32(2, 1);  // FLOAT
      t.add_packed_float(4, init.values.begin(), init.values.end());
      t.add_string(8, init.name);
      g.add_message(5, tensor);
    }
    auto value_info = [](const std::string& name, const std::vector<int64_t>* dims = nullptr) {
      std::string vi;
      protozero::pbf_writer v(vi);
      v.add_string(1, name);
      std::string type, tensor_type;
      protozero::pbf_writer tt(tensor_type);
      tt.add_int32(1, 1);
      if (dims) {
        std::string shape;
        protozero::pbf_writer sh(shape);
        for (int64_t d : *dims) {
          std::string dim;
          protozero::pbf_writer dw(dim);
          dw.add_int64(1, d);
          sh.add_message(1, dim);
        }
        tt.add_message(2, shape);
      }
      protozero::pbf_writer tp(type);
      tp.add_message(1, tensor_type);
      v.add_message(2, type);
      return vi;
    };
    for (size_t i = 0; i < inputs.size(); ++i)
      g.add_message(11, value_info(inputs[i], i < input_dims.size() ? &input_dims[i] : nullptr));
    for (const auto& o : outputs) g.add_message(12, value_info(o));
    m.add_message(7, graph);
  }
  std::string opset_msg;
  protozero::pbf_writer os(opset_msg);
  os.add_string(1, "");
  os.add_int64(2, opset);
  m.add_message(8, opset_msg);
  return model;
}

}  // namespace nxrt::testing
