"""The hybrid-parallel step graph (1F1B, Megatron order) against hand-computed expectations."""

from __future__ import annotations

import pytest

from alpha_beta import BASE, NET_STEP, NIC_BPS, NV_BPS, NV_HOP
from artist.network.analytical import AnalyticalModel
from artist.network.base import CommResult, GraphTiming
from artist.network.collectives import collective_schedule
from artist.parallel.hybrid import hybrid_step, one_f_one_b, split_stages
from artist.parallel.plan import ParallelPlan, parse_plan, rank_grid
from artist.perf.hybrid import critical_path_seconds, estimate_plan
from artist.placement import Placement
from artist.workload.zoo import zoo_model
from conftest import RACK_LINK_US, RACK_SWITCH_US, make_topology

TOPO = make_topology(gpus_per_machine=8)  # 2 racks x 2 machines x 8 GPUs (conftest figures)


def test_rank_grid_is_megatron_order():
    grid = rank_grid(ParallelPlan(dp=2, tp=2, pp=2), range(8))
    assert grid.tp_group(0, 0) == (0, 1) and grid.tp_group(0, 1) == (2, 3) and grid.tp_group(1, 0) == (4, 5)
    assert grid.dp_group(1, 1) == (3, 7)
    moe = rank_grid(ParallelPlan(dp=4, tp=1, pp=1, ep=2), range(4))
    assert moe.ep_group(3, 0, 0) == (2, 3) and moe.expert_dp_group(3, 0, 0) == (1, 3)


def test_parse_plan_and_its_errors():
    assert parse_plan("dp=4,tp=8,pp=2", microbatches=16) == ParallelPlan(4, 8, 2, 1, 16)
    for bad, match in [("dp=4,tp=x", "whole number"), ("dq=2", "keys"), ("dp=2,dp=2", "twice"),
                       ("dp=0", ">= 1"), ("dp=3,ep=2", "divide")]:
        with pytest.raises(ValueError, match=match):
            parse_plan(bad)


def test_one_f_one_b_order():
    assert one_f_one_b(0, 3, 4) == [(True, 0), (True, 1), (True, 2), (False, 0), (True, 3), (False, 1),
                                    (False, 2), (False, 3)]
    assert one_f_one_b(2, 3, 2) == [(True, 0), (False, 0), (True, 1), (False, 1)]


def _uniform_step(pp, m, tp=1, dp=1, recompute=False, model="gpt3-1.3b"):
    """A step whose blocks take 1 ms forward each and whose embedding and head take no time."""
    layers = zoo_model(model).layers_list()
    seconds = [1e-3 if layer.kind == "transformer" else 0.0 for layer in layers]
    grid = rank_grid(ParallelPlan(dp=dp, tp=tp, pp=pp, microbatches=m), range(dp * tp * pp))
    return hybrid_step(layers, grid, seconds, recompute=recompute), seconds


@pytest.mark.parametrize("pp,m", [(4, 8), (4, 1), (2, 16), (8, 3), (1, 4)])
def test_bubble_fraction_with_zero_communication_is_one_f_one_b(pp, m):
    step, _ = _uniform_step(pp, m)
    durations = [n.seconds if n.kind == "compute" else 0.0 for n in step.graph.nodes]
    timing = GraphTiming.of(step.graph, durations, CommResult("zero"))
    per_pass = 24 // pp * 1e-3 * 3  # forward + 2 x forward backward, per stage and micro-batch
    assert timing.step_seconds == pytest.approx((m + pp - 1) * per_pass, rel=1e-12)
    path = critical_path_seconds(step, timing)
    bubble = (path["compute"] - max(step.stage_compute_seconds)) / timing.step_seconds
    assert bubble == pytest.approx((pp - 1) / (m + pp - 1), abs=1e-12)


