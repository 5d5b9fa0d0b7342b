// _nxrt.infer_shapes: the shape inference of src/ops, for tests and tools.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <map>
#include <string>

#include "errors.h"
#include "onnx/decoder.h"
#include "ops/shape_inference.h"
#include "optimizer/inline_functions.h"

namespace nb = nanobind;

namespace nxrt::py {
namespace {

// A Python shape (list of int, str or None) as a SymShape; None is an unknown rank.
ops::SymShape to_sym_shape(const nb::handle& shape) {
  if (shape.is_none()) return ops::SymShape::unknown();
  ops::SymShape s = ops::SymShape::of_rank(0);
  for (nb::handle d : shape) {
    if (d.is_none())
      s.dims.emplace_back();
    else if (nb::isinstance<nb::str>(d))
      s.dims.push_back(ops::SymDim::named(nb::cast<std::string>(d)));
    else
      s.dims.push_back(ops::SymDim::of(nb::cast<int64_t>(d)));
  }
  return s;
}

nb::list to_python(const std::vector<ops::SymDim>& values) {
  nb::list dims;
  for (const ops::SymDim& d : values) {
    if (d.known())
      dims.append(d.value);
    else if (!d.symbol.empty())
      dims.append(nb::str(d.symbol.c_str()));
    else
      dims.append(nb::none());
  }
  return dims;
}

nb::object to_python(const ops::SymShape& s) {
  if (!s.rank_known) return nb::none();
  return to_python(s.dims);
}

}  // namespace

void bind_shapes(nb::module_& m) {
  m.def(
      "infer_shapes",
      [](const std::string& path, const nb::dict& input_shapes, bool use_declared) {
        ops::ShapeInferenceOptions options;
        options.use_value_info = use_declared;
        for (auto [name, shape] : input_shapes)
          options.input_shapes[nb::cast<std::string>(name)] = to_sym_shape(shape);
        ops::ShapeInferenceResult result;
        Status status;
        {
          nb::gil_scoped_release release;
          Expected<std::shared_ptr<ir::Model>> model = onnx::load_model_file(path);
          status = model.ok() ? optimizer::inline_functions(**model) : model.status();
          if (status.ok()) options.inputs_override_initializers = (*model)->ir_version >= 4;
          if (status.ok())
            result = ops::infer_shapes((*model)->graph, (*model)->opset_imports, options);
        }
        if (!status.ok()) throw_status(status);
        nb::dict shapes, elements;
        for (const auto& [name, facts] : result.values) {
          shapes[nb::str(name.c_str())] = to_python(facts.shape);
          if (facts.elements) elements[nb::str(name.c_str())] = to_python(*facts.elements);
        }
        nb::list without_rule;
        for (const std::string& op : result.ops_without_rule) without_rule.append(op);
        nb::list conflicts;
        for (const std::string& c : result.conflicts) conflicts.append(c);
        return nb::make_tuple(shapes, conflicts, without_rule, elements);
      },
      nb::arg("path"), nb::arg("input_shapes") = nb::dict(), nb::arg("use_declared") = true,
      "Shape inference on a model file: ({value: [dim, ...] or None}, [conflict], "
      "[op without a rule], {value: [element, ...]} for the small integer tensors whose "
      "elements it tracks); a dim or element is an int, a symbol (str) or None. "
      "use_declared=False ignores the shapes the model declares for intermediate values and "
      "outputs (the rules alone).");
}

}  // namespace nxrt::py
