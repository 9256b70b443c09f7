"""The network stack, built in one place from one spec: Calibrated(Cached(backend)).

    spec = CommSpec("ns3", channels=8, calibration="calibration/profiles/h100-ns3.yaml",
                    cache=str(default_cache_path()))
    comm = spec.build(topology)          # a FabricModel; or fabric_for(spec, topology): once per process

A CommSpec is what every command parses its network options into (backend,
algorithm, channels, backend options, calibration profile, cache file); it is
frozen and hashable, so a sweep run or a latency-table row carries it to a
worker process, which builds the stack there (models are rebuilt, not pickled:
an ns-3 model holds C++ state).

The cache sits inside the calibration so it keeps raw backend answers, valid for
every profile and after a re-fit; the correction is cheap to re-apply.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from artist.calibration.profile import CalibrationProfile, load_profile
from artist.network.cache import Cached, LatencyStore
from artist.network.calibrated import Calibrated
from artist.network.collectives import algorithm_refusal
from artist.topology import Topology


def _analytical(topology: Topology, **settings):
    from artist.network.analytical import AnalyticalModel

    return AnalyticalModel(topology, **settings)


def _ns3(topology: Topology, **settings):
    from artist.network.ns3 import Ns3Model  # imported when asked for: ns-3 is an optional install

    return Ns3Model(topology, **settings)


def _flow(topology: Topology, **settings):
    from artist.network.flow import FlowModel

    return FlowModel(topology, **settings)


def _none(topology: Topology, **settings):
    from artist.network.free import FreeNetworkModel

    return FreeNetworkModel(topology, **settings)


# Backend name -> factory(topology, algorithm=, channels=, **options).
BACKENDS: Mapping[str, Callable] = {"analytical": _analytical, "flow": _flow, "ns3": _ns3, "none": _none}


def _sorted_items(options: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(dict(options).items()))


@dataclass(frozen=True)
class CommSpec:
    """How to build a command's or a run's network stack. options: the backend's own options
    (ns3: transport, accelerate), given as a mapping or pairs, kept as sorted (name, value) pairs
    with scalar values, so that a spec is hashable (fabric_for's memo key)."""

    backend: str = "analytical"
    algorithm: str = "ring"
    channels: int = 1
    options: tuple[tuple[str, Any], ...] = ()
    calibration: str | None = None  # calibration profile YAML; None: uncalibrated
    cache: str | None = None  # the latency cache's SQLite file; None: no cache

    def __post_init__(self):
        object.__setattr__(self, "options", _sorted_items(self.options))
        try:
            hash(self.options)
        except TypeError:
            raise ValueError(f"backend options must have scalar values, got {dict(self.options)}") from None

    def backend_model(self, topology: Topology):
        """The bare backend, neither cached nor calibrated."""
        factory = BACKENDS.get(self.backend)
        if factory is None:
            raise ValueError(f"unknown comm backend {self.backend!r}; known: {', '.join(BACKENDS)}")
        refusal = algorithm_refusal(self.backend, self.algorithm)
        if refusal:
            raise ValueError(refusal)
        return factory(topology, algorithm=self.algorithm, channels=self.channels, **dict(self.options))

    def build(self, topology: Topology, profile: CalibrationProfile | None = None):
        """Calibrated(Cached(backend)), each layer only when asked for. profile: the calibration
        profile already loaded (a sweep ships it to workers, which may not have the file);
        default: loaded from self.calibration."""
        model = self.backend_model(topology)
        if self.backend == "none":  # nothing to cache, nothing to correct: a profile here is a mistake
            if profile is not None or self.calibration is not None:
                raise ValueError("backend none (free communication) takes no calibration profile")
            return model
        if self.cache is not None:
            model = Cached(model, LatencyStore(self.cache))
        if profile is None and self.calibration is not None:
            profile = load_profile(self.calibration)
        if profile is not None:
            model = Calibrated(model, profile)
        return model

    def resolved(self) -> "CommSpec":
        """Absolute paths, so that workers with another working directory find the same files."""
        def absolute(p):
            return None if p is None else str(Path(p).resolve())

        return CommSpec(self.backend, self.algorithm, self.channels, self.options, absolute(self.calibration),
                        absolute(self.cache))


def cached_layer(comm) -> Cached | None:
    """The Cached layer inside a built stack (its session counts hits and misses), or None."""
    while comm is not None:
        if isinstance(comm, Cached):
            return comm
        comm = getattr(comm, "inner", None)
    return None


# One stack per (spec, topology, profile) per process: a worker imports ns-3 once and the
# cache's in-process memo serves every later question of that worker. The pid keeps a forked
# child from using its parent's stack (an ns-3 model's worker process belongs to the parent).
_STACKS: "OrderedDict[tuple, object]" = OrderedDict()
_STACKS_MAX = 16


def fabric_for(spec: CommSpec, topology: Topology, profile: CalibrationProfile | None = None):
    """spec.build(topology, profile), built once per process and reused."""
    key = (spec, topology, profile.id if profile is not None else None, os.getpid())
    comm = _STACKS.get(key)
    if comm is None:
        comm = _STACKS[key] = spec.build(topology, profile)
        while len(_STACKS) > _STACKS_MAX:
            _STACKS.popitem(last=False)
    return comm


def forget_stacks() -> None:
    """Drop every memoised stack (benchmarks: the next build starts cold, like a new process)."""
    _STACKS.clear()
