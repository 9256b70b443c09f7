"""PolluxSched: cluster-wide allocation by a genetic search over node-level allocation matrices
(Pollux section 4.2; operators and defaults as the artifact, digest 1.4).

A state is an integer matrix A (jobs x nodes) of GPUs per node. Its fitness is the power mean over
every job, running or pending (Eq. 14):

    FITNESS_p(A) = ((1/J) sum_j (SPEEDUP_j(A_j) + 1e-3)^p)^(1/p)        (p = 0: geometric mean)

SPEEDUP_j is the job's best goodput on its row (its agent's fitted model, best (m, s)) over its best
goodput on a fair share (ceil(GPUs / J) GPUs on one node, the artifact's fair_nodes, not cut at the cap), and
x REALLOC_FACTOR_j(delta) = max(T_j - R_j delta, 0) / (T_j + delta) when the row differs from the
job's current one (T_j age, R_j restarts so far). The 1e-3 and the clamp at 0 are the artifact's.

The search is pymoo's NSGA-II (population 100, 100 generations; objectives: -FITNESS_p and -cluster
utility, the artifact's second objective: summed speedups over the GPUs of the nodes in use, which keeps
consolidated states on the front), seeded with the previous round's
final population re-indexed to the current jobs (a new job gets a zero row; the first round starts from
the current allocation only). Every candidate is repaired, in job priority order (least attained
service first, then earliest submission): interference avoidance (at most one multi-node job per node),
each job's GPU cap (its agent's 2x rule) truncated over a random node order, at most 16 nodes per job,
node capacity, and the job's minimum GPUs (else zero). The answer is the state of highest fitness in
the final population. Randomness comes from one numpy Generator seeded per round from (seed, round).

The NSGA-II loop is pymoo's (minimize, non-dominated sorting, crowding distance); its mating loop, binary
tournament and survival bookkeeping are pymoo's re-written on arrays with the same random draws
(_ArrayMating, _BinaryTournament, _RankAndCrowding; a test runs pymoo's own in their place and gets the same
bytes): once the population converges most children are copies of a parent, a generation takes ~10 mating
passes, and pymoo's per-individual objects were most of a round's time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from pymoo.algorithms.moo.nsga2 import NSGA2
from pymoo.core.crossover import Crossover
from pymoo.core.mating import Mating
from pymoo.core.duplicate import DuplicateElimination
from pymoo.core.mutation import Mutation
from pymoo.core.population import Population
from pymoo.core.problem import Problem
from pymoo.core.repair import Repair
from pymoo.core.sampling import Sampling
from pymoo.core.variable import get as variable_value
from pymoo.operators.selection.tournament import TournamentSelection
from pymoo.operators.survival.rank_and_crowding import RankAndCrowding
from pymoo.util.randomized_argsort import randomized_argsort
from pymoo.optimize import minimize

from artist.policies.pollux.agent import PolluxAgent
from artist.policies.pollux.goodput import best_goodputs

SPEEDUP_FLOOR = 1e-3  # added to every speedup before the power mean ([A]); an idle job counts ~1/1e-3
# The genetic search's population and generations: at most 10 000 each (the artifact runs 100 x 100; the
# search's memory grows with population x jobs x nodes every round)
MAX_GA_SIZE = 10_000


def realloc_factor(age: float, restarts: int, delta: float) -> float:
    """(T - R delta) / (T + delta), clamped at 0 (Pollux section 4.2; clamp [A])."""
    return max(age - restarts * delta, 0.0) / (age + delta)


def power_mean(values: np.ndarray, p: float, axis: int = -1) -> np.ndarray:
    """((1/J) sum x^p)^(1/p) along axis; p = 0: the geometric mean."""
    x = np.asarray(values, dtype=float)
    if p == 0:
        return np.exp(np.mean(np.log(x), axis=axis))
    return np.mean(x ** p, axis=axis) ** (1.0 / p)


@dataclass
class JobView:
    """What the scheduler knows of a job: its agent and its bookkeeping."""
    job_id: str
    agent: PolluxAgent
    current: np.ndarray      # GPUs per node now (zeros: pending)
    age: float               # seconds since submission
    restarts: int            # re-allocations so far (the first start is not one)
    attained: float          # GPU-seconds so far
    submitted: float
    min_gpus: int = 0
    gpus_wanted: int = 0     # a rigid baseline's fixed GPU count (Pollux ignores it)
    # Several GPU types (artist/elastic/cluster.py; Sia reads these, Pollux only `agent`):
    agents: dict | None = None      # GPU type -> that type's PolluxAgent of the job (None: one type)
    gpu_type: str = ""              # the type the job runs on (or last ran on)
    restarting: bool = False        # mid checkpoint-restart now
    restart_seconds: float = 0.0    # its restart delay
    category: str = "adaptive"      # adaptive | rigid | strong
    batch_wanted: int = 0           # a rigid or strong-scaling job's fixed total batch
    profile: dict | None = None     # GPU type -> {local batch: 1-GPU iteration seconds} (Sia's profiling)
    remaining_iterations: float = 0.0  # Optimus+Oracle's oracle: exact iterations left at batch_wanted


class _Speedups:
    """SPEEDUP_j(nodes, K) tables, filled from the agents' fitted goodput. memo (job id -> (key, rows)),
    kept by the scheduler across rounds, reuses a job's rows while nothing they depend on changed (its
    fitted parameters, phi, GPU cap, fair share): most jobs refit rarely, and a row is 1,000 goodput
    optimisations of 50 candidate batches each."""

    def __init__(self, jobs: Sequence[JobView], total_gpus: int, gpus_per_node: int, max_nodes: int,
                 memo: dict | None = None):
        self.caps = np.array([j.agent.max_gpus for j in jobs], dtype=int)
        top_k = int(self.caps.max(initial=1))
        self.table = np.zeros((len(jobs), max_nodes + 1, top_k + 1))
        fair = max(1, math.ceil(total_gpus / max(len(jobs), 1)))
        memo = {} if memo is None else memo
        for i, job in enumerate(jobs):
            cap = int(self.caps[i])
            base_k = fair  # the artifact's fair share: not cut at the job's cap (digest 1.4 step 2)
            params = job.agent.params
            key = (params, job.agent.phi if params is not None else None, cap, base_k, id(job.agent.spec))
            cached = memo.get(job.job_id)
            if cached is None or cached[0] != key:
                cached = memo[job.job_id] = (key, self._rows(job, cap, base_k, gpus_per_node, max_nodes))
            self.table[i, :, :cap + 1] = cached[1]

    @staticmethod
    def _rows(job: JobView, cap: int, base_k: int, gpus_per_node: int, max_nodes: int) -> np.ndarray:
        rows = np.zeros((max_nodes + 1, cap + 1))
        # [A] fair_nodes = ceil(nodes x a replica's dominant share) = 1 for one-GPU replicas: the fair share's
        # goodput is the model's on one node (its intra-node synchronisation), whatever fair is
        base_nodes = 1
        pairs = [(n, k) for k in range(1, cap + 1) for n in range(1, min(k, max_nodes) + 1)]
        n_idx = np.array([p[0] for p in pairs])
        k_idx = np.array([p[1] for p in pairs])
        params = job.agent.params
        if params is None:  # nothing measured yet: perfect scaling assumed (the artifact's r)
            rows[n_idx, k_idx] = k_idx / base_k
            return rows
        limit, phi = job.agent.limit, job.agent.phi
        base = best_goodputs(params, phi, job.agent.spec, limit, base_nodes, base_k)[0]
        if not base > 0 and base_k > cap:
            # a fair share no batch of the job fills (ceil(GPUs / jobs) x its smallest local batch above its
            # largest batch: one job on a large cluster) has no goodput here; its row would be all zero and
            # the job never scheduled. The artifact's goodput search starts at that smallest total batch even
            # above the largest (adaptdl goodput.py optimize); ours [I] cuts the share at the job's cap instead
            base = best_goodputs(params, phi, job.agent.spec, limit, base_nodes, cap)[0]
        if base > 0:
            rows[n_idx, k_idx] = best_goodputs(params, phi, job.agent.spec, limit, n_idx, k_idx) / base
        return rows

    def lookup(self, states: np.ndarray) -> np.ndarray:
        """states (P, J, N) -> speedups (P, J)."""
        k = states.sum(axis=2)
        n = (states > 0).sum(axis=2)
        n = np.minimum(n, self.table.shape[1] - 1)
        k = np.minimum(k, self.table.shape[2] - 1)
        rows = np.broadcast_to(np.arange(states.shape[1]), k.shape)
        return self.table[rows, n, k]


class _AllocationProblem(Problem):
    def __init__(self, sched: "PolluxScheduler", jobs: Sequence[JobView], speedups: _Speedups,
                 base: np.ndarray, rng: np.random.Generator):
        self.sched, self.jobs, self.speedups, self.base, self.rng = sched, jobs, speedups, base, rng
        self.shape = base.shape
        self.capacity = np.asarray(sched.capacity)
        self.order = sorted(range(len(jobs)), key=lambda i: (jobs[i].attained, jobs[i].submitted, jobs[i].job_id))
        self.order_array = np.array(self.order, dtype=int)
        self.factor = np.array([realloc_factor(j.age, j.restarts, sched.delta) for j in jobs])
        self.min_gpus = np.array([j.min_gpus for j in jobs])
        super().__init__(n_var=base.size, n_obj=2, xl=0, xu=int(self.capacity.max()), vtype=int)

    def fitness(self, states: np.ndarray) -> np.ndarray:
        speedup = self.speedups.lookup(states)
        changed = np.any(states != self.base[None], axis=2)
        speedup = speedup * np.where(changed, self.factor[None], 1.0)
        return power_mean(speedup + SPEEDUP_FLOOR, self.sched.p, axis=1)

    def utility(self, states: np.ndarray) -> np.ndarray:
        """The artifact's cluster utility (pollux.py get_cluster_utilities, one-GPU replicas): the jobs' summed
        speedups over the GPUs of the nodes in use. NSGA-II's second objective: among states of one
        fitness it keeps the consolidated ones (fewer nodes touched, fewer GPUs of low marginal speedup)."""
        total = ((states.sum(axis=1) > 0) * self.capacity[None]).sum(axis=1)
        return self.speedups.lookup(states).sum(axis=1) / np.maximum(total, 1)

    def _evaluate(self, x, out, *args, **kwargs):
        states = x.reshape(-1, *self.shape)
        out["F"] = np.column_stack([-self.fitness(states), -self.utility(states)])

    def repair(self, states: np.ndarray) -> np.ndarray:
        """Constraints on a population (P, J, N), vectorised over P, jobs in priority order."""
        a = np.maximum(np.asarray(states).astype(int), 0)
        n_pop, _, n_nodes = a.shape
        if self.sched.interference_avoidance:
            taken = np.zeros((n_pop, n_nodes), dtype=bool)  # node already holds a multi-node job
            # only jobs spread over nodes in some state take part (zeroing never makes a job multi-node)
            spread = (np.count_nonzero(a, axis=2) > 1).any(axis=0)
            for i in (i for i in self.order if spread[i]):
                row = a[:, i]                                   # a view: (P, N), all >= 0
                used = row > 0
                drop = ((used.sum(axis=1) > 1)[:, None]) & taken  # a multi-node row leaves taken nodes
                row[drop] = 0
                used &= ~drop
                taken |= (used.sum(axis=1) > 1)[:, None] & used
        # The cap and node-count limits are independent per job: all jobs at once, over a random node
        # order per (state, job). One draw of (jobs, P, N) numbers is the same stream, in the same
        # order, as the per-job draws of (P, N) it replaced, so the states are unchanged. Only the rows
        # over a limit are cut (a row within both limits is left as it is by the cut), so only theirs
        # are sorted; the whole draw is still made, keeping the stream.
        order = self.order_array
        draws = self.rng.random((len(order), n_pop, n_nodes))
        rows = a[:, order]
        caps = self.speedups.caps[order]
        over = (rows.sum(axis=2) > caps[None]) | (np.count_nonzero(rows, axis=2) > self.sched.max_nodes)
        if over.any():
            p_idx, j_idx = np.nonzero(over)
            perm = draws[j_idx, p_idx].argsort(axis=1)                           # (cut rows, N)
            cut = np.take_along_axis(rows[p_idx, j_idx], perm, axis=1)
            excess = cut.sum(axis=1, keepdims=True) - caps[j_idx][:, None]
            before = np.cumsum(cut, axis=1) - cut
            cut = cut - np.clip(excess - before, 0, cut)
            rank = np.cumsum(cut > 0, axis=1)
            cut = np.where(rank > self.sched.max_nodes, 0, cut)
            placed = np.empty_like(cut)
            np.put_along_axis(placed, perm, cut, axis=1)
            rows[p_idx, j_idx] = placed
        # Node capacity in priority order: what the jobs before hold plus this one's, cut at the capacity
        # (S_i = min(S_{i-1} + a_i, C) unrolls to min(cumsum a, C) for a >= 0), so each job gets
        # min(a_i, what is left), as the sequential loop gave. A state within every node's capacity
        # keeps its rows as they are.
        full = (rows.sum(axis=1) > self.capacity[None]).any(axis=1)
        if full.any():
            held = np.minimum(np.cumsum(rows[full], axis=1), self.capacity[None, None, :])
            rows[full] = np.diff(held, axis=1, prepend=0)
        a[:, order] = rows
        total = a.sum(axis=2)
        a[(total > 0) & (total < self.min_gpus[None])] = 0
        return a


class _Seeded(Sampling):
    def __init__(self, states: np.ndarray):
        super().__init__()
        self.states = states

    def _do(self, problem, n_samples, *args, random_state=None, **kwargs):
        picks = np.resize(np.arange(len(self.states)), n_samples)
        return self.states[picks].reshape(n_samples, -1)


class _RowCrossover(Crossover):
    """Single-point crossover over job rows: two parents, two children."""

    def __init__(self):
        super().__init__(2, 2)

    def _do(self, problem, X, *args, random_state=None, **kwargs):
        _, n_matings, n_var = X.shape
        jobs, nodes = problem.shape
        out = X.copy()
        if jobs < 2:
            return out
        # one cut per mating (a vector draw: the same numbers as one scalar draw per mating)
        cut = problem.rng.integers(1, jobs, size=n_matings) * nodes
        swap = np.arange(n_var)[None, :] >= cut[:, None]          # (matings, n_var): after the cut
        out[0] = np.where(swap, X[1], X[0])
        out[1] = np.where(swap, X[0], X[1])
        return out


class _AllocationMutation(Mutation):
    """Three parts, as the artifact's (digest 1.4, pollux.py Problem._mutation): a row reset to the current
    allocation (prob 0.1); for 10 % of the jobs each element zeroed with prob 0.1; and growth, every job of
    every child: each node with a free GPU picked with prob 1 / (nodes with a free GPU), combined with
    1 / (the job's used nodes with a free GPU) for the nodes it uses, and set to a uniform count in [its
    value, the node's capacity] (free GPUs counted before any growth; repair's capacity step settles it)."""

    def _do(self, problem, X, *args, random_state=None, **kwargs):
        rng = problem.rng
        a = X.reshape(-1, *problem.shape)
        n_pop, n_jobs, n_nodes = a.shape
        reset = rng.random((n_pop, n_jobs)) < 0.1
        a = np.where(reset[..., None], problem.base[None], a)   # a new array: X is left as it was
        zero = (rng.random((n_pop, n_jobs)) < 0.1)[..., None] & (rng.random(a.shape) < 0.1)
        a[zero] = 0
        # growth, the artifact's (pollux.py Problem._mutation part 3): every element of a node with a free GPU
        # is picked with probability 1 / (the job's nodes with a free GPU) (+ 1 / (its used nodes with one),
        # combined as independent events), and set to a uniform count in [its value, the node's capacity];
        # repair settles any overcommitment in priority order
        free = problem.capacity[None] - a.sum(axis=1)                              # (P, N)
        spare = np.broadcast_to((free >= 1)[:, None, :], a.shape)
        prob1 = spare / np.maximum(spare.sum(axis=2, keepdims=True), 1)
        used = (a > 0) & spare
        prob2 = used / np.maximum(used.sum(axis=2, keepdims=True), 1)
        pick = rng.random(a.shape) < prob1 + prob2 - prob1 * prob2
        room = np.maximum(problem.capacity[None, None, :] - a, 0)
        grown = a + np.floor(rng.random(a.shape) * (room + 1)).astype(int)
        a[pick] = grown[pick]
        return a.reshape(len(X), -1)


class _ExactDuplicates(DuplicateElimination):
    """pymoo's default duplicate test (Euclidean distance <= 1e-16 between decision vectors, the first of
    equal ones kept) is exact equality for integer states; here by hashing the rows' bytes instead of
    an all-pairs distance matrix (which was 12 % of a round's time on 40 jobs). Used by the initial
    population; the mating passes (_ArrayMating) compare the same keys."""

    def _do(self, pop, other, is_duplicate):
        seen = set()
        if other is not None:
            seen.update(row.tobytes() for row in np.ascontiguousarray(other.get("X"), dtype=np.int64))
        for i, row in enumerate(np.ascontiguousarray(pop.get("X"), dtype=np.int64)):
            key = row.tobytes()
            if key in seen:
                is_duplicate[i] = True
            else:
                seen.add(key)
        return is_duplicate


class _BinaryTournament:
    """pymoo's NSGA-II binary tournament (pymoo.algorithms.moo.nsga2.binary_tournament,
    'comp_by_dom_and_crowding'), vectorised: the dominating one of each pair wins, else the larger crowding
    distance, else a random one of the two. The states have no constraints (CV 0), so its feasibility
    branch never decides. Ties draw from the same stream as pymoo's one choice per tie in tournament
    order, so the parents are the same. The parents' objectives and crowding are read once per population:
    a generation runs several mating passes over the same parents (about 10 once it has converged)."""

    def __init__(self):
        self._pop, self._f, self._crowding = None, None, None

    def __call__(self, pop, P, algorithm, **kwargs):
        if P.shape[1] != 2:
            raise ValueError("only binary tournaments")
        if pop is not self._pop:  # a reference is held, so a new population is never mistaken for it
            inds = pop.tolist()
            self._pop = pop
            self._f = np.array([ind.F for ind in inds], dtype=float)
            self._crowding = np.array([ind.data.get("crowding") for ind in inds], dtype=float)
        f, crowding = self._f, self._crowding
        a, b = P[:, 0], P[:, 1]
        a_less, b_less = (f[a] < f[b]).any(axis=1), (f[b] < f[a]).any(axis=1)
        winner = np.where(a_less & ~b_less, a, np.where(b_less & ~a_less, b, -1))
        open_ = winner < 0
        by_crowding = np.where(crowding[a] > crowding[b], a, np.where(crowding[a] < crowding[b], b, -1))
        winner[open_] = by_crowding[open_]
        ties = np.flatnonzero(winner < 0)
        if ties.size:
            # pymoo draws random_state.choice([a, b]) per tie in order; numpy's Generator.choice of two
            # unweighted items is integers(0, 2), and one vector draw of n equals n scalar ones (checked
            # over 200 seeds, numpy 2.4: the same picks and the same stream after)
            pick = algorithm.random_state.integers(0, 2, size=ties.size)
            winner[ties] = np.where(pick == 0, a[ties], b[ties])
        return winner[:, None].astype(int, copy=False)


class _RankAndCrowding(RankAndCrowding):
    """pymoo's NSGA-II survival (RankAndCrowding._do with its defaults: fronts by non-dominated sorting, the
    splitting front cut by crowding distance through randomized_argsort), step for step and with the same
    random draws; only the objectives are read and rank and crowding stored directly on the individuals
    (Individual.set keeps them in .data, as here) instead of through pymoo's per-attribute accessors."""

    def _do(self, problem, pop, *args, random_state=None, n_survive=None, **kwargs):
        F = np.array([ind.F for ind in pop]).astype(float, copy=False)
        survivors: list[int] = []
        for k, front in enumerate(self.nds.do(F, n_stop_if_ranked=n_survive)):
            keep = np.arange(len(front))
            if len(survivors) + len(keep) > n_survive:
                n_remove = len(survivors) + len(front) - n_survive
                crowding = self.crowding_func.do(F[front, :], n_remove=n_remove)
                keep = randomized_argsort(crowding, order="descending", method="numpy",
                                          random_state=random_state)[:-n_remove]
            else:
                crowding = self.crowding_func.do(F[front, :], n_remove=0)
            for j, i in enumerate(front):
                data = pop[i].data
                data["rank"] = k
                data["crowding"] = crowding[j]
            survivors.extend(front[keep])
        return pop[survivors]


