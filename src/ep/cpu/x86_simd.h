// The x86 SIMD intrinsics, for the files whose kernels use them (each compiles its own
// functions with target attributes; the file itself needs no -m flags).
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which its flow analysis
// reports as "may be used uninitialized" once inlined (a known false positive). The pragma
// holds for the rest of the including file.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
