// Eager glue: runs one ONNX op on Python values. The hot path (numpy arrays of plain
// dtypes, int/float/str/list attributes) is handled here without calling back into
// Python: the cache key is appended to a reused per-thread buffer straight from the
// Python objects, inputs are read through the buffer protocol, and the op runs without
// the GIL. Anything else (lists, scalars, bfloat16, strings, sequences) is reported back
// as "needs conversion" and python/nxrt/eager.py converts it with the session helpers.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <bit>
#include <cstring>

#include "eager/eager.h"
#include "errors.h"
#include "numpy_io.h"

namespace nb = nanobind;

namespace nxrt::py {
namespace {

PyObject* g_feed_type = nullptr;  // nxrt.eager._Feed: (code, array, strings, shape)

// Thrown (as a C++ value, not a Python error) when an argument needs Python-side
// conversion first; the entry point turns it into a None result.
struct NeedsConversion {};

template <typename T>
void append_pod(std::string& key, const T& value) {
  key.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

void append_str(std::string& key, const char* data, Py_ssize_t size) {
  append_pod(key, uint32_t(size));
  key.append(data, size_t(size));
}

std::string_view utf8(PyObject* s) {
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(s, &size);
  if (!data) throw nb::python_error();
  return {data, size_t(size)};
}

// List/tuple access through functions of the limited API (the module is abi3 on 3.12+).
Py_ssize_t seq_size(PyObject* seq) {
  return PyList_Check(seq) ? PyList_Size(seq) : PyTuple_Size(seq);
}
PyObject* seq_item(PyObject* seq, Py_ssize_t i) {  // borrowed
  return PyList_Check(seq) ? PyList_GetItem(seq, i) : PyTuple_GetItem(seq, i);
}
std::string type_name_of(PyObject* o) {
  return nb::type_name(nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(o)))).c_str();
}

[[noreturn]] void type_error(const std::string& message) {
  PyErr_SetString(PyExc_TypeError, message.c_str());
  throw nb::python_error();
}

// A tensor from a _Feed tuple (code, array, strings, shape) made by _session._to_feed.
Tensor feed_tensor(PyObject* feed, Buffers& buffers) {
  PyObject* code_obj = PyTuple_GetItem(feed, 0);
  const auto code = DataType(PyLong_AsLong(code_obj));
  if (code == DataType::kString) {
    auto strings = nb::cast<std::vector<std::string>>(nb::handle(PyTuple_GetItem(feed, 2)));
    auto dims = nb::cast<std::vector<int64_t>>(nb::handle(PyTuple_GetItem(feed, 3)));
    std::shared_ptr<std::string[]> storage(new std::string[strings.size() + 1]);
    for (size_t i = 0; i < strings.size(); ++i) storage[i] = std::move(strings[i]);
    Tensor t(code, Shape(dims), storage.get());
    buffers.strings.push_back(std::move(storage));
    return t;
  }
  Tensor t;
  if (!array_tensor(PyTuple_GetItem(feed, 1), buffers, t, code))
    type_error("eager: an input could not be read as a contiguous array");
  return t;
}

bool is_feed(PyObject* o) {
  return g_feed_type && PyObject_TypeCheck(o, reinterpret_cast<PyTypeObject*>(g_feed_type));
}

// The tensor an attribute value stands for (copied: attributes outlive the call).
Tensor attribute_tensor(PyObject* o, const std::string& name) {
  Buffers buffers;
  Tensor view;
  if (is_feed(o)) {
    if (PyLong_AsLong(PyTuple_GetItem(o, 0)) < 1)
      type_error("attribute '" + name + "': a tensor attribute must be an array");
    view = feed_tensor(o, buffers);
  } else if (!array_tensor(o, buffers, view)) {
    throw NeedsConversion{};
  }
  return unwrap(view.clone());
}

enum class Kind { kInt, kFloat, kString, kTensor, kSequence, kOther };

Kind kind_of(PyObject* o) {
  if (PyLong_Check(o)) return Kind::kInt;  // bool included
  if (PyFloat_Check(o)) return Kind::kFloat;
  if (PyUnicode_Check(o) || PyBytes_Check(o)) return Kind::kString;
  if (is_numpy_array(o) || is_feed(o)) return Kind::kTensor;
  if (PyList_Check(o) || PyTuple_Check(o)) return Kind::kSequence;
  if (PyIndex_Check(o)) return Kind::kInt;                           // numpy integers
  if (PyType_GetSlot(Py_TYPE(o), Py_nb_float)) return Kind::kFloat;  // numpy floats
  return Kind::kOther;
}

int64_t as_int(PyObject* o) {
  const long long v = PyLong_Check(o) ? PyLong_AsLongLong(o) : [&] {
    PyObject* i = PyNumber_Index(o);
    if (!i) throw nb::python_error();
    const long long r = PyLong_AsLongLong(i);
    Py_DECREF(i);
    return r;
  }();
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  return v;
}

float as_float(PyObject* o) {
  const double v = PyFloat_AsDouble(o);
  if (v == -1.0 && PyErr_Occurred()) throw nb::python_error();
  return float(v);
}

std::string as_string(PyObject* o) {
  if (PyBytes_Check(o)) return std::string(PyBytes_AsString(o), size_t(PyBytes_Size(o)));
  return std::string(utf8(o));
}

void append_string_key(std::string& key, PyObject* o) {
  if (PyBytes_Check(o)) {
    append_str(key, PyBytes_AsString(o), PyBytes_Size(o));
  } else {
    const std::string_view s = utf8(o);
    append_str(key, s.data(), Py_ssize_t(s.size()));
  }
}

// The key of a tensor attribute: its identity would be cheaper but two equal arrays must
// share a plan, and an array mutated in place must not reuse a stale one.
void append_tensor_key(std::string& key, PyObject* o, const std::string_view name) {
  Buffers buffers;
  Tensor t;
  if (is_feed(o)) {
    t = feed_tensor(o, buffers);
  } else if (!array_tensor(o, buffers, t)) {
    throw NeedsConversion{};
  }
  (void)name;
  append_pod(key, uint8_t(t.dtype()));
  append_pod(key, uint8_t(t.rank()));
  for (int64_t d : t.shape()) append_pod(key, d);
  if (t.dtype() == DataType::kString) {
    for (int64_t i = 0; i < t.numel(); ++i) {
      const std::string& s = t.data<std::string>()[i];
      append_str(key, s.data(), Py_ssize_t(s.size()));
    }
  } else {
    key.append(static_cast<const char*>(t.raw()), t.nbytes());
  }
}

// The attribute type of a homogeneous sequence: ints, floats (ints allowed among them),
// strings or tensors. An empty sequence is ints (axes=[] and the like).
ir::Attribute::Type sequence_type(PyObject* seq, std::string_view name, std::string_view op) {
  const Py_ssize_t n = seq_size(seq);
  bool any_int = false, any_float = false, any_string = false, any_tensor = false;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = seq_item(seq, i);
    switch (kind_of(item)) {
      case Kind::kInt:
        any_int = true;
        break;
      case Kind::kFloat:
        any_float = true;
        break;
      case Kind::kString:
        any_string = true;
        break;
      case Kind::kTensor:
        any_tensor = true;
        break;
      default:
        type_error(str_cat("[", op, "] attribute '", name, "': element ", i, " has type '",
                           type_name_of(item),
                           "'; a sequence attribute holds ints, floats, strings or arrays"));
    }
  }
  const int kinds = int(any_int || any_float) + int(any_string) + int(any_tensor);
  if (kinds > 1)
    type_error(str_cat("[", op, "] attribute '", name,
                       "': a sequence attribute must be homogeneous (all numbers, all strings "
                       "or all arrays)"));
  if (any_string) return ir::Attribute::Type::kStrings;
  if (any_tensor) return ir::Attribute::Type::kTensors;
  if (any_float) return ir::Attribute::Type::kFloats;
  return ir::Attribute::Type::kInts;
}

