"""ArtISt: network co-simulation for GPU-cluster scheduling research, as a Python API.

Every `artist` command has a function here that runs the same code, with the same checks and defaults:

    import artist

    result = artist.simulate("dally-3tier", "poisson:n=50,interarrival=120", policy="tiresias", racks=1)
    result.jobs                 # one row per job (jobs.csv); result.summary: the run's metrics (summary.csv)
    table = artist.run_sweep({"topology": "dally-3tier", "racks": [1, 2], "policies": ["fifo", "tiresias"],
                              "workloads": ["batch:n=20"], "comm": "analytical"})   # one row per run
    profile = artist.calibrate("calibration/data/gcp_a3mega_2node_16xH100_tcpxo.txt",
                               topology="calibration/topologies/gcp-a3mega.yaml", algorithm="hierarchical",
                               channels=8)
    table = artist.compute_latency_table("dally-3tier", standard=True)
    artist.assert_latency_table(table, "tests/golden/analytical_dally-3tier_dally-models_standard.csv", rtol=1e-6)

Bad input raises artist.InputError with the message the CLI prints. The names are imported when first used,
so `import artist` stays cheap (no pandas, no ns-3). `artist sweep` and `artist latency-table` are run_sweep and
compute_latency_table here: artist.sweep and artist.latency_table are the modules that implement them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> the module that defines it
_EXPORTS = {
    "load_topology": "artist.api.inputs",
    "load_workload": "artist.api.inputs",
    "load_models": "artist.api.inputs",
    "simulate": "artist.api.simulation",
    "Result": "artist.api.simulation",
    "run_sweep": "artist.api.sweeps",
    "SweepFailed": "artist.api.sweeps",
    "calibrate": "artist.api.calibration",
    "check": "artist.api.calibration",
    "comm": "artist.api.network",
    "compute_latency_table": "artist.api.network",
    "plans": "artist.api.plans",
    "assert_latency_table": "artist.testing",
    "InputError": "artist.errors",
    "CalibrationProfile": "artist.calibration.profile",
    "load_profile": "artist.api.calibration",
    "Topology": "artist.topology",
    "Job": "artist.workload.job",
}

__all__ = [  # _EXPORTS' names (tests/test_api.py checks they agree)
    "CalibrationProfile", "InputError", "Job", "Result", "SweepFailed", "Topology", "assert_latency_table",
    "calibrate", "check", "comm", "compute_latency_table", "load_models", "load_profile", "load_topology",
    "load_workload", "plans", "run_sweep", "simulate",
]

if TYPE_CHECKING:  # what type checkers and documentation tools see; at run time __getattr__ imports on use
    from artist.api.calibration import calibrate, check, load_profile
    from artist.api.inputs import load_models, load_topology, load_workload
    from artist.api.network import comm, compute_latency_table
    from artist.api.plans import plans
    from artist.api.simulation import Result, simulate
    from artist.api.sweeps import SweepFailed, run_sweep
    from artist.calibration.profile import CalibrationProfile
    from artist.errors import InputError
    from artist.testing import assert_latency_table
    from artist.topology import Topology
    from artist.workload.job import Job


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'artist' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once imported, an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
