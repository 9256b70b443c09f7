"""The per-tier correction a calibration profile applies to a backend's all-reduce times.

    t' = t / bandwidth_factor + hops x hop_latency_s

- bandwidth_factor: the bandwidth the hardware really achieves over the one the
  backend modelled for that tier (e.g. ~0.93 for an NDR NIC that measures
  46-48 GB/s against a 50 GB/s line rate; above 1 when NCCL uses an algorithm
  that beats the modelled ring, such as NVLink SHARP on H100). It divides the
  whole modelled time, so it is exact for bandwidth-bound sizes and slightly
  over-scales the (small) modelled start-up latency.
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
"""

from __future__ import annotations

from dataclasses import dataclass

from artist.placement import Placement


@dataclass(frozen=True)
class TierCorrection:
    bandwidth_factor: float = 1.0
    hop_latency_s: float = 0.0

    def __post_init__(self):
        if not self.bandwidth_factor > 0:
            raise ValueError(f"bandwidth_factor must be > 0, got {self.bandwidth_factor}")

    def apply(self, seconds: float, hops: int) -> float:
        if seconds == 0.0:
            return 0.0  # nothing to communicate (one rank): nothing to correct
        return seconds / self.bandwidth_factor + hops * self.hop_latency_s


def latency_hops(placement: Placement) -> int:
    """Hops of the placement's own tier along one chunk's path through an all-reduce
    (ring or hierarchical): 2(N-1) NVLink hops on one machine, 2(m-1) NIC crossings over m machines."""
    n = placement.size
    machines = len(placement.gpus_by_machine)
    if n < 2:
        return 0
    return 2 * (n - 1) if machines == 1 else 2 * (machines - 1)
