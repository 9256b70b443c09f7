"""Fitting a per-tier, per-collective, per-size-regime correction of a backend to measured nccl-tests times.

For every test of every log (all_reduce, all_gather, reduce_scatter, alltoall,
sendrecv): lay the log's ranks out on the calibration topology (nodes ->
machines, packed into as few racks as possible), ask the backend for the time
of the same collective at each size, and pair it with the measured time
(sendrecv: nccl-tests' every rank sending to the next, timed as one pair of ring
neighbours, whose links no other pair uses). Points are grouped by the tier the
group spans (machine, rack, network), by collective kind and, within those, by
NCCL regime: the size ranges in which the measured times show one algorithm /
protocol / channel count (regimes.py, decided on the measured times only,
before the split). Each regime's TierCorrection (bandwidth factor, fixed
latency per call, and a latency per hop only where the points span two or more
hop counts) is the least-squares solution of the relative time errors of its
fit points. Inside
each regime sizes alternate between fitting and held out (sorted by size, the
first, third, ... are fitted), so every regime (>= 3 sizes, regimes.py) reports
an error on sizes the fit never saw. Sizes below an explicit fit_from are
simulated and reported as "outside", never fitted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from statistics import median
from typing import Iterable, Sequence

import numpy as np
from scipy.optimize import lsq_linear

from artist.calibration.correction import (NCCL_TEST_KIND, SizeRegime, SizeRegimes, TierCorrection, base_seconds,
                                          latency_hops)
from artist.calibration.nccl_tests import NcclLog, NcclTest
from artist.calibration.plausibility import impossible_rows
from artist.calibration.regimes import RegimePlan, plan_regimes
from artist.errors import InputError
from artist.placement import MACHINE, NETWORK, RACK, TIER_ORDER, Placement, placement_from_shape
from artist.topology import Topology

TIERS = (MACHINE, RACK, NETWORK)
FIT, HELD_OUT, OUTSIDE = "fit", "held-out", "outside"
AUTO = "auto"  # size regimes from regimes.regime_starts
SINGLE = "single"  # one regime over the whole fitted range
MIB = 1024 * 1024
# Bounds of the fitted parameters: the factor may not change the modelled bandwidth by more than
# 1000x either way; the fixed latency per call may take back at most the backend's own fixed time
# t0 of the fitted groups (a time never goes below zero) and add at most 10 ms; the extra per-hop
# latency is >= 0 because NCCL's tuning-table latencies, which the backends charge already, are
# lower bounds of what real runs pay.
FACTOR_BOUNDS = (1e-3, 1e3)
LATENCY_MAX_US = 1e4
HOP_LATENCY_BOUNDS_US = (0.0, 1e4)


@dataclass(frozen=True)
class Point:
    log: str  # file name of the log
    line: int  # the size row's line in the log
    test_line: int
    size_bytes: int
    ranks: int
    measured_s: float
    simulated_s: float  # backend, uncorrected
    base_s: float  # t0: the backend's time for the same placement at a negligible size (correction.base_seconds)
    hops: int  # latency hops of the placement's tier (correction.latency_hops)
    tier: str
    shape: str
    role: str  # FIT, HELD_OUT or OUTSIDE (below the fitted size range)
    kind: str = "all_reduce"  # collective kind (correction.KINDS)
    regime_from: int = 0  # first size of the point's NCCL regime in its own test (regimes.plan_regimes)
    corrected_s: float | None = None

    @property
    def error_before(self) -> float:
        return self.simulated_s / self.measured_s - 1.0

    @property
    def error_after(self) -> float | None:
        return None if self.corrected_s is None else self.corrected_s / self.measured_s - 1.0


def parse_layout(text: str) -> tuple[int, ...]:
    """'2x8' -> (8, 8); '1,1' -> (1, 1): GPUs per node."""
    text = text.strip()
    if m := re.fullmatch(r"(\d+)x(\d+)", text):
        nodes, per_node = int(m[1]), int(m[2])
        if nodes < 1 or per_node < 1:
            raise ValueError(f"layout {text!r}: nodes and GPUs per node must be >= 1")
        return (per_node,) * nodes
    try:
        counts = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise ValueError(f"layout {text!r}: expected NODESxGPUS (e.g. 2x8) or per-node counts (e.g. 8,4)") from None
    if not counts or min(counts) < 1:
        raise ValueError(f"layout {text!r}: every node needs >= 1 GPU")
    return counts


def layout_of_test(test: NcclTest, claimed: Sequence[int] | None = None) -> tuple[int, ...]:
    """GPUs per node of a test: from its 'Using devices' block, else from the user's claim.
    A claim that disagrees with the block, or a rank count that disagrees with busbw/algbw, is an error."""
    where = f"test at line {test.first_line}"
    layout = test.gpus_per_host if test.devices else None
    if claimed is not None:
        claimed = tuple(claimed)
        if layout is not None and sorted(layout) != sorted(claimed):
            raise InputError(test.source, f"line {test.devices_line}",
                             f"'Using devices' lists GPUs per node {list(layout)}, but the layout given is "
                             f"{list(claimed)}")
        layout = layout or claimed
    if layout is None:
        raise InputError(test.source, where,
                         "the log has no 'Using devices' block; give its layout (e.g. --layout 2x8)")
    implied = test.implied_ranks
    if implied is not None and implied != sum(layout):
        raise InputError(test.source, where,
                         f"busbw/algbw implies {implied} ranks but the layout has {sum(layout)} ({list(layout)})")
    return tuple(layout)


def placement_for_layout(topology: Topology, layout: Sequence[int], source: str = "<layout>",
                         where: str | None = None) -> Placement:
    """Nodes become machines (largest first), packed into as few racks as possible. The
    topology grows racks if the log has more nodes than it holds: the rack count does not change
    any link parameter."""
    layout = sorted(layout, reverse=True)
    too_big = [g for g in layout if g > topology.gpus_per_machine]
    if too_big:
        raise InputError(source, where, f"a node of the log runs {too_big[0]} ranks but machines of topology "
                                        f"{topology.name!r} hold {topology.gpus_per_machine} GPUs")
    per_rack = topology.machines_per_rack
    shape = [layout[i:i + per_rack] for i in range(0, len(layout), per_rack)]
    if len(shape) > topology.racks:
        topology = topology.with_racks(len(shape))
    return placement_from_shape(topology, shape)


def _roles(sizes: Sequence[int], plans: Sequence[RegimePlan], fit_from: int) -> list[tuple[str, RegimePlan | None]]:
    """(role, regime) per size: OUTSIDE below fit_from, then fit / held-out alternating inside
    each regime, the regime's smallest size fitted first."""
    out, k, current = [], 0, None
    for s in sizes:
        if s < fit_from:
            out.append((OUTSIDE, None))
            continue
        plan = max((p for p in plans if p.from_bytes <= s), key=lambda p: p.from_bytes)
        if plan is not current:
            current, k = plan, 0
        out.append((FIT if k % 2 == 0 else HELD_OUT, plan))
        k += 1
    return out


