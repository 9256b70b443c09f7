"""The shipped trace fixtures: workloads/traces/small.csv and helios_sample.csv."""

from __future__ import annotations

import csv
import json
from datetime import datetime
from pathlib import Path

import pytest

from artist.workload import HELIOS_COLUMNS, load_models, read_helios_csv, read_jobs_csv

TRACES = Path(__file__).resolve().parent.parent / "workloads" / "traces"
CLUSTER_GPUS = 2 * 8 * 8  # dally-3tier with 2 racks


@pytest.fixture(scope="module")
def models():
    return load_models()


@pytest.fixture(scope="module")
def small(models):
    return read_jobs_csv(TRACES / "small.csv", models=models)


def test_small_trace_size_and_models(small, models):
    assert 12 <= len(small) <= 20
    assert {j.model for j in small} == set(models)  # all six models appear


def test_small_trace_gpu_demands(small):
    assert {j.gpus for j in small} <= {1, 2, 4, 8, 16}
    assert min(j.gpus for j in small) == 1 and max(j.gpus for j in small) == 16
    assert max(j.gpus for j in small) <= CLUSTER_GPUS


def test_small_trace_fits_in_a_few_simulated_hours(small, models):
    # Compute-only durations at the reference speed (communication adds to these).
    durations = [j.iterations * models[j.model].compute_seconds for j in small]
    assert all(5 * 60 <= d <= 3600 for d in durations)
    assert max(j.arrival + d for j, d in zip(small, durations)) <= 2 * 3600
    # Lower bound on the makespan from GPU-seconds: well under a few hours on 128 GPUs.
    gpu_seconds = sum(j.gpus * d for j, d in zip(small, durations))
    assert gpu_seconds / CLUSTER_GPUS <= 3600


def test_small_trace_is_sorted_and_ids_unique(small):
    assert [j.arrival for j in small] == sorted(j.arrival for j in small)
    assert len({j.job_id for j in small}) == len(small)


# ------------------------------------------------------------------ Helios fixture

HELIOS_TIME = "%Y-%m-%d %H:%M:%S"  # cluster_log.csv timestamps (HeliosData README example rows)
HELIOS_STATES = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL"}


@pytest.fixture(scope="module")
def helios_rows():
    with open(TRACES / "helios_sample.csv", newline="") as fh:
        reader = csv.DictReader(fh)
        return reader.fieldnames, list(reader)


def test_helios_sample_has_the_cluster_log_schema(helios_rows):
    header, rows = helios_rows
    assert tuple(header) == HELIOS_COLUMNS
    assert 8 <= len(rows) <= 12
    assert sum(1 for r in rows if r["gpu_num"] == "0") == 1  # exactly one CPU job


def test_helios_sample_rows_are_self_consistent(helios_rows):
    _, rows = helios_rows
    for r in rows:
        submit, start, end = (datetime.strptime(r[k], HELIOS_TIME) for k in ("submit_time", "start_time", "end_time"))
        # HeliosData README: duration = end - start, queue = start - submit (seconds).
        assert int(r["duration"]) == (end - start).total_seconds(), r["job_id"]
        assert int(r["queue"]) == (start - submit).total_seconds(), r["job_id"]
        assert r["state"] in HELIOS_STATES
        assert r["user"].startswith("u") and r["vc"].startswith("vc")
        assert int(r["node_num"]) * 8 >= int(r["gpu_num"])  # at most 8 GPUs per node


def test_helios_sample_loads_with_the_project_reader(models):
    jobs = read_helios_csv(TRACES / "helios_sample.csv", sorted(models), seed=0, models=models)
    assert len(jobs) == 9  # the CPU job is skipped
    assert jobs[0].arrival == 0.0


def test_trace_stats_takes_a_shipped_trace_by_name(capsys):
    from artist.cli import main

    assert main(["trace", "stats", "small", "--json"]) == 0
    by_name = capsys.readouterr().out
    assert main(["trace", "stats", str(Path(__file__).resolve().parent.parent / "workloads/traces/small.csv"),
                 "--json"]) == 0
    assert by_name == capsys.readouterr().out
    assert json.loads(by_name)["jobs"] == 16  # the shipped small trace's 16 rows
