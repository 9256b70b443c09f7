"""Running sweeps: hand-computed results, resume after a kill, redo of half-written runs, and tables
that do not depend on the worker count."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from artist.policies.fifo import Fifo
from artist.policies.registry import policy_names, register
from artist.sweep.run import run_sweep
from artist.sweep.spec import load_sweep_spec
from artist.sweep.store import RUN_FILES, ResultStore
from artist.workload import load_models
from conftest import REPO
from sweep_helpers import generated_spec, tiny_spec


def sweep(spec_path, out, cache, **kw):
    kw.setdefault("n_jobs", 1)
    kw.setdefault("plots", False)
    return run_sweep(load_sweep_spec(spec_path), out, progress=False, cache_dir=cache, **kw)


def test_results_match_hand_computed_fifo_on_one_and_two_gpus(tmp_path):
    report = sweep(tiny_spec(tmp_path), tmp_path / "out", tmp_path / "cache")
    assert report.failed == [] and len(report.executed) == 2
    table = pd.read_csv(report.results_csv)
    models = load_models()
    # Job a: resnet50 x 1000 iterations, job b: resnet18 x 3000, both 1 GPU, both at t = 0 (trace order a, b).
    ta = 1000 * models["resnet50"].compute_seconds
    tb = 3000 * models["resnet18"].compute_seconds
    one, two = table[table["racks"] == 1].iloc[0], table[table["racks"] == 2].iloc[0]
    # One GPU: FIFO runs a, then b.
    assert one["makespan_s"] == pytest.approx(ta + tb, rel=1e-12)
    assert one["jct_mean_s"] == pytest.approx((ta + (ta + tb)) / 2, rel=1e-12)
    assert one["queueing_mean_s"] == pytest.approx(ta / 2, rel=1e-12)
    # Two GPUs: both start at once.
    assert two["makespan_s"] == pytest.approx(max(ta, tb), rel=1e-12)
    assert two["jct_mean_s"] == pytest.approx((ta + tb) / 2, rel=1e-12)
    assert two["queueing_mean_s"] == 0.0
    assert (table["comm_latency_mean_s"] == 0.0).all()  # single-GPU jobs exchange nothing
    assert list(table["gpus"]) == [1, 2] and list(table["jobs"]) == [2, 2] and list(table["finished"]) == [2, 2]
    # The per-job table of each run is stored next to its parameters.
    jobs = pd.read_parquet(report.out_dir / "runs" / one["run_id"] / "jobs.parquet")
    assert sorted(jobs["job_id"]) == ["a", "b"]
    params = json.loads((report.out_dir / "runs" / one["run_id"] / "params.json").read_text())
    assert params["identity"]["topology"]["racks"] == 1 and params["run_id"] == one["run_id"]


def test_every_axis_is_a_column_and_rows_follow_the_axes(tmp_path):
    report = sweep(generated_spec(tmp_path), tmp_path / "out", tmp_path / "cache")
    table = pd.read_parquet(report.results_parquet)
    assert len(table) == 2 * 2 * 2  # racks x workloads x seeds
    for column in ("topology", "racks", "policy", "workload", "seed", "backend", "algorithm", "channels",
                   "calibration"):
        assert column in table.columns
    keys = list(zip(table["racks"], table["workload"].map({w: i for i, w in enumerate(pd.unique(table["workload"]))}),
                    table["seed"]))
    assert keys == sorted(keys)
    assert table["finished"].eq(table["jobs"]).all()
    assert (table["comm_latency_mean_s"] > 0).all()  # multi-GPU jobs do communicate


def test_killed_sweep_resumes_without_redoing_finished_runs(tmp_path):
    spec_path, out, cache = generated_spec(tmp_path), tmp_path / "out", tmp_path / "cache"
    stored = []

    def kill_after_three(run, outcome):
        stored.append(run.run_id)
        if len(stored) == 3:
            raise KeyboardInterrupt  # as a Ctrl-C or a kill between two runs: the store holds 3 runs

    with pytest.raises(KeyboardInterrupt):
        sweep(spec_path, out, cache, on_stored=kill_after_three)
    assert not (out / "results.csv").exists()
    finished = {p.name: p.stat().st_ino for p in (out / "runs").iterdir() if not p.name.startswith(".")}
    assert set(finished) == set(stored)

    report = sweep(spec_path, out, cache)
    assert report.already_done == 3
    assert len(report.executed) == 8 - 3 and not set(report.executed) & set(stored)
    # The finished run directories were not rewritten.
    assert {name: (out / "runs" / name).stat().st_ino for name in finished} == finished

    again = sweep(spec_path, out, cache)
    assert again.executed == [] and again.already_done == 8


def test_half_written_runs_are_redone(tmp_path):
    spec_path, out, cache = tiny_spec(tmp_path), tmp_path / "out", tmp_path / "cache"
    first = sweep(spec_path, out, cache)
    reference = (out / "results.csv").read_bytes()
    run_a, run_b = (out / "runs" / i for i in sorted(first.executed))
    # A run directory that lost a file (a copy cut short), and a temporary directory a killed writer left.
    (run_a / "jobs.parquet").unlink()
    shutil.copytree(run_b, out / "runs" / f".tmp-{run_b.name}-host-1-abcd")
    (out / "runs" / f".tmp-{run_b.name}-host-1-abcd" / "summary.json").write_text("{half")

    report = sweep(spec_path, out, cache)
    assert report.executed == [run_a.name] and report.already_done == 1
    assert sorted(p.name for p in run_a.iterdir()) == sorted(RUN_FILES)
    assert not list((out / "runs").glob(".tmp-*"))
    assert (out / "results.csv").read_bytes() == reference


def test_run_directory_of_another_run_is_not_taken_as_done(tmp_path):
    spec = load_sweep_spec(tiny_spec(tmp_path))
    out = tmp_path / "out"
    sweep(tiny_spec(tmp_path), out, tmp_path / "cache")
    store = ResultStore(out)
    a, b = spec.runs
    params = json.loads((store.run_dir(a.run_id) / "params.json").read_text())
    params["identity"]["workload"]["seed"] = 99
    (store.run_dir(a.run_id) / "params.json").write_text(json.dumps(params))
    assert not store.is_done(a) and store.is_done(b)


def test_table_is_byte_identical_whatever_the_worker_count(tmp_path):
    spec_path = generated_spec(tmp_path)
    one = sweep(spec_path, tmp_path / "j1", tmp_path / "cache1", n_jobs=1)
    two = sweep(spec_path, tmp_path / "j2", tmp_path / "cache2", n_jobs=2)
    # A warm cache and a resumed half must not change a byte either.
    warm = sweep(spec_path, tmp_path / "warm", tmp_path / "cache1", n_jobs=2)
    assert warm.cache_misses == 0 and warm.cache_hits > 0
    for name in ("results.csv", "results.parquet"):
        reference = (one.out_dir / name).read_bytes()
        assert (two.out_dir / name).read_bytes() == reference, name
        assert (warm.out_dir / name).read_bytes() == reference, name
    for run_id in one.executed:
        a = pd.read_parquet(one.out_dir / "runs" / run_id / "jobs.parquet")
        b = pd.read_parquet(two.out_dir / "runs" / run_id / "jobs.parquet")
        pd.testing.assert_frame_equal(a, b)


def test_failed_run_is_reported_and_no_table_written(tmp_path):
    # In-process (n_jobs=1), so the policy registered here is the one the run uses.
    if "test-broken" not in policy_names():
        @register("test-broken")
        class _Broken(Fifo):
            def schedule(self, view):
                raise RuntimeError("deliberately broken policy")

    spec_path = tiny_spec(tmp_path, policies=["fifo", "test-broken"])
    report = sweep(spec_path, tmp_path / "out", tmp_path / "cache")
    assert len(report.executed) == 2  # the FIFO runs are stored ...
    assert len(report.failed) == 2 and all("deliberately broken policy" in err for _, err in report.failed)
    assert {run.axes["policy"] for run, _ in report.failed} == {"test-broken"}
    assert report.results_csv is None and not (tmp_path / "out" / "results.csv").exists()  # ... no table with holes
    # each failure's traceback is kept beside the runs, named by run id; the progress line gives its last line
    kept = {p.stem: p.read_text() for p in (tmp_path / "out" / "failed").iterdir()}
    assert set(kept) == {run.run_id for run, _ in report.failed}
    assert all("Traceback" in text and "RuntimeError: deliberately broken policy" in text for text in kept.values())


def test_a_run_that_fails_then_succeeds_leaves_no_failure_behind(tmp_path, monkeypatch):
    import artist.sweep.worker as worker

    spec_path = tiny_spec(tmp_path)
    real = worker.simulate
    calls = []

    def flaky(*args, **kwargs):  # the first run asked fails once, as a killed ns-3 worker would make it
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("ns-3 worker crashed (exit code -9)")
        return real(*args, **kwargs)

    monkeypatch.setattr(worker, "simulate", flaky)
    first = sweep(spec_path, tmp_path / "out", tmp_path / "cache")
    assert len(first.failed) == 1 and len(list((tmp_path / "out" / "failed").iterdir())) == 1
    again = sweep(spec_path, tmp_path / "out", tmp_path / "cache")
    assert again.failed == [] and list((tmp_path / "out" / "failed").iterdir()) == []


def test_dry_run_lists_runs_and_count_and_runs_nothing(tmp_path):
    spec_path = generated_spec(tmp_path)
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(REPO / "run_sweep.py"), str(spec_path), "--dry-run", "--out", str(out)],
                          capture_output=True, text=True, cwd=tmp_path,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 8 + 1 and lines[-1].startswith("8 runs (0 done, 8 to run)")
    assert all(" todo " in line for line in lines[:-1])
    assert not out.exists()


def test_cli_sweep_prints_where_table_and_plots_are(tmp_path):
    spec_path = tiny_spec(tmp_path)
    out = tmp_path / "out"
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "ARTIST_CACHE_DIR": str(tmp_path / "cache"),
           "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, "-m", "artist.cli", "sweep", str(spec_path), "-j", "1", "--out", str(out),
                           "--quiet"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert f"table: {out / 'results.csv'}" in proc.stdout
    assert f"plots: {out / 'plots'}/" in proc.stdout
    for name in ("makespan", "jct", "comm_latency", "queueing_delay", "jct_cdf"):
        assert (out / "plots" / f"{name}.png").stat().st_size > 0 and (out / "plots" / f"{name}.pdf").stat().st_size > 0

    bad = tmp_path / "bad.yaml"
    bad.write_text("policies: [fifo]\nworkloads: [batch:n=2]\ntopology: topo.yaml\nracks: [0]\n")
    proc = subprocess.run([sys.executable, "-m", "artist.cli", "sweep", str(bad)], capture_output=True, text=True,
                          cwd=tmp_path, env=env)
    assert proc.returncode == 2 and "field 'racks[0]'" in proc.stderr and str(bad) in proc.stderr


def test_sigkilled_sweep_command_resumes_without_redoing_finished_runs(tmp_path):
    """The real thing: `run_sweep.py` killed with SIGKILL while it works, then the same command again."""
    spec_path, out = generated_spec(tmp_path), tmp_path / "out"
    cmd = [sys.executable, str(REPO / "run_sweep.py"), str(spec_path), "-j", "1", "--out", str(out), "--quiet",
           "--no-plots", "--cache-dir", str(tmp_path / "cache")]
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    runs = out / "runs"
    try:
        # Kill as soon as the first run is stored (or when the command ends by itself).
        while proc.poll() is None and not (runs.is_dir() and any(not p.name.startswith(".") for p in runs.iterdir())):
            time.sleep(0.01)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    finished = {p.name: p.stat().st_ino for p in runs.iterdir() if not p.name.startswith(".")}
    assert finished  # at least one run was stored before the kill

    again = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert f"({len(finished)} already done, {8 - len(finished)} run now, 0 failed)" in again.stdout
    assert {name: (runs / name).stat().st_ino for name in finished} == finished  # not rewritten
    assert len(pd.read_csv(out / "results.csv")) == 8