def size_regimes(sizes: Sequence[int], times_s: Sequence[float], regimes: str = AUTO) -> list[RegimePlan]:
    """The regimes the fit treats separately: AUTO = NCCL regimes of the measured times
    (regimes.plan_regimes), SINGLE = one regime."""
    if not sizes:
        return []
    if regimes == AUTO:
        return plan_regimes(sizes, times_s)
    if regimes == SINGLE:
        return [RegimePlan(int(sizes[0]), len(sizes))]
    raise ValueError(f"regimes must be {AUTO!r} or {SINGLE!r}, got {regimes!r}")


def test_kind(test: NcclTest) -> str | None:
    """The collective kind a test measures (correction.KINDS), None for one no backend simulates."""
    return NCCL_TEST_KIND.get(test.collective or "")


def simulate_test(model, topology: Topology, log: NcclLog, test: NcclTest,
                  claimed_layout: Sequence[int] | None = None, min_bytes: int = 1,
                  max_bytes: int | None = None, fit_from: int | None = None, regimes: str = AUTO,
                  allow_impossible: bool = False, excluded: list | None = None) -> list[Point]:
    """Pair every usable row of a test with the backend's time for the same collective.
    Rows below fit_from (None: no limit) are OUTSIDE the fit; the others are split into size
    regimes (size_regimes, on the measured times) and alternate between fit and held-out in each.
    A physically impossible row (plausibility.py) is refused, naming its line; allow_impossible: left
    out instead, and appended to `excluded` (plausibility.ImpossibleRow)."""
    kind = test_kind(test)
    if kind is None:
        raise InputError(log.source, f"line {test.first_line}",
                         f"only {', '.join(NCCL_TEST_KIND)} tests can be fitted (the collectives the backends "
                         f"simulate); this test is {test.collective or 'of an unknown collective'}")
    rank_issues = [i for i in test.issues if i.kind == "ranks"]
    if rank_issues:
        raise InputError(log.source, f"line {rank_issues[0].line}", rank_issues[0].message)
    layout = layout_of_test(test, claimed_layout)
    placement = placement_for_layout(topology, layout, log.source, f"line {test.devices_line or test.first_line}")
    if kind == "send_recv":
        if placement.size < 2:
            raise InputError(log.source, f"line {test.first_line}", "a sendrecv test needs at least 2 ranks")
        # nccl-tests' sendrecv: every rank sends to the next one at once; the pairs share no link direction,
        # so the test takes the time of its slowest pair: the first pair of ring neighbours that crosses the
        # highest tier the ring crosses (ranks 0 and 1 are an NVLink pair whenever a node holds two GPUs, while
        # the pairs that cross a NIC set the time: the 10 x 8 H100 log's sendrecv runs at 15 GB/s a pair)
        order = placement.ranks_in_ring_order()
        pairs = [Placement(placement.topology, (a, b)) for a, b in zip(order, order[1:] + order[:1])]
        placement = max(pairs, key=lambda pair: TIER_ORDER[pair.tier])
    hops = latency_hops(placement, kind)
    t0 = base_seconds(model, placement, kind)
    shape = "[" + ",".join("[" + ",".join(map(str, r)) + "]" for r in placement.canonical_shape) + "]"
    rows = sorted((r for r in test.rows
                   if r.size_bytes >= min_bytes and (max_bytes is None or r.size_bytes <= max_bytes)),
                  key=lambda r: r.size_bytes)
    missing = [r.line for r in rows if r.time_us is None or r.time_us <= 0]
    if missing:
        raise InputError(log.source, f"line {missing[0]}", "size row has no usable time (N/A or 0) to fit against")
    impossible = impossible_rows(topology, test, rows)
    if impossible and not allow_impossible:
        raise InputError(log.source, f"line {impossible[0].line}", impossible[0].reason + "; if the row is known "
                         "to be wrong, --allow-impossible keeps such rows out of the fit and records them in the "
                         "profile")
    if impossible:
        gone = {r.line for r in impossible}
        rows = [r for r in rows if r.line not in gone]
        if excluded is not None:
            excluded.extend(impossible)
    name = log.source.replace("\\", "/").rsplit("/", 1)[-1]
    start = 0 if fit_from is None else int(fit_from)
    inside = [r for r in rows if r.size_bytes >= start]
    plans = size_regimes([r.size_bytes for r in inside], [r.time_us * 1e-6 for r in inside], regimes)
    sizes = [r.size_bytes for r in rows]
    many = getattr(model, "collective_seconds_many", None)  # a backend that answers several sizes at once
    simulated = many(placement, sizes, kind) if many is not None else [
        model.collective_seconds(placement, b, kind) for b in sizes]
    return [Point(log=name, line=r.line, test_line=test.first_line, size_bytes=r.size_bytes, ranks=placement.size,
                  measured_s=r.time_us * 1e-6, simulated_s=float(seconds),
                  base_s=t0, hops=hops, tier=placement.tier, shape=shape, role=role, kind=kind,
                  regime_from=0 if plan is None else plan.from_bytes)
            for r, seconds, (role, plan) in zip(rows, simulated, _roles(sizes, plans, start))]


