"""ns-3 executes a hybrid-parallel step graph (TP all-reduces, pipeline sends, EP all-to-alls,
DP all-reduces with their dependencies) and agrees with the α-β model where nothing contends."""

from __future__ import annotations

import dataclasses

import pytest

from artist.network.analytical import AnalyticalModel
from artist.parallel.plan import ParallelPlan
from artist.perf.hybrid import estimate_plan
from artist.workload.zoo import zoo_model
from conftest import make_topology

pytestmark = pytest.mark.ns3

pytest.importorskip("artist.network.ns3")
from artist.network.ns3 import Ns3Model, Ns3Worker  # noqa: E402

TOPO = make_topology(gpus_per_machine=8)


def test_ns3_times_a_dp_tp_pp_ep_step_like_the_alpha_beta_model():
    # Untied embeddings: no first-to-last-stage all-reduce sharing NICs with the DP all-reduces at the
    # flush, so no two collectives share a link at once and the two backends must agree.
    model = dataclasses.replace(zoo_model("moe-0.69b"), tied_embeddings=False)
    plan = ParallelPlan(dp=2, tp=2, pp=2, ep=2, microbatches=2)
    gpus = (0, 1, 8, 9, 16, 17, 24, 25)  # stages on different machines, replicas in different racks
    analytical = estimate_plan(AnalyticalModel(TOPO), TOPO, model, plan, gpus)
    worker = Ns3Worker()
    try:
        ns3 = estimate_plan(Ns3Model(TOPO, worker=worker), TOPO, model, plan, gpus)
        tied = zoo_model("moe-0.69b")
        tied_analytical = estimate_plan(AnalyticalModel(TOPO), TOPO, tied, plan, gpus)
        tied_ns3 = estimate_plan(Ns3Model(TOPO, worker=worker), TOPO, tied, plan, gpus)
    finally:
        worker.close()
    assert ns3.comm.backend == "ns3" and ns3.comm.packets > 0
    assert ns3.nodes == analytical.nodes
    # Within 3 %: packet headers and acks (as tests/test_ns3_graphs.py allows for single collectives).
    assert ns3.step_seconds == pytest.approx(analytical.step_seconds, rel=0.03)
    # Every kind shows up on both critical paths (which send or bucket is critical may differ: near-ties).
    for tag in ("tp", "pp", "dp", "ep"):
        assert analytical.exposed_seconds[tag] > 0 and ns3.exposed_seconds[tag] > 0
    exposed = sum(ns3.exposed_seconds.values())
    assert exposed == pytest.approx(sum(analytical.exposed_seconds.values()), rel=0.05)
    # Tied: the embedding all-reduce (GPU 0 with GPU 8) shares GPU 0's NIC with stage 0's DP all-reduce
    # (GPU 0 with GPU 16). ns-3 shows the contention the isolated α-β model cannot.
    assert tied_ns3.step_seconds > tied_analytical.step_seconds * 1.01
