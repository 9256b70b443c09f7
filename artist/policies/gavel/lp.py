"""Gavel's heterogeneity-aware policies as linear programs (paper section 4; space sharing off), solved
with HiGHS through scipy.optimize.linprog.

The variable is the allocation X[j, t], the fraction of time job j runs on GPU type t (on its scale
factor s_j of that type's GPUs). Every policy keeps Gavel's base constraints (policy.py of
stanford-futuredata/gavel, read for its formulation):

    0 <= X[j, t] <= 1,   sum_t X[j, t] <= 1   (a job runs on one type at a time),
    sum_j s_j X[j, t] <= N_t                   (the type's GPUs),

and X[j, t] = 0 wherever the job cannot run (throughput 0, or s_j > N_t). The effective throughput of
job j is sum_t T[j, t] X[j, t].

- max_sum_throughput: maximise sum_j sum_t T^[j, t] X[j, t] with T^ = T normalised per job by its row
  sum, T^[j, t] = T[j, t] / sum_t' T[j, t'] (Gavel's heterogeneity-aware throughput-sum policies, pull
  request #94: throughputs x 1 / throughputs.sum(axis=1)), so jobs of different models, whose samples
  per second are not comparable, weigh alike and each job's weight goes to the types it gains most on.
  normalise=False gives the raw sum (Gavel's later code computes the same scale but no longer applies
  it; Sia's artifact ran that raw form on iterations per second).
- max_min_fairness (LAS): maximise min_j (s_j / w_j) sum_t T[j, t] X[j, t] / T_equal[j], with T_equal
  the job's throughput under the equal share (throughputs.equal_share_throughputs) and w_j its priority
  weight (Gavel's MaxMinFairnessPolicyWithPerf, including the factor s_j: "a job run on 1 GPU should
  receive scale_factor more time than a job run on scale_factor GPUs"). Jobs that can run nowhere are
  left out of the minimum. Ours [I]: a second LP keeps the minimum at its optimum t* and maximises the
  jobs' summed normalised throughput sum_j sum_t T[j, t] X[j, t] / T_equal[j], so capacity the minimum
  does not need is used rather than left to the solver's choice of vertex (Gavel's own answer to that
  is a separate water-filling policy).

The returned X is clipped to its bounds and rescaled where the solver's tolerance (~1e-9) overshot a
row or a type, so the constraints hold in floating point.

Which optimum: max-sum-throughput LPs are often degenerate (jobs of one application and scale factor are
interchangeable), so many X are optimal. The simplex method (solver="simplex", the default) returns a
vertex: some of the interchangeable jobs get their whole time, the others none. An interior-point method
stopped without crossover (solver="interior": HiGHS' IPX through highspy) returns a point inside the optimal
face, where interchangeable jobs share the time, as the interior-point solver of the Sia artifact's Gavel
does (cvxpy with ECOS). Which one is chosen changes how often jobs are time-sliced: measured on the Sia
artifact's Philly-1 workload, restarts per job 4.0 (simplex) against 6.7 (interior; the artifact 6.4).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import csr_matrix, vstack

from artist.policies.gavel.throughputs import equal_share_throughputs

# The second max-min stage keeps the minimum within this relative slack of the first stage's optimum
# (below HiGHS's default primal feasibility tolerance of 1e-7, so the first stage's own answer is feasible).
MIN_SLACK = 1e-8


def _inputs(throughputs, scale_factors, type_gpus):
    t = np.asarray(throughputs, dtype=float)
    s = np.asarray(scale_factors, dtype=float)
    n = np.asarray(type_gpus, dtype=float)
    if t.ndim != 2 or t.shape != (len(s), len(n)):
        raise ValueError(f"throughputs must be jobs x types = {len(s)} x {len(n)}, got shape {t.shape}")
    if not np.all(np.isfinite(t)) or np.any(t < 0):
        raise ValueError("throughputs must be finite and >= 0")
    if np.any(s < 1) or np.any(s != np.round(s)):
        raise ValueError("scale factors must be whole GPU counts >= 1")
    if np.any(n < 0) or not np.all(np.isfinite(n)):
        raise ValueError("GPUs per type must be finite and >= 0")
    runnable = (t > 0) & (s[:, None] <= n[None, :])
    return np.where(runnable, t, 0.0), s, n, runnable


def _base_constraints(scale_factors: np.ndarray, type_gpus: np.ndarray, extra_columns: int = 0):
    """A_ub, b_ub of the rows (sum_t X[j, t] <= 1) and the types (sum_j s_j X[j, t] <= N_t) over X
    flattened job-major, with `extra_columns` zero columns appended for further variables."""
    jobs, types = len(scale_factors), len(type_gpus)
    idx = np.arange(jobs * types)
    rows = csr_matrix((np.ones(jobs * types), (idx // types, idx)), shape=(jobs, jobs * types + extra_columns))
    caps = csr_matrix((np.repeat(scale_factors, types), (idx % types, idx)),
                      shape=(types, jobs * types + extra_columns))
    return vstack([rows, caps]).tocsr(), np.concatenate([np.ones(jobs), type_gpus])


def _solve(c, a_ub, b_ub, bounds, what: str):
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
    if res.status != 0:
        raise RuntimeError(f"Gavel {what} LP not solved: {res.message}")
    return res.x


def _clean(x: np.ndarray, runnable: np.ndarray, scale_factors: np.ndarray, type_gpus: np.ndarray) -> np.ndarray:
    """Clip to [0, 1] (0 where not runnable) and scale down any row or type the solver overshot."""
    x = np.where(runnable, np.clip(x, 0.0, 1.0), 0.0)
    row = x.sum(axis=1)
    x = x / np.maximum(row, 1.0)[:, None]
    used = scale_factors @ x
    over = np.where(used > type_gpus, type_gpus / np.where(used > 0, used, 1.0), 1.0)
    return x * over[None, :] + 0.0  # + 0.0: no negative zeros in the answer


SOLVERS = ("simplex", "interior")


_HIGHS = []  # one solver per process: HiGHS prints its banner on stdout whenever one is made


def _highs():
    """This process' HiGHS instance, made once with its banner kept off stdout (a command's output)."""
    if not _HIGHS:
        import os
        import sys

        import highspy

        sys.stdout.flush()
        saved = os.dup(1)
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 1)
                _HIGHS.append(highspy.Highs())
        finally:
            os.dup2(saved, 1)
            os.close(saved)
    return _HIGHS[0]


def _solve_interior(c, a_ub, b_ub, bounds) -> np.ndarray:
    """min c x, a_ub x <= b_ub, bounds, by HiGHS' interior-point method without crossover (module docstring)."""
    import highspy

    h = _highs()
    h.clearModel()
    # presolve off: on small LPs it would settle the answer itself, at a vertex
    for option, value in (("output_flag", False), ("solver", "ipm"), ("run_crossover", "off"), ("presolve", "off"),
                          ("threads", 1), ("random_seed", 0)):
        h.setOptionValue(option, value)
    a = a_ub.tocsc()
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = len(c), a.shape[0]
    lp.col_cost_ = np.asarray(c, dtype=float)
    lp.col_lower_, lp.col_upper_ = bounds[:, 0].astype(float), bounds[:, 1].astype(float)
    lp.row_lower_ = np.full(a.shape[0], -highspy.kHighsInf)
    lp.row_upper_ = np.asarray(b_ub, dtype=float)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = a.indptr, a.indices, a.data
    h.passModel(lp)
    h.run()
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(f"Gavel max-sum-throughput LP (interior point) not solved: {h.modelStatusToString(status)}")
    return np.array(h.getSolution().col_value)


