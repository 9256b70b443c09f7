"""Sia (artist/policies/sia/): the ILP against brute force, the digest's worked example, the placer's
rules as properties, the bootstrap by hand, the restart factor by hand, and Sia's configuration set."""

import itertools
import math
from types import SimpleNamespace

import numpy as np
import pytest

from artist.elastic.spec import ElasticSpec, LocalBatchLimit
from artist.policies.pollux.agent import PolluxAgent
from artist.policies.pollux.throughput import ThroughputParams
from artist.policies.sia.configs import Configuration, TypeShape, configurations, type_shapes
from artist.policies.sia.estimator import estimate
from artist.policies.sia.ilp import LAMBDA, P, objective, solve
from artist.policies.sia.matrix import Option, job_options, restart_factor
from artist.policies.sia.placer import Placer, Request


# ---- configuration set -------------------------------------------------------------------------------
def test_configurations_are_powers_of_two_in_a_node_and_whole_nodes_beyond():
    shapes = {"t4": TypeShape(16, 4), "a100": TypeShape(8, 8)}
    got = {(c.gpu_type, c.nodes, c.gpus) for c in configurations(shapes)}
    # the artifact's tables (digest 2.2 c): 4-GPU nodes (1,1),(1,2),(1,4),(2,8)..(16,64); 8-GPU (1,1)..(8,64)
    want = {("t4", 1, 1), ("t4", 1, 2), ("t4", 1, 4)} | {("t4", n, 4 * n) for n in range(2, 17)}
    want |= {("a100", 1, 1), ("a100", 1, 2), ("a100", 1, 4), ("a100", 1, 8)} | {("a100", n, 8 * n) for n in range(2, 9)}
    assert got == want
    assert len([c for c in configurations(shapes) if c.gpu_type == "t4"]) == 16 + int(math.log2(4))
    with pytest.raises(ValueError, match="one size per type"):
        type_shapes([4, 8], ["t4", "t4"])


# ---- ILP = brute force -------------------------------------------------------------------------------
def _brute_force(options, jobs, free, p, lam):
    per_job = [[None] + [k for k, o in enumerate(options) if o.job == i] for i in range(jobs)]
    best = None
    for pick in itertools.product(*per_job):
        chosen = [k for k in pick if k is not None]
        used = {t: 0 for t in free}
        for k in chosen:
            used[options[k].config.gpu_type] += options[k].footprint
        if any(used[t] > free[t] for t in free):
            continue
        value = objective(options, chosen, jobs, p, lam)
        if best is None or (value < best if p < 0 else value > best):
            best = value
    return best


@pytest.mark.parametrize("seed", range(12))
def test_ilp_optimum_equals_brute_force_on_small_instances(seed):
    rng = np.random.default_rng(seed)
    shapes = {"A": TypeShape(int(rng.integers(1, 3)), 4), "B": TypeShape(int(rng.integers(1, 3)), 8)}
    configs = configurations(shapes)
    jobs = int(rng.integers(2, 7))
    p = P if seed % 3 else 0.5
    options = []
    for i in range(jobs):
        take = rng.choice(len(configs), size=int(rng.integers(1, 5)), replace=False)
        for k in sorted(take):
            g = float(rng.uniform(1, 12))
            options.append(Option(i, configs[k], configs[k].gpus, round(g ** p, 2)))
    free = {t: s.gpus for t, s in shapes.items()}
    chosen = solve(options, jobs, free, p, LAMBDA)
    assert len({options[k].job for k in chosen}) == len(chosen)   # at most one option per job
    for t in free:
        assert sum(options[k].footprint for k in chosen if options[k].config.gpu_type == t) <= free[t]
    assert objective(options, chosen, jobs, p, LAMBDA) == pytest.approx(_brute_force(options, jobs, free, p, LAMBDA))


