"""Gavel's LPs (artist/policies/gavel/lp.py): constraints on random instances, optima equal to an exact
brute force (every vertex of the polytope enumerated) on small ones, and hand-solved cases."""

import itertools

import numpy as np
import pytest

from artist.policies.gavel.lp import max_min_fairness, max_min_value, max_sum_throughput
from artist.policies.gavel.throughputs import equal_share_throughputs


def _random_instance(rng, jobs, types):
    t = rng.uniform(0.5, 10.0, (jobs, types)) * rng.uniform(1, 100, (jobs, 1))  # units differ per job
    t[rng.random((jobs, types)) < 0.2] = 0.0                                      # some jobs cannot run somewhere
    sf = rng.choice([1, 1, 2, 4, 8], jobs)
    gpus = rng.integers(0, 17, types)
    return t, sf, gpus


def _check_feasible(x, t, sf, gpus):
    assert x.shape == t.shape
    assert np.all(x >= 0) and np.all(x <= 1)
    assert np.all(x.sum(axis=1) <= 1 + 1e-12)
    assert np.all(sf @ x <= gpus + 1e-9)
    assert np.all(x[(t == 0) | (sf[:, None] > gpus[None, :])] == 0)


@pytest.mark.parametrize("seed", range(40))
def test_allocations_keep_rows_and_capacity_on_random_instances(seed):
    rng = np.random.default_rng(seed)
    t, sf, gpus = _random_instance(rng, int(rng.integers(1, 13)), int(rng.integers(1, 5)))
    for x in (max_sum_throughput(t, sf, gpus), max_sum_throughput(t, sf, gpus, normalise=False),
              max_min_fairness(t, sf, gpus)):
        _check_feasible(x, t, sf, gpus)


def _vertices(a, b):
    """Every vertex of {x: a x <= b}: each choice of n tight constraints out of m, solved, kept if feasible."""
    m, n = a.shape
    rows = np.array(list(itertools.combinations(range(m), n)))
    subs = a[rows]
    ok = np.abs(np.linalg.det(subs)) > 1e-12
    x = np.linalg.solve(subs[ok], b[rows[ok]][..., None])[..., 0]
    return x[np.all(x @ a.T <= b + 1e-9, axis=1)]


def _vertex_max(c, a, b):
    """max c.x subject to a x <= b (a bounded polytope: the best vertex)."""
    return float((_vertices(a, b) @ c).max())


def _polytope(t, sf, gpus):
    """a x <= b for X flattened job-major: bounds, rows, types."""
    jobs, types = t.shape
    n = jobs * types
    ub = ((t > 0) & (sf[:, None] <= gpus[None, :])).ravel().astype(float)
    rows = np.kron(np.eye(jobs), np.ones(types))
    caps = np.kron(sf[None, :], np.eye(types))
    a = np.vstack([-np.eye(n), np.eye(n), rows, caps])
    b = np.concatenate([np.zeros(n), ub, np.ones(jobs), gpus])
    return a, b


@pytest.mark.parametrize("seed", range(12))
def test_max_sum_optimum_equals_the_best_vertex(seed):
    rng = np.random.default_rng(100 + seed)
    t = rng.uniform(0.1, 5.0, (3, 2))
    sf = rng.choice([1, 2], 3)
    gpus = rng.integers(1, 4, 2)
    a, b = _polytope(t, sf, gpus)
    attainable = np.where(sf[:, None] <= gpus[None, :], t, 0.0)   # a type too small for the job counts 0
    vertices = _vertices(a, b)
    for normalise in (True, False):
        w = attainable / attainable.sum(axis=1, keepdims=True) if normalise else attainable
        x = max_sum_throughput(t, sf, gpus, normalise=normalise)
        assert float((w * x).sum()) == pytest.approx(float((vertices @ w.ravel()).max()), rel=1e-7)


@pytest.mark.parametrize("seed", range(12))
def test_max_min_optimum_equals_the_best_vertex(seed):
    """Over (X, m): maximise m subject to m <= (s_j) sum_t T X / T_equal for every job, by vertices."""
    rng = np.random.default_rng(200 + seed)
    t = rng.uniform(0.1, 5.0, (2, 2))
    sf = rng.choice([1, 2], 2)
    gpus = rng.integers(1, 4, 2)
    a, b = _polytope(t, sf, gpus)
    attainable = np.where(sf[:, None] <= gpus[None, :], t, 0.0)   # a type too small for the job counts 0
    fair = attainable / equal_share_throughputs(attainable, gpus)[:, None] * sf[:, None]
    n = t.size
    a_full = np.vstack([np.hstack([a, np.zeros((len(a), 1))]),
                        np.hstack([-np.kron(np.eye(2), np.ones(2)) * fair.ravel(), np.ones((2, 1))]),
                        np.eye(1, n + 1, n) * -1])
    b_full = np.concatenate([b, np.zeros(3)])
    best = _vertex_max(np.eye(1, n + 1, n)[0], a_full, b_full)
    x = max_min_fairness(t, sf, gpus)
    assert max_min_value(x, t, sf, gpus) == pytest.approx(best, rel=1e-6)