def max_sum_throughput(throughputs: np.ndarray, scale_factors: Sequence[int], type_gpus: Sequence[int],
                       normalise: bool = True, solver: str = "simplex") -> np.ndarray:
    """X (jobs x types) maximising the summed (normalised) throughput; solver: which optimum (module docstring)."""
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {', '.join(SOLVERS)}, got {solver!r}")
    t, s, n, runnable = _inputs(throughputs, scale_factors, type_gpus)
    if t.size == 0:
        return np.zeros(t.shape)
    if normalise:
        total = t.sum(axis=1, keepdims=True)
        t = t / np.where(total > 0, total, 1.0)
    a_ub, b_ub = _base_constraints(s, n)
    bounds = np.column_stack([np.zeros(t.size), runnable.ravel().astype(float)])
    if solver == "interior":
        x = _solve_interior(-t.ravel(), a_ub, b_ub, bounds)
    else:
        x = _solve(-t.ravel(), a_ub, b_ub, bounds, "max-sum-throughput")
    return _clean(x.reshape(t.shape), runnable, s, n)


def max_min_fairness(throughputs: np.ndarray, scale_factors: Sequence[int], type_gpus: Sequence[int],
                     weights: Sequence[float] | None = None) -> np.ndarray:
    """X (jobs x types) maximising the smallest weighted throughput relative to the equal share."""
    t, s, n, runnable = _inputs(throughputs, scale_factors, type_gpus)
    jobs, types = t.shape
    if t.size == 0:
        return np.zeros(t.shape)
    w = np.ones(jobs) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (jobs,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError(f"weights must be {jobs} positive numbers")
    equal = equal_share_throughputs(t, n)
    active = np.flatnonzero(equal > 0)
    if active.size == 0:
        return np.zeros(t.shape)
    relative = np.zeros_like(t)
    relative[active] = t[active] / equal[active, None]          # throughput / equal-share throughput
    fair = relative * (s / w)[:, None]                          # Gavel's objective entries
    a_base, b_base = _base_constraints(s, n, extra_columns=1)
    # t_min - sum_t fair[j, t] X[j, t] <= 0 for every job that can run somewhere
    idx = np.arange(jobs * types).reshape(jobs, types)[active].ravel()
    row_of = np.repeat(np.arange(active.size), types)
    a_min = csr_matrix((np.concatenate([-fair[active].ravel(), np.ones(active.size)]),
                        (np.concatenate([row_of, np.arange(active.size)]),
                         np.concatenate([idx, np.full(active.size, jobs * types)]))),
                       shape=(active.size, jobs * types + 1))
    bounds = np.vstack([np.column_stack([np.zeros(t.size), runnable.ravel().astype(float)]), [[0.0, np.inf]]])
    c = np.zeros(jobs * types + 1)
    c[-1] = -1.0
    first = _solve(c, vstack([a_base, a_min]).tocsr(), np.concatenate([b_base, np.zeros(active.size)]), bounds,
                   "max-min fairness")
    floor = first[-1] * (1 - MIN_SLACK)
    # stage 2 [I]: keep every job at >= floor, use the rest of the capacity for normalised throughput
    a_keep = csr_matrix((-fair[active].ravel(), (row_of, idx)), shape=(active.size, jobs * types))
    a2, b2 = _base_constraints(s, n)
    try:
        second = _solve(-relative.ravel(), vstack([a2, a_keep]).tocsr(),
                        np.concatenate([b2, np.full(active.size, -floor)]), bounds[:-1], "max-min fairness (stage 2)")
    except RuntimeError:  # numerically infeasible floor: the first stage's optimum stands
        second = first[:-1]
    return _clean(second.reshape(t.shape), runnable, s, n)


def max_min_value(allocation: np.ndarray, throughputs: np.ndarray, scale_factors: Sequence[int],
                  type_gpus: Sequence[int], weights: Sequence[float] | None = None) -> float:
    """min over jobs that can run somewhere of (s_j / w_j) sum_t T X / T_equal: the max-min objective of X."""
    t, s, n, _ = _inputs(throughputs, scale_factors, type_gpus)
    w = np.ones(len(s)) if weights is None else np.asarray(weights, dtype=float)
    equal = equal_share_throughputs(t, n)
    active = equal > 0
    if not active.any():
        return 0.0
    value = (np.asarray(allocation) * t).sum(axis=1)[active] / equal[active] * (s / w)[active]
    return float(value.min())
