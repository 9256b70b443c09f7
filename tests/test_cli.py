"""The `artist` command end to end, as a user runs it."""

import subprocess
import sys

import pandas as pd

from conftest import REPO


def artist(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "artist.cli", *args], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})


def test_simulate_shipped_default_writes_tables(tmp_path):
    out = tmp_path / "results"
    proc = artist("simulate", "--topology", "topologies/dally-3tier.yaml", "--racks", "2",
                  "--workload", "workloads/traces/small.csv", "--policy", "fifo", "--comm", "analytical",
                  "--out", str(out), "--no-cache")
    assert proc.returncode == 0, proc.stderr
    assert "makespan" in proc.stdout
    jobs = pd.read_csv(out / "jobs.csv")
    trace = pd.read_csv(REPO / "workloads" / "traces" / "small.csv")
    assert sorted(jobs["job_id"].astype(str)) == sorted(trace["job_id"].astype(str))
    assert jobs["jct_s"].notna().all()
    assert (out / "summary.parquet").exists() and (out / "utilisation.csv").exists()


def test_bad_topology_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "t.yaml"
    bad.write_text("name: t\nracks: [\n")
    proc = artist("simulate", "--topology", str(bad))
    assert proc.returncode == 2
    assert str(bad) in proc.stderr and "line" in proc.stderr
