"""Calibrated(inner, profile): a FabricModel whose collective times a calibration profile corrects.

It lives in network (not calibration) because it is a layer of the network stack,
Calibrated(Cached(backend)) (stack.py); calibration itself only reads profiles and
fits against a backend passed in, so it never imports network.
"""

from __future__ import annotations

from artist.calibration.correction import base_seconds, latency_hops
from artist.calibration.profile import CalibrationProfile
from typing import Mapping

from artist.network.base import GraphTiming
from artist.parallel.graph import StepGraph
from artist.placement import Placement


# Settings of shortcuts that tests show within 1 % of the full run (ns-3's steady-state skipping): a profile
# fitted with or without one corrects a backend with or without it (checking a profile fitted on full runs
# with skipping is what makes an 80-GPU log's 16 GiB sizes affordable).
SHORTCUT_SETTINGS = ("accelerate",)


def _identity_matches(wanted: dict, identity: dict) -> bool:
    """The profile's backend identity is found in the model's identity, at the top level or in a
    wrapper's 'inner' identity (e.g. a cache around the backend); shortcut settings aside."""
    if all(identity.get(k) == v for k, v in wanted.items() if k not in SHORTCUT_SETTINGS):
        return True
    inner = identity.get("inner")
    return isinstance(inner, dict) and _identity_matches(wanted, inner)


class Calibrated:
    """A FabricModel whose collective times are corrected by a calibration profile.

    Works on any FabricModel: every communication node of a graph (all-reduce, all-gather,
    reduce-scatter, all-to-all, send/recv) is corrected by the profile's correction for the
    tier its group spans and its kind, in the regime of its own size (NCCL picks algorithm and
    protocol per call), with t0 the inner model's time for the same kind at 1 byte per rank
    (once per canonical shape and kind); the graph's timeline is then recomputed from the
    corrected durations. A tier and kind the profile leaves uncalibrated passes unchanged
    (details say which kinds were left)."""

    def __init__(self, inner, profile: CalibrationProfile):
        identity = inner.identity()
        if not _identity_matches(profile.backend, identity):
            raise ValueError(f"calibration profile {profile.name!r} was fitted for backend {profile.backend}, "
                             f"but the model is {identity}; fit a profile with these settings (artist calibrate)")
        if not callable(getattr(inner, "collective_seconds", None)):
            raise ValueError(f"backend {getattr(inner, 'name', inner)!r} has no collective_seconds(group, nbytes): "
                             f"calibration needs it for the backend's own fixed time t0 (correction.base_seconds)")
        self.inner = inner
        self.profile = profile
        self.name = f"{inner.name}+calibrated"
        self._base: dict = {}  # (canonical shape, kind) -> t0 (the topology's link parameters are the profile's)

    @property
    def topology(self):
        return self.inner.topology

    def identity(self) -> dict:
        return {"calibrated": True, "calibration_profile": self.profile.id, "inner": self.inner.identity()}

    def _correct(self, placement: Placement, kind: str, seconds: list[float],
                 sizes: list[int]) -> tuple[list[float], str, bool]:
        """(corrected seconds, tier, whether a correction applied)."""
        self.profile.check_topology(placement.topology)
        tier = placement.tier
        regimes = self.profile.correction(tier, kind)
        if regimes is None:
            return list(seconds), tier, False
        hops = latency_hops(placement, kind)
        t0 = self._base_seconds(placement, kind) if any(seconds) else 0.0  # nothing to correct: no probe
        return [regimes.apply(s, hops, n, t0) for s, n in zip(seconds, sizes)], tier, True

    def _base_seconds(self, placement: Placement, kind: str) -> float:
        """t0 of the correction, once per canonical shape and kind: by the topology's symmetry every
        placement of a shape has the same backend times (the backends' own memo key)."""
        key = (placement.canonical_shape, kind)
        if key not in self._base:
            self._base[key] = base_seconds(self.inner, placement, kind)
        return self._base[key]

    def collective_seconds(self, group: Placement, nbytes: int, kind: str = "all_reduce") -> float:
        seconds = float(self.inner.collective_seconds(group, nbytes, kind))
        if group.size < 2:
            return seconds
        return self._correct(group, kind, [seconds], [int(nbytes)])[0][0]

    def _correct_graph(self, graph: StepGraph, timing: GraphTiming) -> GraphTiming:
        seconds = list(timing.node_seconds)
        by_group: dict[tuple, list[int]] = {}  # communication nodes per (communicator, kind), in node order
        for node in graph.nodes:
            if node.is_communication:
                by_group.setdefault((node.group, node.kind), []).append(node.id)
        tiers, left = set(), set()
        for (group, kind), ids in by_group.items():
            placement = Placement(self.topology, group)
            if placement.size < 2:
                continue
            corrected, tier, applied = self._correct(placement, kind, [seconds[i] for i in ids],
                                                     [graph.nodes[i].nbytes for i in ids])
            if not applied:
                left.add((tier, kind))
                continue
            tiers.add(tier)
            for i, s in zip(ids, corrected):
                seconds[i] = s
        details = {**timing.result.details, "calibration_profile": self.profile.id,
                   "calibration_tier": ",".join(sorted(tiers))}
        if left:  # the profile has no correction there: the backend's answer passes as it is
            details["uncalibrated_kinds"] = sorted({kind for _, kind in left})
            details["uncalibrated"] = sorted(f"{tier}:{kind}" for tier, kind in left)
        return GraphTiming.of(graph, seconds, timing.result.replace(calibrated=True, details=details))

    def time(self, graphs: Mapping[str, StepGraph]) -> dict[str, GraphTiming]:
        timings = self.inner.time(graphs)
        return {job: self._correct_graph(graphs[job], timings[job]) for job in graphs}
