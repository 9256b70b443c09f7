"""Sia's ILP (digest 2.2 e, g), solved exactly with HiGHS (scipy.optimize.milp).

Binary x_o per option o = (job i, configuration j):

    p < 0:  min  sum_o x_o G'_o + lambda sum_i (1 - sum_{o of i} x_o)
    p > 0:  max  sum_o x_o G'_o - lambda sum_i (1 - sum_{o of i} x_o)
    s.t.    sum_{o of i} x_o <= 1                          every job: at most one option
            sum_{o of type g} x_o footprint_o <= N_g       every GPU type: its free GPUs

With p < 0 every G' <= 1 < lambda = 1.1, so every job that can be placed is. The constant lambda x jobs
is dropped: the objective per option is G' - lambda (p < 0, minimised) or -(G' + lambda) (p > 0). The
MIP gap is 0, so the answer is an optimum (ties: whichever HiGHS returns, deterministic for one input).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix

from artist.policies.sia.matrix import Option

LAMBDA = 1.1      # penalty per job left without an option ([P] section 4.3, [A] sia_default_lambda_n)
P = -0.5          # fairness power ([P] Fig. 10 default)


def objective(options: Sequence[Option], chosen: Sequence[int], jobs: int, p: float = P,
              lam: float = LAMBDA) -> float:
    """The ILP's objective (in its own sense: minimised for p < 0, maximised for p > 0) of a choice."""
    placed = len({options[k].job for k in chosen})
    total = sum(options[k].value for k in chosen)
    return total + lam * (jobs - placed) if p < 0 else total - lam * (jobs - placed)


def solve(options: Sequence[Option], jobs: int, free: Mapping[str, int], p: float = P, lam: float = LAMBDA,
          time_limit: float | None = None) -> list[int]:
    """Indices of the chosen options (at most one per job, within every type's free GPUs)."""
    if p == 0:
        raise ValueError("p = 0 is not a Sia objective (p < 0 or p > 0)")
    if not options:
        return []
    types = sorted(free)
    n = len(options)
    values = np.array([o.value for o in options])
    c = values - lam if p < 0 else -(values + lam)
    rows, cols, data = [], [], []
    for k, o in enumerate(options):
        if o.config.gpu_type not in free:
            raise ValueError(f"option of job {o.job} on unknown GPU type {o.config.gpu_type!r}")
        rows += [o.job, jobs + types.index(o.config.gpu_type)]
        cols += [k, k]
        data += [1.0, float(o.footprint)]
    a = coo_matrix((data, (rows, cols)), shape=(jobs + len(types), n)).tocsr()
    upper = np.concatenate([np.ones(jobs), [float(free[t]) for t in types]])
    options_ = {"mip_rel_gap": 0.0, "presolve": True}
    if time_limit is not None:
        options_["time_limit"] = float(time_limit)
    res = milp(c, integrality=np.ones(n), bounds=Bounds(0, 1),
               constraints=LinearConstraint(a, -np.inf, upper), options=options_)
    if res.x is None:
        raise RuntimeError(f"Sia ILP: HiGHS found no solution ({res.message})")
    return [k for k in range(n) if res.x[k] > 0.5]
