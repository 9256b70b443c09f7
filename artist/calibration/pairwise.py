"""How much the node pairs of a cluster differ: nccl-tests sendrecv logs of two nodes at a time, read side by side.

    report = pairwise_report(paths)      # artist calibrate --pairwise --logs LOG...
    report.pairs, report.groups, report.spread

Each log holds one pair of hosts (two nodes, any GPUs per node); its sendrecv test's bus bandwidth at large
sizes (the median over sizes >= LARGE_BYTES, where start-up latency no longer shows) is that pair's. A
ring runs at its slowest pair, so the spread between pairs bounds how far one bandwidth factor per tier can
be right for every placement.

Where the pairs fall into a fast and a slow set (the largest step between successive sorted bandwidths is at
least GAP), the nodes joined by fast pairs are one group: nodes behind one leaf switch cross no spine
between them. The shipped logs of one H100 cluster (xxrjun, 2 x 8 GPUs, 45 pairs of 10 nodes) give three
groups, {2, 3}, {4, 5, 6, 7, 8, 10, 11} and {9}, 45.8-46.3 GB/s within, 41.6-43.1 GB/s across: the
difference is by path, so a factor per node cannot express it (each of 4-8 is fast with one set of nodes and
slow with another). A pair that is slow although both its nodes are in one group is listed as inconsistent.
This reports; the topology does not yet take per-path factors.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from artist.calibration.nccl_tests import parse_nccl_tests
from artist.errors import InputError

LARGE_BYTES = 1 << 30  # sizes at and above this set a pair's bandwidth (the logs' latency-free regime)
GAP = 0.02  # relative step between successive sorted pair bandwidths that splits fast from slow pairs (the
# shipped 2 x 8 logs: steps inside each set <= 0.9 %, between them 6.3 %)


@dataclass(frozen=True)
class PairBandwidth:
    hosts: tuple[str, str]
    busbw_gbs: float  # median bus bandwidth of its sendrecv test over sizes >= LARGE_BYTES
    sizes: int  # sizes it was read from
    log: str


@dataclass
class PairwiseReport:
    pairs: list[PairBandwidth]
    groups: list[tuple[str, ...]] = field(default_factory=list)  # nodes joined by fast pairs; [] when no split
    threshold_gbs: float | None = None  # fast pairs are above it (None: no step of GAP or more)
    inconsistent: list[PairBandwidth] = field(default_factory=list)  # slow pairs inside one group

    @property
    def spread(self) -> float:
        """1 - slowest / fastest pair."""
        values = [p.busbw_gbs for p in self.pairs]
        return 1.0 - min(values) / max(values)

    def within(self) -> list[float]:
        group_of = {host: g for g, members in enumerate(self.groups) for host in members}
        return [p.busbw_gbs for p in self.pairs if group_of.get(p.hosts[0], -1) == group_of.get(p.hosts[1], -2)]

    def across(self) -> list[float]:
        group_of = {host: g for g, members in enumerate(self.groups) for host in members}
        return [p.busbw_gbs for p in self.pairs if group_of.get(p.hosts[0], -1) != group_of.get(p.hosts[1], -2)]


def pair_bandwidth(path: str | Path) -> PairBandwidth:
    """The pair of hosts of one two-node log and its sendrecv bandwidth at large sizes."""
    log = parse_nccl_tests(path)
    tests = [t for t in log.tests if t.collective == "sendrecv"]
    if not tests:
        raise InputError(log.source, None, "no sendrecv test: a pairwise log needs one")
    test = tests[0]
    hosts = test.hosts
    if len(hosts) != 2:
        raise InputError(log.source, f"line {test.devices_line or test.first_line}",
                         f"a pairwise log runs on two hosts, this sendrecv test on {len(hosts)}"
                         + ("" if hosts else " (no 'Using devices' block names them)"))
    rows = [r for r in test.rows if r.size_bytes >= LARGE_BYTES and r.out_of_place.busbw_gbs]
    if not rows:
        raise InputError(log.source, f"line {test.first_line}",
                         f"no sendrecv size of at least {LARGE_BYTES} B with a bus bandwidth")
    return PairBandwidth(tuple(sorted(hosts)), statistics.median(r.out_of_place.busbw_gbs for r in rows),
                         len(rows), log.source)


def pairwise_report(paths: Sequence[str | Path]) -> PairwiseReport:
    pairs = sorted((pair_bandwidth(p) for p in paths), key=lambda p: p.hosts)
    seen: dict[tuple[str, str], str] = {}
    for p in pairs:
        if p.hosts in seen:
            raise InputError(p.log, None, f"hosts {p.hosts[0]} and {p.hosts[1]} are also the pair of {seen[p.hosts]}")
        seen[p.hosts] = p.log
    if len(pairs) < 2:
        raise InputError(str(paths[0]) if paths else "command line", None,
                         "the spread between pairs needs logs of at least two pairs")
    report = PairwiseReport(pairs)
    values = sorted(p.busbw_gbs for p in pairs)
    steps = [(b / a - 1.0, a, b) for a, b in zip(values, values[1:]) if a > 0]
    step, low, high = max(steps)
    if step < GAP:
        return report
    report.threshold_gbs = (low + high) / 2
    # nodes joined by fast pairs: connected components (union-find), in order of first appearance
    parent: dict[str, str] = {h: h for p in pairs for h in p.hosts}

    def root(h: str) -> str:
        while parent[h] != h:
            parent[h] = parent[parent[h]]
            h = parent[h]
        return h

    for p in pairs:
        if p.busbw_gbs > report.threshold_gbs:
            a, b = root(p.hosts[0]), root(p.hosts[1])
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups: dict[str, list[str]] = {}
    for h in sorted(parent):
        groups.setdefault(root(h), []).append(h)
    report.groups = sorted((tuple(g) for g in groups.values()), key=lambda g: g[0])
    group_of = {h: g for g, members in enumerate(report.groups) for h in members}
    report.inconsistent = [p for p in pairs if group_of[p.hosts[0]] == group_of[p.hosts[1]]
                           and p.busbw_gbs <= report.threshold_gbs]
    return report


def report_lines(report: PairwiseReport) -> list[str]:
    """The report as text, one line each."""
    values = [p.busbw_gbs for p in report.pairs]
    lines = [f"{len(report.pairs)} pairs of {len({h for p in report.pairs for h in p.hosts})} hosts, sendrecv bus "
             f"bandwidth at sizes >= {LARGE_BYTES >> 20} MiB: {min(values):.1f}-{max(values):.1f} GB/s, spread "
             f"{100 * report.spread:.1f} % (1 - slowest / fastest)"]
    if report.threshold_gbs is None:
        lines.append(f"no step of {100 * GAP:.0f} % or more between the pairs' bandwidths: one group")
    else:
        within, across = report.within(), report.across()
        lines.append(f"groups (nodes joined by pairs above {report.threshold_gbs:.1f} GB/s): "
                     + " | ".join(", ".join(g) for g in report.groups))
        if within:
            lines.append(f"within groups: {min(within):.1f}-{max(within):.1f} GB/s ({len(within)} pairs)")
        if across:
            lines.append(f"across groups: {min(across):.1f}-{max(across):.1f} GB/s ({len(across)} pairs); "
                         f"median across / median within: {statistics.median(across) / statistics.median(within):.3f}"
                         if within else f"across groups: {min(across):.1f}-{max(across):.1f} GB/s")
        for p in report.inconsistent:
            lines.append(f"inconsistent: {p.hosts[0]} - {p.hosts[1]} at {p.busbw_gbs:.1f} GB/s inside one group "
                         f"({p.log})")
    for p in report.pairs:
        lines.append(f"  {p.hosts[0]:>12} - {p.hosts[1]:<12} {p.busbw_gbs:6.1f} GB/s  ({p.sizes} sizes)")
    return lines
