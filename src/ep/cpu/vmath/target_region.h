// A region of a source file compiled for an instruction set the build does not assume:
// every function between NXRT_TARGET_BEGIN("avx2,fma") and NXRT_TARGET_END (templates
// and lambdas included) gets that target, while the rest of the library, and the inline
// functions of headers included before the region, stay baseline, so the library still
// loads on CPUs without it and the dispatch picks these functions at run time. GCC's
// target pragma, clang's attribute region.
#pragma once

#define NXRT_PRAGMA(text) _Pragma(#text)
#if defined(__clang__)
#define NXRT_TARGET_BEGIN(isa) \
  NXRT_PRAGMA(clang attribute push(__attribute__((target(isa))), apply_to = function))
#define NXRT_TARGET_END _Pragma("clang attribute pop")
#else
#define NXRT_TARGET_BEGIN(isa) _Pragma("GCC push_options") NXRT_PRAGMA(GCC target(isa))
#define NXRT_TARGET_END _Pragma("GCC pop_options")
#endif
