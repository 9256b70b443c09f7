"""The simulator loop end to end on the ns-3 backend, behind the latency cache (issue 3).

A small trace on a 2 racks x 2 machines x 4 GPUs topology (tests/conftest.py figures), with the
two synthetic profiles of tests/golden/models, so every ns-3 run lasts about a second. Expectations
come from outside the loop: a job's running time is iterations x (compute + exposed time), with the
exposed time asked of a fresh Ns3Model directly (through the performance model's step graph: no
cache, no simulator); the second run must be served entirely from the cache and give the same table.

All ns-3 work goes through the process-wide worker (Ns3Model's default), so ns-3 is imported once
for this module and the in-process CLI runs.
"""

from __future__ import annotations

import io
import re
from contextlib import redirect_stderr, redirect_stdout

import pytest
import yaml

from artist.jobstate import FINISHED
from artist.metrics import job_table
from artist.network.cache import CACHE_FILE_NAME, Cached, LatencyStore
from artist.perf.model import as_perf_model
from artist.policies.registry import make_policy
from artist.simulator import SimulatorConfig, simulate
from artist.topology import load_topology
from artist.workload import load_models, read_jobs_csv
from conftest import REPO, small_topology_mapping

MODELS_DIR = REPO / "tests" / "golden" / "models"

# j1 is alone on the cluster for its whole run (the others arrive at t = 100 s, long after it ends).
# At t = 100: FIFO gives j2 12 GPUs (both racks), j3 the last machine; j4 and j5 wait for GPUs.
TRACE = """job_id,arrival,model,gpus,iterations
j1,0,toy-three-buckets,8,40
j2,100,toy-one-bucket,12,30
j3,100,toy-three-buckets,4,50
j4,100,toy-one-bucket,2,20
j5,100,toy-one-bucket,1,10
"""
CONFIG = SimulatorConfig(round_interval_s=None)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    ns3 = pytest.importorskip("artist.network.ns3")
    base = tmp_path_factory.mktemp("ns3-loop")
    (base / "topology.yaml").write_text(yaml.safe_dump(small_topology_mapping()))
    (base / "trace.csv").write_text(TRACE)
    topology = load_topology(base / "topology.yaml")
    models = load_models(MODELS_DIR)
    jobs = read_jobs_csv(base / "trace.csv", models)
    return ns3, base, topology, models, jobs


def _run(inputs, cache_dir, worker=None):
    ns3, _, topology, models, jobs = inputs
    comm = Cached(ns3.Ns3Model(topology, worker=worker), LatencyStore(cache_dir / CACHE_FILE_NAME))
    result = simulate(topology, jobs, models, make_policy("fifo"), comm, CONFIG)
    comm.flush()
    return result, comm.session


@pytest.fixture(scope="module")
def direct(inputs):
    """A fresh Ns3Model asked directly, through the performance model's step graph: no cache, no
    simulator in between (one per module, so a placement asked by two tests is simulated once)."""
    ns3, _, topology, _, _ = inputs
    return as_perf_model(ns3.Ns3Model(topology), topology)


@pytest.fixture(scope="module")
def two_runs(inputs, tmp_path_factory):
    cache_dir = tmp_path_factory.mktemp("ns3-loop-cache")
    first = _run(inputs, cache_dir)
    # Fresh Cached, Ns3Model and worker: only the SQLite file carries over.
    idle = inputs[0].Ns3Worker()
    second = _run(inputs, cache_dir, worker=idle)
    return first, second, idle


@pytest.mark.ns3
def test_every_job_finishes_all_its_iterations(inputs, two_runs):
    (result, _), _, _ = two_runs
    jobs = {j.job_id: j for j in inputs[4]}
    assert {s.job_id for s in result.jobs} == set(jobs)
    for s in result.jobs:
        assert s.status == FINISHED and s.finish is not None, s.job_id
        assert s.anchor_iterations == jobs[s.job_id].iterations, s.job_id
        assert s.preemptions == s.migrations == 0  # FIFO never stops a running job


