"""timing.py's message-level model, a wave of messages at a time on numpy arrays: the same answers, bit for bit.

timing.py's event loop takes messages one by one in the order they become ready; a message's last frame
departs each hop at max_j(start_j + W[j][h]) (timing.py's docstring), start_j being when hop j finished
the previous message it carried. Nothing else carries state from one message to the next. So any order
that gives every directed link its messages in the event loop's order computes the same floats with the
same additions and maxima, hence the same bits. This module takes:

- the collectives in index order (a collective starts after its predecessors, which have lower indices);
- within one, its messages in waves of the dependency graph (Kahn's order: a wave is every message whose
  dependencies are all done), each wave in one go on arrays.

and checks, as it goes, that this order is the event loop's on every link, refusing (None: the caller
runs the event loop) where it cannot show it:

- every directed link gets its messages at strictly increasing ready times in this order (the event
  loop pops messages by ready time, so it gives the link the same messages in the same order);
- within a wave, no two messages use one directed link (one wave could not order them);
- every dependency lies inside its message's collective, and every message is reached.

Where rule.py sends a question to the message level (no link shared), a ring's waves are its steps and
all checks hold; the test (tests/test_fastpath_waves.py) compares both orders bit for bit.
"""

from __future__ import annotations

import math

import numpy as np

from artist.network.fastpath.timing import path_weights

MAX_HOPS = 4  # links.path(): GPU up, NIC up, spine, NIC down, GPU down, at most 4 of them ever chained here


def _csr_gather(off: np.ndarray, idx: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """idx[off[r]:off[r + 1]] for every r in rows, concatenated, and each one's count."""
    counts = off[rows + 1] - off[rows]
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64), counts
    starts = np.repeat(off[rows], counts)
    within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    return idx[starts + within], counts


