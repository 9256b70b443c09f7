"""Pollux's 7-parameter throughput model and its online fit (Qiao et al. OSDI'21, section 3.2 and 4.1).

    T_grad(m)        = alpha_grad + beta_grad m                                     (Eq. 8)
    T_sync(a)        = 0 on one GPU; alpha_local + beta_local (K - 2) on one node;
                       alpha_node + beta_node (K - 2) across nodes                  (Eq. 9)
    T_iter(a, m, s)  = s T_grad(m) + (T_grad(m)^gamma + T_sync(a)^gamma)^(1/gamma)  (Eq. 10-11)

The agent fits theta_sys to what its job measured: per configuration (nodes, K, m, s) the iteration
time, and, when the job ran accumulation passes, the time of one non-synchronising pass (compute only,
the artifact's accum_step_time). The fit minimises RMSLE with scipy's L-BFGS-B under Pollux's bounds
(alpha, beta >= 0 up to a 1e-8 slack; gamma in [1, 10]; searched over log alpha, log beta, see fit())
and priors for configurations never seen (digest 1.3, [P] + [A] adaptdl goodput.py):
- no multi-node observation: alpha_node, beta_node held at the lower bound during the fit, then raised
  to at least 1.1 x the single-node ones (the job is assumed to scale, a bit worse across nodes);
- no single-node multi-GPU observation: alpha_local, beta_local held at the lower bound;
- never more than 2 GPUs: both retrogression terms held at the lower bound;
- one local batch only: alpha_grad fixed at half the mean single-pass time (optimistic about larger m).
Regularisers as the artifact: 1e-3 (gamma - 1)^2 and 1e-2 ((beta_node/alpha_node)^2 + (beta_local/alpha_local)^2).

It knows nothing of the network model: it sees only timings the simulator lets a job measure.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass
from typing import Sequence

import numpy as np
from scipy.optimize import Bounds, minimize

LOWER = 1e-8          # lower bound of every alpha and beta (the artifact's slack above 0)
GAMMA_BOUNDS = (1.0, 10.0)
# Upper bound of every alpha and beta in the search (Pollux: none). 1e4 s per pass or per GPU is far
# beyond any step time, and keeps exp() of the log-space search finite.
UPPER_SECONDS = 1e4
NAMES = ("alpha_grad", "beta_grad", "alpha_local", "beta_local", "alpha_node", "beta_node", "gamma")


@dataclass(frozen=True)
class ThroughputParams:
    alpha_grad: float
    beta_grad: float
    alpha_local: float
    beta_local: float
    alpha_node: float
    beta_node: float
    gamma: float

    def as_array(self) -> np.ndarray:
        return np.array(astuple(self), dtype=float)


def grad_seconds(p, local_batch):
    """One forward + backward pass (Eq. 8). p: ThroughputParams or a 7-array."""
    p = _vec(p)
    return p[0] + p[1] * np.asarray(local_batch, dtype=float)


def sync_seconds(p, nodes, replicas):
    """Gradient synchronisation of one iteration (Eq. 9): 0 on one GPU."""
    p = _vec(p)
    nodes = np.asarray(nodes)
    replicas = np.asarray(replicas)
    alpha = np.where(nodes > 1, p[4], np.where(replicas > 1, p[2], 0.0))
    beta = np.where(nodes > 1, p[5], np.where(replicas > 1, p[3], 0.0))
    return alpha + beta * np.maximum(replicas - 2, 0)


def iteration_seconds(p, nodes, replicas, local_batch, accum_steps):
    """s accumulation passes plus one overlapped compute + sync pass (Eq. 11)."""
    p = _vec(p)
    tg = grad_seconds(p, local_batch)
    ts = sync_seconds(p, nodes, replicas)
    gamma = p[6]
    return np.asarray(accum_steps) * tg + (tg ** gamma + ts ** gamma) ** (1.0 / gamma)


def throughput(p, nodes, replicas, local_batch, accum_steps):
    """Samples per second (Eq. 7): M / T_iter with M = K m (s + 1)."""
    batch = np.asarray(replicas) * np.asarray(local_batch) * (np.asarray(accum_steps) + 1)
    return batch / iteration_seconds(p, nodes, replicas, local_batch, accum_steps)


def _vec(p) -> np.ndarray:
    return p.as_array() if isinstance(p, ThroughputParams) else np.asarray(p, dtype=float)


@dataclass(frozen=True)
class Observations:
    """What a job measured, one row per configuration. accum_seconds: one non-synchronising pass, NaN
    where the configuration ran no accumulation pass (nothing measured)."""
    nodes: np.ndarray
    replicas: np.ndarray
    local_batch: np.ndarray
    accum_steps: np.ndarray
    iter_seconds: np.ndarray
    accum_seconds: np.ndarray

    @classmethod
    def of(cls, rows: Sequence[tuple[int, int, int, int, float, float | None]]) -> "Observations":
        if not rows:
            raise ValueError("no observations to fit")
        cols = list(zip(*rows))
        accum = np.array([np.nan if v is None else v for v in cols[5]], dtype=float)
        return cls(np.array(cols[0], dtype=int), np.array(cols[1], dtype=int), np.array(cols[2], dtype=float),
                   np.array(cols[3], dtype=int), np.array(cols[4], dtype=float), accum)


def _objective(x, obs: Observations, has_accum: np.ndarray) -> tuple[float, np.ndarray]:
    """The fit's loss and its gradient in x (analytic: a numerical gradient costs 8 evaluations)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        value, grad = _error_and_gradient(x, obs, has_accum)
    if not (np.isfinite(value) and np.all(np.isfinite(grad))):
        return 1e6, np.zeros(7)  # an overflowing trial point: worse than any real fit
    return value, grad