@pytest.mark.ns3
def test_running_time_is_iterations_times_compute_plus_ns3_exposed_time(inputs, direct, two_runs):
    _, _, topology, models, _ = inputs
    (result, _), _, _ = two_runs
    assert topology.gpu_type("A100").relative_speed == 1.0  # the profiles' reference GPU: compute as profiled
    for s in result.jobs:
        model = models[s.job.model]
        expected = direct.estimate(model, s.placement)
        assert expected.comm.backend == "ns3" and s.estimate.comm.backend == "ns3"
        assert expected.compute_seconds == model.compute_seconds
        if s.placement.size > 1:
            # really answered (packets, or the message-level fast path: no link shared), really exposed
            simulated = expected.comm.packets > 0 or expected.comm.details.get("path") == "ns3-message-level"
            assert simulated and not expected.comm.cache_hit and expected.exposed_comm_seconds > 0.0
        per_iteration = model.compute_seconds + expected.exposed_comm_seconds
        assert s.finish - s.first_start == pytest.approx(s.job.iterations * per_iteration, rel=1e-12, abs=1e-12)


@pytest.mark.ns3
def test_job_alone_on_the_cluster_has_jct_of_iterations_times_iteration_time(inputs, direct, two_runs):
    models = inputs[3]
    (result, _), _, _ = two_runs
    j1 = next(s for s in result.jobs if s.job_id == "j1")
    assert j1.first_start == j1.arrival == 0.0
    assert j1.finish < 100.0  # ended before anyone else arrived: it was alone throughout
    assert j1.placement.canonical_shape == ((4, 4),)  # two machines of one rack: NIC hops in the ring
    model = models["toy-three-buckets"]
    exposed = direct.estimate(model, j1.placement).exposed_comm_seconds
    assert j1.finish - j1.arrival == pytest.approx(40 * (model.compute_seconds + exposed), rel=1e-12)


@pytest.mark.ns3
def test_waiting_jobs_start_when_gpus_are_freed(two_runs):
    (result, _), _, _ = two_runs
    by_id = {s.job_id: s for s in result.jobs}
    finishes = {s.finish for s in result.jobs}
    assert by_id["j2"].placement.tier == "network" and by_id["j3"].placement.tier == "machine"
    for job_id in ("j4", "j5"):  # no room at t = 100 (16 GPUs all taken by j2 and j3)
        assert by_id[job_id].first_start > 100.0 and by_id[job_id].first_start in finishes


@pytest.mark.ns3
def test_second_run_is_served_entirely_from_the_cache_with_identical_results(two_runs):
    (result1, session1), (result2, session2), idle = two_runs
    assert not idle.alive and idle.pid is None  # the second run never started ns-3 (no import, no engine)
    shapes = {(s.job.model, s.placement.canonical_shape) for s in result1.jobs}
    assert session1.misses == len(shapes) and session1.hits == 0  # one simulation per distinct question
    assert session2.misses == 0 and session2.hits == len(shapes)
    assert all(s.estimate.comm.cache_hit for s in result2.jobs)
    assert job_table(result1).to_csv(index=False) == job_table(result2).to_csv(index=False)


def _cli(argv):
    from artist.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.ns3
def test_simulate_command_with_ns3_runs_from_cache_the_second_time(inputs, tmp_path):
    _, base, _, _, _ = inputs
    argv = ["simulate", "--comm", "ns3", "--topology", str(base / "topology.yaml"), "--workload",
            str(base / "trace.csv"), "--models", str(MODELS_DIR), "--policy", "fifo", "--round-interval", "0",
            "--cache-dir", str(tmp_path / "cache")]
    code, out1, err = _cli([*argv, "--out", str(tmp_path / "out1")])
    assert code == 0, err
    simulated = re.search(r"cache: 0 hits, (\d+) simulations", out1)
    assert simulated and int(simulated.group(1)) > 0, out1
    code, out2, err = _cli([*argv, "--out", str(tmp_path / "out2")])
    assert code == 0, err
    assert f"cache: {simulated.group(1)} hits, 0 simulations" in out2, out2
    assert (tmp_path / "out1" / "jobs.csv").read_bytes() == (tmp_path / "out2" / "jobs.csv").read_bytes()


def test_simulate_command_no_cache_leaves_no_cache_file(tmp_path):
    argv = ["simulate", "--comm", "analytical", "--topology", str(REPO / "topologies" / "dally-3tier.yaml"),
            "--workload", str(REPO / "workloads" / "traces" / "small.csv"), "--cache-dir", str(tmp_path)]
    code, out, err = _cli([*argv, "--no-cache"])
    assert code == 0, err
    assert "cache: off" in out
    assert not (tmp_path / CACHE_FILE_NAME).exists()
    code, out, err = _cli(argv)
    assert code == 0, err
    assert re.search(r"cache: 0 hits, [1-9]\d* simulations", out), out
    assert (tmp_path / CACHE_FILE_NAME).exists()
