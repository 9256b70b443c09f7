"""Max-min fair rates of flows on links, by progressive filling.

Every flow crosses a set of links of given capacities. Progressive filling
raises all unfrozen flows' rates together; the link whose capacity runs out
first (smallest remaining capacity / unfrozen flows on it) freezes its flows
at that share; repeat until every flow is frozen. The result is the max-min
fair allocation (Bertsekas & Gallager, Data Networks, sec. 6.5.2): no flow's
rate can grow without lowering that of a flow with an equal or smaller rate.

Weighted form (weights w > 0): the filling raises flow i's rate as w_i x level,
so a link's bottleneck level is its remaining capacity / the sum of its
unfrozen flows' weights.

Strict priority (integer levels, 0 first), work-conserving: the filling runs
level by level on the capacity the earlier levels left; while level k fills,
a link that runs out freezes its level-k flows at their share and every
later-level flow on it at 0 (nothing is left for them); the next level fills
what remains. This is the limit of weights eps^level as eps -> 0, computed
exactly: such weights (1e-6 ** k before) underflow to 0 beyond ~50 levels
(an all-to-all's 120 flows per sender) and are off by eps where they do not
(flow/engine.py uses levels for a job's flows at one sender).

Deterministic: numpy operations in array order, no set iteration; links tied
at the bottleneck share (within 1e-12 relative) are frozen together.
"""

from __future__ import annotations

import numpy as np

_TIE = 1e-12  # relative tolerance for links at the same bottleneck share


def max_min_rates(flow_of: np.ndarray, link_of: np.ndarray, flows: int, capacity: np.ndarray,
                  weights: np.ndarray | None = None, priority: np.ndarray | None = None,
                  multiplicity: np.ndarray | None = None) -> np.ndarray:
    """Rates of `flows` flows. (flow_of[i], link_of[i]) lists every (flow, link) crossing, link
    indices into `capacity` (bytes/s, > 0); every flow must cross at least one link.
    weights: per flow, > 0 (default: all 1, plain max-min).
    priority: per flow, an integer level (default: all 0), strict priority (module docstring).
    multiplicity: per crossing, > 0 (default: all 1): the crossing loads its link with multiplicity x
    the flow's rate, as a bundle of that many lock-step flows of one rate would (network/phase/)."""
    rate = np.zeros(flows)
    if flows == 0:
        return rate
    weight = np.ones(flows) if weights is None else np.asarray(weights, dtype=np.float64)
    level_of = np.zeros(flows, dtype=np.int64) if priority is None else np.asarray(priority, dtype=np.int64)
    crossing_weight = weight[flow_of]
    load = None if multiplicity is None else np.asarray(multiplicity, dtype=np.float64)
    if load is not None:
        crossing_weight = crossing_weight * load
    links = len(capacity)
    remaining = capacity.astype(np.float64).copy()
    frozen = np.zeros(flows, dtype=bool)
    active = np.ones(len(flow_of), dtype=bool)  # crossings of unfrozen flows
    for priority_level in np.unique(level_of):  # ascending: level 0 first
        filling = (level_of == priority_level) & ~frozen
        while True:
            fill = active & filling[flow_of]
            count = np.bincount(link_of[fill], weights=crossing_weight[fill], minlength=links)
            used = count > 0
            if not used.any():
                break
            share = np.full(links, np.inf)
            share[used] = remaining[used] / count[used]
            level = share.min()
            bottleneck = share <= level * (1.0 + _TIE)
            hit = active & bottleneck[link_of]  # every unfrozen flow on a full link: later levels at 0
            newly = np.zeros(flows, dtype=bool)
            newly[flow_of[hit]] = True
            newly &= ~frozen
            rate[newly & filling] = weight[newly & filling] * level
            frozen |= newly
            filling &= ~newly
            crossing = active & newly[flow_of]
            used_rate = rate[flow_of[crossing]] if load is None else rate[flow_of[crossing]] * load[crossing]
            remaining -= np.bincount(link_of[crossing], weights=used_rate, minlength=links)
            np.maximum(remaining, 0.0, out=remaining)
            active &= ~crossing
    if not frozen.all():
        raise ValueError("a flow crosses no link")
    return rate


def max_min_rates_small(flow_links: list[list[int]], capacity: dict[int, float], weights: list[float],
                        priority: list[int] | None = None, loads: list[list[float]] | None = None) -> list[float]:
    """The same progressive filling in plain Python, for the few flows of one component (numpy's
    per-call overhead dominates there): flow_links[i] lists flow i's links, capacity maps link ->
    bytes/s. Same ties (relative 1e-12) and the same order of operations per link as max_min_rates.
    loads[i][k]: the multiplicity of flow i on its k-th link (max_min_rates' multiplicity; default 1)."""
    flows = len(flow_links)
    rate = [0.0] * flows
    remaining = dict(capacity)
    members: dict[int, list[tuple[int, float]]] = {}
    for f, links in enumerate(flow_links):
        for k, link in enumerate(links):
            members.setdefault(link, []).append((f, 1.0 if loads is None else loads[f][k]))
    levels = [0] * flows if priority is None else list(priority)
    frozen = [False] * flows
    for priority_level in sorted(set(levels)):
        filling = [levels[f] == priority_level and not frozen[f] for f in range(flows)]
        left = sum(filling)
        while left:
            share = {}
            for link, fs in members.items():
                w = 0.0
                for f, m in fs:
                    if filling[f]:
                        w += weights[f] if loads is None else weights[f] * m
                if w > 0:
                    share[link] = remaining[link] / w
            if not share:
                raise ValueError("a flow crosses no link")
            level = min(share.values())
            newly = sorted({f for link, x in share.items() if x <= level * (1.0 + _TIE)
                            for f, _ in members[link] if not frozen[f]})
            for f in newly:
                if filling[f]:
                    rate[f] = weights[f] * level
                    filling[f] = False
                    left -= 1
                frozen[f] = True
            for f in newly:
                for k, link in enumerate(flow_links[f]):
                    used = rate[f] if loads is None else rate[f] * loads[f][k]
                    remaining[link] = max(0.0, remaining[link] - used)
    if not all(frozen):
        raise ValueError("a flow crosses no link")
    return rate