def _rmsle_and_gradient(pred, true, dpred: np.ndarray) -> tuple[float, np.ndarray]:
    """RMSLE of pred against true, and its gradient given dpred (n_params, n) = d pred / d params."""
    r = np.log(pred) - np.log(true)
    err = float(np.sqrt(np.mean(r ** 2)))
    if err == 0.0:
        return 0.0, np.zeros(dpred.shape[0])
    return err, (dpred * (r / pred)).sum(axis=1) / (r.size * err)


def _error_and_gradient(x, obs: Observations, has_accum: np.ndarray) -> tuple[float, np.ndarray]:
    a_g, b_g, a_l, b_l, a_n, b_n, gamma = x
    m, k, nodes, s = obs.local_batch, obs.replicas, obs.nodes, obs.accum_steps
    tg = a_g + b_g * m
    retro = np.maximum(k - 2, 0)
    is_node, is_local = nodes > 1, (nodes == 1) & (k > 1)
    ts = np.where(is_node, a_n + b_n * retro, np.where(is_local, a_l + b_l * retro, 0.0))
    tg_g, ts_g = tg ** gamma, ts ** gamma
    q = tg_g + ts_g
    step = q ** (1.0 / gamma)
    t_iter = s * tg + step
    d_tg = s + step / q * tg_g / tg                       # d t_iter / d tg
    d_ts = np.where(ts > 0, step / q * ts_g / np.where(ts > 0, ts, 1.0), 0.0)
    log_ts = np.where(ts > 0, np.log(np.where(ts > 0, ts, 1.0)), 0.0)
    d_gamma = step * (-np.log(q) / gamma ** 2 + (tg_g * np.log(tg) + ts_g * log_ts) / (gamma * q))
    dpred = np.stack([d_tg, d_tg * m, d_ts * is_local, d_ts * is_local * retro, d_ts * is_node,
                      d_ts * is_node * retro, d_gamma])
    err, grad = _rmsle_and_gradient(t_iter, obs.iter_seconds, dpred)
    if has_accum.any():
        ma = m[has_accum]
        dacc = np.zeros((7, ma.size))
        dacc[0], dacc[1] = 1.0, ma
        e2, g2 = _rmsle_and_gradient(a_g + b_g * ma, obs.accum_seconds[has_accum], dacc)
        err, grad = err + e2, grad + g2
    reg = 1e-3 * (gamma - 1.0) ** 2 + 1e-2 * ((b_n / a_n) ** 2 + (b_l / a_l) ** 2)
    grad = grad + np.array([0.0, 0.0, -2e-2 * b_l ** 2 / a_l ** 3, 2e-2 * b_l / a_l ** 2,
                            -2e-2 * b_n ** 2 / a_n ** 3, 2e-2 * b_n / a_n ** 2, 2e-3 * (gamma - 1.0)])
    return err + reg, grad


SEARCHES = ("adaptdl", "log")


