"""Gavel's round-based leases (artist/policies/gavel/rounds.py): every round within each type's GPUs,
time fractions converging to X, placements kept, resets as Gavel's, determinism."""

import numpy as np
import pytest

from artist.policies.gavel.lp import max_min_fairness, max_sum_throughput
from artist.policies.gavel.rounds import RoundLeases, place_on_nodes


def _run(x, sf, runnable, gpus, rounds, leases=None):
    leases = leases or RoundLeases()
    ids = [f"j{i}" for i in range(len(sf))]
    history = []
    for r in range(rounds):
        picks = leases.pick(ids, x, sf, runnable, gpus, now=360.0 * r)
        used = np.zeros(len(gpus), dtype=int)
        for i, t in enumerate(picks):
            if t >= 0:
                assert runnable[i, t]
                used[t] += sf[i]
        assert np.all(used <= gpus)
        history.append(picks)
    return np.array(history)


def _fractions(history, types):
    return np.stack([(history == t).mean(axis=0) for t in range(types)], axis=1)


@pytest.mark.parametrize("seed", range(6))
def test_time_fractions_converge_to_the_allocation(seed):
    """1-GPU jobs (any X with rows <= 1 and columns <= N_t is a mix of whole assignments, so it is
    realisable): over 600 rounds each job's fraction of rounds on each type is X within 0.02."""
    rng = np.random.default_rng(seed)
    jobs, types = int(rng.integers(3, 9)), int(rng.integers(1, 4))
    t = rng.uniform(1, 10, (jobs, types))
    gpus = rng.integers(1, 4, types)
    sf = np.ones(jobs, dtype=int)
    solve = max_min_fairness if seed % 2 else max_sum_throughput
    x = solve(t, sf, gpus)
    history = _run(x, sf, t > 0, gpus, 600)
    assert np.abs(_fractions(history, types) - x).max() < 0.02


def test_multi_gpu_jobs_share_a_type_in_proportion():
    """Three 2-GPU jobs on 4 GPUs: max-min gives 2/3 each; two run each round, each 2/3 of the rounds."""
    sf = np.array([2, 2, 2])
    x = max_min_fairness(np.ones((3, 1)), sf, [4])
    assert x[:, 0] == pytest.approx([2 / 3] * 3, abs=1e-6)
    history = _run(x, sf, np.ones((3, 1), bool), np.array([4]), 300)
    assert np.all((history >= 0).sum(axis=1) == 2)
    assert _fractions(history, 1)[:, 0] == pytest.approx([2 / 3] * 3, abs=0.01)


def test_new_jobs_rank_by_allocation_and_waiting_raises_priority():
    """Round 1: nothing received, f = 1, priority = X: the larger X wins the only GPU. The loser's
    f falls to 1/3 (0.5 / 1.5), its priority 3 X, so it runs next round (X 0.4 x 3 > 0.6 / 1)."""
    x = np.array([[0.6], [0.4]])
    history = _run(x, [1, 1], np.ones((2, 1), bool), np.array([1]), 2)
    assert history.tolist() == [[0, -1], [-1, 0]]


def test_leftover_gpus_go_to_jobs_at_zero_allocation_but_never_where_they_cannot_run():
    x = np.array([[1.0, 0.0], [0.0, 0.0]])
    runnable = np.array([[True, True], [True, False]])
    history = _run(x, [1, 1], runnable, np.array([2, 2]), 3)
    assert history.tolist() == [[0, 0]] * 3        # j1 fills a free GPU of type 0 at priority 0
    history = _run(np.zeros((1, 1)), [1], np.zeros((1, 1), bool), np.array([1]), 2)
    assert history.tolist() == [[-1], [-1]]


def test_counts_reset_only_when_the_allocation_changed_and_1920_s_passed():
    leases = RoundLeases()
    ids, sf, ok, gpus = ["a", "b"], [1, 1], np.ones((2, 1), bool), [1]
    x1, x2 = np.array([[0.5], [0.5]]), np.array([[0.9], [0.1]])
    ran_a = [leases.pick(ids, x1, sf, ok, gpus, now=0.0)[0] == 0]   # first round: the first reset
    assert leases.resets == 1
    for now in (360.0, 720.0, 1800.0):                   # X changed, but < 1920 s since the reset
        ran_a.append(leases.pick(ids, x2, sf, ok, gpus, now=now)[0] == 0)
    assert leases.resets == 1 and leases.present["a"] == 4
    ran_a.append(leases.pick(ids, x2, sf, ok, gpus, now=2160.0)[0] == 0)
    assert leases.resets == 2 and leases.present["a"] == 1
    for now in (4320.0, 6480.0):                          # 1920 s passed but X unchanged since the reset
        ran_a.append(leases.pick(ids, x2, sf, ok, gpus, now=now)[0] == 0)
    assert leases.resets == 2 and leases.present["a"] == 3
    # deficits are never reset: rounds a was due (0.5 once, then 0.9 six times) minus rounds it ran
    assert leases.deficit["a"][0] == pytest.approx(0.5 + 6 * 0.9 - sum(ran_a))
    assert leases.received["a"][0] == sum(ran_a[4:])


