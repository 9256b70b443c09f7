"""PolluxSched: REALLOC_FACTOR and the power mean by hand, constraints as properties over random
states and whole rounds, a brute-force optimum on a small cluster, and determinism by seed."""

import itertools
import math

import numpy as np
import pytest

from artist.elastic.spec import ElasticSpec, LocalBatchLimit
from artist.policies.pollux.agent import PolluxAgent
from artist.policies.pollux.scheduler import JobView, PolluxScheduler, _AllocationMutation, _AllocationProblem, \
    _Speedups, power_mean, realloc_factor
from artist.policies.pollux.throughput import ThroughputParams

SPEC = ElasticSpec(initial_batch=64, max_batch=4096, local_batch={"t4": LocalBatchLimit(16, 256)})


def test_realloc_factor_by_hand():
    # (T - R delta) / (T + delta): age 600 s, 2 restarts, delta 30: 540 / 630
    assert realloc_factor(600, 2, 30) == pytest.approx(540 / 630)
    assert realloc_factor(3600, 0, 30) == pytest.approx(3600 / 3630)
    assert realloc_factor(50, 2, 30) == 0.0  # 50 - 60 < 0: clamped
    assert realloc_factor(0, 0, 30) == 0.0


def test_power_mean_by_hand():
    x = np.array([1.0, 4.0])
    assert power_mean(x, -1) == pytest.approx(2 / (1 + 0.25))  # harmonic 1.6
    assert power_mean(x, 0) == pytest.approx(2.0)               # geometric
    assert power_mean(x, 1) == pytest.approx(2.5)               # arithmetic


def _agent(rng, most_gpus=None):
    agent = PolluxAgent(SPEC, "t4")
    agent.params = ThroughputParams(alpha_grad=rng.uniform(0.01, 0.1), beta_grad=rng.uniform(1e-4, 1e-3),
                                    alpha_local=rng.uniform(0.01, 0.05), beta_local=rng.uniform(1e-4, 5e-3),
                                    alpha_node=rng.uniform(0.05, 0.2), beta_node=rng.uniform(1e-3, 1e-2),
                                    gamma=rng.uniform(1, 3))
    agent.grad_sqr, agent.grad_var = 1.0, rng.uniform(0.5, 20)
    agent.most_gpus = int(most_gpus if most_gpus is not None else rng.integers(1, 9))
    return agent


def _jobs(rng, n_jobs, capacity):
    jobs = []
    free = np.array(capacity)
    for i in range(n_jobs):
        current = np.zeros(len(capacity), dtype=int)
        if rng.random() < 0.5:  # a running job holds some GPUs on one or two nodes
            for node in rng.choice(len(capacity), size=int(rng.integers(1, 3)), replace=False):
                take = int(rng.integers(0, free[node] + 1))
                current[node] += take
                free[node] -= take
        jobs.append(JobView(f"j{i}", _agent(rng), current, age=float(rng.uniform(0, 7200)),
                            restarts=int(rng.integers(0, 4)), attained=float(rng.uniform(0, 1e4)),
                            submitted=float(i), min_gpus=int(rng.integers(0, 3))))
    return jobs


def _check_constraints(alloc: np.ndarray, capacity, caps, max_nodes, min_gpus):
    assert np.all(alloc >= 0)
    assert np.all(alloc.sum(axis=0) <= capacity)                       # node capacity
    multi = np.count_nonzero(alloc, axis=1) > 1
    assert np.all((alloc[multi] > 0).sum(axis=0) <= 1)                  # interference avoidance
    assert np.all(alloc.sum(axis=1) <= caps)                            # the agents' 2x caps
    assert np.all(np.count_nonzero(alloc, axis=1) <= max_nodes)
    total = alloc.sum(axis=1)
    assert np.all((total == 0) | (total >= min_gpus))


@pytest.mark.parametrize("seed", range(6))
def test_repair_never_violates_capacity_or_interference_avoidance(seed):
    rng = np.random.default_rng(seed)
    capacity = rng.integers(1, 9, size=int(rng.integers(2, 7)))
    jobs = _jobs(rng, int(rng.integers(2, 9)), capacity)
    sched = PolluxScheduler(capacity, max_nodes=3)
    speedups = _Speedups(jobs, int(capacity.sum()), int(capacity.max()), sched.max_nodes)
    problem = _AllocationProblem(sched, jobs, speedups, np.stack([j.current for j in jobs]), rng)
    states = rng.integers(0, 10, size=(200, len(jobs), len(capacity)))  # anything, over capacity too
    for a in problem.repair(states):
        _check_constraints(a, capacity, speedups.caps, 3, problem.min_gpus)


