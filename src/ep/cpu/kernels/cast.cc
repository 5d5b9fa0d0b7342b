// Cast and CastLike: conversions between every numeric type, bool, float16/bfloat16,
// the narrow floats (float8 types, float8e8m0, float4e2m1: stored as bit patterns), the
// sub-byte integers (int4, uint4, int2, uint2: one value per byte) and string.
//
// Narrow floats convert through float (or straight from double); sub-byte integers through
// int8/uint8, then wrap modulo 2^bits like any narrowing integer conversion (200 -> int4
// is 8 -> -8), as the spec's "discard higher bits" rule and the reference do.
//
// Strings follow the ONNX reference implementation, which is numpy's astype: numbers print
// with the fewest digits that read back to the same value, positional within a range that
// depends on the type and scientific outside it ("0.1", "3.0", "1e-05", "nan", "-inf"),
// bools as "True"/"False". Parsing accepts plain and scientific notation and the spec's
// literals "NaN", "INF", "+INF", "-INF" in any case.
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/float8.h"
#include "core/parallel.h"
#include "ep/cpu/kernels/common.h"
#include "ep/cpu/vmath/vmath.h"

namespace nxrt::cpu {
namespace {

template <typename T>
inline constexpr bool kIsHalf = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// ---------------------------------------------------------------- numeric <-> numeric

template <typename D, typename F>
D float_to_int(F v) {
  if constexpr (std::is_same_v<D, uint64_t>) {
    if (v >= F(0) && v < F(18446744073709551616.0)) return D(v);
  }
  // In-range values truncate toward zero and narrow modulo 2^bits, as numpy does. NaN and
  // values beyond int64 have no defined result in C++; give what x86's conversion gives.
  if (v >= F(-9223372036854775808.0) && v < F(9223372036854775808.0)) return D(int64_t(v));
  return D(std::numeric_limits<int64_t>::min());
}

template <typename D, typename S>
D convert_value(S v) {
  if constexpr (kIsHalf<S>) {
    return convert_value<D>(float(v));
  } else if constexpr (std::is_same_v<D, bool>) {
    return v != S(0);
  } else if constexpr (kIsHalf<D>) {
    return D(float(v));
  } else if constexpr (std::is_floating_point_v<D> || !std::is_floating_point_v<S>) {
    return D(v);  // integer narrowing wraps modulo 2^bits (C++20), as numpy's astype does
  } else {
    return float_to_int<D>(v);
  }
}

// Large casts are split across the run's threads (memory-bound: pieces of >= 64K; a
// one-hot mask of 2048 x 257 bools cast to float took 0.64 ms on one).
template <typename S, typename D>
void convert_run(const S* src, D* dst, int64_t n) {
  const int64_t pieces = int64_t(parallel_pieces(double(n), double(1 << 16)));
  const int64_t block = (n + pieces - 1) / pieces;
  parallel_for(size_t(pieces), [&](size_t piece) {
    // Local restrict pointers: stores through the captured ones could, for all the
    // compiler knows, change the captures, and the loop would stay scalar.
    const int64_t begin = int64_t(piece) * block, count = std::min(n, begin + block) - begin;
    D* __restrict out = dst + begin;
    if constexpr (std::is_same_v<D, float> && sizeof(S) == 1) {
      // Bytes (bool, uint8, int8) to float: the vector dequantization with scale 1 and
      // zero point 0 (GCC leaves this loop scalar on the x86-64 baseline).
      vmath::dequantize_8bit(src + begin, std::is_same_v<S, int8_t>, size_t(count), 1.0f, 0.0f,
                             out);
    } else {
      const S* __restrict in = src + begin;
      for (int64_t i = 0; i < count; ++i) out[i] = convert_value<D>(in[i]);
    }
  });
}

template <typename S>
Status convert_numeric_from(const S* src, DataType to, void* dst, int64_t n) {
  switch (to) {
    NXRT_CASES_NUMERIC(convert_run(src, static_cast<T*>(dst), n); return Status())
    NXRT_CASE(kBool, convert_run(src, static_cast<T*>(dst), n); return Status())
    default:
      break;
  }
  return not_implemented("cast to ", dtype_name(to), " is not supported");
}

// ---------------------------------------------------------------- numbers -> string

// Shortest digits that read back as the same value of the storage type, as scientific
// "d.ddde+XX" text from to_chars.
template <typename T>
std::string shortest_scientific(T v) {
  char buf[64];
  if constexpr (kIsHalf<T>) {
    const float f = float(v);
    for (int precision = 0; precision < 9; ++precision) {
      auto r = std::to_chars(buf, buf + sizeof(buf), f, std::chars_format::scientific, precision);
      float back = 0;
      std::from_chars(buf, r.ptr, back);
      if (T(back).bits == v.bits) return std::string(buf, r.ptr);
    }
    auto r = std::to_chars(buf, buf + sizeof(buf), f, std::chars_format::scientific);
    return std::string(buf, r.ptr);
  } else {
    auto r = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
    return std::string(buf, r.ptr);
  }
}

template <typename T>
auto float_or_double(T v) {
  if constexpr (kIsHalf<T>)
    return float(v);
  else
    return v;
}

// numpy's str() of a float scalar: positional for 1e-4 <= |v| < `positional_limit` (and
// zero) with at least one fractional digit, scientific otherwise.
template <typename T>
std::string format_float(T v, double positional_limit) {
  const double d = double(float_or_double(v));
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  const std::string sci = shortest_scientific(v);
  // Split "-d.ddde+XX" into sign, digits and exponent.
  size_t pos = 0;
  std::string out;
  if (sci[0] == '-') {
    out = "-";
    pos = 1;
  }
  const size_t e_pos = sci.find('e');
  std::string digits;
  for (size_t i = pos; i < e_pos; ++i)
    if (sci[i] != '.') digits += sci[i];
  int exponent = 0;
  std::from_chars(sci.data() + e_pos + (sci[e_pos + 1] == '+' ? 2 : 1), sci.data() + sci.size(),
                  exponent);
  const double a = std::fabs(d);
  if (a == 0 || (a >= 1e-4 && a < positional_limit)) {
    if (exponent >= 0) {
      const size_t int_digits = size_t(exponent) + 1;
      if (digits.size() <= int_digits) {
        out += digits + std::string(int_digits - digits.size(), '0') + ".0";
      } else {
        out += digits.substr(0, int_digits) + "." + digits.substr(int_digits);
      }
    } else {
      out += "0." + std::string(size_t(-exponent - 1), '0') + digits;
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  out += exponent < 0 ? "e-" : "e+";
  const int mag = exponent < 0 ? -exponent : exponent;
  if (mag < 10) out += "0";
  out += std::to_string(mag);
  return out;
}

template <typename S>
std::string number_to_string(S v) {
  if constexpr (std::is_same_v<S, bool>) {
    return v ? "True" : "False";
  } else if constexpr (std::is_integral_v<S>) {
    return std::to_string(v);
  } else if constexpr (std::is_same_v<S, double>) {
    return format_float(v, 1e16);
  } else if constexpr (std::is_same_v<S, float>) {
    return format_float(v, 1e6);
  } else {
    return format_float(v, 1e3);
  }
}

template <typename S>
void to_strings(const S* src, std::string* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = number_to_string(src[i]);
}

// ---------------------------------------------------------------- string -> numbers

std::string_view trim(std::string_view s) {
  const char* ws = " \t\n\r\f\v";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

bool equals_ignore_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = char(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = char(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// Parses the whole string as a floating-point number; false when it is not one.
template <typename F>
bool parse_float(std::string_view s, F& out) {
  s = trim(s);
  bool neg = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty() || s[0] == '+' || s[0] == '-') return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);  // also inf, nan
  // Out-of-range text still gives the right magnitude class: from_chars leaves `out` as is,
  // so map it to inf or zero as strtod would.
  if (r.ec == std::errc::result_out_of_range && r.ptr == s.data() + s.size()) {
    const auto e = s.find_first_of("eE");
    const bool tiny = e != std::string_view::npos && s.find('-', e) != std::string_view::npos;
    out = tiny ? F(0) : std::numeric_limits<F>::infinity();
  } else if (r.ec != std::errc() || r.ptr != s.data() + s.size()) {
    return false;
  }
  if (neg) out = -out;
  return true;
}

template <typename D>
bool parse_value(const std::string& text, D& out) {
  if constexpr (std::is_same_v<D, bool>) {
    const std::string_view s = trim(text);
    if (equals_ignore_case(s, "true")) {
      out = true;
      return true;
    }
    if (equals_ignore_case(s, "false")) {
      out = false;
      return true;
    }
    double d = 0;
    if (!parse_float(s, d)) return false;
    out = d != 0;
    return true;
  } else if constexpr (kIsHalf<D>) {
    float f = 0;
    if (!parse_float(text, f)) return false;
    out = D(f);
    return true;
  } else if constexpr (std::is_floating_point_v<D>) {
    return parse_float(text, out);
  } else {
    std::string_view s = trim(text);
    if (!s.empty() && s[0] == '+') s.remove_prefix(1);
    const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    if (r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty()) return true;
    // "100.5" or "1e3": the spec allows reading a float and truncating.
    double d = 0;
    if (!parse_float(s, d)) return false;
    out = float_to_int<D>(d);
    return true;
  }
}

template <typename D>
Status from_strings(const std::string* src, D* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!parse_value(src[i], dst[i]))
      return invalid_argument("cannot parse string '", src[i], "' at index ", i, " as ",
                              dtype_name(kDTypeOf<D>));
  return Status();
}

// ---------------------------------------------------------------- dispatch

// ---------------------------------------------------------------- narrow types

struct CastOptions {
  bool saturate = true;
  E8M0Rounding round = E8M0Rounding::kUp;
};

bool is_narrow_float(DataType t) {
  return is_float8(t) || t == DataType::kFloat4E2M1 || t == DataType::kFloat8E8M0;
}

bool is_sub_byte_int(DataType t) {
  return t == DataType::kInt4 || t == DataType::kUint4 || t == DataType::kInt2 ||
         t == DataType::kUint2;
}

// The byte type whose values a sub-byte integer type shares (core/dtype.h).
DataType carrier_of(DataType t) {
  return t == DataType::kInt4 || t == DataType::kInt2 ? DataType::kInt8 : DataType::kUint8;
}

void decode_narrow(DataType t, const uint8_t* src, float* dst, int64_t n) {
  if (t == DataType::kFloat4E2M1) {
    for (int64_t i = 0; i < n; ++i) dst[i] = f4e2m1_to_float(src[i]);
  } else if (t == DataType::kFloat8E8M0) {
    for (int64_t i = 0; i < n; ++i) dst[i] = e8m0_to_float(src[i]);
  } else {
    const F8Format f = f8_format(t);
    for (int64_t i = 0; i < n; ++i) dst[i] = f8_to_float(src[i], f);
  }
}

template <typename F>
void encode_narrow(DataType t, const CastOptions& opt, const F* src, uint8_t* dst, int64_t n) {
  if (t == DataType::kFloat4E2M1) {
    for (int64_t i = 0; i < n; ++i) dst[i] = float_to_f4e2m1(double(src[i]));
  } else if (t == DataType::kFloat8E8M0) {
    for (int64_t i = 0; i < n; ++i) dst[i] = float_to_e8m0(double(src[i]), opt.saturate, opt.round);
  } else {
    const F8Format f = f8_format(t);
    for (int64_t i = 0; i < n; ++i) dst[i] = float_to_f8(double(src[i]), f, opt.saturate);
  }
}

// Keeps the low `bits` of each byte, sign-extending for the signed types: the values an
// int8/uint8 result has modulo 2^bits.
void wrap_sub_byte(DataType t, void* data, int64_t n) {
  const int bits = dtype_packed_bits(t);
  const int mask = (1 << bits) - 1;
  if (t == DataType::kInt4 || t == DataType::kInt2) {
    const int sign = 1 << (bits - 1);
    int8_t* d = static_cast<int8_t*>(data);
    for (int64_t i = 0; i < n; ++i) d[i] = int8_t(((d[i] & mask) ^ sign) - sign);
  } else {
    uint8_t* d = static_cast<uint8_t*>(data);
    for (int64_t i = 0; i < n; ++i) d[i] = uint8_t(d[i] & mask);
  }
}

// ---------------------------------------------------------------- dispatch

bool castable(DataType t) {
  return is_float_type(t) || is_integer_type(t) || t == DataType::kBool || t == DataType::kString ||
         is_narrow_float(t) || is_sub_byte_int(t);
}

Status cast_elements(DataType from, DataType to, const CastOptions& opt, const void* src, void* dst,
                     int64_t n) {
  if (from == to) {
    copy_elements(from, src, dst, n);
    return Status();
  }
  // Narrow floats go through float: decode to a float buffer, or encode from one.
  if (is_narrow_float(from)) {
    std::vector<float> wide(static_cast<size_t>(n));
    decode_narrow(from, static_cast<const uint8_t*>(src), wide.data(), n);
    return cast_elements(DataType::kFloat, to, opt, wide.data(), dst, n);
  }
  if (is_narrow_float(to)) {
    uint8_t* d = static_cast<uint8_t*>(dst);
    if (from == DataType::kDouble) {
      encode_narrow(to, opt, static_cast<const double*>(src), d, n);
      return Status();
    }
    std::vector<float> wide(static_cast<size_t>(n));
    NXRT_RETURN_IF_ERROR(cast_elements(from, DataType::kFloat, opt, src, wide.data(), n));
    encode_narrow(to, opt, wide.data(), d, n);
    return Status();
  }
  // Sub-byte integers already hold int8/uint8 values.
  if (is_sub_byte_int(from)) return cast_elements(carrier_of(from), to, opt, src, dst, n);
  if (is_sub_byte_int(to)) {
    NXRT_RETURN_IF_ERROR(cast_elements(from, carrier_of(to), opt, src, dst, n));
    wrap_sub_byte(to, dst, n);
    return Status();
  }
  if (from == DataType::kString) {
    const std::string* s = static_cast<const std::string*>(src);
    switch (to) {
      NXRT_CASES_NUMERIC(return from_strings(s, static_cast<T*>(dst), n))
      NXRT_CASE(kBool, return from_strings(s, static_cast<T*>(dst), n))
      default:
        break;
    }
  } else if (to == DataType::kString) {
    std::string* d = static_cast<std::string*>(dst);
    switch (from) {
      NXRT_CASES_NUMERIC(to_strings(static_cast<const T*>(src), d, n); return Status())
      NXRT_CASE(kBool, to_strings(static_cast<const T*>(src), d, n); return Status())
      default:
        break;
    }
  } else {
    switch (from) {
      NXRT_CASES_NUMERIC(return convert_numeric_from(static_cast<const T*>(src), to, dst, n))
      NXRT_CASE(kBool, return convert_numeric_from(static_cast<const T*>(src), to, dst, n))
      default:
        break;
    }
  }
  return not_implemented("cast from ", dtype_name(from), " to ", dtype_name(to),
                         " is not supported");
}

class CastKernel final : public Kernel {
 public:
  CastKernel(DataType from, DataType to, CastOptions opt) : from_(from), to_(to), opt_(opt) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.shape()));
    return cast_elements(from_, to_, opt_, x.raw(), y->raw(), x.numel());
  }

