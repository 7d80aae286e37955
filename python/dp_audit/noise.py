"""Float-safe noise for numpy code: the dp-audit crate's samplers, vectorised and seeded.

Textbook noise (``x + np.random.default_rng(s).laplace(0, 1/ε, n)``) is right on real numbers
but not in binary64: which doubles can come out, and how often, depends on ``x`` (Mironov 2012),
so it keeps no finite ε, and ``dp_audit.assert_dp(..., check="both")`` fails its floating-point
layer. The samplers here draw noise whose outputs do not carry the answer in their low bits:

- :func:`snapping_laplace` — Laplace noise by Mironov's snapping mechanism, for a real-valued
  query: ε′-DP with ε′ = ε·(1 + 2^-49·B/Δ), outputs on a grid and clamped to [−B, B];
- :func:`discrete_laplace` — exact discrete Laplace noise Lap_ℤ(t) added to an integer query:
  ε-DP for t = Δ/ε (pure DP);
- :func:`discrete_gaussian` — exact discrete Gaussian noise N_ℤ(0, σ²) added to an integer query:
  ρ-zCDP with ρ = Δ²/(2σ²) (Canonne, Kamath & Steinke 2020).

All parameters are keyword-only. Each function returns a new array of the shape of ``values``
(``float64`` for snapping, ``int64`` for the integer samplers) and raises ``TypeError`` for an
argument of the wrong type and ``ValueError`` for a value out of range, naming the argument and
what is allowed.

**Randomness.** ``seed=None`` (the default) draws a fresh 256-bit key from the operating system
(``os.urandom``): use it for a real release. ``seed=`` an integer in [0, 2^64) makes the noise
reproducible: the same seed, parameters and values give the same array on every machine and
thread count (with this version of dp_audit), which is what tests and ``assert_dp`` need (pass
the ``seed`` ``assert_dp`` gives your mechanism). The integer samplers use integer arithmetic
only and are bit-identical everywhere; :func:`snapping_laplace` calls the platform's ``ln``,
and a libm that rounds one result differently (within its ulp) can move an output near a grid
cell's edge to the next cell, rarely. A seed anyone knows makes the noise known and
the release not private: never publish an output drawn from a fixed seed. The key of an integer
seed is derived by the engine's ChaCha20 stream derivation (``dp_audit::rng``); element i of the
flattened (C-order) array takes its noise from ChaCha20 stream ⌊i/4096⌋ of that key, so element
i's noise does not depend on how many elements follow it. numpy ``Generator`` objects are not
accepted: their state does not travel into this generator; pass
``int(rng.integers(2**63))`` if you want the noise to follow one.

Guarantees hold for the mathematical samplers as implemented: the integer samplers use integer
arithmetic only (exact); the snapping mechanism's theorem assumes a correctly rounded (within
one ulp) natural logarithm, which the platform's libm provides. The sensitivity Δ is yours to
get right: it is the most the query changes between neighbouring datasets.
"""

from __future__ import annotations

import math as _math
import numbers as _numbers
import os as _os
from typing import Any, Optional, Tuple

import numpy as _np

from . import _native

_n = _native.noise

__all__ = ["snapping_laplace", "snapping_guarantee", "discrete_laplace", "discrete_gaussian"]

#: The largest discrete Laplace scale and discrete Gaussian sigma: 2^40.
MAX_SCALE = 2.0**40
#: The smallest discrete Laplace scale: 2^-64.
MIN_LAPLACE_SCALE = 2.0**-64


def _real(v: Any, name: str, allowed: str) -> float:
    if isinstance(v, bool) or not isinstance(v, _numbers.Real):
        raise TypeError(f"{name}={v!r}; allowed: {allowed}")
    return float(v)


def _positive(v: Any, name: str, allowed: str = "a finite number > 0") -> float:
    x = _real(v, name, allowed)
    if not (_math.isfinite(x) and x > 0.0):
        raise ValueError(f"{name}={v!r}; allowed: {allowed}")
    return x


def _key(seed: Any) -> dict:
    if seed is None:
        return {"entropy": _os.urandom(32)}
    if isinstance(seed, bool) or not isinstance(seed, _numbers.Integral):
        raise TypeError(f"seed={seed!r}; allowed: None (fresh randomness from the operating "
                        "system) or an integer in [0, 2^64) (reproducible noise)")
    if not (0 <= int(seed) < 2**64):
        raise ValueError(f"seed={seed!r}; allowed: None or an integer in [0, 2^64)")
    return {"seed": int(seed)}


