#!/usr/bin/env python3
"""Fit the polynomial coefficients of src/backend/vmath_consts.h.

cpu_tanhf (src/backend/cpu/vmath.c) evaluates tanh in two ranges:
  |y| < 0.625   tanh(y) = y + y*(u*P(u)), u = y^2, P of degree 5
  otherwise     tanh(|y|) = 1 - 2/(exp(2|y|) + 1), exp by range reduction
                to r in [-ln2/2, ln2/2] and a degree-6 polynomial E(r)
Both fits minimise the maximum *relative* error (near-minimax: weighted
least squares on Chebyshev nodes, reweighted by Lawson's rule), with mpmath
giving the exact function values. The coefficients are then rounded to
float32, and this script replays cpu_tanhf in float32 with numpy (same
operation order, no fused multiply-add, like the C build's
-ffp-contract=off) to report the worst error in ulps against mpmath.

Usage: python3 tools/fit_vmath.py          # prints the #define lines
Needs: numpy, mpmath (pip install numpy mpmath), outside the repo's build.
"""
import sys

import mpmath
import numpy as np

mpmath.mp.prec = 120

TANH_SMALL = 0.625
TANH_CLAMP = 10.0
P_DEGREE = 5
E_DEGREE = 6
NODES = 4000
LAWSON_ROUNDS = 60


def chebyshev_nodes(lo, hi, n):
    k = np.arange(n)
    x = np.cos((2 * k + 1) * np.pi / (2 * n))
    return np.sort(0.5 * (lo + hi) + 0.5 * (hi - lo) * x)


def lawson_fit(x, target, weight, degree):
    """Minimise max |weight * (poly(x) - target)| over the nodes."""
    vander = np.vander(x, degree + 1, increasing=True)
    lw = np.full(x.size, 1.0 / x.size)
    coef = None
    for _ in range(LAWSON_ROUNDS):
        sw = np.sqrt(lw) * weight
        coef, *_ = np.linalg.lstsq(vander * sw[:, None], target * sw,
                                   rcond=None)
        err = np.abs(weight * (vander @ coef - target))
        lw = lw * err
        lw /= lw.sum()
    return coef


def fit_tanh_p():
    # f(u) = (tanh(y)/y - 1)/u with y = sqrt(u); tanh's relative error is
    # u*(P - f)/(1 + u*f), so that is the weight.
    u_hi = TANH_SMALL * TANH_SMALL
    u = chebyshev_nodes(1e-12, u_hi, NODES)
    f = np.empty_like(u)
    for i, ui in enumerate(u):
        y = mpmath.sqrt(mpmath.mpf(ui))
        f[i] = float((mpmath.tanh(y) / y - 1) / ui)
    weight = u / (1 + u * f)
    return lawson_fit(u, f, weight, P_DEGREE)


def fit_exp_e():
    half = float(mpmath.log(2) / 2)
    r = chebyshev_nodes(-half, half, NODES)
    e = np.array([float(mpmath.exp(mpmath.mpf(ri))) for ri in r])
    return lawson_fit(r, e, 1.0 / e, E_DEGREE)


F = np.float32


def tanh_f32(y, p, e):
    """cpu_tanhf, operation by operation, in float32."""
    y = F(y)
    a = F(abs(y))
    if a < F(TANH_SMALL):
        uu = F(y * y)
        acc = p[P_DEGREE]
        for c in p[P_DEGREE - 1::-1]:
            acc = F(F(acc * uu) + c)
        return F(y + F(y * F(uu * acc)))
    ac = min(a, F(TANH_CLAMP))
    z = F(ac + ac)
    magic = F(12582912.0)
    t = F(F(z * F(1.44269504)) + magic)
    nf = F(t - magic)
    r = F(z - F(nf * F(0.693359375)))
    r = F(r - F(nf * F(-2.12194440e-4)))
    acc = e[E_DEGREE]
    for c in e[E_DEGREE - 1::-1]:
        acc = F(F(acc * r) + c)
    ex = F(acc * F(2.0) ** int(nf))
    out = F(F(1.0) - F(F(2.0) / F(ex + F(1.0))))
    return out if y >= 0 else F(-out)


def ulp_error(got, y):
    exact = mpmath.tanh(mpmath.mpf(float(y)))
    ref = F(float(exact))
    spacing = float(np.spacing(abs(ref))) if ref != 0 else float(
        np.finfo(F).tiny)
    return abs(float(mpmath.mpf(float(got)) - exact)) / spacing


def worst_ulp(p, e, points):
    rng = np.random.default_rng(7)
    ys = np.concatenate([
        rng.uniform(-1.0, 1.0, points // 2),
        rng.uniform(-10.5, 10.5, points // 2),
    ]).astype(F)
    worst, at = 0.0, 0.0
    for y in ys:
        err = ulp_error(tanh_f32(y, p, e), y)
        if err > worst:
            worst, at = err, float(y)
    return worst, at


def main():
    points = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    p = [F(c) for c in fit_tanh_p()]
    e = [F(c) for c in fit_exp_e()]
    for name, coefs in (("P", p), ("E", e)):
        for i, c in enumerate(coefs):
            text = np.format_float_positional(c)  # shortest that round-trips
            if text.endswith("."):
                text += "0"
            print(f"#define VM_{name}{i} {text}f")
        print()
    worst, at = worst_ulp(p, e, points)
    print(f"/* float32 replay: worst {worst:.3f} ulp at {at!r} over "
          f"{points} points */")


if __name__ == "__main__":
    main()