def test_same_inputs_same_rounds():
    rng = np.random.default_rng(3)
    t = rng.uniform(1, 10, (12, 3))
    sf = rng.choice([1, 2, 4], 12)
    gpus = np.array([8, 4, 4])
    x = max_sum_throughput(t, sf, gpus)
    assert _run(x, sf, t > 0, gpus, 50).tobytes() == _run(x, sf, t > 0, gpus, 50).tobytes()


def test_placement_keeps_repicked_jobs_and_packs_the_others():
    node_type = [0, 0, 0, 1]               # three 4-GPU nodes of type 0, one 8-GPU node of type 1
    node_gpus = [4, 4, 4, 8]
    current = {"a": np.array([0, 2, 0, 0]), "b": np.array([0, 0, 0, 4])}
    picks = {"a": 0, "b": 0, "c": 0, "d": 0, "e": 1}
    sf = {"a": 2, "b": 4, "c": 3, "d": 3, "e": 8}
    out = place_on_nodes(picks, sf, node_type, node_gpus, current, ["a", "b", "c", "d", "e"])
    assert out["a"].tolist() == [0, 2, 0, 0]                  # kept
    assert out["b"].tolist() != [0, 0, 0, 4]                  # it held type 1, now picked on type 0: moved
    assert out["e"].tolist() == [0, 0, 0, 8]
    # largest first: b (4) on node 0 (nodes 0 and 2 tie, the lower first), c (3) whole on node 2; d (3)
    # fits whole nowhere (2 and 1 free), so it spreads, most free first
    assert out["b"].tolist() == [4, 0, 0, 0] and out["c"].tolist() == [0, 0, 3, 0]
    assert out["d"].tolist() == [0, 2, 1, 0]
    total = sum(out.values())
    assert np.all(total <= node_gpus)
    assert all(np.all(np.array(node_type)[v > 0] == picks[j]) for j, v in out.items())


def test_placement_prefers_the_tightest_node_that_holds_a_job_whole():
    out = place_on_nodes({"a": 0, "b": 0}, {"a": 3, "b": 1}, [0, 0], [4, 4],
                         {"a": np.array([3, 0])}, ["a", "b"])
    assert out["a"].tolist() == [3, 0] and out["b"].tolist() == [1, 0]   # node 0 has 1 free: tightest fit


def test_sia_artifact_leases_by_hand():
    """The Sia artifact's accounting: f = (rounds on t + 1/2) / (all jobs' rounds on t + 1/2 per job ever
    seen), never reset, no deficit. Two jobs, X = 1/2 each, one GPU: round 1 both 0.5 / 1.0 -> priority 1,
    arrival order picks a; round 2 a 1.5 / 2.0 -> 0.667, b 0.5 / 2.0 -> 2: b; then they alternate. A third
    job arriving at round 5 enters with its half round against the 5 rounds run: f = 0.5 / 5.5."""
    from artist.policies.gavel.rounds import SiaArtifactLeases

    leases = SiaArtifactLeases()
    x, runnable = np.array([[0.5], [0.5]]), np.ones((2, 1), dtype=bool)
    picks = [leases.pick(["a", "b"], x, [1, 1], runnable, [1], now=360.0 * r) for r in range(4)]
    assert picks == [[0, -1], [-1, 0], [0, -1], [-1, 0]]
    assert leases.type_rounds.tolist() == [1.0 + 4]
    x3 = np.array([[0.4], [0.4], [0.2]])
    leases.pick(["a", "b", "c"], x3, [1, 1, 1], np.ones((3, 1), dtype=bool), [1], now=360.0 * 4)
    # c: 0.2 / (0.5 / 5.5) = 2.2 beats a (0.4 / (2.5 / 5.5) = 0.88) and b (same): c ran
    assert leases.received["c"].tolist() == [1.0] and leases.resets == 0
    # a job that leaves keeps its rounds in the type's total (the artifact never subtracts them)
    leases.pick(["c"], np.array([[1.0]]), [1], np.ones((1, 1), dtype=bool), [1], now=360.0 * 5)
    assert leases.type_rounds.tolist() == [1.0 + 4 + 0.5 + 1 + 1]


def test_sia_artifact_worker_assignment_by_hand():
    """Larger scale factors are assigned first and fill from the lowest server; a smaller job keeps its
    workers only if none was taken: a 4-GPU job picked beside a 2-GPU job that held node 0's first two
    workers takes node 0 whole, and the 2-GPU job moves to node 1."""
    from artist.policies.gavel.rounds import assign_workers

    node_type, gpus = [0, 0], [4, 4]
    first = assign_workers({"s": 0}, ["s"], {"s": 2}, node_type, gpus, {})
    assert first == {"s": ((0, 0), (0, 1))}
    second = assign_workers({"s": 0, "big": 0}, ["s", "big"], {"s": 2, "big": 4}, node_type, gpus, first)
    assert second == {"big": ((0, 0), (0, 1), (0, 2), (0, 3)), "s": ((1, 0), (1, 1))}
    # alone again, it keeps where it is; not picked, it is not assigned
    third = assign_workers({"s": 0, "big": -1}, ["s"], {"s": 2, "big": 4}, node_type, gpus, second)
    assert third == {"s": ((1, 0), (1, 1))}