def fit_correction(points: Sequence[Point]) -> TierCorrection:
    """Least squares on relative time error: minimise
    sum_i ((max(0, t0_i + c + h_i x) + (t_i - t0_i)/f) / m_i - 1)^2 over (1/f, c[, x]), linear in
    them (the bounds keep the fixed part >= 0 on the fitted points), so solved exactly by a bounded
    linear least squares (deterministic). x, the extra latency per hop, is a parameter only when the
    points span two or more hop counts (node counts): one hop count cannot tell a fixed cost from a
    per-hop one, so the backend's own per-hop latency is kept and c absorbs the rest."""
    if not points:
        raise ValueError("no points to fit")
    m = np.array([p.measured_s for p in points])
    t0 = np.array([p.base_s for p in points])
    u = (np.array([p.simulated_s for p in points]) - t0) / m  # size-dependent part, relative
    b = 1.0 - t0 / m  # what the factor and the latencies must make up
    h = np.array([p.hops for p in points], dtype=float)
    lo_f, hi_f = FACTOR_BOUNDS
    if len({p.size_bytes for p in points}) < 2:
        # One size cannot separate bandwidth from latency: fit the bandwidth factor alone.
        a = float(np.clip(np.sum(u * b) / np.sum(u ** 2), 1 / hi_f, 1 / lo_f))
        return TierCorrection(bandwidth_factor=1.0 / a)
    lo_c = -float(np.min(t0)) * 1e6
    columns, lower, upper = [u, 1e-6 / m], [1 / hi_f, lo_c], [1 / lo_f, LATENCY_MAX_US]  # latencies in us
    per_hop = len(set(h)) > 1
    if per_hop:
        columns.append(h * 1e-6 / m)
        lower.append(HOP_LATENCY_BOUNDS_US[0])
        upper.append(HOP_LATENCY_BOUNDS_US[1])
    res = lsq_linear(np.column_stack(columns), b, bounds=(lower, upper), method="bvls")
    values = [float(v) for v in res.x]
    return TierCorrection(bandwidth_factor=1.0 / values[0], latency_s=values[1] * 1e-6,
                          hop_latency_s=values[2] * 1e-6 if per_hop else 0.0)