@pytest.mark.parametrize("seed", range(3))
def test_allocations_of_whole_rounds_respect_the_constraints(seed):
    rng = np.random.default_rng(100 + seed)
    capacity = np.array([4] * 6)
    jobs = _jobs(rng, 7, capacity)
    sched = PolluxScheduler(capacity, pop_size=20, generations=15, seed=seed)
    for _ in range(2):
        out = sched.allocate(jobs)
        alloc = np.stack([out[j.job_id] for j in jobs])
        _check_constraints(alloc, capacity, np.array([j.agent.max_gpus for j in jobs]), 6,
                           np.array([j.min_gpus for j in jobs]))
        for j in jobs:
            j.current = out[j.job_id]


def _brute_force_best(jobs, capacity, p, delta):
    """Every feasible allocation of a tiny cluster, fitness computed here from the agents' goodput."""
    total = sum(capacity)
    fair = math.ceil(total / len(jobs))
    rows = list(itertools.product(*[range(c + 1) for c in capacity]))
    best = 0.0
    for combo in itertools.product(rows, repeat=len(jobs)):
        a = np.array(combo)
        if np.any(a.sum(axis=0) > capacity):
            continue
        multi = np.count_nonzero(a, axis=1) > 1
        if np.any((a[multi] > 0).sum(axis=0) > 1):
            continue
        if any(a[i].sum() > j.agent.max_gpus for i, j in enumerate(jobs)):
            continue
        x = []
        for i, j in enumerate(jobs):
            k, n = int(a[i].sum()), int(np.count_nonzero(a[i]))
            # the artifact's fair share: ceil(GPUs / jobs) on one node, not cut at the job's cap
            base = j.agent.goodput(1, fair).goodput
            s = 0.0 if k == 0 else j.agent.goodput(n, k).goodput / base
            if not np.array_equal(a[i], j.current):
                s *= max(j.age - j.restarts * delta, 0) / (j.age + delta)
            x.append(s + 1e-3)
        best = max(best, np.mean(np.array(x) ** p) ** (1 / p))
    return best


def test_search_finds_the_brute_force_optimum_on_a_small_cluster():
    rng = np.random.default_rng(5)
    capacity = np.array([2, 2])
    jobs = [JobView(f"j{i}", _agent(rng, most_gpus=2), np.zeros(2, dtype=int), age=3600.0, restarts=0,
                    attained=float(i), submitted=float(i)) for i in range(3)]
    want = _brute_force_best(jobs, capacity, -1.0, 30.0)
    sched = PolluxScheduler(capacity, pop_size=30, generations=30, seed=1)
    sched.allocate(jobs)
    assert sched.last_fitness == pytest.approx(want, rel=1e-9)


def test_the_second_objective_is_the_artifacts_cluster_utility_by_hand():
    """NSGA-II's second objective: the jobs' summed speedups over the GPUs of the nodes in use (the Pollux
    artifact's cluster utility), so that of two states alike in fitness the consolidated one survives.
    Speedups by hand from the agents' goodput: over the fair share, ceil(8 GPUs / 2 jobs) = 4 on one node."""
    rng = np.random.default_rng(2)
    capacity = np.array([4, 4])
    jobs = [JobView(f"j{i}", _agent(rng, most_gpus=4), np.zeros(2, dtype=int), age=3600.0, restarts=0,
                    attained=float(i), submitted=float(i)) for i in range(2)]
    sched = PolluxScheduler(capacity)
    speedups = _Speedups(jobs, 8, 4, sched.max_nodes)
    problem = _AllocationProblem(sched, jobs, speedups, np.zeros((2, 2), dtype=int), rng)

    def speedup(job, nodes, gpus):
        return job.agent.goodput(nodes, gpus).goodput / job.agent.goodput(1, 4).goodput

    packed = np.array([[[2, 0], [1, 0]]])      # both jobs on node 0: its 4 GPUs in use
    spread = np.array([[[1, 1], [0, 0]]])      # one job over both nodes: 8 GPUs in use
    idle = np.zeros((1, 2, 2), dtype=int)
    got = problem.utility(np.concatenate([packed, spread, idle]))
    assert got[0] == pytest.approx((speedup(jobs[0], 1, 2) + speedup(jobs[1], 1, 1)) / 4, rel=1e-12)
    assert got[1] == pytest.approx(speedup(jobs[0], 2, 2) / 8, rel=1e-12)
    assert got[2] == 0.0


