// Session glue: converts feeds (numpy arrays, already made contiguous and native-endian
// by the Python layer) to borrowed tensors, runs without the GIL, and returns outputs as
// numpy arrays that own the result buffers (no copy).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/set.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "errors.h"
#include "numpy_io.h"
#include "runtime/session.h"
#include "session_config.h"
#include "value.h"

namespace nb = nanobind;

namespace nxrt::py {
namespace {

using Array = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

// onnxruntime's spelling of a type: tensor(float), seq(tensor(int64)), optional(...).
std::string type_string(const ir::TypeInfo& type) {
  const std::string inner = type.inner ? type_string(*type.inner) : "unknown";
  switch (type.kind) {
    case ir::TypeInfo::Kind::kTensor:
      return tensor_type_name(type.elem_type);
    case ir::TypeInfo::Kind::kSequence:
      return "seq(" + inner + ")";
    case ir::TypeInfo::Kind::kOptional:
      return "optional(" + inner + ")";
    case ir::TypeInfo::Kind::kMap:
      return "map(" + std::string(dtype_name(type.elem_type)) + "," + inner + ")";
    case ir::TypeInfo::Kind::kSparseTensor:
      return "sparse_tensor(" + std::string(dtype_name(type.elem_type)) + ")";
    default:
      return "unknown";
  }
}

// (type string, dims): dims entries are int, str (symbolic) or None; None when unshaped.
nb::tuple describe_type(const ir::TypeInfo& type) {
  const ir::TypeInfo& shaped =
      type.kind == ir::TypeInfo::Kind::kOptional && type.inner ? *type.inner : type;
  nb::list dims;
  for (const ir::Dim& d : shaped.dims) {
    if (d.value >= 0)
      dims.append(nb::int_(d.value));
    else if (!d.param.empty())
      dims.append(nb::str(d.param.c_str()));
    else
      dims.append(nb::none());
  }
  return nb::make_tuple(type_string(type),
                        shaped.has_shape ? nb::object(dims) : nb::object(nb::list()));
}

nb::list describe_values(const std::vector<ir::ValueInfo>& values) {
  nb::list out;
  for (const auto& v : values) out.append(nb::make_tuple(v.name, describe_type(v.type)));
  return out;
}

// One output tensor: (dtype code, numpy array) or, for strings, (code, (list of bytes, shape)).
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
  return nb::make_tuple(code, numpy_array(std::move(tensor)));
}

// A flag another thread can set to stop a run (RunOptions.terminate).
struct TerminateFlag {
  std::shared_ptr<std::atomic<bool>> flag = std::make_shared<std::atomic<bool>>(false);
};

// One output tensor as a native value (run_with_values, IoBinding): (dtype code, Value).
nb::object to_native(Tensor&& tensor) {
  const int code = int(tensor.dtype());
  return nb::make_tuple(code, nb::cast(NativeValue{std::move(tensor), false}));
}

// One output value: a tensor as above, a sequence as (-1, [tensors...]), maps as
// (-2, [dicts...]) (ValueKind::kMapSequence), none as (0, None).
nb::object value_to_python(Value&& value, bool as_values) {
  if (value.is_sequence() && value.maps && value.sequence->size() == 2) {
    // The dicts are built here: through numpy arrays and Python they cost 4 us a call.
    const Tensor& keys = (*value.sequence)[0];
    const Tensor& values = (*value.sequence)[1];
    const int64_t classes = keys.numel(), rows = classes > 0 ? values.numel() / classes : 0;
    std::vector<nb::object> key_objects;
    for (int64_t j = 0; j < classes; ++j)
      key_objects.push_back(keys.dtype() == DataType::kString
                                ? nb::object(nb::str(keys.data<std::string>()[j].c_str()))
                                : nb::object(nb::int_(keys.data<int64_t>()[j])));
    nb::list maps;
    for (int64_t i = 0; i < rows; ++i) {
      nb::dict row;
      for (int64_t j = 0; j < classes; ++j)
        row[key_objects[size_t(j)]] = nb::float_(double(values.data<float>()[i * classes + j]));
      maps.append(row);
    }
    return nb::make_tuple(-2, maps);
  }
  if (value.is_sequence()) {
    nb::list items;
    for (const Tensor& t : *value.sequence)
      items.append(as_values ? to_native(Tensor(t)) : to_python(Tensor(t)));
    return nb::make_tuple(-1, items);
  }
  if (value.is_none()) return nb::make_tuple(0, nb::none());
  return as_values ? to_native(std::move(value.tensor)) : to_python(std::move(value.tensor));
}

// Borrowed tensor over a feed (code, array, strings, shape); string data is copied into
// `strings_keep`, which must outlive the run.
Tensor tensor_from_feed(nb::handle code_obj, nb::handle array_obj, nb::handle strings_obj,
                        nb::handle shape_obj,
                        std::vector<std::shared_ptr<std::string[]>>& strings_keep) {
  // A native value (NxrtValue, OrtValue, DLPack import) is read in place.
  if (nb::isinstance<NativeValue>(array_obj)) return nb::cast<const NativeValue&>(array_obj).tensor;
  const auto dtype = DataType(nb::cast<int>(code_obj));
  if (dtype == DataType::kString) {
    auto strings = nb::cast<std::vector<std::string>>(strings_obj);
    auto dims = nb::cast<std::vector<int64_t>>(shape_obj);
    std::shared_ptr<std::string[]> storage(new std::string[strings.size() + 1]);
    for (size_t i = 0; i < strings.size(); ++i) storage[i] = std::move(strings[i]);
    Tensor t(dtype, Shape(dims), storage.get());
    strings_keep.push_back(std::move(storage));
    return t;
  }
  Array array = nb::cast<Array>(array_obj);
  Shape shape;
  for (size_t d = 0; d < array.ndim(); ++d) shape.push_back(int64_t(array.shape(d)));
  return Tensor(dtype, std::move(shape), const_cast<void*>(array.data()));
}

}  // namespace

