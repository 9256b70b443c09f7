"""The Crius scheduler (Xue et al., Alg. 1 and sec. 6.1; digest 3.3): Cell-based scheduling with a
bounded search over scaling moves.

    sched = CriusScheduler(catalogue, capacity, depth=3)
    targets = sched.decide(jobs)     # {job id: (GPU type, GPU count)} for every job that should run

Objective: cluster throughput, the sum over running jobs of their Cell-estimated throughput. Samples/s of
different models cannot be added, so each job's throughput is normalised by its estimate on a reference
allocation: the user's own (GPU type, N_G) when a Cell of it fits, else the job's fastest allocation. A
job on its request counts 1; a job scaled to twice the GPUs counts its estimated speed-up.

decide() follows SchedArrival / SchedDeparture: jobs not running (arrival order) are placed one at a time
by place(); then idle GPUs go to running jobs by upscale(). place(job) tries every allocation of the job
(its Cells' (type, count)); when the type lacks free GPUs it searches sequences of at most `depth`
scaling moves on running jobs that free them (ScaleResource), each move one of:
  - shrink a running job to a smaller count of its type,
  - move a running job to another type with enough free GPUs (heterogeneity scaling),
  - suspend an opportunistic job (below);
branching on the `BRANCH` moves that lose the least throughput per GPU freed. The candidate of highest
cluster throughput wins (ties: fewer moves, then the order tried); a job no candidate places stays
pending. Opportunistic execution: a job placed while an earlier-arrived job is pending is opportunistic,
and the earlier job may suspend it as a move of its search.
upscale(): up to `depth` moves, each the single (job, larger allocation that fits in idle GPUs) of largest
throughput gain, while a gain remains.
"""

from __future__ import annotations

from dataclasses import dataclass

from artist.policies.crius.jobs import Alloc, JobRun, allocations

BRANCH = 3  # moves tried per search level (our choice; the paper gives none)
SEARCH_DEPTH = 3  # Crius' default in simulation (sec. 8.1, Fig. 21)


@dataclass(frozen=True)
class Move:
    job: str
    to: Alloc | None  # None: suspended
    loss: float  # normalised throughput lost (negative: gained)


class CellThroughput:
    """Normalised Cell-estimated throughput of a job on an allocation (0: no Cell of it fits)."""

    def __init__(self, catalogue, capacity):
        self.catalogue, self.capacity = catalogue, capacity
        self._ref: dict = {}

    def raw(self, spec, alloc: Alloc) -> float:
        cell = self.catalogue.crius_view(spec.model, spec.global_batch, spec.n_g, alloc[0], alloc[1])
        return cell.samples_per_s if cell is not None else 0.0

    def reference(self, spec) -> float:
        ref = self._ref.get(spec.job_id)
        if ref is None:
            own = self.raw(spec, (spec.gpu_type, spec.n_g)) if spec.gpu_type in self.capacity else 0.0
            ref = own or max((self.raw(spec, a) for a in allocations(spec, self.capacity)), default=0.0)
            self._ref[spec.job_id] = ref
        return ref

    def __call__(self, spec, alloc: Alloc | None) -> float:
        if alloc is None:
            return 0.0
        ref = self.reference(spec)
        return self.raw(spec, alloc) / ref if ref > 0 else 0.0


