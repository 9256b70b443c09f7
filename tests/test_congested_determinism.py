"""Determinism with contention on: the same sweep, seed and inputs give byte-identical tables.

A small congested fabric (2 racks x 2 machines x 4 GPUs on 2 NICs each, 100 Gb/s ECMP spine ports at
4:1, as topologies/dally-3tier-ecmp-4to1-100g.yaml in miniature), multi-GPU jobs co-simulated by the
flow backend (contention: shared); two runs in fresh output and cache directories must agree to the
byte, and the runs must really contend (some slowdown > 1), or the check would prove nothing."""

from __future__ import annotations

import pandas as pd
import yaml
from conftest import small_topology_mapping
from sweep_helpers import write_spec

from artist.sweep.run import run_sweep
from artist.sweep.spec import load_sweep_spec


def _spec(directory):
    topology = small_topology_mapping(racks=2, machines_per_rack=2, gpus_per_machine=4, oversubscription=4.0)
    topology["tiers"]["rack"]["nics_per_machine"] = 2
    topology["tiers"]["spine"].update(bandwidth_gbps=100.0, model="ecmp")
    (directory / "topo.yaml").write_text(yaml.safe_dump(topology))
    return write_spec(directory, {
        "name": "congested", "topology": "topo.yaml", "racks": [2], "policies": ["gandiva", "tiresias"],
        "workloads": ["batch:n=6,gpus=5|6,min_iter=200,max_iter=1000,models=vgg11"], "seeds": [0],
        "comm": {"backend": "flow", "algorithm": "ring", "channels": 2},
        "simulator": {"round_interval_s": None, "restore_seconds": 30, "contention": "shared"}})


def test_same_seed_gives_byte_identical_tables_with_contention(tmp_path):
    spec = load_sweep_spec(_spec(tmp_path))
    outs = []
    for attempt in ("a", "b"):
        report = run_sweep(spec, tmp_path / f"out-{attempt}", n_jobs=1, progress=False,
                           cache_dir=tmp_path / f"cache-{attempt}", plots=False)
        outs.append(report.out_dir)
    # every table (results.csv, each run's jobs.csv and utilisation.csv) and each run's summary.json;
    # run.json is a log (wall time, host, pid), not a result
    files = sorted(p.relative_to(outs[0]) for p in [*outs[0].rglob("*.csv"), *outs[0].rglob("summary.json")])
    assert sum(f.name == "jobs.csv" for f in files) == 2 and sum(f.name == "summary.json" for f in files) == 2
    for name in files:
        assert (outs[1] / name).read_bytes() == (outs[0] / name).read_bytes(), name
    results = pd.read_csv(outs[0] / "results.csv")
    assert results["contention_slowdown_max"].max() > 1.0  # the jobs did contend