SessionConfig session_config_from(const nb::dict& options) {
  SessionConfig config;
  if (options.contains("enable_profiling"))
    config.enable_profiling = nb::cast<bool>(options["enable_profiling"]);
  if (options.contains("intra_op_num_threads"))
    config.intra_op_num_threads = nb::cast<int>(options["intra_op_num_threads"]);
  if (options.contains("inter_op_num_threads"))
    config.inter_op_num_threads = nb::cast<int>(options["inter_op_num_threads"]);
  if (options.contains("graph_optimization_level"))
    config.graph_optimization_level = nb::cast<int>(options["graph_optimization_level"]);
  if (options.contains("disabled_optimizers"))
    config.disabled_optimizers = nb::cast<std::set<std::string>>(options["disabled_optimizers"]);
  if (options.contains("optimized_model_filepath"))
    config.optimized_model_filepath = nb::cast<std::string>(options["optimized_model_filepath"]);
  if (options.contains("free_dimension_overrides"))
    config.free_dimension_overrides =
        nb::cast<std::map<std::string, int64_t>>(options["free_dimension_overrides"]);
  if (options.contains("config_entries"))
    config.config_entries = nb::cast<std::map<std::string, std::string>>(options["config_entries"]);
  return config;
}

namespace {

class PySession {
 public:
  explicit PySession(std::unique_ptr<Session> session) : session_(std::move(session)) {}

  static PySession* from_path(const std::string& path, const nb::dict& options) {
    const SessionConfig config = session_config_from(options);
    Expected<std::unique_ptr<Session>> session = Status();
    {
      nb::gil_scoped_release release;
      session = Session::create_from_file(path, config);
    }
    return new PySession(unwrap(std::move(session)));
  }

  static PySession* from_bytes(nb::bytes data, const nb::dict& options) {
    const SessionConfig config = session_config_from(options);
    return new PySession(unwrap(Session::create_from_bytes(data.c_str(), data.size(), config)));
  }

