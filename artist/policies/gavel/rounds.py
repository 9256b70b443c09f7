"""Gavel's round-based realisation of an allocation X (paper section 5; scheduler.py of
stanford-futuredata/gavel and the Sia artifact's gavel.py, read for the mechanism).

Every round (360 s in Gavel and in Sia's comparison) each job runs on at most one GPU type, on exactly its
scale factor of that type's GPUs, or not at all. Which jobs run:

    priority[j, t] = X[j, t] / f[j, t],   f[j, t] = (rounds j ran on t + 1/2) / (rounds j was present + 1/2)

counted since the last reset; entries are taken in one queue over all types (Sia's port; Gavel's
`enable_global_queue`) by decreasing priority, then the deficit (rounds the job should have had on t by
X minus the rounds it had, summed over its life), then X, then arrival; an entry is skipped when its job
already runs this round or its scale factor exceeds the type's GPUs still free. The half round is Gavel's
prior (each (job, type) starts with half a round of time), so a new job ranks by X. Entries with X = 0
stay in the queue at priority 0 (Gavel fills leftover GPUs with them); entries where the job cannot run
(throughput 0) are never taken. Counts reset, as Gavel's, when X has changed since the last reset and at
least 1920 s (Gavel's minimum_time_between_allocation_resets) have passed.

Ours [I]: f is the job's own fraction of its rounds (Gavel divides the job's time on t by all jobs' time
on t, so priorities of different types differ by a per-type constant in the shared queue); with ours a
job on schedule has priority ~1 on every type, behind it > 1.

Placement (place_on_nodes): a job picked again on the type it held keeps its GPUs; the others are placed
largest first, each on the single node with the fewest free GPUs that holds it whole, else over the
nodes with the most free GPUs (Gavel assigns workers "to minimise the number of servers used").

The Sia artifact's Gavel (siasosp23/artifacts sia-simulator/gavel.py, read 2026-11-28; `leases:
sia-artifact`) accounts differently, and the parity comparison (docs results page "parity") runs it so:
f[j, t] = (rounds j ran on t + 1/2) / (the rounds all jobs ever ran on t + 1/2 per job ever seen), never
reset (its reset is commented out); no deficit (its update is commented out); and workers assigned type by
type, larger scale factors first, each group first keeping the jobs whose previous workers are all still
unassigned, then filling the others from the lowest server on (a larger job can so take the workers a
smaller one held, which then moves): SiaArtifactLeases and assign_workers.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

GAVEL_ROUND_SECONDS = 360.0   # Gavel's round (paper section 6) and Sia's for its Gavel baseline (digest 2.3)
GAVEL_RESET_SECONDS = 1920.0  # Gavel's default minimum_time_between_allocation_resets (scheduler.py)
PRIOR_ROUNDS = 0.5            # Gavel's initial time per (job, type): half a round


class RoundLeases:
    """Per-job lease accounting across rounds, and the pick of one round."""

    def __init__(self, reset_seconds: float = GAVEL_RESET_SECONDS):
        if reset_seconds < 0:
            raise ValueError(f"reset_seconds must be >= 0, got {reset_seconds}")
        self.reset_seconds = float(reset_seconds)
        self.received: dict[str, np.ndarray] = {}   # rounds run per type since the last reset
        self.present: dict[str, int] = {}           # rounds present since the last reset
        self.deficit: dict[str, np.ndarray] = {}    # sum over rounds of X - ran, per type (never reset)
        self._order: dict[str, int] = {}            # arrival order, the last tie-break
        self._arrivals = 0
        self._reset_at: float | None = None
        self._reset_allocation: dict[str, tuple] = {}
        self.resets = 0

    def _maybe_reset(self, job_ids: Sequence[str], allocation: np.ndarray, now: float) -> None:
        current = {j: tuple(np.round(row, 12)) for j, row in zip(job_ids, allocation)}
        if self._reset_at is not None:
            if current == self._reset_allocation or now - self._reset_at < self.reset_seconds:
                return
        self._reset_at, self._reset_allocation = now, current
        self.resets += 1
        for j in self.received:
            self.received[j][:] = 0
            self.present[j] = 0

    def pick(self, job_ids: Sequence[str], allocation: np.ndarray, scale_factors: Sequence[int],
             runnable: np.ndarray, type_gpus: Sequence[int], now: float) -> list[int]:
        """The type index each job runs on this round (-1: it waits)."""
        x = np.asarray(allocation, dtype=float)
        types = x.shape[1] if x.ndim == 2 else 0
        if x.shape != (len(job_ids), types) or np.shape(runnable) != x.shape or len(scale_factors) != len(job_ids):
            raise ValueError("allocation, runnable and scale factors must cover the same jobs and types")
        ids = set(job_ids)
        if len(ids) != len(job_ids):
            raise ValueError("job ids must be unique")
        for j in [j for j in self.received if j not in ids]:
            del self.received[j], self.present[j], self.deficit[j], self._order[j]
        for j in job_ids:
            if j not in self.received:
                self.received[j], self.present[j] = np.zeros(types), 0
                self.deficit[j] = np.zeros(types)
                self._order[j] = self._arrivals
                self._arrivals += 1
                self._added(types)
        self._maybe_reset(job_ids, x, now)
        entries = []
        for i, j in enumerate(job_ids):
            priority = np.where(x[i] > 0, x[i] / self._fraction(j), 0.0)
            for t in np.flatnonzero(runnable[i]):
                entries.append((-priority[t], -self.deficit[j][t], -x[i, t], self._order[j], int(t), i))
        entries.sort()
        left = np.asarray(type_gpus, dtype=int).copy()
        picks = [-1] * len(job_ids)
        self.pick_order: list[int] = []  # job indices in the order they were picked (a placement may read it)
        for *_, t, i in entries:
            if picks[i] < 0 and scale_factors[i] <= left[t]:
                picks[i] = t
                left[t] -= scale_factors[i]
                self.pick_order.append(i)
        for i, j in enumerate(job_ids):
            ran = np.zeros(types)
            if picks[i] >= 0:
                ran[picks[i]] = 1.0
            self.received[j] += ran
            self.present[j] += 1
            self._record(j, x[i], ran)
        return picks

    # ---- what differs between Gavel's accounting and the Sia artifact's -------------
    def _added(self, types: int) -> None:
        """A job seen for the first time."""

    def _fraction(self, job_id: str) -> np.ndarray:
        """f[j, t] per type: the job's own fraction of its rounds on each type, with Gavel's half-round prior."""
        return (self.received[job_id] + PRIOR_ROUNDS) / (self.present[job_id] + PRIOR_ROUNDS)

    def _record(self, job_id: str, x_row: np.ndarray, ran: np.ndarray) -> None:
        self.deficit[job_id] += x_row - ran


class SiaArtifactLeases(RoundLeases):
    """The Sia artifact's accounting (module docstring): the fraction against every job's rounds on the type
    since the start, never reset, no deficit."""

    def __init__(self):
        super().__init__(reset_seconds=float("inf"))
        self.type_rounds: np.ndarray | None = None  # per type: all jobs' rounds on it, with each job's prior

    def _maybe_reset(self, job_ids, allocation, now) -> None:
        pass  # never reset

    def _added(self, types: int) -> None:
        if self.type_rounds is None:
            self.type_rounds = np.zeros(types)
        self.type_rounds += PRIOR_ROUNDS  # each job enters every type's total with its half-round prior

    def _fraction(self, job_id: str) -> np.ndarray:
        return (self.received[job_id] + PRIOR_ROUNDS) / self.type_rounds

    def _record(self, job_id: str, x_row: np.ndarray, ran: np.ndarray) -> None:
        self.type_rounds += ran  # (deficits stay 0)


def assign_workers(picks: Mapping[str, int], pick_order: Sequence[str], scale_factors: Mapping[str, int],
                   node_type: Sequence[int], node_gpus: Sequence[int], held: Mapping[str, tuple]
                   ) -> dict[str, tuple]:
    """The Sia artifact's worker assignment (module docstring): job -> its workers, (node, slot) pairs, for
    every picked job. held: each job's workers of the last round; pick_order: the jobs as they were picked."""
    node_type = np.asarray(node_type, dtype=int)
    out: dict[str, tuple] = {}
    for t in sorted({int(v) for v in picks.values() if v >= 0}):
        servers = [[(int(n), k) for k in range(int(node_gpus[n]))] for n in np.flatnonzero(node_type == t)]
        jobs = sorted((j for j in pick_order if picks[j] == t), key=lambda j: -scale_factors[j])  # stable
        taken: set = set()
        server = 0
        for size in sorted({scale_factors[j] for j in jobs}, reverse=True):
            group = [j for j in jobs if scale_factors[j] == size]
            for j in group:  # keep where it was if none of its workers is taken yet
                before = held.get(j, ())
                if before and node_type[before[0][0]] == t and not taken.intersection(before):
                    out[j] = before
                    taken.update(before)
            for j in group:
                if j in out:
                    continue
                got = []
                while len(got) < size and server < len(servers):
                    if not servers[server]:
                        server += 1
                        continue
                    worker = servers[server].pop(0)
                    if worker not in taken:
                        got.append(worker)
                        taken.add(worker)
                if len(got) < size:
                    raise RuntimeError(f"job {j}: {size - len(got)} workers of type {t} left to assign; picks "
                                       "exceeded the type's GPUs")
                out[j] = tuple(got)
    return out