def test_a_lone_job_on_a_large_cluster_is_still_worth_scheduling():
    """One job on 96 x 4 GPUs: its fair share, 384 GPUs, times its smallest local batch (16) is above its
    largest batch (4096), so no configuration fills it and its goodput there is 0. Its speedups are then
    over its cap on one node instead: positive, so the search gives it GPUs (an all-zero row left such a job
    waiting on an idle cluster)."""
    rng = np.random.default_rng(4)
    capacity = np.array([4] * 96)
    job = JobView("j0", _agent(rng, most_gpus=4), np.zeros(96, dtype=int), age=3600.0, restarts=0,
                  attained=0.0, submitted=0.0)
    assert 384 * SPEC.local_batch["t4"].min_local > SPEC.max_batch
    sched = PolluxScheduler(capacity, pop_size=10, generations=5, seed=0)
    speedups = _Speedups([job], 384, 4, sched.max_nodes)
    assert speedups.table[0, 1, 1:].min() > 0
    assert sched.allocate([job])["j0"].sum() >= 1


def test_mutation_grows_each_job_on_one_node_with_free_gpus_on_average():
    """The artifact's growth part: every node with a free GPU is picked with probability 1 / (such nodes),
    and a picked element set to a uniform count in [its value, the node's capacity]. With empty rows on 4
    free nodes of 4 GPUs: a row gains 4 x 1/4 x 4/5 = 0.8 non-zero elements on average, none above 4."""
    rng = np.random.default_rng(0)
    capacity = np.array([4, 4, 4, 4])
    jobs = [JobView(f"j{i}", _agent(rng, most_gpus=8), np.zeros(4, dtype=int), age=3600.0, restarts=0,
                    attained=float(i), submitted=float(i)) for i in range(3)]
    sched = PolluxScheduler(capacity)
    speedups = _Speedups(jobs, 16, 4, sched.max_nodes)
    problem = _AllocationProblem(sched, jobs, speedups, np.zeros((3, 4), dtype=int), rng)
    pop = 4000
    out = _AllocationMutation()._do(problem, np.zeros((pop, 12), dtype=int)).reshape(pop, 3, 4)
    assert out.max() <= 4 and out.min() >= 0
    assert np.count_nonzero(out, axis=2).mean() == pytest.approx(0.8, abs=0.03)
    # a node the job uses is picked with the extra 1 / (its used nodes with a free GPU): a row holding 1 GPU on
    # node 0 is picked there with probability 1/4 + 1 - 1/4 x 1 = 1 and keeps 1 only if the draw in [1, 4] is 1;
    # reset to the (empty) current row (0.1) or zeroed (0.1 x 0.1), it is a free node again (1/4, then 1/5):
    # P(still 1) = 0.9 x (0.99 x 1/4 + 0.01 x 1/20) + 0.1 x 1/20 = 0.2282
    held = np.zeros((pop, 3, 4), dtype=int)
    held[:, :, 0] = 1
    grown = _AllocationMutation()._do(problem, held.reshape(pop, 12)).reshape(pop, 3, 4)
    assert (grown[:, :, 0] == 1).mean() == pytest.approx(0.2282, abs=0.02)


def test_same_seed_same_allocations_and_a_pending_job_gets_gpus():
    def run(seed):
        rng = np.random.default_rng(11)
        capacity = np.array([4] * 4)
        jobs = _jobs(rng, 6, capacity)
        sched = PolluxScheduler(capacity, pop_size=20, generations=10, seed=seed)
        rounds = []
        for _ in range(3):
            out = sched.allocate(jobs)
            rounds.append(np.stack([out[j.job_id] for j in jobs]).tobytes())
            for j in jobs:
                j.current = out[j.job_id]
        return rounds, jobs
    first, jobs = run(3)
    again, _ = run(3)
    assert first == again
    # 6 jobs, 16 GPUs: with p = -1 an idle job costs ~1000 in the mean, so every job holds a GPU
    assert all(j.current.sum() >= 1 for j in jobs)