# ---- the digest's worked example (Sia Table 1) --------------------------------------------------------
def test_worked_example_table1_gives_j1_on_4b_and_j2_on_2a():
    shapes = type_shapes([2, 4], ["A", "B"])
    configs = configurations(shapes)
    assert [(c.nodes, c.gpus, c.gpu_type) for c in configs] == [(1, 1, "A"), (1, 2, "A"), (1, 1, "B"), (1, 2, "B"),
                                                                (1, 4, "B")]
    rows = {"J1": [1, 1.5, 1.5, 2.5, 3.5], "J2": [1.2, 2.1, 1, 1.9, 3.6]}  # digest 2.2 d, Table 1
    options = [Option(i, c, c.gpus, round(g ** P, 2)) for i, row in enumerate(rows.values())
               for c, g in zip(configs, row)]
    chosen = solve(options, 2, {"A": 2, "B": 4})
    picked = {list(rows)[options[k].job]: options[k].config for k in chosen}
    assert picked == {"J1": Configuration("B", 1, 4), "J2": Configuration("A", 1, 2)}
    placed, evicted = Placer([2, 4], ["A", "B"]).place([Request(j, c) for j, c in picked.items()])
    assert placed["J1"].tolist() == [0, 4] and placed["J2"].tolist() == [2, 0] and not evicted


# ---- placer properties -------------------------------------------------------------------------------
def _check_rules(capacity, node_types, requests, placed):
    cap = np.asarray(capacity)
    used = sum(placed.values())
    assert np.all(used <= cap)
    owners = {}
    for r in requests:
        row = placed[r.job_id]
        if not row.any():
            continue
        nodes = np.flatnonzero(row)
        assert int(row.sum()) == r.config.gpus
        assert {node_types[i] for i in nodes} == {r.config.gpu_type}   # one GPU type
        if r.config.partial:
            assert len(nodes) == 1                                     # never split
        else:
            assert len(nodes) == r.config.nodes
        for i in nodes:
            owners.setdefault(int(i), []).append((r.job_id, len(nodes) > 1))
    for i, jobs in owners.items():
        if any(distributed for _, distributed in jobs):
            assert len(jobs) == 1, f"node {i} shared by {jobs}"       # a distributed job has its nodes alone


@pytest.mark.parametrize("seed", range(25))
def test_placer_never_splits_partial_nor_shares_a_node_with_a_distributed_job(seed):
    rng = np.random.default_rng(seed)
    shapes = {"t4": TypeShape(int(rng.integers(1, 5)), 4), "a100": TypeShape(int(rng.integers(1, 4)), 8)}
    capacity = [s.gpus_per_node for t, s in shapes.items() for _ in range(s.nodes)]
    node_types = [t for t, s in shapes.items() for _ in range(s.nodes)]
    configs = configurations(shapes)
    placer = Placer(capacity, node_types)
    current: dict[str, tuple[Configuration, np.ndarray]] = {}
    for rnd in range(6):
        # an ILP-feasible round: GPUs per type within capacity; some jobs keep their configuration
        free = {t: s.gpus for t, s in shapes.items()}
        requests = []
        for job in sorted(current):
            if rng.random() < 0.6 and free[current[job][0].gpu_type] >= current[job][0].gpus:
                c, row = current[job]
                free[c.gpu_type] -= c.gpus
                requests.append(Request(job, c, row, c.gpu_type))
        for k in range(int(rng.integers(1, 8))):
            c = configs[int(rng.integers(len(configs)))]
            if free[c.gpu_type] >= c.gpus:
                free[c.gpu_type] -= c.gpus
                job = f"r{rnd}j{k}"
                prev = current.get(job)
                requests.append(Request(job, c, None if prev is None else prev[1], c.gpu_type))
        placed, evicted = placer.place(requests)
        _check_rules(capacity, node_types, requests, placed)
        for r in requests:   # an unchanged configuration keeps its GPUs unless evicted
            if r.previous is not None and r.job_id not in evicted and placed[r.job_id].any():
                assert np.array_equal(placed[r.job_id], r.previous)
        current = {r.job_id: (r.config, placed[r.job_id]) for r in requests if placed[r.job_id].any()}


