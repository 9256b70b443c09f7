"""Small sweep specs for the sweep tests: a hand-sized topology and traces whose results are easy to
compute by hand."""

from __future__ import annotations

from pathlib import Path

import yaml

from conftest import small_topology_mapping

# 1-GPU jobs have no communication, so a job runs exactly iterations x compute_seconds (the
# topology has one GPU type, the reference, speed 1.0).
TINY_TRACE = "job_id,arrival,model,gpus,iterations\na,0,resnet50,1,1000\nb,0,resnet18,1,3000\n"


def write_topology(directory: Path, filename: str = "topo.yaml", **kw) -> Path:
    path = directory / filename
    path.write_text(yaml.safe_dump(small_topology_mapping(**kw)))
    return path


def write_spec(directory: Path, body: dict, name: str = "spec.yaml") -> Path:
    path = directory / name
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


def tiny_spec(directory: Path, **overrides) -> Path:
    """racks [1, 2] of one 1-GPU machine, FIFO, the two-job trace: 2 runs."""
    write_topology(directory, racks=1, machines_per_rack=1, gpus_per_machine=1)
    (directory / "tiny.csv").write_text(TINY_TRACE)
    body = {"name": "tiny", "topology": "topo.yaml", "racks": [1, 2], "policies": ["fifo"],
            "workloads": [{"spec": "tiny.csv", "label": "tiny"}], "seeds": [0], "comm": "analytical",
            "simulator": {"round_interval_s": None, "restore_seconds": 30}}
    body.update(overrides)
    return write_spec(directory, body)


def generated_spec(directory: Path, **overrides) -> Path:
    """A few generated workloads on a 2x2x4 cluster: 8 runs with multi-GPU jobs (so real comm)."""
    write_topology(directory)
    body = {"name": "gen", "topology": "topo.yaml", "racks": [1, 2], "policies": ["fifo"],
            "workloads": ["poisson:n=30,interarrival=200,gpus=1|2|4|8,min_iter=200,max_iter=5000",
                          "batch:n=20,gpus=1|2|4|8,min_iter=200,max_iter=5000"],
            "seeds": [0, 1], "comm": "analytical"}
    body.update(overrides)
    return write_spec(directory, body)