 private:
  DataType from_, to_;
  CastOptions opt_;
};

// Cast-1 to Cast-5 name the target type as a string ("FLOAT").
bool type_from_name(const std::string& name, DataType& out) {
  static const std::pair<const char*, DataType> kNames[] = {
      {"FLOAT", DataType::kFloat},   {"UINT8", DataType::kUint8},
      {"INT8", DataType::kInt8},     {"UINT16", DataType::kUint16},
      {"INT16", DataType::kInt16},   {"INT32", DataType::kInt32},
      {"INT64", DataType::kInt64},   {"STRING", DataType::kString},
      {"BOOL", DataType::kBool},     {"FLOAT16", DataType::kFloat16},
      {"DOUBLE", DataType::kDouble}, {"UINT32", DataType::kUint32},
      {"UINT64", DataType::kUint64}, {"BFLOAT16", DataType::kBFloat16}};
  for (const auto& [n, t] : kNames)
    if (equals_ignore_case(name, n)) {
      out = t;
      return true;
    }
  return false;
}

// Cast-24 and later: how a cast to float8e8m0 rounds.
Status read_cast_options(const KernelInit& init, AttrReader& attrs, CastOptions& opt) {
  opt.saturate = attrs.get_int("saturate", 1) != 0;
  const std::string mode = attrs.get_string("round_mode", "up");
  NXRT_RETURN_IF_ERROR(attrs.status());
  if (mode == "up")
    opt.round = E8M0Rounding::kUp;
  else if (mode == "down")
    opt.round = E8M0Rounding::kDown;
  else if (mode == "nearest")
    opt.round = E8M0Rounding::kNearest;
  else
    return init.error(StatusCode::kInvalidGraph, "attribute 'round_mode' is '", mode,
                      "'; expected 'up', 'down' or 'nearest'");
  return Status();
}

Expected<KernelPtr> make_cast(KernelInit& init, DataType to, const CastOptions& opt) {
  const DataType from = init.input_type(0);
  if (!castable(from)) return init.unsupported_type(0);
  if (!castable(to))
    return init.error(StatusCode::kNotImplemented, "cast to ", tensor_type_name(to),
                      " is not supported");
  init.set_all_outputs(to);
  return make_kernel<CastKernel>(from, to, opt);
}

}  // namespace

