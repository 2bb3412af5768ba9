"""The distributions the RNG tests (``statistics``) judge by: chi-square and normal tails, and
the number of runs in a random arrangement of two kinds (Wald and Wolfowitz, 1940). Pure.

Chi-square p-values are the regularized upper incomplete gamma function Q(df/2, x/2), by its
series below a + 1 and its continued fraction above (Numerical Recipes §6.2), good to about
1e-12 (checked against the closed form for even df in the tests); normal ones are two-sided,
erfc(|z|/√2).

>>> round(chi_square_sf(6.634896601021214, 1), 9)
0.01
>>> round(chi_square_critical(255), 3)
310.457
>>> odds = runs_distribution(2, 2)    # AABB, ABAB, ABBA and their mirrors
>>> {runs: round(p, 4) for runs, p in odds.items()}
{2: 0.3333, 3: 0.3333, 4: 0.3333}
"""

from __future__ import annotations

from math import comb, erfc, exp, lgamma, log, sqrt

ALPHA = 0.01
"""Significance of every test: 99% confidence."""

_EPS = 1e-15
_TINY = 1e-300
_MAX_TERMS = 100_000


def _gamma_q(a: float, x: float) -> float:
    """The regularized upper incomplete gamma function Q(a, x) = Γ(a, x) / Γ(a)."""
    if x <= 0:
        return 1.0
    log_prefix = a * log(x) - x - lgamma(a)
    if x < a + 1:  # the series of P(a, x) converges fast here
        term = total = 1.0 / a
        denominator = a
        for _ in range(_MAX_TERMS):
            denominator += 1
            term *= x / denominator
            total += term
            if term < total * _EPS:
                return max(0.0, 1.0 - total * exp(log_prefix))
    else:  # the continued fraction of Q(a, x), by the modified Lentz method
        b = x + 1 - a
        c = 1 / _TINY
        d = 1 / b
        h = d
        for i in range(1, _MAX_TERMS):
            an = -i * (i - a)
            b += 2
            d = an * d + b
            d = d if abs(d) >= _TINY else _TINY
            c = b + an / c
            c = c if abs(c) >= _TINY else _TINY
            d = 1 / d
            h *= d * c
            if abs(d * c - 1) < _EPS:
                return exp(log_prefix) * h
    raise ArithmeticError(f"Q({a}, {x}) did not converge")


def chi_square_sf(x: float, df: int) -> float:
    """P(X ≥ x) for X chi-square with ``df`` degrees of freedom."""
    return _gamma_q(df / 2, x / 2)


def chi_square_critical(df: int, alpha: float = ALPHA) -> float:
    """The x with ``chi_square_sf(x, df) == alpha`` (by bisection, to 1e-10 relative)."""
    low, high = 0.0, df + 20 * sqrt(2 * df) + 100
    while high - low > 1e-10 * high:
        middle = (low + high) / 2
        if chi_square_sf(middle, df) > alpha:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def normal_p(z: float) -> float:
    """Two-sided p-value of a standard normal ``z``."""
    return erfc(abs(z) / sqrt(2))


def wald_wolfowitz(low: int, high: int) -> tuple[float, float]:
    """Mean and variance of the number of runs in a random arrangement of ``low`` and ``high``
    elements of two kinds."""
    n = low + high
    both = 2 * low * high
    return both / n + 1, both * (both - n) / (n * n * (n - 1))


def runs_distribution(low: int, high: int) -> dict[int, float]:
    """The exact probability of each number of runs in a random arrangement of ``low`` and
    ``high`` elements of two kinds (both at least 1): 2k runs split each kind into k blocks,
    2k + 1 runs one kind into k + 1 and the other into k."""
    arrangements = comb(low + high, low)
    odds: dict[int, float] = {}
    for k in range(1, min(low, high) + 1):
        odds[2 * k] = 2 * comb(low - 1, k - 1) * comb(high - 1, k - 1) / arrangements
        odd = comb(low - 1, k) * comb(high - 1, k - 1) + comb(low - 1, k - 1) * comb(high - 1, k)
        if odd:
            odds[2 * k + 1] = odd / arrangements
    return odds
