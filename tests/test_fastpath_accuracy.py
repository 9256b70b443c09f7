"""The message-level fast path against full packet runs of the same ns-3 engine input (goal: within 1 %),
against a hand-computed transfer time, and its provenance (which path answered).

ns-3 runs are kept small (a few MB, up to 16 GPUs); benchmarks/sweep_cost.py compares >= 100 keys of
the Dally sweep.
"""

from __future__ import annotations

import pytest

from artist.network.analytical import StartupLatency
from artist.network.collectives import Schedule, Transfer
from artist.network.fastpath import MESSAGE_LEVEL, NS3
from artist.parallel.ddp import ddp_step
from artist.parallel.graph import Node, StepGraph
from artist.placement import placement_from_shape
from artist.topology import load_topology
from artist.workload import load_models
from conftest import REPO

pytestmark = pytest.mark.ns3

ns3 = pytest.importorskip("artist.network.ns3")
from artist.network.ns3 import Ns3Model, Ns3Worker  # noqa: E402

DALLY = load_topology(REPO / "topologies" / "dally-3tier.yaml")
MODELS = load_models(REPO / "workloads" / "models")
NO_STARTUP = StartupLatency(base_s=0.0, nvlink_step_s=0.0, net_step_s=0.0)
TOLERANCE = 0.01  # the bound for any shortcut


@pytest.fixture(scope="module")
def worker():
    w = Ns3Worker()
    yield w
    w.close()


def both(worker, graphs, **kw):
    fast = Ns3Model(DALLY, worker=worker, **kw).time(graphs)
    full = Ns3Model(DALLY, worker=worker, fast_path=False, **kw).time(graphs)
    return fast, full


def test_point_to_point_equals_the_hand_computed_frame_pipeline(worker):
    """16 MB over a NIC, GPU -> rack switch -> GPU: n frames of 8 984 payload bytes (9 000 MTU - 16-byte
    header) leave the NIC back to back, each with 18 header bytes on the wire (16 transport + 2 PPP);
    the switch stores and forwards, so the last byte arrives one full frame after the NIC sent its
    last frame, plus the path latency (2 links + switch)."""
    nbytes, bps = 16_000_000, 400e9
    n = -(-nbytes // 8984)
    expected = (nbytes + 18 * n) * 8 / bps + (8984 + 18) * 8 / bps + (2 * 0.01e-6 + 0.13e-6)
    ranks = tuple(placement_from_shape(DALLY, [[1, 1]]).ranks_in_ring_order())
    schedule = Schedule("p2p", ranks, nbytes, 1, (Transfer(0, 1, nbytes, 0, 0, ()),))
    fast = Ns3Model(DALLY, latency=NO_STARTUP, worker=worker).run_schedules([schedule], [0.0], "p2p")
    full = Ns3Model(DALLY, latency=NO_STARTUP, worker=worker, fast_path=False).run_schedules([schedule], [0.0], "p2p")
    assert (fast["path"], full["path"]) == (MESSAGE_LEVEL, NS3)
    assert fast["collective_seconds"][0] == pytest.approx(expected, rel=1e-9)
    assert full["collective_seconds"][0] == pytest.approx(expected, rel=1e-6)  # ns-3 agrees (no ack crosses data)
    assert fast["packets"] == 0 and fast["frames_modelled"] == full["packets"]  # the frames ns-3 sends, none simulated


@pytest.mark.parametrize("model,shape", [
    ("resnet18", [[2]]), ("resnet18", [[1, 1]]), ("mobilenet_v3_large", [[8]]), ("resnet18", [[2, 1], [1]]),
    ("mobilenet_v3_large", [[4, 4]]), ("alexnet", [[1], [1]]),
])
def test_ddp_steps_within_1_percent_of_the_packet_run(worker, model, shape):
    step = ddp_step(MODELS[model], placement_from_shape(DALLY, shape), 0.05)
    fast, full = both(worker, {"a": step})
    assert fast["a"].result.details["path"] == MESSAGE_LEVEL and full["a"].result.details["path"] == NS3
    assert full["a"].result.packets > 0 and fast["a"].result.packets == 0
    for f, p, node in zip(fast["a"].node_seconds, full["a"].node_seconds, step.nodes):
        if node.is_communication:
            assert f == pytest.approx(p, rel=TOLERANCE), node
    assert fast["a"].step_seconds == pytest.approx(full["a"].step_seconds, rel=TOLERANCE)


def test_every_collective_kind_and_two_jobs_on_disjoint_links_within_1_percent(worker):
    """A chain of all-gather, reduce-scatter, a timer and a send, and a second job on other machines:
    no link shared, so the fast path answers; each node within 1 % of the packet run."""
    a = placement_from_shape(DALLY, [[2, 2]]).gpus
    per_machine = DALLY.gpus_per_machine
    b = tuple(g + 2 * per_machine for g in placement_from_shape(DALLY, [[1, 1]]).gpus)
    job_a = StepGraph((Node(0, "all_gather", group=a, nbytes=3_000_000),
                       Node(1, "reduce_scatter", deps=(0,), group=a, nbytes=5_000_000),
                       Node(2, "compute", deps=(1,), seconds=2e-5),
                       Node(3, "send_recv", deps=(2,), group=(a[0], a[-1]), nbytes=2_000_000)))
    job_b = StepGraph((Node(0, "compute", seconds=1e-5),
                       Node(1, "all_reduce", deps=(0,), group=b, nbytes=4_000_000)))
    fast, full = both(worker, {"a": job_a, "b": job_b})
    for job, g in (("a", job_a), ("b", job_b)):
        assert fast[job].result.details["path"] == MESSAGE_LEVEL
        for f, p, node in zip(fast[job].node_seconds, full[job].node_seconds, g.nodes):
            assert f == pytest.approx(p, rel=TOLERANCE), (job, node)


def test_shared_links_are_answered_by_ns3_itself(worker):
    """8 channels on one machine pair: the rule sends it to ns-3, so the default answer is the packet run."""
    step = StepGraph((Node(0, "all_reduce", group=placement_from_shape(DALLY, [[2, 2]]).gpus, nbytes=2_000_000),))
    fast, full = both(worker, {"a": step}, channels=8)
    assert fast["a"].result.details["path"] == NS3 and fast["a"].result.packets > 0
    assert fast["a"].node_seconds == full["a"].node_seconds


def test_fast_path_is_deterministic(worker):
    step = ddp_step(MODELS["resnet18"], placement_from_shape(DALLY, [[2, 1], [1]]), 0.05)
    one = Ns3Model(DALLY, worker=worker).time({"a": step})["a"].node_seconds
    two = Ns3Model(DALLY, worker=worker).time({"a": step})["a"].node_seconds
    assert one == two


def test_two_jobs_on_one_spine_uplink_are_co_simulated_by_ns3(worker):
    """Co-simulation (several jobs in one run) where jobs share the racks' uplinks: ns-3 answers."""
    per_machine, per_rack = DALLY.gpus_per_machine, DALLY.gpus_per_rack
    a = StepGraph((Node(0, "all_reduce", group=(0, per_rack), nbytes=1_000_000),))
    b = StepGraph((Node(0, "all_reduce", group=(per_machine, per_rack + per_machine), nbytes=1_000_000),))
    fast, full = both(worker, {"a": a, "b": b})
    for job in ("a", "b"):
        assert fast[job].result.details["path"] == NS3
        assert fast[job].node_seconds == full[job].node_seconds
    assert fast["a"].result.packets > 0
