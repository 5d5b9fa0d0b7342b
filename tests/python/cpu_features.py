"""What this CPU runs, as the tests that depend on a kernel family need to know."""

import os


def int8_a_for_matmul_nbits():
    """Whether nxrt computes MatMulNBits' A in 8 bits at accuracy_level 4: AVX2 with FMA
    (or AVX-512 VNNI), not turned off by NXRT_GEMM_KERNEL=portable (A stays in float
    elsewhere)."""
    if os.environ.get("NXRT_GEMM_KERNEL") == "portable":
        return False
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        return False
    return " avx2" in flags and " fma" in flags
