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

The calibration fits the last regime, the one that reaches the largest sizes
(gradient buckets are MiB to GiB); the sizes below it are still simulated and
reported as "outside the fitted range", never silently dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

KINK_RATIO = 1.5


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
