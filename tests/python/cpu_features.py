"""What this CPU runs, as the tests that depend on a kernel family need to know."""

import os


def int8_a_for_matmul_nbits():
    """Whether nxrt computes MatMulNBits' A in 8 bits at accuracy_level 4: AVX-512 VNNI,
    not turned off by NXRT_GEMM_KERNEL or NXRT_QGEMM (elsewhere A stays in float)."""
    if os.environ.get("NXRT_GEMM_KERNEL") or os.environ.get("NXRT_QGEMM"):
        return False
    try:
        with open("/proc/cpuinfo") as f:
            return " avx512_vnni" in f.read()
    except OSError:
        return False