ir::Attribute::Type attribute_type(PyObject* value, std::string_view name, std::string_view op) {
  switch (kind_of(value)) {
    case Kind::kInt:
      return ir::Attribute::Type::kInt;
    case Kind::kFloat:
      return ir::Attribute::Type::kFloat;
    case Kind::kString:
      return ir::Attribute::Type::kString;
    case Kind::kTensor:
      return ir::Attribute::Type::kTensor;
    case Kind::kSequence:
      return sequence_type(value, name, op);
    default:
      type_error(str_cat("[", op, "] attribute '", name, "' has unsupported type '",
                         type_name_of(value),
                         "'; use bool, int, float, str, bytes, a numpy array, or a list of one "
                         "of those"));
  }
}

// Appends the attribute's key bytes; with `out`, also builds the ir::Attribute.
void parse_attribute(std::string& key, PyObject* name_obj, PyObject* value, std::string_view op,
                     ir::Attribute* out) {
  if (!PyUnicode_Check(name_obj))
    type_error(
        str_cat("[", op, "] attribute names must be str, got '", type_name_of(name_obj), "'"));
  const std::string_view name = utf8(name_obj);
  const ir::Attribute::Type type = attribute_type(value, name, op);
  append_str(key, name.data(), Py_ssize_t(name.size()));
  append_pod(key, uint8_t(type));
  if (out) {
    out->name = std::string(name);
    out->type = type;
  }
  using T = ir::Attribute::Type;
  switch (type) {
    case T::kInt: {
      const int64_t v = as_int(value);
      append_pod(key, v);
      if (out) out->i = v;
      return;
    }
    case T::kFloat: {
      const float v = as_float(value);
      append_pod(key, v);
      if (out) out->f = v;
      return;
    }
    case T::kString:
      append_string_key(key, value);
      if (out) out->s = as_string(value);
      return;
    case T::kTensor:
      append_tensor_key(key, value, name);
      if (out) out->t = attribute_tensor(value, std::string(name));
      return;
    default:
      break;
  }
  const Py_ssize_t n = seq_size(value);
  append_pod(key, uint32_t(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = seq_item(value, i);
    switch (type) {
      case T::kInts: {
        const int64_t v = as_int(item);
        append_pod(key, v);
        if (out) out->ints.push_back(v);
        break;
      }
      case T::kFloats: {
        const float v = as_float(item);
        append_pod(key, v);
        if (out) out->floats.push_back(v);
        break;
      }
      case T::kStrings:
        append_string_key(key, item);
        if (out) out->strings.push_back(as_string(item));
        break;
      default:
        append_tensor_key(key, item, name);
        if (out) out->tensors.push_back(attribute_tensor(item, std::string(name)));
        break;
    }
  }
}

// (code, value) as _session._from_result reads it.
nb::object coded(Value&& value) {
  if (value.is_none()) return nb::make_tuple(0, nb::none());
  if (value.is_sequence()) {
    nb::list items;
    for (const Tensor& t : *value.sequence) items.append(coded(Value(Tensor(t))));
    return nb::make_tuple(-1, items);
  }
  Tensor& t = value.tensor;
  const int code = int(t.dtype());
  if (t.dtype() == DataType::kString) {
    nb::list items;
    const auto* s = t.data<std::string>();
    for (int64_t i = 0; i < t.numel(); ++i) items.append(nb::bytes(s[i].data(), s[i].size()));
    nb::list shape;
    for (int64_t d : t.shape()) shape.append(d);
    return nb::make_tuple(code, nb::make_tuple(items, shape));
  }
  return nb::make_tuple(code, numpy_array(std::move(t)));
}

// eager_run(op_type, inputs, attributes, domain, opset, num_outputs): a list of numpy
// arrays when every output is a plain tensor, a tuple of (code, value) pairs for
// _from_result otherwise, or None when an input or attribute needs converting first.
nb::object eager_run(nb::handle op_obj, nb::handle inputs_obj, nb::handle attrs_obj,
                     nb::handle domain_obj, int64_t opset, int64_t num_outputs) {
  if (!PyUnicode_Check(op_obj.ptr())) type_error("op_type must be a str");
  if (!PyUnicode_Check(domain_obj.ptr())) type_error("domain must be a str");
  if (!PyList_Check(inputs_obj.ptr()) && !PyTuple_Check(inputs_obj.ptr()))
    type_error("inputs must be a list or tuple");
  if (!attrs_obj.is_none() && !PyDict_Check(attrs_obj.ptr()))
    type_error("attributes must be a dict (or None)");
  if (num_outputs < 1) type_error("num_outputs must be at least 1");
  const std::string_view op = utf8(op_obj.ptr());
  std::string_view domain = utf8(domain_obj.ptr());
  if (domain == "ai.onnx") domain = {};

  // The key is built in a per-thread buffer that keeps its capacity across calls; a
  // nested call (a numpy scalar's __index__ calling dispatch) gets its own string.
  thread_local std::string thread_key;
  thread_local bool key_in_use = false;
  std::string local_key;
  const bool nested = key_in_use;
  std::string& key = nested ? local_key : thread_key;
  key_in_use = true;
  struct Reset {
    bool nested;
    ~Reset() {
      if (!nested) key_in_use = false;
    }
  } reset{nested};
  key.clear();
  key.push_back('P');
  append_str(key, domain.data(), Py_ssize_t(domain.size()));
  append_str(key, op.data(), Py_ssize_t(op.size()));
  append_pod(key, opset);
  append_pod(key, num_outputs);

  PyObject* inputs_seq = inputs_obj.ptr();
  const Py_ssize_t n_inputs = seq_size(inputs_seq);
  Buffers buffers;
  buffers.views.reserve(size_t(n_inputs));
  std::vector<Value> values(static_cast<size_t>(n_inputs));
  std::vector<DataType> types(size_t(n_inputs), DataType::kUndefined);
  std::vector<ValueKind> kinds(size_t(n_inputs), ValueKind::kTensor);
  try {
    append_pod(key, uint32_t(n_inputs));
    for (Py_ssize_t i = 0; i < n_inputs; ++i) {
      PyObject* item = seq_item(inputs_seq, i);
      int rank = -1;
      if (item == Py_None) {
        // omitted optional input
      } else if (is_numpy_array(item)) {
        if (!array_tensor(item, buffers, values[size_t(i)].tensor)) return nb::none();
      } else if (is_feed(item)) {
        const long code = PyLong_AsLong(PyTuple_GetItem(item, 0));
        if (code == -1) {
          auto sequence = std::make_shared<TensorSequence>();
          nb::handle list(PyTuple_GetItem(item, 1));
          for (nb::handle element : list) {
            if (!is_feed(element.ptr())) type_error("eager: malformed sequence feed");
            sequence->push_back(feed_tensor(element.ptr(), buffers));
          }
          kinds[size_t(i)] = ValueKind::kSequence;
          // An empty sequence has no element type; float is the ONNX default.
          types[size_t(i)] = sequence->empty() ? DataType::kFloat : sequence->front().dtype();
          values[size_t(i)] = Value(std::shared_ptr<const TensorSequence>(std::move(sequence)));
        } else if (code != 0) {
          values[size_t(i)].tensor = feed_tensor(item, buffers);
        }
      } else {
        return nb::none();
      }
      const Value& v = values[size_t(i)];
      if (!v.is_sequence() && v.tensor.defined()) {
        types[size_t(i)] = v.tensor.dtype();
        rank = int(v.tensor.rank());
      }
      append_pod(key, uint8_t(types[size_t(i)]));
      append_pod(key, uint8_t(kinds[size_t(i)]));
      append_pod(key, int8_t(rank));
    }
    if (!attrs_obj.is_none()) {
      PyObject* name = nullptr;
      PyObject* value = nullptr;
      Py_ssize_t pos = 0;
      while (PyDict_Next(attrs_obj.ptr(), &pos, &name, &value)) {
        if (value == Py_None) continue;  // None means "use the default"
        parse_attribute(key, name, value, op, nullptr);
      }
    }
  } catch (const NeedsConversion&) {
    return nb::none();
  }

  eager::OpCache& cache = eager::global_cache();
  std::shared_ptr<const eager::PreparedOp> prepared = cache.find(key);
  if (!prepared) {
    const std::string stored_key = key;  // parsing below reuses the thread's buffer
    eager::OpSpec spec;
    spec.domain = std::string(domain);
    spec.op_type = std::string(op);
    spec.opset = opset;
    spec.num_outputs = size_t(num_outputs);
    spec.input_types = types;
    spec.input_kinds = kinds;
    if (!attrs_obj.is_none()) {
      std::string scratch;
      PyObject* name = nullptr;
      PyObject* value = nullptr;
      Py_ssize_t pos = 0;
      while (PyDict_Next(attrs_obj.ptr(), &pos, &name, &value)) {
        if (value == Py_None) continue;
        spec.attributes.emplace_back();
        parse_attribute(scratch, name, value, op, &spec.attributes.back());
      }
    }
    Expected<std::shared_ptr<eager::PreparedOp>> created = Status();
    {
      nb::gil_scoped_release release;
      created = eager::PreparedOp::create(std::move(spec));
    }
    prepared = cache.insert(stored_key, unwrap(std::move(created)));
  }

  std::vector<Value> outputs;
  Status status;
  {
    nb::gil_scoped_release release;
    status = prepared->run(values, outputs);
  }
  if (!status.ok()) throw_status(status);

  bool all_plain = true;
  for (const Value& v : outputs)
    all_plain &= !v.is_sequence() && v.tensor.defined() && is_plain(v.tensor.dtype());
  if (all_plain) {
    nb::list result;
    for (Value& v : outputs) result.append(numpy_array(std::move(v.tensor)));
    return result;
  }
  nb::list result;
  for (Value& v : outputs) result.append(coded(std::move(v)));
  return nb::tuple(result);
}

}  // namespace

void bind_eager(nb::module_& m) {
  m.def("_eager_init", [](nb::handle feed_type) {
    Py_XINCREF(feed_type.ptr());
    g_feed_type = feed_type.ptr();  // kept for the process's life
  });
  m.def("eager_run", &eager_run, nb::arg("op_type"), nb::arg("inputs"),
        nb::arg("attributes").none(), nb::arg("domain"), nb::arg("opset"), nb::arg("num_outputs"));
  m.def("eager_cache_stats", [] {
    const eager::CacheStats s = eager::global_cache().stats();
    return nb::make_tuple(s.entries, s.hits, s.misses);
  });
  m.def("eager_cache_clear", [] { eager::global_cache().clear(); });
  m.def("eager_cache_set_capacity",
        [](size_t capacity) { eager::global_cache().set_capacity(capacity); });
}

}  // namespace nxrt::py
