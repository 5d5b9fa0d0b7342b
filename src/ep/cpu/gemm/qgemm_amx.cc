// AMX kernel of the 8-bit GEMM: 32 rows x 32 columns of C in four 16 x 16 int32 tiles,
// per 64 k two A tiles (16 rows x 64 bytes of a', read in place from the prepared rows)
// and two B tiles (16 groups of four k x 16 columns: exactly a packed panel's 64-byte
// rows), four tdpbusd. One tdpbusd does 16 K of multiply-adds, against 16 x 4 = 64 for an
// AVX-512 VNNI instruction. Only this file is compiled for AMX (target attribute); the
// driver calls it only after amx_available() said the CPU and the kernel allow it.
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "ep/cpu/gemm/qgemm_internal.h"

namespace nxrt::gemm::detail {
namespace {

// The layout ldtilecfg reads (palette 1): bytes per row and rows of each of the 8 tiles.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

// Tiles 0-3: C (rows 0-15 / 16-31 x columns 0-15 / 16-31); 4, 5: A rows 0-15 / 16-31;
// 6, 7: B panels 0 / 1.
template <bool kTwoPanels>
__attribute__((target("amx-tile,amx-int8"), always_inline)) inline void tiles(
    int64_t k64, const uint8_t* a, int64_t lda, const int8_t* b, int64_t panel_bytes, int32_t* c,
    int64_t ldc) {
  _tile_zero(0);
  _tile_zero(2);
  if constexpr (kTwoPanels) {
    _tile_zero(1);
    _tile_zero(3);
  }
  for (int64_t k = 0; k < k64; k += 64) {
    _tile_loadd(4, a + k, lda);
    _tile_loadd(5, a + 16 * lda + k, lda);
    _tile_loadd(6, b + k / 4 * 64, 64);
    _tile_dpbusd(0, 4, 6);
    _tile_dpbusd(2, 5, 6);
    if constexpr (kTwoPanels) {
      _tile_loadd(7, b + panel_bytes + k / 4 * 64, 64);
      _tile_dpbusd(1, 4, 7);
      _tile_dpbusd(3, 5, 7);
    }
  }
  const int64_t stride = ldc * int64_t(sizeof(int32_t));
  _tile_stored(0, c, stride);
  _tile_stored(2, c + 16 * ldc, stride);
  if constexpr (kTwoPanels) {
    _tile_stored(1, c + 16, stride);
    _tile_stored(3, c + 16 * ldc + 16, stride);
  }
}

}  // namespace

bool amx_available() {
#if defined(__x86_64__) && defined(SYS_arch_prctl)
  static const bool yes = [] {
    // CPUID leaf 7: EDX bit 24 AMX-TILE, bit 25 AMX-INT8 (clang's __builtin_cpu_supports
    // does not know these features).
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
    if (!(edx >> 24 & 1) || !(edx >> 25 & 1)) return false;
    // Linux hands out the 8 KiB tile state only to processes that ask for it.
    constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return yes;
#else
  return false;
#endif
}

__attribute__((target("amx-tile,amx-int8"))) void amx_configure() {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.bytes_per_row[t] = 64;
    config.rows[t] = 16;
  }
  // Through asm with the whole struct as its operand: GCC 12 treats the builtin as if it
  // read only the first 16 bytes and drops the stores of the rest.
  asm volatile("ldtilecfg %0" : : "m"(config));
}

__attribute__((target("amx-tile"))) void amx_release() { _tile_release(); }

__attribute__((target("amx-tile,amx-int8"))) void qkernel_amx(int64_t k64, const uint8_t* a,
                                                              int64_t lda, const int8_t* b,
                                                              int64_t panel_bytes, int32_t* c,
                                                              int64_t ldc, int64_t mr, int64_t nr) {
  const bool two = nr > kQPanel;
  if (mr == kQRowsAmx && nr == 2 * kQPanel) {
    tiles<true>(k64, a, lda, b, panel_bytes, c, ldc);
    return;
  }
  // An edge block: the whole 32 x 32 into a local tile, then its valid part. The rows of
  // A past mr are the prepared buffer's other rows (their products are dropped).
  alignas(64) int32_t local[kQRowsAmx * 2 * kQPanel];
  if (two)
    tiles<true>(k64, a, lda, b, panel_bytes, local, 2 * kQPanel);
  else
    tiles<false>(k64, a, lda, b, panel_bytes, local, 2 * kQPanel);
  for (int64_t i = 0; i < mr; ++i)
    std::memcpy(c + i * ldc, local + i * 2 * kQPanel, size_t(nr) * sizeof(int32_t));
}

}  // namespace nxrt::gemm::detail