def test_placer_evicts_the_smallest_single_node_job_when_fragmented():
    # two 4-GPU nodes, each with a 1-GPU job kept; a whole-node (2, 8) job needs both nodes -> both evicted,
    # and a (1, 2) job then fits beside nothing; a (1, 4) job on node 0 evicts the 1-GPU job there only.
    placer = Placer([4, 4], ["t4", "t4"])
    a, b = np.array([1, 0]), np.array([0, 2])
    reqs = [Request("a", Configuration("t4", 1, 1), a, "t4"), Request("b", Configuration("t4", 1, 2), b, "t4"),
            Request("big", Configuration("t4", 1, 4))]
    placed, evicted = placer.place(reqs)
    # best eviction: node 0 frees 4 by evicting 1 GPU (a); node 1 would evict 2 (b). a then fits on node 1.
    assert placed["big"].tolist() == [4, 0] and placed["b"].tolist() == [0, 2] and placed["a"].tolist() == [0, 1]
    assert evicted == ["a"]   # moved: the job restarts elsewhere
    pinned = [Request("a", Configuration("t4", 1, 1), a, "t4", pinned=True), Request("b", Configuration("t4", 1, 2), b,
                                                                                       "t4", pinned=True),
              Request("big", Configuration("t4", 1, 4))]
    placed, _ = placer.place(pinned)
    assert not placed["big"].any()   # mid-restart jobs are never evicted


# ---- restart factor, options ------------------------------------------------------------------------
def test_restart_factor_by_hand():
    assert restart_factor(age=100, restarts=0, restart_seconds=250) == 1.0           # T < S
    assert restart_factor(age=1000, restarts=2, restart_seconds=250) == pytest.approx(500 / 1250)
    assert restart_factor(age=1000, restarts=5, restart_seconds=250) == 0.0


# ---- bootstrap ---------------------------------------------------------------------------------------
def _agent(spec, gpu_type, params, most):
    agent = PolluxAgent(spec, gpu_type)
    agent.params = params
    agent.most_gpus = most
    return agent


def _view(agents, profile, current=(), gpu_type="", age=0.0, restarts=0):
    return SimpleNamespace(agents=agents, agent=next(iter(agents.values())), profile=profile, min_gpus=0,
                           category="strong", gpus_wanted=0, current=np.array(current or [0]), gpu_type=gpu_type,
                           age=age, restarts=restarts, restart_seconds=30.0, job_id="j")


def test_bootstrap_estimates_by_hand():
    """A fixed batch of 256 (efficiency 1: goodput = throughput); gamma = 1 so T_iter = T_grad + T_sync.
    Type A (8 GPUs per node) has a multi-GPU model; B only its 1-GPU profile."""
    spec = ElasticSpec(initial_batch=256, max_batch=256, fixed_batch=256,
                       local_batch={"A": LocalBatchLimit(8, 256), "B": LocalBatchLimit(8, 128)})
    pa = ThroughputParams(0.02, 0.001, 0.01, 0.002, 0.05, 0.004, 1.0)
    shapes = {"A": TypeShape(2, 8), "B": TypeShape(4, 4)}
    profile = {"A": {256: 0.4}, "B": {64: 0.2, 128: 0.5}}   # xput_A(1) = 640/s, xput_B(1) = 256/s
    view = _view({"A": _agent(spec, "A", pa, 8), "B": _agent(spec, "B", pa, 1)}, profile)
    for n in (2, 4, 8, 16):
        m = 256 / n
        nodes_a = math.ceil(n / 8)
        sync = (0.05 + 0.004 * (n - 2)) if nodes_a > 1 else (0.01 + 0.002 * (n - 2))
        xput_a = 256 / (0.02 + 0.001 * m + sync)
        est = estimate(view, "B", np.array([math.ceil(n / 4)]), np.array([n]), shapes)[0]
        assert est == pytest.approx(256 / 640 * xput_a, rel=1e-9)
    # once the job has run multi-GPU on B, B's own model replaces the bootstrap
    pb = ThroughputParams(0.03, 0.002, 0.02, 0.003, 0.1, 0.01, 1.0)
    view.agents["B"] = _agent(spec, "B", pb, 4)
    est = estimate(view, "B", np.array([1]), np.array([4]), shapes)[0]
    assert est == pytest.approx(256 / (0.03 + 0.002 * 64 + 0.02 + 0.003 * 2))
    # no multi-GPU run anywhere: N x the 1-GPU estimate (the first doubling doubles)
    view = _view({"A": _agent(spec, "A", pa, 1), "B": _agent(spec, "B", pb, 1)}, profile)
    one = 256 / (0.03 + 0.002 * 128 * 1) / 2   # 1 GPU of B: m = 128 with s = 1 (256 over 2 passes)
    est = estimate(view, "B", np.array([1, 1]), np.array([1, 2]), shapes)
    assert est[1] == pytest.approx(2 * est[0]) and est[0] == pytest.approx(one)