def _float_values(values: Any) -> _np.ndarray:
    a = _np.asarray(values)
    if a.dtype == _np.bool_ or not (_np.issubdtype(a.dtype, _np.floating)
                                    or _np.issubdtype(a.dtype, _np.integer)):
        raise TypeError(f"values has dtype {a.dtype}; allowed: an array (or scalar, or list) of "
                        "real numbers (float or integer dtype)")
    a = a.astype(_np.float64)
    bad = _np.flatnonzero(~_np.isfinite(a))
    if bad.size:
        raise ValueError(f"values holds {a.reshape(-1)[bad[0]]} at flattened index {bad[0]}; "
                         "allowed: finite numbers")
    return a


_INT64 = _np.iinfo(_np.int64)


def _int_values(values: Any) -> _np.ndarray:
    a = _np.asarray(values)
    if a.dtype == _np.bool_ or not _np.issubdtype(a.dtype, _np.integer):
        raise TypeError(f"values has dtype {a.dtype}; allowed: integers (an integer-dtype array, "
                        "a list of ints or an int): integer noise is only float-safe on an "
                        "integer-valued query; round the query first (np.rint(x).astype(np.int64), "
                        "its sensitivity then rounded up to an integer) or use snapping_laplace; "
                        "Python ints beyond int64 arrive as dtype object")
    if a.size and a.dtype == _np.uint64 and int(a.max()) > _INT64.max:
        raise ValueError(f"values holds {int(a.max())}; allowed: integers that fit int64")
    return a.astype(_np.int64)


def _flat(a: _np.ndarray) -> _np.ndarray:
    return _np.ascontiguousarray(a).reshape(-1)


def _sensitivity(sensitivity: Any) -> float:
    d = _positive(sensitivity, "sensitivity", "a power of two 2^k (1, 2, 0.5, …)")
    m, _ = _math.frexp(d)
    if m != 0.5:
        up = 2.0 ** _math.ceil(_math.log2(d))
        raise ValueError(f"sensitivity={sensitivity!r}; allowed: a power of two 2^k, so that "
                         "scaling by it is exact in binary64; round it up to the next power of "
                         f"two ({up:g}), which is still a valid sensitivity")
    return d


def _snapping_parameters(epsilon: Any, bound: Any, sensitivity: Any) -> Tuple[float, float, float]:
    eps = _positive(epsilon, "epsilon")
    b = _positive(bound, "bound", "a finite number with λ < bound/sensitivity < 2^46·λ, "
                                  "λ = 1/epsilon")
    d = _sensitivity(sensitivity)
    scale = 1.0 / eps
    if not (scale < b / d < 2.0**46 * scale):
        raise ValueError(f"bound={bound!r} with epsilon={epsilon!r}, sensitivity={sensitivity!r}; "
                         f"allowed: {d * scale:g} < bound < {d * scale * 2.0**46:g}, i.e. "
                         "sensitivity/epsilon < bound < 2^46·sensitivity/epsilon (Mironov 2012, "
                         "Theorem 1)")
    return eps, b, d


def snapping_guarantee(*, epsilon: float, bound: float,
                       sensitivity: float = 1.0) -> Tuple[float, float]:
    """``(epsilon_prime, grid)`` of :func:`snapping_laplace` with these parameters: the ε′ it
    guarantees, 1/λ + 2^-49·B/λ with λ = 1/ε and B = bound/sensitivity (Mironov 2012, Theorem 1),
    rounded up to the next doubles; and the spacing of its outputs, sensitivity·Λ with Λ the
    smallest power of two ≥ 1/ε. Claim ``f"pure:{epsilon_prime}"`` when you audit it."""
    eps, b, d = _snapping_parameters(epsilon, bound, sensitivity)
    return tuple(_n.snapping_guarantee(eps, b, d))


def snapping_laplace(values: Any, *, epsilon: float, bound: float, sensitivity: float = 1.0,
                     seed: Optional[int] = None) -> _np.ndarray:
    """Laplace noise of scale sensitivity/epsilon added to each of ``values`` by the snapping
    mechanism (Mironov 2012): ``Δ·clamp_B(round_Λ(clamp_B(x/Δ) + S·λ·ln U*))`` with λ = 1/ε,
    B = bound/Δ, Λ the smallest power of two ≥ λ, S a fair sign and U* uniform on the doubles of
    (0, 1). Returns a ``float64`` array of the shape of ``values``, every element a multiple of
    Δ·Λ in [−bound, bound] (a zero is always +0.0).

    **Guarantee.** For a real-valued query of sensitivity Δ = ``sensitivity`` (|f(D) − f(D′)| ≤ Δ
    on neighbours), each element is ε′-DP with ε′ = ε·(1 + 2^-49·B) (Theorem 1; at bound/Δ = 2^20
    the factor is 1 + 2^-29), given a correctly rounded natural logarithm; :func:`snapping_guarantee`
    returns ε′. Each element is a release of its own with independent noise: k elements about one
    dataset cost k·ε′ together (basic composition).

    Parameters (keyword-only):

    - ``epsilon``: a finite number > 0.
    - ``bound``: B, the clamp, in the query's units: the answer is clamped to [−bound, bound]
      before and after the noise (a bias if the answer can come near it); Theorem 1 needs
      Δ/ε < bound < 2^46·Δ/ε.
    - ``sensitivity``: Δ, a power of two (1 by default); round yours up to one (still valid).
    - ``seed``: ``None`` (fresh OS randomness, for releases) or an integer in [0, 2^64)
      (reproducible; see the module docs).

    Example::

        noisy_sum = dp_audit.noise.snapping_laplace(np.clip(x, 0, 1).sum(), epsilon=0.5,
                                                    bound=2.0**20)
    """
    eps, b, d = _snapping_parameters(epsilon, bound, sensitivity)
    key = _key(seed)
    a = _float_values(values)
    out = _n.snapping_laplace(_flat(a), eps, b, d, **key)
    return out.reshape(a.shape)


