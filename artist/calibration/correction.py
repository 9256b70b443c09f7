"""The correction a calibration profile applies to a backend's collective times.

    t' = max(0, t0 + latency_s + hops x hop_latency_s) + (t - t0) / bandwidth_factor

The terms follow NCCL's own cost model (src/graph/tuning.cc): a collective costs a
base latency, a hardware latency per step the algorithm takes in sequence, and
its size over the bus bandwidth.

- t: the backend's time for the collective; t0: the backend's own time for the
  same collective on the same group at a negligible size (1 byte per rank,
  base_seconds). t0 already holds the backend's base latency and its per-hop
  latencies x the algorithm's step count (NCCL's tuning-table values on the
  analytical backend), so it scales with the node count as NCCL's model does.
  t - t0 is the size-dependent, bandwidth-bound part.
- bandwidth_factor: the bus bandwidth the hardware really achieves over the one
  the backend modelled (e.g. ~0.93 for an NDR NIC that measures 46-47 GB/s
  against a 50 GB/s line rate; above 1 where NCCL runs an algorithm that beats
  the modelled ring, such as NVLink SHARP for all-reduce on one H100 machine).
  It divides only the size-dependent part.
- latency_s: a fixed cost per call on top of the backend's t0 (kernel launch,
  proxy thread, network stack: what NCCL's tuning-table latencies leave out).
  It is the same for any node count: a log of one node count cannot tell a
  base latency from a per-hop latency (its hop count is a constant), so the
  fit keeps the backend's own per-hop latency and fits only this constant. It
  may be negative (the backend charges more than the log shows), down to -t0
  of the fitted groups; the corrected fixed part is never below zero.
- hop_latency_s: extra latency per hop of the group's own tier along one
  chunk's path (latency_hops), fitted only when the logs of a tier span two or
  more hop counts (node counts), because only then do the data say how the
  fixed cost grows with them; otherwise 0 (the backend's own per-hop latency
  stays the only term that grows with the node count).

NCCL's tuner picks algorithm, protocol and channel count by message size, so a
tier's correction of one collective kind is piecewise by size (SizeRegimes):
one TierCorrection per regime of the measured sweep (regimes.py), each fitted
on that regime's sizes. A size uses the regime whose [from_bytes, next regime's
from_bytes) contains it; sizes above the measured range the last (the nearest
regime: no log says what NCCL does there). Sizes below the first regime (below
the smallest size the logs measured) keep only the first regime's bandwidth
factor: its fixed latency belongs to the protocol NCCL ran at the measured
sizes, and smaller messages may run another one (LL / LL128) with another fixed
cost that no log shows, so the backend's own start-up latency (NCCL's table
value) stays. Measured on the shipped logs that reach down to 8 B - 32 KiB,
extrapolating the fitted latency made the stas00 A100 sizes below 1 MiB 96 %
off against 24 % uncalibrated (its 1 - 8 MiB regime has a ~101 us floor that
smaller sizes do not have).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from artist.placement import Placement

# The collective kinds a profile corrects (artist.parallel.graph.COMMUNICATION) and the
# nccl-tests binaries that measure them.
KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv")
NCCL_TEST_KIND = {"all_reduce": "all_reduce", "all_gather": "all_gather", "reduce_scatter": "reduce_scatter",
                  "alltoall": "all_to_all", "sendrecv": "send_recv"}
KIND_NCCL_TEST = {v: k for k, v in NCCL_TEST_KIND.items()}


@dataclass(frozen=True)
class TierCorrection:
    bandwidth_factor: float = 1.0
    latency_s: float = 0.0
    hop_latency_s: float = 0.0

    def __post_init__(self):
        if not self.bandwidth_factor > 0:
            raise ValueError(f"bandwidth_factor must be > 0, got {self.bandwidth_factor}")
        if self.hop_latency_s < 0:
            raise ValueError(f"hop_latency_s must be >= 0, got {self.hop_latency_s}")

    def apply(self, seconds: float, hops: int, base_seconds: float) -> float:
        """base_seconds: the backend's time for the same group at a negligible size (t0)."""
        if seconds == 0.0:
            return 0.0  # nothing to communicate (one rank): nothing to correct
        fixed = max(0.0, base_seconds + self.latency_s + hops * self.hop_latency_s)
        return fixed + (seconds - base_seconds) / self.bandwidth_factor


@dataclass(frozen=True)
class SizeRegime:
    from_bytes: int  # smallest measured size of the regime
    correction: TierCorrection


@dataclass(frozen=True)
class SizeRegimes:
    """One kind's correction in one tier, piecewise by size (see the module docstring)."""

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
        if nbytes < self.regimes[0].from_bytes:  # below every measured size: the bandwidth factor only
            return TierCorrection(bandwidth_factor=self.regimes[0].correction.bandwidth_factor)
        return self.regimes[self.index_for(nbytes)].correction

    def apply(self, seconds: float, hops: int, nbytes: int, base_seconds: float) -> float:
        return self.at(nbytes).apply(seconds, hops, base_seconds)


def base_probe_bytes(placement: Placement) -> int:
    """The negligible size whose backend time is t0: 1 byte per rank (> 0, so every backend
    simulates a collective; its bandwidth term is < 1 ns on any modelled link)."""
    return max(1, placement.size)


def base_seconds(model, placement: Placement, kind: str = "all_reduce") -> float:
    """t0: the backend's own time for a collective of base_probe_bytes on this group (asked
    through the model's collective_seconds, so any backend works; a latency cache around the
    backend stores it like any other answer)."""
    return float(model.collective_seconds(placement, base_probe_bytes(placement), kind))


def latency_hops(placement: Placement, kind: str = "all_reduce") -> int:
    """Hops of the group's own tier along one chunk's path through the collective (NCCL's
    step count, tuning.cc): all-reduce 2(N-1) NVLink hops on one machine, 2(m-1) NIC crossings
    over m machines (ring or hierarchical); all-gather and reduce-scatter half of that (one
    pass); all-to-all and send/recv one step."""
    n = placement.size
    if n < 2:
        return 0
    machines = len(placement.gpus_by_machine)
    span = n if machines == 1 else machines
    if kind == "all_reduce":
        return 2 * (span - 1)
    if kind in ("all_gather", "reduce_scatter"):
        return span - 1
    return 1