def place_on_nodes(picks: Mapping[str, int], scale_factors: Mapping[str, int], node_type: Sequence[int],
                   node_gpus: Sequence[int], current: Mapping[str, np.ndarray], order: Sequence[str]
                   ) -> dict[str, np.ndarray]:
    """GPUs per node for every picked job (picks: job -> type index; node_type: type index per node).
    `order` lists the jobs in arrival order (the tie-break). Jobs not picked get zeros."""
    node_type = np.asarray(node_type, dtype=int)
    free = np.asarray(node_gpus, dtype=int).copy()
    out = {j: np.zeros(len(free), dtype=int) for j in order}
    rank = {j: k for k, j in enumerate(order)}
    placed = set()
    for j in order:
        t = picks.get(j, -1)
        held = np.asarray(current.get(j, np.zeros(len(free))), dtype=int)
        if t >= 0 and held.sum() == scale_factors[j] and np.all(node_type[held > 0] == t) and np.all(held <= free):
            out[j] = held.copy()
            free -= held
            placed.add(j)
    for j in sorted((j for j in order if picks.get(j, -1) >= 0 and j not in placed),
                    key=lambda j: (-scale_factors[j], rank[j])):
        t, need = picks[j], scale_factors[j]
        nodes = np.flatnonzero(node_type == t)
        whole = [n for n in nodes if free[n] >= need]
        if whole:
            n = min(whole, key=lambda n: (free[n], n))
            out[j][n] = need
            free[n] -= need
            continue
        for n in sorted(nodes, key=lambda n: (-free[n], n)):
            take = min(int(free[n]), need)
            out[j][n] += take
            free[n] -= take
            need -= take
            if need == 0:
                break
        if need:
            raise RuntimeError(f"job {j}: {need} GPUs of type {t} left to place; picks exceeded the type's GPUs")
    return out