def test_max_sum_gives_the_fast_type_to_the_job_that_gains_most_from_it():
    """One slow and one fast GPU. Job A runs 4x faster on the fast type, B 1.5x: normalised rows
    A (0.2, 0.8), B (0.4, 0.6); A fast + B slow = 1.2 beats A slow + B fast = 0.8 (and any time split)."""
    t = np.array([[10.0, 40.0], [300.0, 450.0]])   # units of the two jobs differ: normalisation removes them
    x = max_sum_throughput(t, [1, 1], [1, 1])
    assert x == pytest.approx(np.array([[0.0, 1.0], [1.0, 0.0]]), abs=1e-9)
    # a job's samples per second in other units (x 1000) changes nothing when normalised
    assert max_sum_throughput(t * [[1000.0], [1.0]], [1, 1], [1, 1]) == pytest.approx(x, abs=1e-9)


def test_max_min_by_hand_two_jobs_two_types():
    """2 slow GPUs, 1 fast. T_A = (1, 4), T_B = (1, 1.5); equal share (2/3, 1/3) gives T_equal A = 2,
    B = 7/6, so normalised A = (1/2, 2), B = (6/7, 9/7). Both rows full, the fast GPU shared
    (a + b = 1): A = 1/2 + 3/2 a, B = 6/7 + 3/7 b = 9/7 - 3/7 a, equal at a = 11/27: value 10/9."""
    t = np.array([[1.0, 4.0], [1.0, 1.5]])
    x = max_min_fairness(t, [1, 1], [2, 1])
    assert x == pytest.approx(np.array([[16, 11], [11, 16]]) / 27, abs=1e-6)
    assert max_min_value(x, t, [1, 1], [2, 1]) == pytest.approx(10 / 9, rel=1e-6)


def test_max_min_counts_scale_factors_and_uses_spare_gpus():
    """One type of 4 GPUs; jobs of 1, 1 and 4 GPUs: Gavel's objective min(X1, X2, 4 X3) peaks at 1
    with X1 = X2 = 1 (rows full); the 4-GPU job then needs X3 >= 1/4, and the 2 GPUs left give it 1/2."""
    x = max_min_fairness(np.ones((3, 1)), [1, 1, 4], [4])
    assert x[:, 0] == pytest.approx([1.0, 1.0, 0.5], abs=1e-6)
    # two equal 1-GPU jobs on one GPU: half each
    assert max_min_fairness(np.ones((2, 1)) * [[3.0], [7.0]], [1, 1], [1])[:, 0] == pytest.approx([0.5, 0.5], abs=1e-6)


def test_jobs_that_cannot_run_get_nothing_and_bad_input_is_refused():
    t = np.array([[1.0, 0.0], [2.0, 3.0], [5.0, 5.0]])
    x = max_min_fairness(t, [1, 1, 8], [2, 2])    # job 3 needs 8 GPUs: fits no type
    assert x[2] == pytest.approx([0, 0]) and x[0, 1] == 0
    assert max_sum_throughput(np.zeros((0, 2)), [], [1, 1]).shape == (0, 2)
    with pytest.raises(ValueError, match="jobs x types"):
        max_sum_throughput(np.ones((2, 2)), [1], [1, 1])
    with pytest.raises(ValueError, match="finite and >= 0"):
        max_sum_throughput(np.array([[-1.0]]), [1], [1])
    with pytest.raises(ValueError, match="whole GPU counts"):
        max_min_fairness(np.ones((1, 1)), [0], [1])
    with pytest.raises(ValueError, match="weights"):
        max_min_fairness(np.ones((1, 1)), [1], [1], weights=[0.0])


def test_same_input_same_allocation():
    rng = np.random.default_rng(7)
    t, sf, gpus = _random_instance(rng, 30, 3)
    for solve in (max_sum_throughput, max_min_fairness):
        assert solve(t, sf, gpus).tobytes() == solve(t.copy(), sf.copy(), gpus.copy()).tobytes()


def test_interior_solver_shares_time_among_interchangeable_jobs_at_the_same_optimum():
    """Three jobs alike (same throughput, one GPU each) on a type of two GPUs: every X with sum 2 is optimal.
    The simplex answer is a vertex (two jobs get the type, one nothing); the interior-point answer lies inside
    the optimal face: 2/3 each, by symmetry (the Sia artifact's Gavel, an interior-point solver, shares so)."""
    t = np.array([[3.0], [3.0], [3.0]])
    vertex = max_sum_throughput(t, [1, 1, 1], [2], normalise=False)
    inside = max_sum_throughput(t, [1, 1, 1], [2], normalise=False, solver="interior")
    assert sorted(vertex[:, 0].round(9).tolist()) == [0.0, 1.0, 1.0]
    assert inside[:, 0] == pytest.approx([2 / 3] * 3, abs=1e-6)
    assert (t * inside).sum() == pytest.approx((t * vertex).sum(), rel=1e-7)  # the same optimum
    # a job that gains more still gets its type first: the interior answer is optimal, not a fair share
    skewed = max_sum_throughput(np.array([[5.0], [3.0], [3.0]]), [1, 1, 1], [2], normalise=False, solver="interior")
    assert skewed[0, 0] == pytest.approx(1.0, abs=1e-6) and skewed[1:, 0] == pytest.approx([0.5, 0.5], abs=1e-6)
    with pytest.raises(ValueError, match="solver"):
        max_sum_throughput(t, [1, 1, 1], [2], solver="magic")
