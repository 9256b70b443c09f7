"""The baselines of Crius' evaluation (sec. 8.1), as Crius runs them: they schedule with data-parallel
profiles and run the job with the best plan a full Alpa-style search finds (catalogue.run_plan with
tuned=False). A baseline knows whether an allocation can run at all (the runtime's compile reports OOM),
but ranks allocations by the DP-only throughput (catalogue.dp_view). None changes a job's GPU type:
only Gavel does, and it comes from the Gavel module (see below).

    FCFS          the user's (type, N_G), strictly in arrival order (head-of-line blocking).
    Gandiva       registered as gandiva-crius (the suite's gandiva is another reading of the paper: first-fit
                  starts and locality migrations, artist/policies/gandiva.py). Not heterogeneity-aware: the
                  user's type; jobs start at N_G in arrival order (a job that does not fit waits, later ones
                  may pass it); idle GPUs grow running jobs to 2 N_G where
                  the DP profile says it is faster (largest gain first); a waiting job first shrinks grown
                  jobs back to N_G (Gandiva's grow-shrink; its time-slicing and packing are not modelled).
    ElasticFlow-LS  ElasticFlow with loosened deadlines (throughput-oriented): every decision, per type,
                  admit jobs in arrival order at their smallest runnable count, then hand the remaining GPUs
                  out by doubling the job of the largest DP-throughput gain per added GPU, up to 2 N_G.
                  ElasticFlow proper (strict deadlines, admission control) is not built: the workload has
                  no deadlines.

A new baseline is a subclass of _Baseline with `name` and decide(jobs, now) -> {job id: (type, count)}
for every job that should run (jobs: those not finished whose profiles are done; `every_round = True`
to be asked every 5-minute round, as a round-based policy like Gavel needs), added to BASELINES.
Gavel (heterogeneity-aware, no count scaling) is such a class over the Gavel module (artist/policies/gavel/:
throughput matrix in, allocation out): its matrix is dp_view(job, type, N_G) per job, its answer the type
per job at N_G (see gavel.py).
"""

from __future__ import annotations

from artist.policies.crius.jobs import Alloc, JobRun, gpu_counts


class _Baseline:
    tuned = False  # runs the full-search plan
    every_round = False  # True: decide() is called every round, not only on arrivals and departures

    def __init__(self, catalogue, capacity: dict[str, int]):
        self.catalogue, self.capacity = catalogue, dict(capacity)

    def runnable(self, spec, alloc: Alloc) -> bool:
        if alloc[0] not in self.capacity or alloc[1] > self.capacity[alloc[0]]:
            return False
        return self.catalogue.run_plan(spec.model, spec.global_batch, spec.n_g, alloc[0], alloc[1], False) is not None

    def dp(self, spec, alloc: Alloc) -> float:
        return self.catalogue.dp_view(spec.model, spec.global_batch, alloc[0], alloc[1])

    @staticmethod
    def in_order(jobs):
        return sorted(jobs, key=lambda j: (j.spec.arrival, j.spec.job_id))


class FCFS(_Baseline):
    name = "fcfs"

    def decide(self, jobs: list[JobRun], now: float = 0.0) -> dict[str, Alloc]:
        state = {j.spec.job_id: j.alloc for j in jobs if j.alloc is not None}
        free = dict(self.capacity)
        for t, g in state.values():
            free[t] -= g
        for j in self.in_order([j for j in jobs if j.alloc is None]):
            alloc = (j.spec.gpu_type, j.spec.n_g)
            if free.get(alloc[0], 0) < alloc[1]:
                break  # strict FCFS: the head blocks the queue
            state[j.spec.job_id] = alloc
            free[alloc[0]] -= alloc[1]
        return state


class Gandiva(_Baseline):
    name = "gandiva-crius"

    def decide(self, jobs: list[JobRun], now: float = 0.0) -> dict[str, Alloc]:
        state = {j.spec.job_id: j.alloc for j in jobs if j.alloc is not None}
        specs = {j.spec.job_id: j.spec for j in jobs}
        free = dict(self.capacity)
        for t, g in state.values():
            free[t] -= g
        for j in self.in_order([j for j in jobs if j.alloc is None]):
            t, g = j.spec.gpu_type, j.spec.n_g
            if free[t] < g:  # shrink grown jobs of this type back to their N_G
                for jid in sorted(state):
                    ot, og = state[jid]
                    if free[t] >= g:
                        break
                    if ot == t and og > specs[jid].n_g and self.runnable(specs[jid], (t, specs[jid].n_g)):
                        free[t] += og - specs[jid].n_g
                        state[jid] = (t, specs[jid].n_g)
            if free[t] >= g:
                state[j.spec.job_id] = (t, g)
                free[t] -= g
        grow = []
        for jid, (t, g) in state.items():
            big = (t, 2 * specs[jid].n_g)
            if g == specs[jid].n_g and self.runnable(specs[jid], big):
                gain = self.dp(specs[jid], big) / max(self.dp(specs[jid], (t, g)), 1e-12) - 1.0
                if gain > 0:
                    grow.append((-gain, jid, big))
        for _, jid, big in sorted(grow):
            extra = big[1] - state[jid][1]
            if free[big[0]] >= extra:
                free[big[0]] -= extra
                state[jid] = big
        return state


class ElasticFlowLS(_Baseline):
    name = "elasticflow-ls"

    def decide(self, jobs: list[JobRun], now: float = 0.0) -> dict[str, Alloc]:
        free = dict(self.capacity)
        state: dict[str, Alloc] = {}
        ordered = self.in_order(jobs)
        for j in ordered:
            t = j.spec.gpu_type
            counts = [g for g in gpu_counts(j.spec.n_g) if self.runnable(j.spec, (t, g))]
            if counts and free[t] >= counts[0]:
                state[j.spec.job_id] = (t, counts[0])
                free[t] -= counts[0]
        specs = {j.spec.job_id: j.spec for j in jobs}
        while True:
            best, best_key = None, None
            for jid, (t, g) in state.items():
                bigger = [c for c in gpu_counts(specs[jid].n_g) if c > g and self.runnable(specs[jid], (t, c))]
                if not bigger or bigger[0] - g > free[t]:
                    continue
                ref = max(self.dp(specs[jid], (t, specs[jid].n_g)), 1e-12)
                gain = (self.dp(specs[jid], (t, bigger[0])) - self.dp(specs[jid], (t, g))) / ref / (bigger[0] - g)
                key = (-gain, jid)
                if gain > 0 and (best_key is None or key < best_key):
                    best, best_key = (jid, (t, bigger[0])), key
            if best is None:
                return state
            free[best[1][0]] -= best[1][1] - state[best[0]][1]
            state[best[0]] = best[1]


BASELINES = {cls.name: cls for cls in (FCFS, Gandiva, ElasticFlowLS)}
