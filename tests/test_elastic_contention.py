"""Shared contention in the elastic loop (artist/elastic/contention.py): jobs whose rings cross one spine
port are timed together and each gets half of it; jobs that cannot meet keep their step alone; the agent
observes the shared iteration; isolated stays what it was; the sweep field and its identity."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fabric_helpers import NIC_GBPS, ecmp_topology

from artist.elastic.applications import pollux_applications
from artist.elastic.cluster import ElasticCluster, Pool, PooledStepTimer
from artist.elastic.contention import RoundJob, SharedContention
from artist.elastic.exact import simulate_elastic
from artist.elastic.jobs import ElasticJobSpec
from artist.errors import InputError
from artist.network.flow import FlowModel
from artist.policies.pollux.agent import PolluxAgent
from artist.sweep.run import run_sweep
from artist.sweep.spec import load_sweep_spec
from artist.workload import ModelProfile

ROOT = Path(__file__).resolve().parents[1]
NBYTES = 64 << 20                       # one gradient bucket, produced at the end of backward (ready 1.0)
BANDWIDTH_S = NBYTES * 8 / (NIC_GBPS * 1e9)   # a 2-rank ring moves S/2 twice through each NIC
APP, M = "bert", 12                      # Pollux's BERT: local batch 12 on a T4 (max local 12: s = 0)
LATENCY_S = 1e-4                         # far above the fabric's few hops of microseconds per ring step


def _setup(racks=2, machines_per_rack=2):
    """2 racks x 2 machines x 1 GPU; the spine at 2:1 over 100 Gb/s NICs: one 100 Gb/s uplink per rack, so
    two rack-crossing rings share it (bundle: no hash in the way)."""
    topo = ecmp_topology(racks=racks, machines_per_rack=machines_per_rack, gpus_per_machine=1,
                         oversubscription=float(machines_per_rack), model="bundle")
    cluster = ElasticCluster.of("tiny", [Pool("t4", topo)])
    apps = pollux_applications()
    measured = {k: a for k, (a, _) in apps.items()}
    profile = ModelProfile("one-bucket", tensor_bytes=(NBYTES,), compute_seconds=1e-3, reference_gpu="T4")
    profiles = {k: profile for k in measured}
    fabric = FlowModel(topo)
    timer = PooledStepTimer(cluster, measured, profiles, {"t4": fabric})
    return cluster, apps, measured, profiles, fabric, timer


def test_two_rings_on_one_spine_port_each_get_half_of_it():
    cluster, _, measured, profiles, fabric, timer = _setup()
    compute = measured[APP].compute["t4"](M)
    a, b = np.array([1, 0, 1, 0]), np.array([0, 1, 0, 1])   # each: one GPU in rack 0, one in rack 1
    contention = SharedContention(cluster, {"t4": fabric}, measured, profiles)
    steps = contention.round_steps([RoundJob("a", APP, a, M), RoundJob("b", APP, b, M)])
    alone = timer.seconds(APP, "t4", a, M, 0)[0]
    # alone: compute, then the bucket at the full NIC rate; together: both rings on the 100 Gb/s uplink
    assert alone == pytest.approx(compute + BANDWIDTH_S, abs=LATENCY_S)
    assert steps["a"] == steps["b"] == pytest.approx(compute + 2 * BANDWIDTH_S, abs=LATENCY_S)
    assert steps["a"] - alone == pytest.approx(BANDWIDTH_S, rel=0.01)
    # the same configuration again: from the memo, not co-simulated again
    assert contention.round_steps([RoundJob("a", APP, a, M), RoundJob("b", APP, b, M)]) == steps
    assert (contention.components_asked, contention.components_timed) == (2, 1)


@pytest.mark.parametrize("a, b", [
    ([1, 1, 0, 0], [0, 0, 1, 1]),     # each job inside one rack: never on the spine
    ([1, 0, 1, 0], [0, 1, 0, 0]),     # the other job on one GPU
])
def test_jobs_that_cannot_meet_are_timed_alone(a, b):
    cluster, _, measured, profiles, fabric, _ = _setup()
    contention = SharedContention(cluster, {"t4": fabric}, measured, profiles)
    assert contention.round_steps([RoundJob("a", APP, np.array(a), M), RoundJob("b", APP, np.array(b), M)]) == {}


def test_jobs_on_disjoint_racks_are_apart_and_a_common_rack_joins_them():
    cluster, _, measured, profiles, fabric, _ = _setup(racks=4)
    contention = SharedContention(cluster, {"t4": fabric}, measured, profiles)
    a = RoundJob("a", APP, np.array([1, 0, 1, 0, 0, 0, 0, 0]), M)                  # racks 0 and 1
    apart = contention.round_steps([a, RoundJob("b", APP, np.array([0, 0, 0, 0, 1, 0, 1, 0]), M)])  # 2, 3
    assert apart == {}
    joined = contention.round_steps([a, RoundJob("b", APP, np.array([0, 0, 0, 1, 1, 0, 0, 0]), M)])  # 1, 2
    assert sorted(joined) == ["a", "b"]


def test_a_job_keeps_its_gpus_while_its_allocation_is_unchanged():
    _, _, measured, profiles, _, _ = _setup()
    topo = ecmp_topology(racks=2, machines_per_rack=1, gpus_per_machine=4, oversubscription=4.0, model="bundle")
    cluster = ElasticCluster.of("four", [Pool("t4", topo)])
    contention = SharedContention(cluster, {"t4": FlowModel(topo)}, measured, profiles)
    first = contention.place([RoundJob("a", APP, np.array([2, 0]), M), RoundJob("b", APP, np.array([1, 1]), M)])
    assert first == {"a": {(0, 0): (0, 1)}, "b": {(0, 0): (2,), (0, 1): (0,)}}
    # a leaves; c arrives first in the order: b keeps its GPUs, c takes the lowest free ones
    second = contention.place([RoundJob("c", APP, np.array([3, 0]), M), RoundJob("b", APP, np.array([1, 1]), M)])
    assert second["b"] == first["b"] and second["c"] == {(0, 0): (0, 1, 3)}


class Fixed:
    """An allocator that gives every job the allocation named for it (the tests' co-placement)."""

    def __init__(self, allocs):
        self.allocs = allocs

    def allocate(self, jobs):
        return {j.job_id: np.array(self.allocs[j.job_id]) for j in jobs}


def _simulate(allocs, shared: bool, monkeypatch=None, seen=None):
    cluster, apps, measured, profiles, fabric, timer = _setup()
    if monkeypatch is not None:
        original = PolluxAgent.observe

        def observe(agent, nodes, replicas, local_batch, accum, iter_s, *rest):
            seen.append((replicas, local_batch, accum, iter_s))
            return original(agent, nodes, replicas, local_batch, accum, iter_s, *rest)

        monkeypatch.setattr(PolluxAgent, "observe", observe)
    jobs = [ElasticJobSpec(j, 0.0, APP, gpus=2, batch=2 * M) for j in allocs]
    contention = SharedContention(cluster, {"t4": fabric}, measured, profiles) if shared else None
    return simulate_elastic(cluster, jobs, apps, timer, Fixed(allocs), contention=contention), timer


CROSSING = {"a": [1, 0, 1, 0], "b": [0, 1, 0, 1]}
IN_RACK = {"a": [1, 1, 0, 0], "b": [0, 0, 1, 1]}


def test_the_agent_observes_the_shared_iteration_and_the_job_records_its_slowdown(monkeypatch):
    seen: list = []
    result, timer = _simulate(CROSSING, True, monkeypatch, seen)
    compute = pollux_applications()[APP][0].compute["t4"](M)
    assert seen and all((r, m, s) == (2, M, 0) for r, m, s, _ in seen)
    for *_, iter_s in seen:   # what the job measured: compute + the bucket on half the uplink
        assert iter_s == pytest.approx(compute + 2 * BANDWIDTH_S, abs=LATENCY_S)
    slowdown = (compute + 2 * BANDWIDTH_S) / (compute + BANDWIDTH_S)
    for job in result.jobs:
        assert job.contention_slowdown == pytest.approx(slowdown, rel=0.005)
    isolated, _ = _simulate(CROSSING, False)
    # the same work at a slower iteration: each job finishes later, by about the slowdown (restarts aside)
    for s, i in zip(result.jobs, isolated.jobs):
        assert s.finish > i.finish
        assert (s.finish - s.spec.arrival) / (i.finish - i.spec.arrival) == pytest.approx(slowdown, rel=0.05)
        assert i.contention_slowdown == 1.0


def test_jobs_that_never_meet_run_exactly_as_isolated_and_runs_repeat_exactly():
    shared, _ = _simulate(IN_RACK, True)
    isolated, _ = _simulate(IN_RACK, False)
    assert [(j.finish, j.attained, j.round_progress) for j in shared.jobs] == \
        [(j.finish, j.attained, j.round_progress) for j in isolated.jobs]
    assert all(j.contention_slowdown == 1.0 for j in shared.jobs)
    again, _ = _simulate(CROSSING, True)
    once, _ = _simulate(CROSSING, True)
    assert [(j.finish, j.shared_seconds, j.alone_seconds) for j in again.jobs] == \
        [(j.finish, j.shared_seconds, j.alone_seconds) for j in once.jobs]


JOBS = "name,time,application,num_replicas,batch_size\nbert-0,0,bert,2,24\nbert-1,0,bert,2,24\n"


def _sweep_spec(tmp_path, elastic_extra=""):
    (tmp_path / "jobs.csv").write_text(JOBS)
    path = tmp_path / "c.yaml"
    path.write_text(f"name: c\nloop: elastic\ntopology: {ROOT / 'topologies/pollux-t4.yaml'}\n"
                    f"elastic: {{round_seconds: 60{elastic_extra}}}\n"
                    f"policies: [{{name: fifo, label: FIFO}}]\nworkloads: [{{spec: jobs.csv, label: w}}]\n")
    return path


@pytest.mark.parametrize("value", ["sometimes", "3", "[shared]"])
def test_a_bad_contention_value_names_the_field(tmp_path, value):
    path = _sweep_spec(tmp_path, f", contention: {value}")
    with pytest.raises(InputError) as exc:
        load_sweep_spec(path)
    assert "elastic.contention" in str(exc.value) and str(path) in str(exc.value)
    assert "\n" not in str(exc.value)


def test_shared_enters_the_run_identity_and_the_results_isolated_does_not(tmp_path):
    isolated = load_sweep_spec(_sweep_spec(tmp_path))
    explicit = load_sweep_spec(_sweep_spec(tmp_path, ", contention: isolated"))
    shared = load_sweep_spec(_sweep_spec(tmp_path, ", contention: shared"))
    assert isolated.runs[0].run_id == explicit.runs[0].run_id != shared.runs[0].run_id
    assert "contention" not in isolated.runs[0].identity["elastic"]
    assert shared.runs[0].identity["elastic"]["contention"] == "shared"
    for name, spec in (("iso", isolated), ("shared", shared)):
        report = run_sweep(spec, tmp_path / name, n_jobs=1, use_cache=False, progress=False, plots=False)
        assert not report.failed, report.failed
    iso = pd.read_csv(tmp_path / "iso" / "results.csv")
    table = pd.read_csv(tmp_path / "shared" / "results.csv")
    assert "contention_slowdown_mean" not in iso.columns
    jobs = pd.read_csv(tmp_path / "shared" / "runs" / shared.runs[0].run_id / "jobs.csv")
    assert table.loc[0, "contention_slowdown_mean"] == pytest.approx(jobs["contention_slowdown"].mean())
    assert table.loc[0, "contention_slowdown_max"] == jobs["contention_slowdown"].max()
    assert math.isfinite(table.loc[0, "contention_slowdown_max"])
