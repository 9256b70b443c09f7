"""A sweep run's identity: the sha256 of its fully resolved parameters, and the run id taken from it.

File contents enter the identity, not paths (a moved file is the same run; an edited
one is another); labels are names only and not part of it. The run's results live
under OUT/runs/<run id>/ (sweep/store.py), so a restarted sweep finds the runs it
has already done.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from artist.jsonkey import digest
from artist.policies.plugins import plugin_sha256
from artist.simulator import SimulatorConfig
from artist.sweep.axes import CalibrationChoice, PolicyChoice, TopologyChoice, WorkloadChoice

IDENTITY_FORMAT = 1  # bump when the meaning of the identity material changes
RUN_ID_HEX = 16  # 64 bits of sha256: collisions are not a concern for sweeps of any size we can run


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def models_sha256(directory: Path) -> str:
    """One digest of a model directory's profiles: file names and contents."""
    digest_ = hashlib.sha256()
    for p in sorted(directory.glob("*.yaml")):
        digest_.update(p.name.encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    return digest_.hexdigest()


def run_identity(topology: TopologyChoice, racks: int, models_digest: str, policy: PolicyChoice,
                 workload: WorkloadChoice, seed: int, backend: str, algorithm: str, channels: int, options: dict,
                 calibration: CalibrationChoice, simulator: SimulatorConfig) -> dict:
    return {
        "format": IDENTITY_FORMAT,
        "topology": {"sha256": topology.sha256, "racks": racks},
        "models_sha256": models_digest,
        # a plugin policy: its file's content (not path) enters, so an edited policy re-runs; built-ins keep their ids
        "policy": {"name": policy.name, "params": policy.params,
                   **({"plugin_sha256": plugin_sha256(policy.plugin)} if policy.plugin else {})},
        "workload": {**workload.identity, "seed": seed},
        "comm": {"backend": backend, "algorithm": algorithm, "channels": channels, "options": options},
        "calibration": calibration.profile.id if calibration.profile is not None else None,
        # contention enters only when shared, so that isolated runs keep the ids they always had; with it the
        # contention model, which changes shared answers
        "simulator": {"round_interval_s": simulator.round_interval_s, "restore_seconds": simulator.restore_seconds,
                      **({"contention": simulator.contention, "contention_model": simulator.contention_model}
                         if simulator.contention != "isolated" else {})},
    }


def run_id_of(identity: dict) -> str:
    return digest(identity)[:RUN_ID_HEX]
