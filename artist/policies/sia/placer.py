"""Sia's placer: the ILP's configurations -> GPUs per node (digest 2.2 c).

Rules (paper) and choices ([A] where marked):
1. A job whose configuration (type and GPU count) is unchanged keeps its GPUs ([A]).
2. A partial-node allocation (one node) is never split: it goes to the node of its type with the fewest
   free GPUs that still hold it (best fit), the first such node on ties ([A]).
3. A whole-node allocation (several nodes) takes whole free nodes, from the last node of its type
   downward ([A]); a rigid job's n GPUs fill its nodes in order.
4. When fragmentation leaves no room, the smallest single-node jobs are evicted ([A]): for a whole-node
   job, from the nodes with the fewest GPUs in use; for a partial one, from the node that frees enough
   with the fewest GPUs evicted. Jobs mid checkpoint-restart (pinned) and distributed jobs are never
   evicted. An evicted job is placed again afterwards if room is left (without evicting anyone); else it
   waits this round.
Whole-node jobs go first (most nodes first), then partial ones (most GPUs first), then the evicted.
So no two distributed jobs ever share a node, and a distributed job never shares one with anyone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from artist.policies.sia.configs import Configuration


@dataclass(frozen=True)
class Request:
    job_id: str
    config: Configuration
    previous: np.ndarray | None = None    # GPUs per node now (None or zeros: not running)
    previous_type: str = ""
    pinned: bool = False                  # mid checkpoint-restart: keeps `previous`, never evicted


class Placer:
    def __init__(self, capacity: Sequence[int], node_types: Sequence[str]):
        self.capacity = np.asarray(capacity, dtype=int)
        self.node_types = list(node_types)
        self.nodes_of = {t: [i for i, x in enumerate(self.node_types) if x == t] for t in dict.fromkeys(node_types)}

    def place(self, requests: Sequence[Request]) -> tuple[dict[str, np.ndarray], list[str]]:
        """GPUs per node of every request (zeros: not placed this round) and the job ids evicted (placed
        again elsewhere, or waiting)."""
        free = self.capacity.copy()
        out: dict[str, np.ndarray] = {}
        distributed = np.zeros(len(self.capacity), dtype=bool)   # a whole-node job is on the node
        locked = np.zeros(len(self.capacity), dtype=bool)        # a pinned job is on the node
        single: dict[int, list[str]] = {}                        # node -> its single-node jobs
        sizes: dict[str, int] = {}
        todo = []
        for r in requests:
            prev = None if r.previous is None else np.asarray(r.previous, dtype=int)
            keep = prev is not None and prev.sum() > 0 and (r.pinned or (
                r.previous_type == r.config.gpu_type and int(prev.sum()) == r.config.gpus))
            if keep:
                self._put(r.job_id, prev, r.config, out, free, distributed, single, sizes)
                if r.pinned:
                    locked |= prev > 0
            else:
                todo.append(r)
        whole = sorted((r for r in todo if not r.config.partial), key=lambda r: -r.config.nodes)
        partial = sorted((r for r in todo if r.config.partial), key=lambda r: -r.config.gpus)
        evicted: list[str] = []
        requeue: list[Request] = []
        by_id = {r.job_id: r for r in requests}
        for r in whole + partial:
            row = self._find(r.config, free, distributed, locked, single, sizes, out, evicted, allow_evict=True)
            if row is not None:
                self._put(r.job_id, row, r.config, out, free, distributed, single, sizes)
        for job in evicted:
            requeue.append(by_id[job])
        for r in sorted(requeue, key=lambda r: (-r.config.gpus, r.job_id)):
            row = self._find(r.config, free, distributed, locked, single, sizes, out, evicted, allow_evict=False)
            if row is not None:
                self._put(r.job_id, row, r.config, out, free, distributed, single, sizes)
        for r in requests:
            out.setdefault(r.job_id, np.zeros(len(self.capacity), dtype=int))
        return out, list(dict.fromkeys(evicted))

    def _put(self, job, row, config, out, free, distributed, single, sizes):
        out[job] = row
        free -= row
        used = np.flatnonzero(row)
        if len(used) > 1:
            distributed[used] = True
        else:
            single.setdefault(int(used[0]), []).append(job)
            sizes[job] = int(row.sum())

    def _evict(self, job, out, free, single, sizes, evicted):
        row = out.pop(job)
        free += row
        for node in np.flatnonzero(row):
            single[int(node)].remove(job)
        sizes.pop(job, None)
        evicted.append(job)

    def _find(self, config: Configuration, free, distributed, locked, single, sizes, out, evicted, allow_evict):
        nodes = self.nodes_of.get(config.gpu_type, [])
        row = np.zeros(len(self.capacity), dtype=int)
        if config.partial:
            fits = [i for i in nodes if free[i] >= config.gpus and not distributed[i]]
            if fits:
                best = min(fits, key=lambda i: (free[i], i))
                row[best] = config.gpus
                return row
            if not allow_evict:
                return None
            best_node, best_cost, best_jobs = None, None, None
            for i in nodes:
                if distributed[i] or locked[i] or self.capacity[i] < config.gpus:
                    continue
                jobs = sorted(single.get(i, []), key=lambda j: (sizes[j], j))
                gain, chosen = int(free[i]), []
                for j in jobs:
                    if gain >= config.gpus:
                        break
                    chosen.append(j)
                    gain += sizes[j]
                if gain >= config.gpus:
                    cost = sum(sizes[j] for j in chosen)
                    if best_cost is None or cost < best_cost:
                        best_node, best_cost, best_jobs = i, cost, chosen
            if best_node is None:
                return None
            for j in best_jobs:
                self._evict(j, out, free, single, sizes, evicted)
            row[best_node] = config.gpus
            return row
        empty = [i for i in reversed(nodes) if free[i] == self.capacity[i]]
        if len(empty) < config.nodes:
            if not allow_evict:
                return None
            candidates = [i for i in nodes if not distributed[i] and not locked[i] and free[i] < self.capacity[i]]
            candidates.sort(key=lambda i: (int(self.capacity[i] - free[i]), -i))
            need = config.nodes - len(empty)
            if len(candidates) < need:
                return None
            for i in candidates[:need]:
                for j in sorted(single.get(i, []), key=lambda j: (sizes[j], j)):
                    self._evict(j, out, free, single, sizes, evicted)
            empty = [i for i in reversed(nodes) if free[i] == self.capacity[i]]
        left = config.gpus
        for i in empty[:config.nodes]:
            row[i] = min(int(self.capacity[i]), left)
            left -= row[i]
        return row
