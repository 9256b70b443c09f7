"""Crius' offline communication profiles: per (operator, group size) a table of times by bytes,
read by traffic-based interpolation (Crius sec. 5.1: "communication-operator latency depends only on the
interconnect and the bytes transferred; profiled offline ... obtained by traffic-based interpolation").

    table = CommTable(pool_topology, fabric)
    table.seconds("all_reduce", gpus=4, nbytes=3e7)          # group packed on the pool's first machines
    table.seconds("send_recv", gpus=2, nbytes=1e6, across_machines=True)

Offline "measurements" are the fabric model's answers on a canonical group (the pool's GPUs 0..n-1,
packed machine by machine; send_recv between GPU 0 and GPU 1, or GPU 0 and the first GPU of the next
machine) at bytes 1 KiB x 4^k up to 64 GiB; between samples the time is interpolated linearly in
log(bytes) - log(seconds). The estimate therefore differs from the ground truth (the fabric on the real
placement) by interpolation error and by placement, as Crius' estimator does.
"""

from __future__ import annotations

import bisect
import math

from artist.placement import Placement
from artist.topology import Topology

SAMPLE_BYTES = tuple(1024 * 4 ** k for k in range(14))  # 1 KiB .. 64 GiB


class CommTable:
    def __init__(self, topology: Topology, fabric):
        self.topology, self.fabric = topology, fabric
        self._tables: dict = {}

    def _canonical(self, kind: str, gpus: int, across_machines: bool) -> Placement:
        if kind == "send_recv":
            other = self.topology.gpus_per_machine if across_machines else 1
            return Placement(self.topology, (0, other))
        return Placement(self.topology, tuple(range(gpus)))

    def _table(self, kind: str, gpus: int, across_machines: bool) -> list[float]:
        key = (kind, gpus, across_machines)
        found = self._tables.get(key)
        if found is None:
            group = self._canonical(kind, gpus, across_machines)
            found = self._tables[key] = [self.fabric.collective_seconds(group, b, kind) for b in SAMPLE_BYTES]
        return found

    def seconds(self, kind: str, gpus: int, nbytes: float, across_machines: bool = False) -> float:
        if nbytes <= 0 or (kind != "send_recv" and gpus <= 1):
            return 0.0
        times = self._table(kind, gpus, across_machines)
        if nbytes <= SAMPLE_BYTES[0]:
            return times[0]
        i = min(bisect.bisect_left(SAMPLE_BYTES, nbytes), len(SAMPLE_BYTES) - 1)
        if times[i - 1] <= 0 or times[i] <= 0:  # backend none (communication free): no log to take
            return times[i - 1] + (times[i] - times[i - 1]) * (nbytes - SAMPLE_BYTES[i - 1]) / (
                SAMPLE_BYTES[i] - SAMPLE_BYTES[i - 1])
        x0, x1 = math.log(SAMPLE_BYTES[i - 1]), math.log(SAMPLE_BYTES[i])
        y0, y1 = math.log(times[i - 1]), math.log(times[i])
        return math.exp(y0 + (y1 - y0) * (math.log(nbytes) - x0) / (x1 - x0))
