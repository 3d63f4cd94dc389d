"""The CUDA C column step's scalars, shared by the kernels that make Householder reflectors
column by column (the register panel, :mod:`.panel_cuda_src`; the small QR,
:mod:`.geqrf_small_cuda`): spliced into their sources before the kernel.

They are :func:`adaptqr.paths.kernels.panel._reflector`'s (LAPACK ``dlarfg``'s, with the
norm scaled by a power of two ``p`` so that no divisor is subnormal): ``range_scale`` picks
``p``, ``PLAIN_NORM`` gives the norm from a plain sum of squares, and
``REFLECTOR_SCALARS`` gives ``tau``, ``beta`` and the scale of ``v`` from ``alpha`` and the
sub-column's norm times ``p``. Where ``DIRECT_IN_RANGE`` holds (every column of a matrix in
float32's middle range), ``DIRECT_SCALARS`` gives the same scalars by a shorter chain (one
rounding fewer in the norm, so not the Triton panel's bits). How the norm is summed (a
block, a cluster, a warp), and summed again over the max-abs where the plain sum is out of
range, stays the kernel's.

Example::

    >>> "#define REFLECTOR_SCALARS(" in REFLECTOR_FUNCS and "#define PLAIN_SS_LO" in REFLECTOR_FUNCS
    True
"""

REFLECTOR_FUNCS = r"""
#define SAFE_LO 8.673617379884035e-19f
#define SAFE_HI 1.152921504606847e18f
#define SAFE_UP 1.2089258196146292e24f
#define PLAIN_SS_LO 7.888609052210118e-31f
#define PLAIN_SS_HI 1.2676506002282294e30f

__device__ __forceinline__ float range_scale(float x) {
    return (x < SAFE_LO && x > 0.0f) ? SAFE_UP : (x > SAFE_HI ? 1.0f / SAFE_UP : 1.0f);
}

// The sub-column's norm times p (xnp) and p from a plain sum of squares ss that lies in
// [PLAIN_SS_LO, PLAIN_SS_HI] (panel.plain_norm; the kernel sums ss its own way, and a sum
// out of that range is summed again over its max-abs by the kernel). Assigns xnp and p.
#define PLAIN_NORM(alpha, ss, xnp, p)                                                    \
    {                                                                                  \
        const float xnorm_ = sqrtf(ss);                                                \
        p = range_scale(fmaxf(fabsf(alpha), xnorm_));                                  \
        xnp = xnorm_ * p;                                                              \
    }

// dlarfg's scalars (panel._reflector) from alpha, the sub-column's norm times p (xnp) and
// p: assigns the caller's d (a reflector is made: `active`, the caller's own test, and a
// norm not 0 and not below floor_; `!(<)` so that a NaN norm still goes through and
// propagates), tau, beta and scale (v below its unit top is the sub-column times p times
// scale), as DIRECT_SCALARS does. Without a reflector tau and scale are 0 and beta is alpha.
// A macro, not a function: as a function the floor test moved before the norm's divisions
// in the panel's PTX, which was measured with this order.
#define REFLECTOR_SCALARS(alpha, xnp, p, active, floor_, d, tau, beta, scale)            \
    {                                                                                  \
        const float apv_ = (alpha) * (p);                                              \
        const float mxv_ = fmaxf(fabsf(apv_), (xnp));                                  \
        const float mxs_ = mxv_ > 0.0f ? mxv_ : 1.0f;                                  \
        const float an_ = apv_ / mxs_, xn_ = (xnp) / mxs_;                             \
        const float nrm_ = mxs_ * sqrtf(an_ * an_ + xn_ * xn_);                        \
        d = (active) && ((xnp) != 0.0f) && !((xnp) < (floor_) * (p));                  \
        const float beta_p_ = (alpha) >= 0.0f ? -nrm_ : nrm_;                          \
        tau = d ? (beta_p_ - apv_) / beta_p_ : 0.0f;                                   \
        scale = d ? 1.0f / (apv_ - beta_p_) : 0.0f;                                    \
        beta = d ? beta_p_ * (1.0f / (p)) : (alpha);                                   \
    }

// Whether DIRECT_SCALARS may stand for PLAIN_NORM and REFLECTOR_SCALARS: the plain sum of
// squares in range and |alpha| at most SAFE_HI, so that p is 1 and alpha^2 + ss cannot
// overflow (EXPERIMENTS.md H38, H39). NaN and Inf fail it.
#define DIRECT_IN_RANGE(alpha, ss)                                                       \
    ((ss) >= PLAIN_SS_LO && (ss) <= PLAIN_SS_HI && fabsf(alpha) <= SAFE_HI)

// dlarfg's scalars where DIRECT_IN_RANGE holds: the norm of [alpha; x] is one square root of
// one FMA, then tau and v's scale are two independent divisions (the scaled form is a chain
// of two square roots and four divisions: ~20 % of a small-QR column step, H38). Assigns d,
// tau, beta, scale and p (1), as PLAIN_NORM and REFLECTOR_SCALARS would; the floor
// test takes its own square root, off that chain, and none for a floor of 0 (no norm is
// below it: the small kernel's, where H38 measured the build without it).
#define DIRECT_SCALARS(alpha, ss, active, floor_, d, tau, beta, scale, p)                \
    {                                                                                  \
        const float nrm_ = sqrtf(fmaf((alpha), (alpha), (ss)));                        \
        const float beta_p_ = (alpha) >= 0.0f ? -nrm_ : nrm_;                          \
        d = (active) && ((floor_) <= 0.0f || !(sqrtf(ss) < (floor_)));                 \
        tau = d ? (beta_p_ - (alpha)) / beta_p_ : 0.0f;                                \
        scale = d ? 1.0f / ((alpha) - beta_p_) : 0.0f;                                 \
        beta = d ? beta_p_ : (alpha);                                                  \
        p = 1.0f;                                                                      \
    }
"""