class CriusScheduler:
    name = "crius"
    tuned = True  # runs Crius' tuned Cell plan (catalogue.run_plan)
    every_round = False  # decides on arrivals and departures only

    def __init__(self, catalogue, capacity: dict[str, int], depth: int = SEARCH_DEPTH):
        if depth < 0:
            raise ValueError(f"search depth must be >= 0, got {depth}")
        self.capacity, self.depth = dict(capacity), depth
        self.thr = CellThroughput(catalogue, capacity)
        self.moves_made: list[int] = []  # per placement, the scaling moves it used (for tests and reports)

    # ---- state helpers ------------------------------------------------------------------------------
    def _free(self, state: dict[str, Alloc]) -> dict[str, int]:
        free = dict(self.capacity)
        for t, g in state.values():
            free[t] -= g
        return free

    def _options(self, spec) -> list[Alloc]:
        return [a for a in allocations(spec, self.capacity) if self.thr(spec, a) > 0]

    # ---- ScaleResource ------------------------------------------------------------------------------
    def _moves(self, specs, state, opportunistic, gpu_type: str, free) -> list[tuple[float, int, Move]]:
        out = []
        for jid, (t, g) in state.items():
            if t != gpu_type:
                continue
            spec, now = specs[jid], self.thr(specs[jid], (t, g))
            if jid in opportunistic:
                out.append((now / g, g, Move(jid, None, now)))
            for alloc in self._options(spec):
                if alloc[0] == t and alloc[1] < g:
                    out.append(((now - self.thr(spec, alloc)) / (g - alloc[1]), g - alloc[1],
                                Move(jid, alloc, now - self.thr(spec, alloc))))
                elif alloc[0] != t and alloc[1] <= free[alloc[0]]:
                    out.append(((now - self.thr(spec, alloc)) / g, g, Move(jid, alloc, now - self.thr(spec, alloc))))
        out.sort(key=lambda m: (m[0], -m[1], m[2].job, str(m[2].to)))
        return out[:BRANCH]

    def _search(self, specs, state, opportunistic, target: Alloc, moves: tuple, out: list) -> None:
        free = self._free(state)
        if free[target[0]] >= target[1]:
            out.append(moves)
            return
        if len(moves) >= self.depth:
            return
        for _, _, move in self._moves(specs, state, opportunistic, target[0], free):
            nxt = dict(state)
            if move.to is None:
                del nxt[move.job]
            else:
                nxt[move.job] = move.to
            self._search(specs, nxt, opportunistic, target, moves + (move,), out)

    def place(self, specs, state: dict[str, Alloc], opportunistic: set, job) -> tuple[Alloc, tuple] | None:
        best, best_key = None, None
        for k, alloc in enumerate(self._options(specs[job])):
            found: list = []
            self._search(specs, state, opportunistic, alloc, (), found)
            for moves in found:
                gain = self.thr(specs[job], alloc) - sum(m.loss for m in moves)
                key = (-gain, len(moves), k)
                if best_key is None or key < best_key:
                    best, best_key = (alloc, moves), key
        return best

    def upscale(self, specs, state: dict[str, Alloc]) -> None:
        for _ in range(self.depth):
            free = self._free(state)
            best, best_key = None, None
            for jid in sorted(state):
                t, g = state[jid]
                now = self.thr(specs[jid], (t, g))
                for alloc in self._options(specs[jid]):
                    extra = alloc[1] - (g if alloc[0] == t else 0)
                    if alloc == (t, g) or extra > free[alloc[0]] or alloc[1] < g:
                        continue
                    gain = self.thr(specs[jid], alloc) - now
                    key = (-gain, jid, alloc)
                    if gain > 1e-9 and (best_key is None or key < best_key):
                        best, best_key = (jid, alloc), key
            if best is None:
                return
            state[best[0]] = best[1]

    # ---- one decision -------------------------------------------------------------------------------
    def decide(self, jobs: list[JobRun], now: float = 0.0) -> dict[str, Alloc]:
        specs = {j.spec.job_id: j.spec for j in jobs}
        state = {j.spec.job_id: j.alloc for j in jobs if j.alloc is not None}
        opportunistic = {j.spec.job_id for j in jobs if j.alloc is not None and j.opportunistic}
        waiting = [j for j in jobs if j.alloc is None]
        blocked = False
        for job in sorted(waiting, key=lambda j: (j.spec.arrival, j.spec.job_id)):
            jid = job.spec.job_id
            found = self.place(specs, state, opportunistic, jid)
            if found is None:
                blocked = True
                continue
            alloc, moves = found
            self.moves_made.append(len(moves))
            for m in moves:
                if m.to is None:
                    del state[m.job]
                    opportunistic.discard(m.job)
                else:
                    state[m.job] = m.to
            state[jid] = alloc
            if blocked:
                opportunistic.add(jid)
        self.upscale(specs, state)
        for j in jobs:
            j.opportunistic = j.spec.job_id in opportunistic
        return state
