"""The values a sweep spec's axes take, each loaded and checked (sweep/spec.py makes them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from artist.topology import Topology

# Columns of the results table that name a run's axes, in sort order.
AXIS_COLUMNS = ("topology", "racks", "policy", "workload", "seed", "backend", "algorithm", "channels", "calibration")


@dataclass(frozen=True)
class TopologyChoice:
    path: str  # as written in the spec
    topology: Topology  # loaded, with the file's own rack count
    sha256: str  # of the file's bytes


@dataclass(frozen=True)
class PolicyChoice:
    label: str
    name: str
    params: dict = field(hash=False)
    params_json: str = ""
    plugin: str = ""  # absolute path of the file registering the policy (artist/policies/plugins.py); "" = built in


@dataclass(frozen=True)
class WorkloadChoice:
    label: str
    spec: str  # as written in the spec
    resolved: str  # the generator text, or the trace's absolute path
    identity: dict = field(hash=False)  # {"generator": text} or {"trace_sha256": ...}


@dataclass(frozen=True)
class CalibrationChoice:
    label: str  # "" for none
    path: str  # as written
    profile: Any = None  # artist.calibration.CalibrationProfile


NO_CALIBRATION = CalibrationChoice("", "", None)
