"""The rounding bound of nxrt's Winograd convolutions, for tests that compare 3x3 outputs
with onnxruntime at tolerances tighter than the project's rtol 1e-3."""

import numpy as np


def takes_f43(c, m, kernel, dilation=1, group=1, strides=(1, 1)):
    """Whether nxrt runs this convolution by Winograd's F(4x4, 3x3) on an AVX-512 CPU: 3x3,
    stride and dilation 1, dense, 16 or more inputs and outputs, up to 128 x 256 channels
    (kernels/nchwc.cc)."""
    return (tuple(kernel) == (3, 3) and dilation == 1 and group == 1 and tuple(strides) == (1, 1)
            and c >= 16 and m >= 16 and c * m <= 128 * 256)


def winograd_atol(atol, c, m, kernel, want, dilation=1, group=1, strides=(1, 1), scale=None):
    """`atol`, or for F(4x4, 3x3) convolutions 5e-5 of the convolution's scale when that is
    more: the output transform multiplies the products' rounding by up to 19 (the row sums
    of A^T), so the error follows the output's scale rather than each value (measured
    against a float64 convolution: 2-4e-5 of the RMS, the direct tiles 3-8e-6;
    test_constant_weights.py::test_winograd_rounding_against_float64 pins it). The scale
    is the largest |want| unless given (an activation that clamps `want` hides it)."""
    if not takes_f43(c, m, kernel, dilation, group, strides):
        return atol
    return max(atol, 5e-5 * (scale if scale is not None else float(np.abs(want).max())))