def test_scheduler_refuses_bad_settings():
    with pytest.raises(ValueError, match="capacity"):
        PolluxScheduler([])
    with pytest.raises(ValueError, match="pop_size"):
        PolluxScheduler([4], pop_size=1)


def test_tiresias_baseline_by_hand():
    from artist.policies.pollux.baselines import TiresiasRigid

    def view(job_id, gpus, current, attained):
        return JobView(job_id, None, np.array(current), age=0.0, restarts=0, attained=attained, submitted=0.0,
                       gpus_wanted=gpus)
    tiresias = TiresiasRigid([4, 4], threshold_gpu_seconds=240)
    # A (4 GPUs) and B (2) fit in 8; C (4) does not: A takes node 0 (most free, lowest index), B node 1
    out = tiresias.allocate([view("A", 4, [0, 0], 0), view("B", 2, [0, 0], 0), view("C", 4, [0, 0], 0)])
    assert [out[k].tolist() for k in "ABC"] == [[4, 0], [0, 2], [0, 0]]
    # A used 240 GPU-s: second queue. B keeps its GPUs, C takes node 0, A is preempted
    out = tiresias.allocate([view("A", 4, [4, 0], 240), view("B", 2, [0, 2], 120), view("C", 4, [0, 0], 0)])
    assert [out[k].tolist() for k in "ABC"] == [[0, 0], [0, 2], [4, 0]]
    # a smaller job behind a blocked one runs (D, 2 GPUs, after A, 4 GPUs, with 2 free)
    out = tiresias.allocate([view("A", 4, [0, 0], 240), view("B", 2, [0, 2], 120), view("C", 4, [4, 0], 240),
                             view("D", 2, [0, 0], 0)])
    assert out["D"].sum() == 2 and out["B"].tolist() == [0, 2] and out["A"].sum() + out["C"].sum() == 4
    with pytest.raises(ValueError, match="gpus_wanted"):
        tiresias.allocate([view("E", 0, [0, 0], 0)])


def test_exact_duplicate_elimination_agrees_with_pymoos_default():
    """The hashed duplicate test keeps the same individuals as pymoo's distance-based default."""
    from pymoo.core.duplicate import DefaultDuplicateElimination
    from pymoo.core.population import Population

    from artist.policies.pollux.scheduler import _ExactDuplicates

    rng = np.random.default_rng(3)
    for _ in range(20):
        x = rng.integers(0, 3, size=(40, 6))
        other = rng.integers(0, 3, size=(15, 6))
        pop, oth = Population.new("X", x), Population.new("X", other)
        ours = _ExactDuplicates().do(pop, oth, return_indices=True)[1]
        theirs = DefaultDuplicateElimination().do(pop, oth, return_indices=True)[1]
        assert ours == theirs


def test_array_mating_and_survival_give_pymoos_own_allocations():
    """The GA's mating loop, tournament and survival are pymoo's re-written on arrays with the same draws:
    with pymoo's own Mating, binary_tournament and RankAndCrowding in their place, every round's allocation
    and final population are the same bytes (converged rounds, where most children are copies, included)."""
    from pymoo.algorithms.moo.nsga2 import binary_tournament
    from pymoo.core.mating import Mating
    from pymoo.operators.selection.tournament import TournamentSelection
    from pymoo.operators.survival.rank_and_crowding import RankAndCrowding

    from artist.policies.pollux.scheduler import _AllocationMutation, _RowCrossover

    class PymoosLoops(PolluxScheduler):
        @staticmethod
        def _mating_and_survival(repair, duplicates):
            return Mating(TournamentSelection(func_comp=binary_tournament), _RowCrossover(), _AllocationMutation(),
                          repair=repair, eliminate_duplicates=duplicates, n_max_iterations=100), RankAndCrowding()

    def run(cls):
        rng = np.random.default_rng(21)
        capacity = np.array([4] * 5)
        jobs = _jobs(rng, 8, capacity)
        sched = cls(capacity, pop_size=24, generations=12, seed=5)
        rounds = []
        for _ in range(4):
            out = sched.allocate(jobs)
            rounds.append((np.stack([out[j.job_id] for j in jobs]).tobytes(), sched.last_fitness,
                           [sched._population[j.job_id].tobytes() for j in jobs]))
            for j in jobs:
                j.current = out[j.job_id]
        return rounds

    assert run(PolluxScheduler) == run(PymoosLoops)
