"""Max-min fair rates of flows on links, by progressive filling.

Every flow crosses a set of links of given capacities. Progressive filling
raises all unfrozen flows' rates together; the link whose capacity runs out
first (smallest remaining capacity / unfrozen flows on it) freezes its flows
at that share; repeat until every flow is frozen. The result is the max-min
fair allocation (Bertsekas & Gallager, Data Networks, sec. 6.5.2): no flow's
rate can grow without lowering that of a flow with an equal or smaller rate.

Deterministic: numpy operations in array order, no set iteration; links tied
at the bottleneck share (within 1e-12 relative) are frozen together.
"""

from __future__ import annotations

import numpy as np

_TIE = 1e-12  # relative tolerance for links at the same bottleneck share


def max_min_rates(flow_of: np.ndarray, link_of: np.ndarray, flows: int, capacity: np.ndarray) -> np.ndarray:
    """Rates of `flows` flows. (flow_of[i], link_of[i]) lists every (flow, link) crossing, link
    indices into `capacity` (bytes/s, > 0); every flow must cross at least one link."""
    rate = np.zeros(flows)
    if flows == 0:
        return rate
    links = len(capacity)
    remaining = capacity.astype(np.float64).copy()
    frozen = np.zeros(flows, dtype=bool)
    active = np.ones(len(flow_of), dtype=bool)  # crossings of unfrozen flows
    while True:
        count = np.bincount(link_of[active], minlength=links)
        used = count > 0
        if not used.any():
            break
        share = np.full(links, np.inf)
        share[used] = remaining[used] / count[used]
        level = share.min()
        bottleneck = share <= level * (1.0 + _TIE)
        hit = active & bottleneck[link_of]
        newly = np.zeros(flows, dtype=bool)
        newly[flow_of[hit]] = True
        newly &= ~frozen
        rate[newly] = level
        frozen |= newly
        crossing = active & newly[flow_of]
        remaining -= np.bincount(link_of[crossing], weights=np.full(crossing.sum(), level), minlength=links)
        np.maximum(remaining, 0.0, out=remaining)
        active &= ~crossing
    if not frozen.all():
        raise ValueError("a flow crosses no link")
    return rate
