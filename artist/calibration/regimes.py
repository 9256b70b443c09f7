"""Where NCCL evidently switches algorithm, protocol or channel count within one nccl-tests sweep.

NCCL picks, per call and by size, the algorithm (ring, tree, NVLS...), the
protocol (LL, LL128, Simple) and the number of channels. Within one such
choice a collective's time is affine in its size, t = a + S / b, so the
incremental bandwidth between successive sizes, dS / dt, is the same for every
pair of sizes. A backend and a per-tier correction model one choice; fitting
across a switch fits two different machines with one line.

Rule (applied to measured times only, before any fit and before sizes are split
into fit and held-out): a regime boundary lies at size S_k when the incremental
bandwidth of the pair (S_k, S_k+1) differs from that of (S_k-1, S_k) by more than
KINK_RATIO either way, or when the time does not grow from one size to the
next (a latency floor). Noise in the shipped logs moves the incremental
bandwidth by < 25 % inside a regime (e.g. xxrjun 1 x 8 H100: 256-285 GB/s over
32 MiB - 16 GiB), while the switches move it by 1.7x to 10x (gcp a3mega: 20.7 ->
204 GB/s at 16 MiB; stas00 A100: 131 -> 59 -> 114 GB/s around 8-16 MiB).

The rule needs increments larger than the timing noise: where S/b is small
against the fixed time, a few % of noise can mark a false boundary (calibration
reads sizes >= 1 MiB only by default). A false boundary only shortens the fitted range; the sizes cut off stay reported.

Each regime gets its own correction (fit.py), so a regime needs sizes on both
sides of the fit / held-out split: two fitted sizes for the two parameters of an
affine line and at least one held out, i.e. MIN_REGIME_SIZES (3) sizes. Shorter
stretches are handled by plan_regimes, again from the measured times only:
1. successive short regimes are one stretch (the rule fires on both sides of a
   size that sits off both lines, e.g. stas00 A100 1-8 MiB: a latency floor
   followed by a protocol change, 1 size per "regime");
2. a stretch still short joins its nearer neighbour regime: the neighbour whose
   affine line, fitted by least squares on relative time to the neighbour's own
   measured sizes, is nearer the stretch's measured times (mean |relative
   deviation|), i.e. the NCCL choice the stretch most resembles (aws p4de: 16
   and 32 MiB, between kinks at 16 and 64 MiB, are on average 16 % off the
   64 MiB - 2 GiB line and 32 % off the 1-8 MiB one, so they join the former).
Fitting a 2-size stretch on its own (one size fitted with the bandwidth factor
only and the neighbour's hop latency, one held out) was tried and rejected: on
aws p4de it misses the held-out 32 MiB by 12 % (analytical) and removes 16 MiB
from the neighbour's fit, raising the log's median held-out error to 7.8 %
(against 5.0 % when joined).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

KINK_RATIO = 1.5
MIN_REGIME_SIZES = 3  # two fitted sizes for two parameters, one held out


@dataclass(frozen=True)
class Kink:
    size_bytes: int  # first size of the new regime
    line: int  # its row's line in the log
    reason: str


def incremental_bandwidth(sizes: Sequence[int], times_s: Sequence[float]) -> list[float | None]:
    """dS/dt in bytes/s for each pair of successive sizes; None when the time did not grow."""
    out = []
    for (s0, t0), (s1, t1) in zip(zip(sizes, times_s), zip(sizes[1:], times_s[1:])):
        out.append((s1 - s0) / (t1 - t0) if t1 > t0 else None)
    return out


def find_kinks(sizes: Sequence[int], times_s: Sequence[float], lines: Sequence[int] | None = None) -> list[Kink]:
    """Regime boundaries in a size sweep sorted by size (see the module docstring for the rule)."""
    if list(sizes) != sorted(sizes):
        raise ValueError("sizes must be sorted")
    lines = list(lines) if lines is not None else [0] * len(sizes)
    beta = incremental_bandwidth(sizes, times_s)
    kinks = []
    for k in range(1, len(beta)):
        before, after = beta[k - 1], beta[k]
        if before is None:
            reason = (f"time does not grow from {sizes[k - 1]} B to {sizes[k]} B "
                      f"({times_s[k - 1] * 1e6:.1f} -> {times_s[k] * 1e6:.1f} us): a latency floor")
        elif after is None:
            continue  # reported at the next size, where the floor ends
        elif not 1 / KINK_RATIO <= after / before <= KINK_RATIO:
            reason = (f"incremental bandwidth changes {after / before:.2f}x at {sizes[k]} B "
                      f"({before / 1e9:.1f} -> {after / 1e9:.1f} GB/s of payload)")
        else:
            continue
        kinks.append(Kink(int(sizes[k]), int(lines[k]), reason))
    if beta and beta[-1] is None:  # the sweep ends on a floor: its last size starts a regime of one
        kinks.append(Kink(int(sizes[-1]), int(lines[-1]), f"time does not grow at the last size {sizes[-1]} B"))
    return kinks


def last_regime_start(sizes: Sequence[int], times_s: Sequence[float]) -> int | None:
    """Smallest size of the regime that reaches the largest size (None: no sizes)."""
    if not sizes:
        return None
    kinks = find_kinks(sizes, times_s)
    return kinks[-1].size_bytes if kinks else int(sizes[0])


def _affine_line(sizes: Sequence[int], times_s: Sequence[float]):
    """t = a + S b by least squares on relative time error (the fit's own objective)."""
    s = np.asarray(sizes, dtype=float)
    t = np.asarray(times_s, dtype=float)
    coef, *_ = np.linalg.lstsq(np.column_stack([1.0 / t, s / t]), np.ones_like(t), rcond=None)
    return lambda x: coef[0] + coef[1] * np.asarray(x, dtype=float)


def _deviation(line, sizes: Sequence[int], times_s: Sequence[float]) -> float:
    t = np.asarray(times_s, dtype=float)
    return float(np.mean(np.abs(line(sizes) / t - 1.0)))


@dataclass(frozen=True)
class RegimePlan:
    from_bytes: int  # first size of the regime
    sizes: int  # how many sizes of the sweep it holds


def plan_regimes(sizes: Sequence[int], times_s: Sequence[float]) -> list[RegimePlan]:
    """The regimes the fit treats separately, smallest sizes first (module docstring). One
    regime when the sweep has fewer than MIN_REGIME_SIZES sizes."""
    if list(sizes) != sorted(sizes):
        raise ValueError("sizes must be sorted")
    if not sizes:
        return []
    cuts = {k.size_bytes for k in find_kinks(sizes, times_s)}
    bounds = [0] + [i for i, s in enumerate(sizes) if s in cuts] + [len(sizes)]
    regimes = [[a, b] for a, b in zip(bounds, bounds[1:])]  # index ranges [a, b) into sizes

    def short(r):
        return r[1] - r[0] < MIN_REGIME_SIZES

    joined: list[list[int]] = []  # step 1: successive short regimes are one stretch
    for r in regimes:
        if joined and short(joined[-1]) and short(r):
            joined[-1][1] = r[1]
        else:
            joined.append(list(r))
    k = 0
    while k < len(joined) and len(joined) > 1:  # step 2: a stretch still short joins its nearer neighbour
        if not short(joined[k]):
            k += 1
            continue
        a, b = joined[k]
        options = []
        for n in (k - 1, k + 1):
            if 0 <= n < len(joined):
                na, nb = joined[n]
                line = _affine_line(sizes[na:nb], times_s[na:nb])
                options.append((_deviation(line, sizes[a:b], times_s[a:b]), n))
        lo, hi = sorted((k, min(options)[1]))
        joined[lo:hi + 1] = [[joined[lo][0], joined[hi][1]]]
        k = lo
    return [RegimePlan(int(sizes[a]), b - a) for a, b in joined]


def regime_starts(sizes: Sequence[int], times_s: Sequence[float]) -> list[int]:
    """First size of each regime of plan_regimes, smallest first."""
    return [r.from_bytes for r in plan_regimes(sizes, times_s)]