def discrete_laplace(values: Any, *, scale: float, seed: Optional[int] = None) -> _np.ndarray:
    """Exact discrete Laplace noise Lap_ℤ(t), P(k) = tanh(1/(2t))·e^(−|k|/t) for k ∈ ℤ, added to
    each integer of ``values`` (Canonne, Kamath & Steinke 2020, Algorithm 2; integer arithmetic
    only, so the law is exact). Returns an ``int64`` array of the shape of ``values``.

    **Guarantee.** For an integer-valued query of sensitivity Δ, ``scale`` t = Δ/ε gives ε-DP
    (pure) per element: P[o | D]/P[o | D′] ≤ e^(|f(D) − f(D′)|/t) ≤ e^ε; for a vector query
    released element-wise, Δ is its ℓ1 sensitivity (a histogram under add-remove: Δ = 1). The outputs are
    integers, exact in any dtype, so no low-order bits can leak.

    Parameters (keyword-only):

    - ``scale``: t, a finite number in [2^-64, 2^40], used exactly as the float given (a float is
      an exact binary fraction); for ε-DP at sensitivity Δ pass ``Δ/ε`` (the guarantee is then
      Δ/t, which differs from ε by at most half an ulp; ``math.nextafter(Δ/ε, math.inf)`` is
      on the safe side).
    - ``seed``: ``None`` (fresh OS randomness, for releases) or an integer in [0, 2^64).

    ``values`` must be integers (int dtype, ints): a float query must be made integer first.

    Example::

        noisy_counts = dp_audit.noise.discrete_laplace(np.bincount(ages // 10), scale=1 / 0.5)
    """
    t = _positive(scale, "scale", "a finite number in [2^-64, 2^40]")
    if not (MIN_LAPLACE_SCALE <= t <= MAX_SCALE):
        raise ValueError(f"scale={scale!r}; allowed: a finite number in [2^-64, 2^40] "
                         "(about 5.42e-20 to 1.1e12)")
    key = _key(seed)
    a = _int_values(values)
    return _n.discrete_laplace(_flat(a), t, **key).reshape(a.shape)


def discrete_gaussian(values: Any, *, sigma: float, seed: Optional[int] = None) -> _np.ndarray:
    """Exact discrete Gaussian noise N_ℤ(0, σ²), P(k) ∝ e^(−k²/(2σ²)) for k ∈ ℤ, added to each
    integer of ``values`` (Canonne, Kamath & Steinke 2020, Algorithm 3; integer arithmetic only,
    so the law is exact). Returns an ``int64`` array of the shape of ``values``.

    **Guarantee.** For an integer-valued query of sensitivity Δ (in the ℓ2 sense for a vector
    query released element-wise), the release is ρ-zCDP with ρ = Δ²/(2σ²) (CKS20, Theorem 4),
    hence (ε, δ)-DP for every ε with the δ of CKS20 Theorem 7 (never more than ρ-zCDP implies).
    Its variance is at most σ².

    Parameters (keyword-only):

    - ``sigma``: σ, a finite number in (0, 2^40], used exactly as the float given (σ² = Δ²/(2ρ)
      for a target ρ).
    - ``seed``: ``None`` (fresh OS randomness, for releases) or an integer in [0, 2^64).

    Example::

        noisy = dp_audit.noise.discrete_gaussian(counts, sigma=4.0)  # ρ = 1/32 at Δ = 1
    """
    s = _positive(sigma, "sigma", "a finite number in (0, 2^40]")
    if s > MAX_SCALE:
        raise ValueError(f"sigma={sigma!r}; allowed: a finite number in (0, 2^40] (about 1.1e12)")
    key = _key(seed)
    a = _int_values(values)
    return _n.discrete_gaussian(_flat(a), s, **key).reshape(a.shape)