def test_options_are_row_normalised_restart_factored_and_powered():
    spec = ElasticSpec(initial_batch=256, max_batch=256, fixed_batch=256,
                       local_batch={"A": LocalBatchLimit(8, 256)})
    pa = ThroughputParams(0.02, 0.001, 0.01, 0.002, 0.05, 0.004, 1.0)
    shapes = {"A": TypeShape(2, 8)}
    view = _view({"A": _agent(spec, "A", pa, 2)}, {"A": {256: 0.4}}, current=[2, 0], gpu_type="A", age=300,
                 restarts=1)
    opts = job_options(0, view, shapes, configurations(shapes), P)
    assert [(o.config.gpus, o.current) for o in opts] == [(1, False), (2, True), (4, False)]  # cap 2 x 2
    xput = {k: 256 / (0.02 + 0.001 * 256 / k + (0 if k == 1 else 0.01 + 0.002 * (k - 2))) for k in (1, 2, 4)}
    r = (300 - 30) / (300 + 30)
    for o in opts:
        g = xput[o.config.gpus] / xput[1]
        assert o.value == round((g if o.current else r * g) ** P, 2)


# ---- the scheduler in the elastic loop: one type per job, determinism ------------------------------------
def test_sia_runs_jobs_on_one_type_and_is_deterministic():
    from sia_helpers import small_hetero_run

    first, types_seen = small_hetero_run()
    second, _ = small_hetero_run()
    assert first == second
    assert types_seen and all(len(t) == 1 for t in types_seen)   # never a mixed-type allocation


def test_with_profiles_the_gpu_cap_is_shared_across_types():
    """A job that held 8 GPUs on A may take up to 16 on B too once it is bootstrapped ([A]); 2 x 1 otherwise."""
    spec = ElasticSpec(initial_batch=256, max_batch=4096, fixed_batch=4096,
                       local_batch={"A": LocalBatchLimit(8, 256), "B": LocalBatchLimit(8, 256)})
    pa = ThroughputParams(0.02, 0.001, 0.01, 0.002, 0.05, 0.004, 1.0)
    shapes = {"A": TypeShape(4, 8), "B": TypeShape(4, 8)}
    agents = {"A": _agent(spec, "A", pa, 8), "B": _agent(spec, "B", pa, 1)}
    with_profile = job_options(0, _view(agents, {"A": {256: 0.4}, "B": {256: 0.5}}), shapes, configurations(shapes), P)
    assert max(o.config.gpus for o in with_profile if o.config.gpu_type == "B") == 16
    without = job_options(0, _view(agents, {}), shapes, configurations(shapes), P)
    assert max(o.config.gpus for o in without if o.config.gpu_type == "B") == 2
