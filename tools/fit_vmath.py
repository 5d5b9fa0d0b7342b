#!/usr/bin/env python3
"""Refits the polynomial and rational coefficients of src/ep/cpu/vmath/vmath_unary.inc.

Each fit minimizes the relative error of the approximation against the double-precision
function on a dense grid: least squares on the linearized problem (P - f Q = 0 for a
quotient), reweighted by the error of each pass so that it tends to the minimax fit
(Lawson's iteration). The printed values are the float32 constants the source holds.

    .venv/bin/python tools/fit_vmath.py
"""
import math

import numpy as np


def fit(x, f, basis_p, basis_q=None, passes=80):
    """Coefficients of P (and of Q with Q's constant term 1) minimizing max |R / f - 1|."""
    weights = np.ones_like(x)
    for _ in range(passes):
        columns = [basis_p(x)]
        if basis_q is not None:
            columns.append(-f[:, None] * basis_q(x)[:, 1:])
        a = np.hstack(columns)
        scale = np.sqrt(weights) / np.abs(f)
        sol, *_ = np.linalg.lstsq(a * scale[:, None], f * scale, rcond=None)
        n_p = basis_p(x[:1]).shape[1]
        p = sol[:n_p]
        q = np.concatenate([[1.0], sol[n_p:]]) if basis_q is not None else np.array([1.0])
        approx = basis_p(x) @ p / (basis_q(x) @ q if basis_q is not None else 1.0)
        err = np.abs(approx / f - 1)
        weights = weights * (err / err.max() + 1e-3)
        weights /= weights.sum()
    return p, q, err.max()


def powers(degree, of=lambda v: v):
    return lambda v: of(v)[:, None] ** np.arange(degree + 1)


def show(name, coefficients, err):
    print(f"{name} (relative error of the fit {err:.2e}):")
    print("  " + ", ".join(repr(float(np.float32(c))) for c in coefficients))


def main():
    # erf(x) = x P(x^2) / Q(x^2) on |x| <= 3.875.
    x = np.linspace(0, 3.875, 8001)
    f = np.array([math.erf(v) / v if v else 2 / math.sqrt(math.pi) for v in x])
    p, q, err = fit(x, f, powers(5, lambda v: v * v), powers(5, lambda v: v * v))
    show("erf P", p, err)
    show("erf Q", q, err)

    # ln(1 + x) = x P(x) on [0, 1].
    x = np.linspace(0, 1, 20001)
    f = np.array([math.log1p(v) / v if v else 1.0 for v in x])
    p, _, err = fit(x, f, powers(8))
    show("log1p P", p, err)

    # erfc(z) e^(z^2) = P(z) / Q(z) on [0, 9.1], both of degree 4.
    z = np.linspace(0, 9.1, 8000)
    f = np.array([math.erfc(v) * math.exp(v * v) for v in z])
    p, q, err = fit(z, f, powers(4), powers(4), passes=200)
    p = p * 0.5  # the source evaluates erfc(z) e^(z^2) / 2
    show("erfc e^z^2 P", p, err)
    show("erfc e^z^2 Q", q, err)


if __name__ == "__main__":
    main()