@pytest.mark.parametrize("recompute", [False, True])
def test_tp_all_reduce_volume_per_layer(recompute):
    t, m, mbs = 8, 2, 2
    model = zoo_model("gpt3-13b")
    layers = model.layers_list()
    grid = rank_grid(ParallelPlan(tp=t, microbatches=m), range(t))
    step = hybrid_step(layers, grid, [0.0] * len(layers), micro_batch_size=mbs, recompute=recompute)
    tp_nodes = [n for n, tag in zip(step.graph.nodes, step.tags) if tag == "tp"]
    activation = mbs * 2048 * 5120 * 2  # b x s x h in bf16
    # Two all-reduces per block forward and two backward (plus two for the recomputed forward).
    assert len(tp_nodes) == 40 * m * (2 + (4 if recompute else 2))
    assert {n.nbytes for n in tp_nodes} == {activation}
    assert {n.group for n in tp_nodes} == {tuple(range(8))}
    # On the wire: the ring sends 2 (t - 1) / t x the activation per rank.
    schedule = collective_schedule("all_reduce", "ring", Placement(TOPO, tuple(range(8))), activation, 1)
    assert schedule.bytes_sent_per_rank() == [2 * (t - 1) * activation // t] * t  # exact: 8 divides the bytes


def test_pipeline_sends_and_dp_all_reduces_conserve_bytes():
    model = zoo_model("gpt3-1.3b")
    layers = model.layers_list()
    plan = ParallelPlan(dp=2, tp=2, pp=2, microbatches=3)
    step = hybrid_step(layers, rank_grid(plan, range(8)), [1e-3] * len(layers), overlap_dp=True)
    nodes = list(zip(step.graph.nodes, step.tags))
    sends = [n for n, tag in nodes if tag == "pp"]
    # Per replica, micro-batch and direction: one send per TP rank of half the s x h activation.
    assert len(sends) == 2 * 3 * 2 * 2
    assert {n.nbytes for n in sends} == {2048 * 2048 * 2 // 2}
    assert {(n.group[0] // 2 % 2, n.group[1] // 2 % 2) for n in sends} == {(0, 1), (1, 0)}  # stage 0 <-> 1
    synced = [n for n, tag in nodes if tag == "dp"]
    assert all(len(n.group) == 2 for n in synced)
    # GPU of (replica d, stage p, TP rank t) is t + 2p + 4d: DP groups pair replicas (GPUs 4 apart), the
    # tied-embedding groups pair stage 0 and stage 1 of one replica (GPUs 2 apart).
    dp = [n for n in synced if n.group[1] - n.group[0] == 4]
    embedding = [n for n in synced if n.group[1] - n.group[0] == 2]
    assert len(dp) + len(embedding) == len(synced)
    # Every parameter's gradient is all-reduced once per TP shard: the bytes sum to 2 x parameters
    # (integer division per bucket and shard loses at most one byte each).
    total = sum(n.nbytes for n in dp)  # one node per (stage, TP rank), each params / t
    assert 0 <= 2 * model.total_params() - total <= len(dp)
    # Megatron's embedding group: the output layer's copy of the word embedding (V x h) is all-reduced with
    # the first stage's, per replica and TP rank.
    assert len(embedding) == plan.dp * plan.tp
    assert {n.nbytes for n in embedding} == {50257 * 2048 * 2 // plan.tp}


def test_expert_parallel_all_to_alls():
    model = zoo_model("moe-0.69b")
    layers = model.layers_list()
    plan = ParallelPlan(dp=4, ep=2, microbatches=2)
    step = hybrid_step(layers, rank_grid(plan, range(4)), [1e-3] * len(layers), recompute=False)
    a2a = [n for n, tag in zip(step.graph.nodes, step.tags) if tag == "ep"]
    # 4 MoE blocks x 2 all-to-alls x (forward + backward) x 2 micro-batches x 2 EP groups
    assert len(a2a) == 4 * 2 * 2 * 2 * 2
    assert {n.group for n in a2a} == {(0, 1), (2, 3)}
    assert {n.kind for n in a2a} == {"all_to_all"}
    dp_groups = {n.group for n, tag in zip(step.graph.nodes, step.tags) if tag == "dp"}
    assert dp_groups == {(0, 1, 2, 3), (0, 2), (1, 3)}  # dense over all replicas, experts over their copies


def test_graph_is_deterministic_and_refuses_too_many_stages():
    a, _ = _uniform_step(4, 4, tp=2, dp=2)
    b, _ = _uniform_step(4, 4, tp=2, dp=2)
    assert a.graph.signature() == b.graph.signature()
    with pytest.raises(ValueError, match="more pipeline stages"):
        split_stages(zoo_model("moe-0.69b").layers_list(), 9)


def _ring_all_reduce_in_one_machine(nbytes):
    n = 8
    return BASE + 2 * (n - 1) * NV_HOP + 2 * (n - 1) * (nbytes / n) / NV_BPS


def _ring_all_reduce_over_two_machines(nbytes):
    # Ring 0,1,2,3,8,9,10,11: each lap crosses a NIC twice. A chunk's 14 consecutive hops cover one lap
    # and 6 hops more: 4 NIC hops and 10 NVLink hops at most. Each step moves S/8 over each link; the
    # two 50 GB/s NIC hops are the slowest links.
    n = 8
    rack_hop = NET_STEP + (2 * RACK_LINK_US + RACK_SWITCH_US) * 1e-6
    return BASE + 4 * rack_hop + 10 * NV_HOP + 2 * (n - 1) * (nbytes / n) / NIC_BPS


def test_tp_group_split_across_machines_costs_what_alpha_beta_says():
    model = zoo_model("gpt3-1.3b")
    plan = ParallelPlan(tp=8, microbatches=2)
    fabric = AnalyticalModel(TOPO)
    inside = estimate_plan(fabric, TOPO, model, plan, range(8))
    split = estimate_plan(fabric, TOPO, model, plan, (0, 1, 2, 3, 8, 9, 10, 11))
    activation = 2048 * 2048 * 2
    count = 24 * 2 * (2 + 4)  # blocks x micro-batches x (forward 2 + backward with recomputation 4)
    compute = inside.compute_seconds
    expected_inside = compute + count * _ring_all_reduce_in_one_machine(activation)
    expected_split = compute + count * _ring_all_reduce_over_two_machines(activation)
    assert inside.step_seconds == pytest.approx(expected_inside, rel=1e-9)
    assert split.step_seconds / inside.step_seconds == pytest.approx(expected_split / expected_inside, rel=1e-9)
    assert inside.exposed_seconds["tp"] == pytest.approx(expected_inside - compute, rel=1e-9)
    assert split.exposed_seconds["dp"] == 0.0 and split.bubble_fraction == pytest.approx(0.0, abs=1e-12)


def test_sequence_parallel_swaps_each_all_reduce_for_an_all_gather_and_a_reduce_scatter():
    model = zoo_model("gpt3-1.3b")
    plan = ParallelPlan(tp=8, microbatches=2)
    layers = model.layers_list()
    grid = rank_grid(plan, range(8))
    plain = hybrid_step(layers, grid, [1e-3] * len(layers))
    sp = hybrid_step(layers, grid, [1e-3] * len(layers), sequence_parallel=True)
    kinds = [n.kind for n, tag in zip(sp.graph.nodes, sp.tags) if tag == "tp"]
    assert kinds.count("all_gather") == kinds.count("reduce_scatter") == sum(
        1 for tag in plain.tags if tag == "tp")
    # Same bytes on the wire per rank: all-gather + reduce-scatter = (t-1)/t S + (t-1)/t S = the ring all-reduce.
    # In one machine α-β (tests/alpha_beta.py): AG + RS = 2 x (base + 7 hops + 7/8 S / B), the all-reduce
    # base + 14 hops + 14/8 S / B: the pair costs one more base latency.
    fabric = AnalyticalModel(TOPO)
    a = estimate_plan(fabric, TOPO, model, plan, range(8))
    b = estimate_plan(fabric, TOPO, model, plan, range(8), sequence_parallel=True)
    count = 24 * 2 * (2 + 4)
    assert b.step_seconds - a.step_seconds == pytest.approx(count * BASE, rel=1e-6)


def test_first_replicas_only_gives_the_full_graphs_answer_when_replicas_are_laid_out_alike():
    from artist.perf.hybrid import replicas_laid_out_alike

    model = zoo_model("gpt3-1.3b")
    fabric = AnalyticalModel(TOPO)
    plan = ParallelPlan(dp=4, tp=4, pp=2, microbatches=4)  # each replica: one full machine
    assert replicas_laid_out_alike(TOPO, plan, range(32))
    full = estimate_plan(fabric, TOPO, model, plan, range(32))
    short = estimate_plan(fabric, TOPO, model, plan, range(32), first_replicas_only=True)
    assert short.nodes < full.nodes
    assert short.step_seconds == full.step_seconds and short.exposed_seconds == full.exposed_seconds
    # Replicas of 6 GPUs on 8-GPU machines straddle machines differently: no shortcut.
    assert not replicas_laid_out_alike(TOPO, ParallelPlan(dp=4, tp=2, pp=3), range(24))