Expected<KernelPtr> create_cast(KernelInit& init) {
  AttrReader attrs(init.node);
  const ir::Attribute* to_attr = init.node.find_attribute("to");
  if (!to_attr)
    return init.error(StatusCode::kInvalidGraph, "is missing the required attribute 'to'");
  DataType to = DataType::kUndefined;
  if (to_attr->type == ir::Attribute::Type::kString) {
    if (!type_from_name(to_attr->s, to))
      return init.error(StatusCode::kInvalidGraph, "attribute 'to' names unknown type '",
                        to_attr->s, "'");
  } else {
    const int64_t raw = attrs.get_int("to", 0);
    if (raw <= 0 || raw > std::numeric_limits<int32_t>::max() || !dtype_is_known(int32_t(raw)))
      return init.error(StatusCode::kInvalidGraph, "attribute 'to' has unknown type ", raw);
    to = DataType(int32_t(raw));
  }
  CastOptions opt;
  NXRT_RETURN_IF_ERROR(read_cast_options(init, attrs, opt));
  return make_cast(init, to, opt);
}

Expected<KernelPtr> create_cast_like(KernelInit& init) {
  AttrReader attrs(init.node);
  CastOptions opt;
  NXRT_RETURN_IF_ERROR(read_cast_options(init, attrs, opt));
  if (init.node.inputs.size() < 2 || init.node.inputs[1].empty())
    return init.error(StatusCode::kInvalidGraph, "needs the target_type input");
  if (!init.has_input(1)) return init.unsupported_type(1);
  return make_cast(init, init.input_type(1), opt);
}

}  // namespace nxrt::cpu
