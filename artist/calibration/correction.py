"""The per-tier correction a calibration profile applies to a backend's all-reduce times.

    t' = t0 + (t - t0) / bandwidth_factor + hops x hop_latency_s

- t: the backend's time for the all-reduce; t0: the backend's own time for the
  same placement at a negligible size (base_seconds: 1 byte per rank, asked of
  the same backend), i.e. the backend's fixed start-up part. t - t0 is the
  size-dependent, bandwidth-bound part.
- bandwidth_factor: the bandwidth the hardware really achieves over the one the
  backend modelled for that tier (e.g. ~0.93 for an NDR NIC that measures
  46-48 GB/s against a 50 GB/s line rate; above 1 when NCCL uses an algorithm
  that beats the modelled ring, such as NVLink SHARP on H100). It divides only
  the size-dependent part: a bandwidth factor says nothing about start-up
  latency (profile format <= 2 divided the whole time, t0 included).
- hop_latency_s: start-up latency per hop a chunk crosses in sequence, on
  top of what the backend already charges (NCCL's tuning-table latencies are
  lower bounds of what real runs pay: kernel launch, proxy thread, network
  stack, pipeline fill).

The hops counted are those of the tier the placement spans, along the path
one chunk takes through the all-reduce (the latency chain of NCCL's own
model, src/graph/tuning.cc): on one machine a ring's chunk crosses 2(N-1)
NVLink hops (N ranks); across m machines it crosses 2(m-1) machine
boundaries, each through the NICs, with ring or hierarchical all-reduce alike.
Counting every lock-step step instead (2(N-1) for 16 ranks on 2 machines) would
charge a NIC's extra latency 30 times for a chunk that crosses a NIC twice.

NCCL's tuner picks algorithm, protocol and channel count by message size, so a
tier's correction is piecewise by size (SizeRegimes): one TierCorrection per
regime of the measured sweep (regimes.py), each fitted on that regime's sizes.
A size uses the regime whose [from_bytes, next regime's from_bytes) contains it;
sizes below the first regime's from_bytes use the first regime and sizes above
the measured range the last (the nearest regime: no log says what NCCL does
there, and the nearest regime's algorithm is the likeliest).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from artist.placement import Placement


@dataclass(frozen=True)
class TierCorrection:
    bandwidth_factor: float = 1.0
    hop_latency_s: float = 0.0

    def __post_init__(self):
        if not self.bandwidth_factor > 0:
            raise ValueError(f"bandwidth_factor must be > 0, got {self.bandwidth_factor}")

    def apply(self, seconds: float, hops: int, base_seconds: float) -> float:
        """base_seconds: the backend's time for the same placement at a negligible size (t0)."""
        if seconds == 0.0:
            return 0.0  # nothing to communicate (one rank): nothing to correct
        return base_seconds + (seconds - base_seconds) / self.bandwidth_factor + hops * self.hop_latency_s


@dataclass(frozen=True)
class SizeRegime:
    from_bytes: int  # smallest measured size of the regime
    correction: TierCorrection


@dataclass(frozen=True)
class SizeRegimes:
    """A tier's correction, piecewise by all-reduce size (see the module docstring)."""

    regimes: tuple[SizeRegime, ...]

    def __post_init__(self):
        if not self.regimes:
            raise ValueError("a tier needs at least one size regime")
        starts = [r.from_bytes for r in self.regimes]
        if any(b <= a for a, b in zip(starts, starts[1:])):
            raise ValueError(f"size regimes must start at increasing sizes, got {starts}")

    @classmethod
    def single(cls, correction: TierCorrection, from_bytes: int = 0) -> "SizeRegimes":
        return cls((SizeRegime(int(from_bytes), correction),))

    def index_for(self, nbytes: int) -> int:
        return bisect_right([r.from_bytes for r in self.regimes[1:]], nbytes)

    def at(self, nbytes: int) -> TierCorrection:
        return self.regimes[self.index_for(nbytes)].correction

    def apply(self, seconds: float, hops: int, nbytes: int, base_seconds: float) -> float:
        return self.at(nbytes).apply(seconds, hops, base_seconds)


def base_probe_bytes(placement: Placement) -> int:
    """The negligible all-reduce size whose backend time is t0: 1 byte per rank (> 0, so every
    backend simulates a collective; its bandwidth term is < 1 ns on any modelled link)."""
    return max(1, placement.size)


def base_seconds(model, placement: Placement) -> float:
    """t0: the backend's own time for an all-reduce of base_probe_bytes on this placement
    (asked through the model's collective_seconds, so any backend works; a latency cache around
    the backend stores it like any other answer)."""
    return float(model.collective_seconds(placement, base_probe_bytes(placement)))


def latency_hops(placement: Placement) -> int:
    """Hops of the placement's own tier along one chunk's path through an all-reduce
    (ring or hierarchical): 2(N-1) NVLink hops on one machine, 2(m-1) NIC crossings over m machines."""
    n = placement.size
    machines = len(placement.gpus_by_machine)
    if n < 2:
        return 0
    return 2 * (n - 1) if machines == 1 else 2 * (machines - 1)