def time_by_waves(arrays: dict, payload: int) -> dict | None:
    """c_start_s, c_end_s, m_done_s as timing.py's event loop computes them, or None where this order
    cannot be shown to be the event loop's (see the module docstring)."""
    i64 = lambda k: arrays[k].astype(np.int64)  # noqa: E731
    route_off, route_link, route_dir = i64("route_off"), i64("route_link"), i64("route_dir")
    # the per-message columns as sent (uint32: no copies of millions of messages); index arithmetic in int64
    m_route, m_bytes, m_coll = arrays["m_route"], arrays["m_bytes"], arrays["m_coll"]
    m_alpha = arrays["m_alpha_s"]
    dep_off, dep_idx = arrays["dep_off"], arrays["dep_idx"]
    c_ready, c_base = arrays["c_ready_s"].tolist(), arrays["c_base_s"].tolist()
    c_first = arrays["c_first"].tolist()
    c_pred_off, c_pred_idx = arrays["c_pred_off"].tolist(), arrays["c_pred_idx"].tolist()
    bps, delay = arrays["link_bps"].tolist(), arrays["link_delay_s"].tolist()
    n_msgs, n_colls, n_routes = len(m_route), len(c_ready), len(route_off) - 1
    hop_count = np.diff(route_off)
    if n_routes and (hop_count.max() > MAX_HOPS or hop_count.min() < 1):
        return None
    if n_msgs and len(dep_idx) and not np.array_equal(m_coll[dep_idx], np.repeat(m_coll, np.diff(dep_off))):
        return None  # a dependency across collectives: not what this order follows

    # routes: directed links padded with a dummy link (never read: its weights are -inf)
    dummy = 2 * len(bps)
    hops = np.full((n_routes, MAX_HOPS), dummy, dtype=np.int64)
    last_delay = np.zeros(n_routes, dtype=np.float64)
    for r in range(n_routes):
        ks = range(int(route_off[r]), int(route_off[r + 1]))
        hops[r, :len(ks)] = [2 * int(route_link[k]) + int(route_dir[k]) for k in ks]
        last_delay[r] = delay[int(route_link[ks[-1]])]
    # W per distinct (route, bytes), computed by timing.path_weights itself; -inf where j > h or beyond the route
    key = m_route.astype(np.int64) * (int(m_bytes.max(initial=0)) + 1) + m_bytes.astype(np.int64)
    uniq, first, w_of = np.unique(key, return_index=True, return_inverse=True)
    w_of = w_of.reshape(-1)
    weights = np.full((len(uniq), MAX_HOPS, MAX_HOPS), -math.inf)
    for u, m in enumerate(first.tolist()):
        r = int(m_route[m])
        ks = [int(route_link[k]) for k in range(int(route_off[r]), int(route_off[r + 1]))]
        w = path_weights(tuple(float(bps[k]) for k in ks), tuple(float(delay[k]) for k in ks), int(m_bytes[m]),
                         payload)
        for j in range(len(ks)):
            weights[u, j, j:len(ks)] = w[j][j:]

    # who depends on whom (dependents of m in increasing index order, as the event loop appends them)
    dep_count = np.diff(dep_off.astype(np.int64))
    dependents = np.repeat(np.arange(n_msgs, dtype=np.int64), dep_count)[np.argsort(dep_idx, kind="stable")]
    dependents_off = np.zeros(n_msgs + 1, dtype=np.int64)
    np.cumsum(np.bincount(dep_idx, minlength=n_msgs), out=dependents_off[1:])

    link_free = np.full(dummy + 1, -math.inf)
    link_ready = np.full(dummy + 1, -math.inf)  # per directed link: the ready time of its last message
    mark = np.full(dummy + 1, -1, dtype=np.int64)  # scratch: which wave slot used a link
    deps_left = dep_count.copy()
    dep_done = np.full(n_msgs, -math.inf)
    m_done = np.full(n_msgs, -1.0)
    c_start, c_end = [-1.0] * n_colls, [-1.0] * n_colls
    for c in range(n_colls):
        preds = c_pred_idx[c_pred_off[c]:c_pred_off[c + 1]]
        at = c_ready[c]
        if preds:
            pred_end = -math.inf
            for p in preds:
                pred_end = max(pred_end, c_end[p])
            at = max(c_ready[c], pred_end)
        c_start[c] = at
        roots_at = at + c_base[c]
        lo, hi = c_first[c], c_first[c + 1]
        if lo == hi:
            c_end[c] = roots_at  # a timer
            continue
        wave = lo + np.flatnonzero(deps_left[lo:hi] == 0)
        ready = roots_at + m_alpha[wave]
        end, reached = -1.0, 0
        while len(wave):
            k = len(wave)
            slots = np.arange(k, dtype=np.int64)
            route = m_route[wave]
            links = hops[route]  # (k, MAX_HOPS)
            real = links != dummy
            used = links[real]
            mark[used] = np.broadcast_to(slots[:, None], links.shape)[real]
            if not (mark[used] == np.broadcast_to(slots[:, None], links.shape)[real]).all():
                return None  # two messages of one wave on one directed link
            ready_on_link = np.broadcast_to(ready[:, None], links.shape)[real]
            if not (ready_on_link > link_ready[used]).all():
                return None  # the event loop may give this link its messages in another order
            link_ready[used] = ready_on_link
            starts = link_free[links]
            starts[:, 0] = np.maximum(starts[:, 0], ready)
            departs = (starts[:, :, None] + weights[w_of[wave]]).max(axis=1)  # max_j(start_j + W[j][h])
            link_free[used] = departs[real]
            done = departs[slots, hop_count[route] - 1] + last_delay[route]
            m_done[wave] = done
            end = max(end, float(done.max()))
            reached += k
            follow, counts = _csr_gather(dependents_off, dependents, wave)
            if not len(follow):
                break
            np.maximum.at(dep_done, follow, np.repeat(done, counts))
            np.subtract.at(deps_left, follow, 1)
            wave = np.sort(follow[deps_left[follow] == 0])
            if len(wave) > 1:
                wave = wave[np.concatenate(([True], wave[1:] != wave[:-1]))]  # once each (np.unique, cheaper)
            ready = dep_done[wave] + m_alpha[wave]
        if reached != hi - lo:
            return None  # a message never reached (a cycle, or a dependency on a later one)
        c_end[c] = end
    return {"c_start_s": c_start, "c_end_s": c_end, "m_done_s": m_done.tolist()}