def fit(obs: Observations, start: ThroughputParams | None = None, search: str = "log") -> ThroughputParams:
    """theta_sys from a job's observations (L-BFGS-B on RMSLE, Pollux's bounds and priors). start: the
    previous fit, where the search of the parameters the priors leave free begins (the agent refits
    after every new configuration; starting from its last answer saves most iterations).

    search: "log" (ArtISt's: log alpha, log beta, warm start, a second start from gamma 2) or "adaptdl"
    (Pollux's own agent, adaptdl goodput.py fit_perf_params: L-BFGS-B over the raw parameters from
    alpha 0.1, beta 0.01, gamma 1.001, scipy's default tolerances, no warm start). With few configurations
    the loss has a valley of near-equal minima; adaptdl's search stops near its start, where the
    retrogression terms stay small (an optimistic model that lets jobs grow), the log search goes further
    down the valley to larger retrogression terms (e.g. ImageNet after 1, 2 and 4 GPUs: 64 GPUs predicted
    at 0.56 x one GPU's goodput, adaptdl 1.73 x; the measured tables scale near-linearly)."""
    if search not in SEARCHES:
        raise ValueError(f"search must be one of {', '.join(SEARCHES)}, got {search!r}")
    if np.any(obs.iter_seconds <= 0) or np.any(obs.accum_seconds[~np.isnan(obs.accum_seconds)] <= 0):
        raise ValueError("observed times must be positive")
    if np.any(obs.replicas < obs.nodes) or np.any(obs.nodes < 1):
        raise ValueError("observations need 1 <= nodes <= replicas")
    has_accum = ~np.isnan(obs.accum_seconds)
    x0 = np.array([1e-1, 1e-2] * 3 + [1.0 + 1e-3])
    lower = np.array([LOWER] * 6 + [GAMMA_BOUNDS[0]])
    upper = np.array([np.inf] * 6 + [GAMMA_BOUNDS[1]])
    fixed = np.zeros(7, dtype=bool)
    if np.unique(obs.local_batch).size == 1:
        # one local batch seen: the split of T_grad into alpha and beta m is unidentifiable; half-half
        single = obs.accum_seconds[has_accum] if has_accum.any() else \
            obs.iter_seconds[obs.replicas == 1] / (obs.accum_steps[obs.replicas == 1] + 1)
        if single.size == 0:
            single = obs.iter_seconds / (obs.accum_steps + 1)
        x0[0] = np.mean(single) / 2
        fixed[0] = True
    multi_node = obs.nodes > 1
    if not multi_node.any():
        fixed[[4, 5]] = True
    if not np.any((obs.nodes == 1) & (obs.replicas > 1)):
        fixed[[2, 3]] = True
    if not np.any(obs.replicas > 2):
        fixed[[3, 5]] = True
    for i in np.flatnonzero(fixed):
        if i != 0:
            x0[i] = lower[i]
    free = np.flatnonzero(~fixed)
    if search == "adaptdl":
        return _with_node_prior(_adaptdl_search(obs, has_accum, x0, free, lower, upper), multi_node)
    if start is not None:
        warm = np.clip(start.as_array(), lower, np.minimum(upper, UPPER_SECONDS))
        # a parameter the last fit held at its lower bound (a prior) starts from the default instead
        x0[free] = np.where(warm[free] > 1e-6, warm[free], x0[free])
    # Searched in log(alpha), log(beta) and gamma: the same bounds, but alphas (~0.1 s) and betas
    # (~1e-3 s) on one scale. In linear space L-BFGS-B stalls near its start (measured on exact
    # synthetic data: gamma 2.5 fitted as 1.20, alpha_local off by 53 %); in log space it recovers them.
    logged = np.arange(7) < 6

    def unpack(z):
        x = x0.copy()
        x[free] = np.where(logged[free], np.exp(z), z)
        return x

    z0 = np.where(logged[free], np.log(x0[free]), x0[free])
    zlo = np.where(logged[free], np.log(lower[free]), lower[free])
    zhi = np.where(logged[free], np.log(UPPER_SECONDS), upper[free])
    def loss(z):
        x = unpack(z)
        value, grad = _objective(x, obs, has_accum)
        # chain rule: d/dz = d/dx x for the logged parameters
        return value, np.where(logged[free], grad[free] * x[free], grad[free])

    def search(z):
        return minimize(loss, z, jac=True, method="L-BFGS-B", bounds=Bounds(zlo, zhi),
                        options={"ftol": 1e-10, "gtol": 1e-7, "maxiter": 500})

    result = search(z0)
    if start is None and not fixed[6]:
        # A cold fit also starts from gamma 2 (overlap half-way): from gamma ~1 L-BFGS-B can stall in a
        # flat valley on some machines' floating point (measured: exact synthetic data fitted with
        # alpha_local 7 % and beta_local 85 % off, loss 5x the true parameters'). Kept only when clearly
        # better, so fits that converge from the default start are unchanged.
        other = search(np.where(free == 6, 2.0, z0))
        if other.fun < 0.9 * result.fun:
            result = other
    return _with_node_prior(unpack(result.x), multi_node)


def _with_node_prior(x: np.ndarray, multi_node: np.ndarray) -> ThroughputParams:
    """The fitted parameters, with the artifact's post-fit prior where no observation crossed nodes:
    crossing nodes costs at least 10 % more than staying on one."""
    if not multi_node.any():
        x[4] = max(x[4], 1.1 * x[2])
        x[5] = max(x[5], 1.1 * x[3])
    return ThroughputParams(*map(float, x))


def _adaptdl_search(obs: Observations, has_accum: np.ndarray, x0: np.ndarray, free: np.ndarray, lower: np.ndarray,
                    upper: np.ndarray) -> np.ndarray:
    """fit(search="adaptdl")'s parameters before the post-fit prior: the free ones searched as they are, from
    adaptdl's start (x0 is that start with the priors' fixed values in place), bounds kept feasible, scipy's
    default L-BFGS-B options; the same loss and gradient as the log search."""
    def loss(xf):
        x = x0.copy()
        x[free] = xf
        value, grad = _objective(x, obs, has_accum)
        return value, grad[free]

    result = minimize(loss, x0[free], jac=True, method="L-BFGS-B",
                      bounds=Bounds(lower[free], upper[free], keep_feasible=True))
    x = x0.copy()
    x[free] = result.x
    return x
