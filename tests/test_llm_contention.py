"""Hybrid-parallel (LLM) jobs under shared contention (PerfModel.shared), against hand-computed
expectations on the small ecmp fabric of tests/fabric_helpers.py."""

from __future__ import annotations

import pytest
from fabric_helpers import colliding_pairs, ecmp_topology

from artist.network.flow import FlowModel
from artist.perf.compute import ComputeModel
from artist.perf.hybrid import estimate_plan
from artist.perf.hybrid_job import hybrid_job_model
from artist.perf.model import PerfModel
from artist.placement import Placement
from artist.topology import load_topology
from artist.workload import ModelProfile


def test_machine_local_collectives_timed_alone_give_the_full_graph_answer():
    # a 16-GPU GPT-3 1.3B step (TP 8 inside each machine, DP 2 across racks): timing its TP
    # all-reduces alone (PerfModel's shortcut on the flow backend) equals the full co-simulated graph
    topo = load_topology("topologies/dally-3tier-ecmp-4to1-100g.yaml")
    job = hybrid_job_model("gpt3-1.3b", "dp=2,tp=8,pp=1,ep=1,microbatches=2", topo)
    gpus = tuple(range(8)) + tuple(range(64, 72))
    fabric = FlowModel(topo, channels=2)
    full = estimate_plan(fabric, topo, job.config, job.plans[0], gpus)
    fast = PerfModel(fabric, ComputeModel(topo)).estimate(job, Placement(topo, gpus))
    assert fast.step_seconds == pytest.approx(full.step_seconds, rel=1e-9)
    assert fast.exposed_comm_seconds == pytest.approx(sum(full.exposed_seconds.values()), rel=1e-9)
    assert fast.comm_seconds == pytest.approx(full.comm_seconds, rel=1e-9)


def test_an_llm_pipeline_beside_a_bulk_job_on_its_spine_port_pays_its_exposed_traffic_twice():
    # GPT-3 1.3B in 2 pipeline stages, one GPU in each rack: its rack-crossing traffic is the stage
    # sends and the tied-embedding all-reduce between the stages. A DDP job whose flows hash onto the
    # same spine plane all-reduces back to back, so in steady state it always sends there: every
    # LLM byte crossing the racks moves at half the port rate. By hand: the LLM's compute (and
    # bubble) is unchanged and its exposed communication, nearly all bandwidth time (start-up
    # latencies are ~2 % of it), doubles. On disjoint planes nothing changes.
    topo = ecmp_topology(oversubscription=2.0)
    llm = hybrid_job_model("gpt3-1.3b", "dp=1,tp=1,pp=2,ep=1,microbatches=4", topo)
    bulk = ModelProfile("bulk", tensor_bytes=(64 << 20,) * 4, compute_seconds=1e-6, reference_gpu="A100")
    perf = PerfModel(FlowModel(topo), ComputeModel(topo), contention="shared")
    for collide in (True, False):
        a, b = colliding_pairs(topo, collide=collide)
        alone = perf.estimate(llm, Placement(topo, a))
        shared = perf.rates({"llm": (llm, Placement(topo, a)), "bulk": (bulk, Placement(topo, b))})["llm"]
        assert shared.compute_seconds == pytest.approx(alone.compute_seconds, rel=1e-9)
        if collide:
            assert alone.exposed_comm_seconds > 0.01 * alone.step_seconds
            assert shared.exposed_comm_seconds == pytest.approx(2 * alone.exposed_comm_seconds, rel=0.05)
            assert shared.comm.details["steady_converged"] and shared.comm.details["steady_steps"] >= 8
        else:
            assert shared.step_seconds == pytest.approx(alone.step_seconds, rel=1e-9)


def test_spine_bytes_of_a_step_graph_add_up_its_rack_crossing_collectives():
    # one all-reduce across racks: the graph's spine bytes are that all-reduce's (perf/spine.py's
    # per-collective count); a machine-local node adds nothing; two of them count twice
    from artist.parallel.graph import Node, StepGraph
    from artist.perf.spine import graph_spine_bytes_per_step, spine_bytes_per_step

    topo = ecmp_topology(oversubscription=2.0)
    a, _ = colliding_pairs(topo, collide=True)
    one = spine_bytes_per_step(Placement(topo, a), 4 << 20, "ring", 2)
    graph = StepGraph((Node(0, "all_reduce", group=tuple(sorted(a)), nbytes=4 << 20),
                       Node(1, "all_reduce", deps=(0,), group=tuple(sorted(a)), nbytes=4 << 20)))
    assert one and graph_spine_bytes_per_step(graph, topo, "ring", 2) == {k: 2 * v for k, v in one.items()}
    local = load_topology("topologies/dally-3tier-ecmp-4to1-100g.yaml")
    inside = StepGraph((Node(0, "all_reduce", group=tuple(range(8)), nbytes=4 << 20),))
    assert graph_spine_bytes_per_step(inside, local, "ring", 2) == {}


def test_the_llm_sweep_and_its_isolated_twin_differ_only_in_contention():
    from conftest import REPO

    from artist.sweep.spec import load_sweep_spec

    shared = load_sweep_spec(REPO / "sweeps" / "llm-congested-small.yaml")
    isolated = load_sweep_spec(REPO / "sweeps" / "llm-congested-small-isolated.yaml")
    assert len(shared.runs) == len(isolated.runs) == 9
    assert {r.simulator.contention for r in shared.runs} == {"shared"}
    assert {r.simulator.contention for r in isolated.runs} == {"isolated"}
    assert [r.axes for r in shared.runs] == [r.axes for r in isolated.runs]
    assert all(job.plan for job in shared.runs[0].jobs)  # hybrid-parallel jobs