  std::string take_profile() { return session_->take_profile_json(); }
  std::vector<std::string> optimized_model_nxrt_ops() const {
    return session_->optimized_model_nxrt_ops();
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
    // Doc strings are free text that may not be UTF-8; replace what does not decode.
    out["description"] = nb::steal(
        PyUnicode_DecodeUTF8(m.doc_string.data(), Py_ssize_t(m.doc_string.size()), "replace"));
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

  // feeds: list of (name, dtype code, array or None, strings or None, shape list);
  // a sequence is (name, -1, [(code, array, strings, shape), ...], None, None), a map
  // (name, -3, [keys, values] in that form, None, None) and an empty optional
  // (name, 0, None, None, None). The array slot may hold a native Value.
  // `bound` (IoBinding), when given, aligns with the graph outputs: a Value whose memory
  // the output is written into, or None. `as_values` returns native Values, not arrays.
  nb::list run(const std::vector<std::string>& output_names, nb::list feeds,
               const TerminateFlag* terminate, nb::handle bound, bool as_values) {
    std::vector<std::string> names;
    std::vector<Value> values;
    std::vector<std::shared_ptr<std::string[]>> string_storage;
    names.reserve(feeds.size());
    values.reserve(feeds.size());
    for (nb::handle feed : feeds) {
      nb::tuple t = nb::cast<nb::tuple>(feed);
      names.push_back(nb::cast<std::string>(t[0]));
      const int code = nb::cast<int>(t[1]);
      if (code == 0) {
        values.emplace_back();
      } else if (code == -1 || code == -3) {  // a sequence, or a map's keys and values
        auto sequence = std::make_shared<TensorSequence>();
        for (nb::handle item : nb::cast<nb::list>(t[2])) {
          nb::tuple e = nb::cast<nb::tuple>(item);
          sequence->push_back(tensor_from_feed(e[0], e[1], e[2], e[3], string_storage));
        }
        values.emplace_back(std::shared_ptr<const TensorSequence>(std::move(sequence)));
        values.back().maps = code == -3;
      } else {
        values.emplace_back(tensor_from_feed(t[1], t[2], t[3], t[4], string_storage));
      }
    }
    std::vector<Value> outputs;
    Status status;
    RunFlags flags;
    std::vector<Tensor> bound_tensors;
    if (bound.is_valid() && !bound.is_none()) {
      for (nb::handle b : nb::cast<nb::list>(bound))
        bound_tensors.push_back(b.is_none() ? Tensor() : nb::cast<const NativeValue&>(b).tensor);
      if (bound_tensors.size() != session_->outputs().size())
        throw nb::value_error("bound outputs must align with the graph outputs");
      flags.bound_outputs = bound_tensors;
    }
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
    for (Value& v : outputs) result.append(value_to_python(std::move(v), as_values));
    return result;
  }

  // InferenceSession.run's fast path (a 4 us model spent more time in the Python
  // conversions than in the run): `feeds` a dict of numpy arrays of plain dtypes, read in
  // place through the buffer protocol; `output_names` a list of str or None. Returns the
  // outputs: a list of numpy arrays when every output is a plain tensor, else a tuple of
  // (code, value) pairs for _convert.from_result; or None when a feed needs the slow path's
  // conversions (lists, strings, bfloat16, non-contiguous or byte-swapped arrays, native values).
  nb::object run_plain(nb::handle output_names, nb::handle feeds) {
    if (!PyDict_Check(feeds.ptr())) return nb::none();
    const auto count = size_t(PyDict_Size(feeds.ptr()));
    Buffers buffers;
    buffers.views.reserve(count);
    std::vector<std::string> names;
    std::vector<Value> values;
    names.reserve(count);
    values.reserve(count);
    PyObject* key = nullptr;
    PyObject* item = nullptr;
    Py_ssize_t pos = 0;
    while (PyDict_Next(feeds.ptr(), &pos, &key, &item)) {
      Tensor tensor;
      if (!PyUnicode_Check(key) || !is_numpy_array(item) || !array_tensor(item, buffers, tensor))
        return nb::none();
      Py_ssize_t size = 0;
      const char* name = PyUnicode_AsUTF8AndSize(key, &size);
      if (!name) throw nb::python_error();
      names.emplace_back(name, size_t(size));
      values.emplace_back(std::move(tensor));
    }
    std::vector<std::string> wanted;
    if (!output_names.is_none()) wanted = nb::cast<std::vector<std::string>>(output_names);
    std::vector<Value> outputs;
    Status status;
    {
      nb::gil_scoped_release release;
      status = session_->run(names, values, wanted, outputs, RunFlags{});
    }
    if (!status.ok()) throw_status(status);
    bool all_plain = true;
    for (const Value& v : outputs)
      all_plain &= !v.is_sequence() && v.tensor.defined() && is_plain(v.tensor.dtype());
    nb::list result;
    for (Value& v : outputs)
      result.append(all_plain ? numpy_array(std::move(v.tensor))
                              : value_to_python(std::move(v), false));
    if (all_plain) return result;
    return nb::tuple(result);
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
      .def("take_profile", &PySession::take_profile)
      .def("optimized_model_nxrt_ops", &PySession::optimized_model_nxrt_ops)
      .def("run", &PySession::run, nb::arg("output_names"), nb::arg("feeds"),
           nb::arg("terminate").none() = nb::none(), nb::arg("bound").none() = nb::none(),
           nb::arg("as_values") = false)
      .def("run_plain", &PySession::run_plain, nb::arg("output_names").none(), nb::arg("feeds"));
}

}  // namespace nxrt::py