def tier_regime_starts(points: Sequence[Point]) -> list[int]:
    """A tier's regime starts: those of every test fitted in it (one test: its own regimes). A
    start whose range holds no fit point (only when tests disagree) is dropped, joining the
    range below it (the first range: the one above)."""
    inside = [p for p in points if p.role != OUTSIDE]
    starts = sorted({p.regime_from for p in inside})
    while len(starts) > 1:
        shell = SizeRegimes(tuple(SizeRegime(s, TierCorrection()) for s in starts))
        fitted = {shell.index_for(p.size_bytes) for p in inside if p.role == FIT}
        empty = [k for k in range(len(starts)) if k not in fitted]
        if not empty:
            break
        del starts[empty[0] if empty[0] > 0 else 1]
    return starts


def fit_tiers(points: Iterable[Point]) -> dict[str, dict[str, SizeRegimes]]:
    """Per tier and collective kind, one correction per size regime, fitted on that regime's FIT points only."""
    groups: dict[tuple[str, str], list[Point]] = {}
    for p in points:
        groups.setdefault((p.tier, p.kind), []).append(p)
    out: dict[str, dict[str, SizeRegimes]] = {}
    for (tier, kind), mine in sorted(groups.items()):
        if not any(p.role == FIT for p in mine):
            continue
        starts = tier_regime_starts(mine)
        shell = SizeRegimes(tuple(SizeRegime(s, TierCorrection()) for s in starts))
        fits: list[list[Point]] = [[] for _ in starts]
        for p in mine:
            if p.role == FIT:
                fits[shell.index_for(p.size_bytes)].append(p)
        out.setdefault(tier, {})[kind] = SizeRegimes(
            tuple(SizeRegime(s, fit_correction(f)) for s, f in zip(starts, fits)))
    return out


def apply_corrections(points: Iterable[Point], correction_of) -> list[Point]:
    """Points with corrected_s set; correction_of(tier, kind) -> SizeRegimes, or None for a tier
    and kind without a correction (corrected_s = the backend's own time: uncalibrated)."""
    out = []
    for p in points:
        c = correction_of(p.tier, p.kind)
        corrected = c.apply(p.simulated_s, p.hops, p.size_bytes, p.base_s) if c is not None else p.simulated_s
        out.append(replace(p, corrected_s=corrected))
    return out


def median_abs(values: Iterable[float | None]) -> float | None:
    values = [abs(v) for v in values if v is not None]
    return median(values) if values else None


def error_summary(points: Sequence[Point], min_bytes: int = MIB) -> dict:
    """Median |relative error| before and after: on held-out sizes >= min_bytes (the acceptance
    figure), on every size, and on the sizes outside the fitted range."""
    held = [p for p in points if p.role == HELD_OUT and p.size_bytes >= min_bytes]
    outside = [p for p in points if p.role == OUTSIDE]
    fitted = [p.size_bytes for p in points if p.role != OUTSIDE]
    return {
        "fit_range_bytes": [min(fitted), max(fitted)] if fitted else None,
        "points": len(points),
        "held_out_points": len(held),
        "held_out_median_error_before": median_abs(p.error_before for p in held),
        "held_out_median_error_after": median_abs(p.error_after for p in held),
        "all_median_error_before": median_abs(p.error_before for p in points),
        "all_median_error_after": median_abs(p.error_after for p in points),
        "outside_points": len(outside),
        "outside_median_error_before": median_abs(p.error_before for p in outside),
        "outside_median_error_after": median_abs(p.error_after for p in outside),
    }


def regime_summary(points: Sequence[Point], regimes: SizeRegimes, min_bytes: int = MIB) -> list[dict]:
    """error_summary's held-out figures per size regime (the regime each size is corrected with)."""
    out = []
    for k, r in enumerate(regimes.regimes):
        mine = [p for p in points if p.role != OUTSIDE and regimes.index_for(p.size_bytes) == k]
        if not mine:
            continue
        held = [p for p in mine if p.role == HELD_OUT and p.size_bytes >= min_bytes]
        out.append({
            "sizes_bytes": [min(p.size_bytes for p in mine), max(p.size_bytes for p in mine)],
            "fit_points": sum(p.role == FIT for p in mine),
            "held_out_points": len(held),
            "held_out_median_error_before": median_abs(p.error_before for p in held),
            "held_out_median_error_after": median_abs(p.error_after for p in held),
        })
    return out
