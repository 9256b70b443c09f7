"""The latency cache's wrapper: ``Cached(inner, store)`` answers any CommModel's questions from the store.

A packet-accurate answer can take tens of seconds and a sweep asks for the
same placement shapes thousands of times, so every answer is kept in one SQLite
file and reused across runs and processes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from artist.jsonkey import canonical_json
from artist.network.base import CommResult
from artist.network.cache.key import cache_key, collective_key_material, key_material
from artist.network.cache.store import Claim, LatencyStore, StoredAnswer
from artist.placement import Placement
from artist.workload import ModelProfile


@dataclass
class SessionStats:
    """What one Cached instance did in this process."""

    hits: int = 0
    misses: int = 0  # simulations run here
    waits: int = 0  # answers that another process was simulating when asked
    saved_wall_seconds: float = 0.0


class Cached:
    """CommModel that answers from the store and asks ``inner`` only for keys never seen.

    An in-process dict sits in front of SQLite: the simulator asks for the same
    keys very often, and a dict lookup is far cheaper than a query."""

    def __init__(self, inner, store: LatencyStore | str | Path | None = None, *, memo: bool = True):
        self.inner = inner
        self.store = store if isinstance(store, LatencyStore) else LatencyStore(store)
        self.memo_enabled = memo
        self._memo: dict[str, StoredAnswer] = {}
        self._keys: dict[tuple, tuple[str, dict]] = {}  # in-process shortcut to (key, material)
        self.session = SessionStats()

    @property
    def name(self) -> str:
        return self.inner.name

    def identity(self) -> dict:
        return self.inner.identity()  # caching never changes an answer

    def key_for(self, model: ModelProfile, placement: Placement) -> str:
        return cache_key(key_material(self.inner, model, placement))

    def _key_and_material(self, question, placement: Placement, material_of) -> tuple[str, dict]:
        """Building the key material hashes the model's buckets and costs ~100 us; within a
        process the same (question, topology, shape, GPU types, backend identity) maps to the
        same key, so remember it. Equality of ModelProfile and Topology covers every field
        the material reads, except GPU type speeds, which are added explicitly."""
        if not self.memo_enabled:
            material = material_of()
            return cache_key(material), material
        topology = placement.topology
        speeds = tuple((name, count, topology.gpu_type(name).relative_speed)
                       for name, count in placement.gpu_type_counts)
        shortcut = (question, topology, placement.canonical_shape, speeds, canonical_json(self.inner.identity()))
        found = self._keys.get(shortcut)
        if found is None:
            material = material_of()
            found = self._keys[shortcut] = (cache_key(material), material)
        return found

    def iteration_comm_time(self, model: ModelProfile, placement: Placement) -> CommResult:
        started = time.perf_counter()
        key, material = self._key_and_material(model, placement, lambda: key_material(self.inner, model, placement))
        return self._answer(key, material, model.name, placement, started,
                            lambda: self.inner.iteration_comm_time(model, placement))

    def collective_seconds(self, placement: Placement, nbytes: int) -> float:
        """One all-reduce of nbytes, cached like an iteration (for backends that offer it)."""
        started = time.perf_counter()
        nbytes = int(nbytes)
        key, material = self._key_and_material(("allreduce", nbytes), placement,
                                               lambda: collective_key_material(self.inner, placement, nbytes))

        def simulate() -> CommResult:
            seconds = float(self.inner.collective_seconds(placement, nbytes))
            return CommResult(exposed_seconds=seconds, collective_seconds=seconds, backend=self.inner.name,
                              bucket_seconds=(seconds,))

        return self._answer(key, material, f"allreduce {nbytes} B", placement, started, simulate).collective_seconds

    def _answer(self, key: str, material: dict, question_name: str, placement: Placement, started: float,
                simulate) -> CommResult:
        answer = self._memo.get(key)
        if answer is None:
            answer = self.store.get(key)
        waited = False
        while answer is None:
            outcome = self.store.get_or_claim(key)
            if isinstance(outcome, StoredAnswer):
                answer = outcome
            elif isinstance(outcome, Claim):
                return self._simulate(outcome, material, question_name, placement, simulate)
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
        return answer.result.replace(cache_hit=True, packets=0, wall_seconds=time.perf_counter() - started,
                                     details=details)

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

    def _simulate(self, claim: Claim, material: dict, question_name: str, placement: Placement,
                  simulate) -> CommResult:
        started = time.perf_counter()
        try:
            result = simulate()
        except BaseException:
            self.store.release(claim)
            raise
        wall = time.perf_counter() - started
        created_at = self.store.put(claim, material, question_name, placement, result, wall)
        if self.memo_enabled:
            self._memo[claim.key] = StoredAnswer(result, wall, created_at)
        self.session.misses += 1
        return result.replace(cache_hit=False, wall_seconds=wall)

    def flush(self) -> None:
        self.store.flush()

    def close(self) -> None:
        self.store.close()
