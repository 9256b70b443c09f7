"""sweeps/dally-policies.yaml, the Dally policy study (formerly artist/experiments/dally_policies.py):
its jobs are the study's, and a shrunk copy gives every policy and workload a row, byte-identical
on a rerun and on a restart."""

from pathlib import Path

import pandas as pd
import pytest
import yaml

from artist.sweep.run import run_sweep
from artist.sweep.spec import load_sweep_spec
from artist.workload import JobMix, batch_jobs, load_models, poisson_jobs

from conftest import REPO

SPEC = REPO / "sweeps" / "dally-policies.yaml"
POLICIES = ("fifo", "gandiva", "tiresias", "dally", "dally-manual", "dally-nowait", "dally-fullyconsolidated")
# The study's workload as the experiment script defined it, in code.
GPU_CHOICES = (1, 2, 4, 8, 16, 32)
GPU_WEIGHTS = (0.30, 0.20, 0.20, 0.15, 0.10, 0.05)
REFERENCE_GPUS = 256  # the Poisson mean inter-arrival (60 s) is stated for the 4-rack cluster


def test_the_spec_generates_the_studys_jobs_at_every_cluster_size():
    spec = load_sweep_spec(SPEC)
    assert len(spec.runs) == 4 * len(POLICIES) * 2
    assert {r.policy.name for r in spec.runs} == set(POLICIES)
    assert {r.comm.backend for r in spec.runs} == {"analytical"}
    mix = JobMix(models=tuple(sorted(load_models())), gpu_choices=GPU_CHOICES, gpu_weights=GPU_WEIGHTS)
    for run in spec.runs:
        gpus = run.topology.gpus
        assert run.axes["racks"] * 64 == gpus
        if run.axes["workload"] == "batch":
            expected = batch_jobs(500, mix, 0)
        else:
            expected = poisson_jobs(400, mix, 60.0 * REFERENCE_GPUS / gpus, 0)  # same offered load at every size
        assert list(run.jobs) == expected, run.describe()


def _shrunk(directory: Path) -> Path:
    """The shipped spec on 1 rack with 12-job workloads (the experiment test's --racks 1 --batch-jobs 12
    --poisson-jobs 12 --interarrival 600)."""
    body = yaml.safe_load(SPEC.read_text())
    body["topology"] = str(REPO / "topologies" / "dally-3tier.yaml")
    body["racks"] = [1]
    for w in body["workloads"]:
        w["spec"] = w["spec"].replace("n=500", "n=12").replace("n=400", "n=12").replace("interarrival=60,",
                                                                                       "interarrival=600,")
    path = directory / "dally-policies-small.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


@pytest.fixture
def small_spec(tmp_path):
    path = _shrunk(tmp_path)
    assert all("n=12" in w.spec for w in load_sweep_spec(path).workloads)
    return path


def test_a_small_copy_writes_a_complete_deterministic_table(small_spec, tmp_path):
    cache = tmp_path / "cache"
    first = run_sweep(load_sweep_spec(small_spec), tmp_path / "a", n_jobs=1, progress=False, plots=False,
                      cache_dir=cache)
    assert not first.failed and len(first.executed) == 2 * len(POLICIES)
    table = pd.read_csv(first.results_csv)
    assert sorted(map(tuple, table[["workload", "policy"]].values)) == sorted(
        (w, p) for w in ("batch", "poisson") for p in POLICIES)
    assert (table["finished"] == 12).all() and (table["jobs"] == 12).all()
    # A second output directory, computed afresh: the same bytes.
    second = run_sweep(load_sweep_spec(small_spec), tmp_path / "b", n_jobs=1, progress=False, plots=False,
                       cache_dir=tmp_path / "cache-b")
    assert first.results_csv.read_bytes() == second.results_csv.read_bytes()
    # Restarting in the same directory reuses the finished runs and gives the same table.
    again = run_sweep(load_sweep_spec(small_spec), tmp_path / "a", n_jobs=1, progress=False, plots=False,
                      cache_dir=cache)
    assert again.already_done == again.total == 2 * len(POLICIES) and not again.executed
    assert again.results_csv.read_bytes() == second.results_csv.read_bytes()