class _ArrayMating(Mating):
    """pymoo's mating loop (InfillCriterion.do with Mating._do: selection, crossover with probability prob,
    mutation of each child with probability prob, repair, duplicate elimination against the children
    itself, the parents and the children so far, truncation; repeated until n_offsprings unique children
    or n_max_iterations passes), step for step with the same operators' _do and the same random draws in
    the same order, on arrays: the children become pymoo individuals once, at the end. Once the population
    has converged most children are copies and a generation takes ~10 passes; pymoo built individuals and
    populations in every pass (most of a round's time)."""

    def do(self, problem, pop, n_offsprings, random_state=None, n_max_iterations=None, **kwargs):
        n_max_iterations = self.n_max_iterations if n_max_iterations is None else n_max_iterations
        crossover, mutation, n_var = self.crossover, self.mutation, problem.n_var
        parents_x = np.array([ind.X for ind in pop.tolist()])
        seen = {row.tobytes() for row in np.ascontiguousarray(parents_x, dtype=np.int64)}
        children: list[np.ndarray] = []
        n_infills = 0
        while len(children) < n_offsprings:
            n_remaining = n_offsprings - len(children)
            n_matings = math.ceil(n_remaining / crossover.n_offsprings)
            idx = self.selection.do(problem, pop, n_matings, n_parents=crossover.n_parents, to_pop=False,
                                    random_state=random_state, **kwargs)
            x = np.swapaxes(parents_x[idx], 0, 1)                        # (parents, matings, n_var)
            xp = np.empty((crossover.n_offsprings, n_matings, n_var), dtype=x.dtype)
            cross = random_state.random(n_matings) < variable_value(crossover.prob, size=n_matings)
            if np.any(cross):
                q = crossover._do(problem, x, random_state=random_state, **kwargs)
                xp[:, cross] = q[:, cross]
            xp[:, ~cross] = x[:, ~cross]             # two parents, two children: each child is its parent
            xp = xp.reshape(-1, x.shape[-1])
            mutated_x = mutation._do(problem, xp, random_state=random_state, **kwargs)
            mutated = random_state.random(size=len(xp)) <= variable_value(mutation.prob, size=len(xp))
            xp[mutated] = mutated_x[mutated]
            xp = self.repair._do(problem, xp, random_state=random_state, **kwargs)
            new = []
            for row, key_row in zip(xp, np.ascontiguousarray(xp, dtype=np.int64)):
                key = key_row.tobytes()   # the key _ExactDuplicates compares
                if key not in seen:
                    seen.add(key)
                    new.append(row)
            children.extend(new[:n_remaining])
            n_infills += 1
            if n_infills >= n_max_iterations:
                break
        if not children:
            return Population.create()
        return Population.new("X", np.array(children))


