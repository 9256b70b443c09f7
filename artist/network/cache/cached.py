"""The latency cache's wrapper: ``Cached(inner, store)`` answers any FabricModel's questions from the store.

A packet-accurate answer can take tens of seconds and a sweep asks for the
same placement shapes thousands of times, so every answer is kept in one SQLite
file and reused across runs and processes. The key (key.py) is the question's
step graphs relabelled onto canonical GPUs; the inner model is asked about the
relabelled graphs, so one stored answer serves every placement of that form.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from artist.jsonkey import canonical_json
from artist.network.base import CommResult, GraphTiming
from artist.network.cache.key import cache_key, collective_key_material, graphs_key_material
from artist.network.cache.store import CachedTiming, Claim, LatencyStore, StoredAnswer
from artist.parallel.graph import StepGraph
from artist.network.symmetry import fabric_key
from artist.placement import Placement


# Step-graph nodes of the questions Cached keeps keys for in memory (each question holds its graphs): ~10^6
# nodes is a few hundred MB; past it the memo starts afresh (keys are recomputed, answers unchanged).
MEMO_MAX_NODES = 2_000_000


@dataclass
class SessionStats:
    """What one Cached instance did in this process."""

    hits: int = 0
    misses: int = 0  # simulations run here
    waits: int = 0  # answers that another process was simulating when asked
    saved_wall_seconds: float = 0.0


def _summary(graphs: list[StepGraph], timings: list[GraphTiming]) -> tuple[float, float]:
    """(how long the steps run past their last compute node, communication seconds), summed over graphs."""
    exposed = collective = 0.0
    for graph, timing in zip(graphs, timings):
        last_compute = max((e for n, e in zip(graph.nodes, timing.node_end) if not n.is_communication), default=0.0)
        exposed += max(0.0, timing.step_seconds - last_compute)
        collective += timing.comm_seconds
    return exposed, collective


class Cached:
    """FabricModel that answers from the store and asks ``inner`` only for keys never seen.

    An in-process dict sits in front of SQLite: the simulator asks for the same
    keys very often, and a dict lookup is far cheaper than a query."""

    def __init__(self, inner, store: LatencyStore | str | Path | None = None, *, memo: bool = True):
        self.inner = inner
        self.store = store if isinstance(store, LatencyStore) else LatencyStore(store)
        self.memo_enabled = memo
        self._memo: dict[str, StoredAnswer] = {}
        # in-process shortcut: (backend identity, question) -> (key, job order) of a step question, (key,
        # material) of a collective's; the identity is read every time, so a backend whose settings change
        # after creation gets new keys
        self._keys: dict = {}
        self._key_nodes = 0  # step-graph nodes of the questions in _keys
        self.session = SessionStats()
        # A backend that keeps parts of answers (ns-3 exact reuse: collectives run alone) keeps them here too,
        # so that other processes and later runs reuse them.
        reuse = getattr(inner, "reuse", None)
        if reuse is not None and hasattr(reuse, "store") and reuse.store is None:
            reuse.store = self.store

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def topology(self):
        return self.inner.topology

    def identity(self) -> dict:
        return self.inner.identity()  # caching never changes an answer

    def _graph_key(self, graphs: Mapping[str, StepGraph]):
        """(key, material, order, relabelled graphs); material and relabelled are None when the question
        was asked before in this process (only the key and order are kept: a miss needs the rest once).
        The questions kept are bounded by their nodes (MEMO_MAX_NODES): shared contention asks about
        every component's repeated steps, each question large and rarely asked twice."""
        question = (canonical_json(self.inner.identity()), tuple(sorted(graphs.items())))
        found = self._keys.get(question) if self.memo_enabled else None
        if found is not None:
            return found[0], None, found[1], None
        material, order, relabelled = graphs_key_material(self.inner, graphs, self.inner.topology)
        key = cache_key(material)
        if self.memo_enabled:
            nodes = sum(len(graph.nodes) for graph in graphs.values())
            if self._key_nodes + nodes > MEMO_MAX_NODES:
                self._keys.clear()
                self._key_nodes = 0
            self._keys[question] = (key, order)
            self._key_nodes += nodes
        return key, material, order, relabelled

    def key_for(self, graphs: Mapping[str, StepGraph]) -> str:
        return self._graph_key(graphs)[0]

    def time(self, graphs: Mapping[str, StepGraph]) -> dict[str, GraphTiming]:
        started = time.perf_counter()
        key, material, order, relabelled = self._graph_key(graphs)
        if material is None and key not in self._memo:  # asked before, answered nowhere yet: a miss needs these
            material, order, relabelled = graphs_key_material(self.inner, graphs, self.inner.topology)

        def simulate() -> CachedTiming:
            asked = [relabelled[job] for job in order]
            timings = self.inner.time(dict(zip(order, asked)))
            done = [timings[job] for job in order]
            exposed, collective = _summary(asked, done)
            first = done[0].result
            return CachedTiming(tuple(t.node_seconds for t in done), exposed, collective, first.backend,
                                first.calibrated, sum(t.result.packets for t in done), first.details)

        def union() -> Placement | None:  # the stored row's shape columns; only a miss writes a row
            gpus = sorted({g for graph in graphs.values() for g in graph.gpus})
            return Placement(self.inner.topology, tuple(gpus)) if gpus else None

        name = "+".join(sorted(graphs)) if len(graphs) > 1 else "step"
        answer, provenance = self._answer(key, material, name, union, started, simulate)
        return {job: GraphTiming.of(graphs[job], answer.node_seconds[i], provenance) for i, job in enumerate(order)}

    def collective_seconds(self, group: Placement, nbytes: int, kind: str = "all_reduce") -> float:
        """One collective of nbytes alone, cached like a step."""
        started = time.perf_counter()
        nbytes = int(nbytes)
        key, material = self._collective_key(group, nbytes, kind)

        def simulate() -> CachedTiming:
            seconds = float(self.inner.collective_seconds(group, nbytes, kind))
            return CachedTiming(((seconds,),), seconds, seconds, self.inner.name)

        answer, _ = self._answer(key, material, f"{kind} {nbytes} B", lambda: group, started, simulate)
        return answer.node_seconds[0][0]

    def collective_seconds_many(self, group: Placement, sizes, kind: str = "all_reduce") -> list[float]:
        """collective_seconds of several sizes. Where the backend answers several at once (ns-3's
        collective_runs: on all its workers), the sizes the cache lacks are asked of it together, each
        answer then stored as collective_seconds stores one, with the wall seconds its own run took."""
        runs = getattr(self.inner, "collective_runs", None)
        missing = sorted({int(b) for b in sizes if not self._known(*self._collective_key(group, int(b), kind))})
        answers: dict[int, float] = {}
        if runs is not None and len(missing) > 1:
            for nbytes, (seconds, wall) in zip(missing, runs(group, missing, kind)):
                key, material = self._collective_key(group, nbytes, kind)
                timing = CachedTiming(((seconds,),), seconds, seconds, self.inner.name)
                answer, _ = self._answer(key, material, f"{kind} {nbytes} B", lambda: group, time.perf_counter(),
                                         lambda timing=timing: timing, ran_seconds=wall)
                answers[nbytes] = answer.node_seconds[0][0]
        return [answers[int(b)] if int(b) in answers else self.collective_seconds(group, b, kind) for b in sizes]

    def _collective_key(self, group: Placement, nbytes: int, kind: str) -> tuple[str, dict]:
        """(cache key, its material) of one collective alone."""
        question = (canonical_json(self.inner.identity()), kind, nbytes, group.topology, fabric_key(group))
        found = self._keys.get(question) if self.memo_enabled else None
        if found is None:
            material = collective_key_material(self.inner, group, nbytes, kind)
            found = (cache_key(material), material)
            if self.memo_enabled:
                self._keys[question] = found
        return found

    def _known(self, key: str, material: dict) -> bool:
        """Whether this answer is in the memo or the store already (no claim, no counting)."""
        return key in self._memo or self.store.get(key) is not None

    def _answer(self, key: str, material: dict, question_name: str, placement_of, started: float,
                simulate, ran_seconds: float | None = None) -> tuple[CachedTiming, CommResult]:
        """The stored answer, or simulate()'s, stored (ran_seconds: what computing it took when simulate()
        only hands over an answer computed before; else simulate() is timed)."""
        answer = self._memo.get(key)
        if answer is None:
            answer = self.store.get(key)
        waited = False
        while answer is None:
            outcome = self.store.get_or_claim(key)
            if isinstance(outcome, StoredAnswer):
                answer = outcome
            elif isinstance(outcome, Claim):
                return self._simulate(outcome, material, question_name, placement_of, simulate, ran_seconds)
            else:
                waited = True
                answer = self._wait_for(key)
        if self.memo_enabled:
            self._memo[key] = answer
        self.session.hits += 1
        self.session.waits += waited
        self.session.saved_wall_seconds += answer.wall_seconds
        self.store.count(hits=1, saved_wall_seconds=answer.wall_seconds)
        details = dict(answer.result.details)
        details["cache"] = {"key": key, "simulated_wall_seconds": answer.wall_seconds,
                            "simulated_packets": answer.result.packets, "created_at": answer.created_at}
        provenance = answer.result.provenance().replace(cache_hit=True, packets=0, details=details,
                                                        wall_seconds=time.perf_counter() - started)
        return answer.result, provenance

    def _wait_for(self, key: str) -> StoredAnswer | None:
        """Poll (read-only) while a live owner simulates; None when the claim vanished or went stale."""
        delay = self.store.poll_interval_s
        while True:
            answer = self.store.get(key)
            if answer is not None:
                return answer
            holder = self.store.claim_holder(key)
            if holder is None or self.store._is_stale(holder):
                return None  # the caller re-enters get_or_claim, which decides under the write lock
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)

    def _simulate(self, claim: Claim, material: dict, question_name: str, placement_of,
                  simulate, ran_seconds: float | None = None) -> tuple[CachedTiming, CommResult]:
        started = time.perf_counter()
        try:
            result = simulate()
        except BaseException:
            self.store.release(claim)
            raise
        wall = time.perf_counter() - started if ran_seconds is None else ran_seconds
        created_at = self.store.put(claim, material, question_name, placement_of(), result, wall)
        if self.memo_enabled:
            self._memo[claim.key] = StoredAnswer(result, wall, created_at)
        self.session.misses += 1
        return result, result.provenance().replace(cache_hit=False, wall_seconds=wall)

    def flush(self) -> None:
        self.store.flush()

    def close(self) -> None:
        self.store.close()
