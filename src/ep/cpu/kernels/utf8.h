// UTF-8 helpers for the string kernels: decoding to code points, simple (one code point
// to one code point) case mapping, and Unicode whitespace.
#pragma once

#include <cstddef>
#include <string>

namespace nxrt::cpu {

// Decodes UTF-8; a byte that does not start a valid sequence becomes U+DC00 + byte (the
// "surrogate escape" convention) so malformed text still round-trips and matches nothing.
std::u32string utf8_decode(const std::string& s);
void utf8_decode_to(const std::string& s, std::wstring& out);

// Upper- or lowercases every code point with a simple case mapping: ASCII, Latin-1,
// Latin Extended-A and Additional, Greek, Cyrillic, fullwidth Latin. `turkic` maps
// i <-> U+0130 and U+0131 <-> I. Characters whose mapping needs several code points
// (German sharp s uppercases to "SS") keep their form.
std::string utf8_change_case(const std::string& s, bool upper, bool turkic);

// Length in bytes of the whitespace character starting at s[i] (Python's str.isspace
// set), or 0 when s[i] does not start one.
size_t utf8_whitespace_len(const std::string& s, size_t i);

}  // namespace nxrt::cpu