class _AllocationRepair(Repair):
    def _do(self, problem, X, **kwargs):
        return problem.repair(X.reshape(-1, *problem.shape)).reshape(len(X), -1)


class PolluxScheduler:
    """Every round: allocate(jobs) -> {job_id: GPUs per node}. capacity: GPUs per node."""

    def __init__(self, capacity: Sequence[int], p: float = -1.0, delta: float = 30.0, pop_size: int = 100,
                 generations: int = 100, seed: int = 0, interference_avoidance: bool = True, max_nodes: int = 16):
        if len(capacity) == 0 or min(capacity) < 1:
            raise ValueError("capacity: every node needs at least one GPU")
        # whole numbers within bounds: a population of 1e8 grew past 6.8 GB before its first round ended
        for name, value, low, high in (("pop_size", pop_size, 2, MAX_GA_SIZE), ("generations", generations, 1,
                                                                                 MAX_GA_SIZE),
                                       ("max_nodes", max_nodes, 1, 1 << 20)):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ValueError(f"{name} must be a whole number in [{low}, {high}], got {value!r}")
        for name, value in (("p", p), ("delta", delta)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
        if delta < 0:
            raise ValueError(f"delta (seconds of re-allocation cost) must be >= 0, got {delta!r}")
        if not isinstance(interference_avoidance, bool):
            raise ValueError(f"interference_avoidance must be true or false, got {interference_avoidance!r}")
        self.capacity = np.array(capacity, dtype=int)
        self.p, self.delta = float(p), float(delta)
        self.pop_size, self.generations, self.seed = int(pop_size), int(generations), int(seed)
        self.interference_avoidance = interference_avoidance
        self.max_nodes = min(int(max_nodes), len(self.capacity))
        self._population: dict[str, np.ndarray] = {}  # job id -> rows (pop, nodes) of the last round
        self._population_size = 0
        self._speedup_memo: dict = {}
        self.round = 0

    @staticmethod
    def _mating_and_survival(repair: Repair, duplicates: DuplicateElimination):
        """NSGA-II's mating (binary tournament, row crossover, mutation, repair, duplicate elimination,
        pymoo's 100 passes at most) and survival (rank and crowding): pymoo's loops, re-written on arrays
        with the same draws (tests/test_pollux_scheduler.py runs pymoo's own against these)."""
        mating = _ArrayMating(TournamentSelection(func_comp=_BinaryTournament()), _RowCrossover(),
                              _AllocationMutation(), repair=repair, eliminate_duplicates=duplicates,
                              n_max_iterations=100)
        return mating, _RankAndCrowding()

    def allocate(self, jobs: Sequence[JobView]) -> dict[str, np.ndarray]:
        self.round += 1
        if not jobs:
            self._population, self._population_size = {}, 0
            return {}
        rng = np.random.default_rng([self.seed, self.round])
        base = np.stack([np.asarray(j.current, dtype=int) for j in jobs])
        if base.shape[1] != len(self.capacity):
            raise ValueError(f"a job's current allocation has {base.shape[1]} nodes, the cluster {len(self.capacity)}")
        live = {j.job_id for j in jobs}
        self._speedup_memo = {k: v for k, v in self._speedup_memo.items() if k in live}  # finished jobs go
        speedups = _Speedups(jobs, int(self.capacity.sum()), int(self.capacity.max()), self.max_nodes,
                             self._speedup_memo)
        problem = _AllocationProblem(self, jobs, speedups, base, rng)
        seeds = base[None]
        if self._population_size:
            zeros = np.zeros((self._population_size, len(self.capacity)), dtype=int)
            previous = np.stack([self._population.get(j.job_id, zeros) for j in jobs], axis=1)  # (P, J, N)
            seeds = np.concatenate([seeds, previous])
        seeds = problem.repair(seeds)
        repair, duplicates = _AllocationRepair(), _ExactDuplicates()
        mating, survival = self._mating_and_survival(repair, duplicates)
        algorithm = NSGA2(pop_size=self.pop_size, sampling=_Seeded(seeds), survival=survival,
                          repair=repair, eliminate_duplicates=duplicates, mating=mating)
        result = minimize(problem, algorithm, ("n_gen", self.generations), seed=int(rng.integers(2**31)),
                          verbose=False)
        final = result.pop.get("X").reshape(-1, *base.shape).astype(int)
        fitness = problem.fitness(final)
        best = final[int(np.argmax(fitness))]
        self._population = {j.job_id: final[:, i, :].copy() for i, j in enumerate(jobs)}
        self._population_size = len(final)
        self.last_fitness = float(fitness.max())
        return {j.job_id: best[i].copy() for i, j in enumerate(jobs)}
