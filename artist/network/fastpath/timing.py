"""Message-level timing of the ns-3 engine's window transport on a network where no link is shared.

Input: the engine's own input (artist/network/ns3/builder.py's EngineInput: links with rate and
delay, routes, messages with bytes, start-up latency and dependencies, collectives with ready time,
base latency and predecessors) and the transport options, so that this model times exactly what
engine.cc would simulate. Output: the fields of the engine's Result the backend reads.

What it follows of engine.cc (window transport):
- collective c starts at max(ready_c, end of its predecessors), pays its base latency (a collective
  without messages is a timer of that length); a message becomes ready alpha after the last message it
  depends on has been received (roots: alpha after the base latency);
- a message is cut into frames of mtu - 16 payload bytes (the last one shorter; a 0-byte message is one
  empty frame); on the wire a frame is payload + 16 bytes of transport header + 2 bytes of PPP header
  (ns-3's PointToPointNetDevice adds one), so a hop takes (payload + 18) x 8 / rate;
- switches store and forward (a frame leaves a switch after it has fully arrived), a link adds its
  delay (half of each switch's latency is folded into it by the builder);
- messages of one connection (job, src, dst, channel) leave in the order they became ready, frames
  back to back (the engine's pump keeps the sender's device queue non-empty);
- a message is done when its last frame has arrived at its destination.

Where no link is shared (rule.py), every link a message crosses carries only its own connection's
frames, so each hop is a FIFO server of one stream and the departure time of the last frame at hop h
is a longest path through the (frame, hop) grid (max-plus algebra of tandem queues):
    D_h(n) = max_j ( start_j + W(j, h) ),   start_0 = max(ready, L_0), start_j = L_j (j >= 1),
where L_j is when hop j finished the connection's previous frame and W(j, h) is the heaviest
monotone path from (frame 1, hop j) to (frame n, hop h): with frames 1..n-1 of time T_k at hop k and
the last of time T'_k, W(j, h) = delays j..h-1 + max over k2 in [j, h] of
    sum_{k=j..k2} T_k + (n - 2) max_{k=j..k2} T_k + sum_{k=k2..h} T'_k     (n >= 2; n = 1: sum T').
A route has at most four hops, so this is a handful of additions per message.

Not modelled: acks' serialisation on the data links they cross in the reverse direction (a 66-byte
frame per ack_every data frames, ~0.1 % of a busy link at ack_every = 8), and the window (rule.py
sends a graph to ns-3 wherever the window could limit a connection).
"""

from __future__ import annotations

import heapq
import math
import time

import numpy as np

# Bytes a frame carries on the wire beyond its payload: engine.cc's 16-byte MsgHeader and the
# 2-byte PPP header ns-3's PointToPointNetDevice adds to every packet it sends.
TRANSPORT_HEADER_BYTES = 16
PPP_HEADER_BYTES = 2
ACK_PAYLOAD_BYTES = 48  # engine.cc SendAck: a 64-byte ack frame with the transport header


def payload_per_frame(mtu: int) -> int:
    return mtu - TRANSPORT_HEADER_BYTES


def frames_of(nbytes: int, payload: int) -> int:
    """Frames the engine cuts a message into (a 0-byte message still sends one empty frame)."""
    return 1 if nbytes == 0 else -(-nbytes // payload)


class _Routes:
    """Per route: directed link ids, per-hop rate and delay, from the engine arrays."""

    def __init__(self, arrays: dict):
        off, link, direction = arrays["route_off"], arrays["route_link"], arrays["route_dir"]
        bps, delay = arrays["link_bps"], arrays["link_delay_s"]
        self.hops: list[tuple[int, ...]] = []
        self.bps: list[tuple[float, ...]] = []
        self.delay: list[tuple[float, ...]] = []
        for r in range(len(off) - 1):
            ks = range(int(off[r]), int(off[r + 1]))
            self.hops.append(tuple(2 * int(link[k]) + int(direction[k]) for k in ks))
            self.bps.append(tuple(float(bps[link[k]]) for k in ks))
            self.delay.append(tuple(float(delay[link[k]]) for k in ks))


def path_weights(bps: tuple[float, ...], delay: tuple[float, ...], nbytes: int, payload: int) -> tuple:
    """W[j][h] (j <= h) of the docstring for a message of nbytes on a route, and the last hop's delay."""
    n = frames_of(nbytes, payload)
    last = nbytes - (n - 1) * payload
    full = [(payload + TRANSPORT_HEADER_BYTES + PPP_HEADER_BYTES) * 8.0 / b for b in bps]
    tail = [(last + TRANSPORT_HEADER_BYTES + PPP_HEADER_BYTES) * 8.0 / b for b in bps]
    hops = len(bps)
    w = [[0.0] * hops for _ in range(hops)]
    for j in range(hops):
        for h in range(j, hops):
            if n == 1:
                best = sum(tail[j:h + 1])
            else:
                best = -math.inf
                for k2 in range(j, h + 1):
                    block = full[j:k2 + 1]
                    best = max(best, sum(block) + (n - 2) * max(block) + sum(tail[k2:h + 1]))
            w[j][h] = best + sum(delay[j:h])
    return tuple(tuple(row) for row in w)


def time_engine_input(arrays: dict, mtu: int, ack_every: int, method: str = "auto") -> dict:
    """The engine's Result fields (c_start_s, c_end_s, m_done_s, node bytes, frame counts) for these
    arrays on a network where no link is shared (the caller checks that: rule.py).

    method "events": the event loop below, message by message in time order; "waves": the same
    arithmetic on numpy arrays, a wave of messages at a time (waves.py), which refuses (returns None)
    any input where its order could differ from the event loop's; "auto": waves, else events."""
    started = time.perf_counter()
    if method not in ("auto", "events", "waves"):
        raise ValueError(f"unknown method {method!r}")
    if method != "events":
        from artist.network.fastpath.waves import time_by_waves  # here: waves.py imports this module
        res = time_by_waves(arrays, payload_per_frame(mtu))
        if res is not None or method == "waves":
            if res is not None:
                res.update(frame_counts(arrays, payload_per_frame(mtu), ack_every),
                           model_wall_seconds=time.perf_counter() - started)
            return res
    payload = payload_per_frame(mtu)
    routes = _Routes(arrays)
    m_route = arrays["m_route"].tolist()
    m_bytes = arrays["m_bytes"].tolist()
    m_alpha = arrays["m_alpha_s"].tolist()
    m_coll = arrays["m_coll"].tolist()
    dep_off, dep_idx = arrays["dep_off"].tolist(), arrays["dep_idx"].tolist()
    c_ready, c_base = arrays["c_ready_s"].tolist(), arrays["c_base_s"].tolist()
    c_first = arrays["c_first"].tolist()
    c_pred_off, c_pred_idx = arrays["c_pred_off"].tolist(), arrays["c_pred_idx"].tolist()
    n_msgs, n_colls = len(m_route), len(c_ready)

    dependents: list[list[int]] = [[] for _ in range(n_msgs)]
    deps_left = [dep_off[m + 1] - dep_off[m] for m in range(n_msgs)]
    for m in range(n_msgs):
        for k in range(dep_off[m], dep_off[m + 1]):
            dependents[dep_idx[k]].append(m)
    successors: list[list[int]] = [[] for _ in range(n_colls)]
    preds_left = [c_pred_off[c + 1] - c_pred_off[c] for c in range(n_colls)]
    for c in range(n_colls):
        for k in range(c_pred_off[c], c_pred_off[c + 1]):
            successors[c_pred_idx[k]].append(c)

    link_free = [-math.inf] * (2 * len(arrays["link_bps"]))  # per directed link: its last frame's departure
    weights: dict[tuple[int, int], tuple] = {}
    m_done = [-1.0] * n_msgs
    dep_done = [-math.inf] * n_msgs  # latest receive among a message's dependencies so far
    c_start, c_end = [-1.0] * n_colls, [-1.0] * n_colls
    c_left = [c_first[c + 1] - c_first[c] for c in range(n_colls)]
    pred_end = [-math.inf] * n_colls
    events: list[tuple[float, int, int]] = []  # (time, seq, message): messages becoming ready
    seq = 0

    def end_collective(c: int, at: float, starts: list) -> None:
        c_end[c] = at
        for d in successors[c]:
            pred_end[d] = max(pred_end[d], at)
            preds_left[d] -= 1
            if preds_left[d] == 0:
                starts.append((d, max(c_ready[d], pred_end[d])))

    def start_collectives(starts: list) -> None:
        """Start these collectives and every timer chain they end (iteratively: chains can be long)."""
        nonlocal seq
        while starts:
            c, at = starts.pop()
            c_start[c] = at
            roots_at = at + c_base[c]
            if c_left[c] == 0:
                end_collective(c, roots_at, starts)
                continue
            for m in range(c_first[c], c_first[c + 1]):
                if deps_left[m] == 0:
                    heapq.heappush(events, (roots_at + m_alpha[m], seq, m))
                    seq += 1

    start_collectives([(c, c_ready[c]) for c in reversed(range(n_colls)) if preds_left[c] == 0])
    while events:
        ready, _, m = heapq.heappop(events)
        r = m_route[m]
        w = weights.get((r, m_bytes[m]))
        if w is None:
            w = weights[(r, m_bytes[m])] = path_weights(routes.bps[r], routes.delay[r], m_bytes[m], payload)
        hops = routes.hops[r]
        starts = [link_free[dl] for dl in hops]
        if ready > starts[0]:
            starts[0] = ready
        for h in range(len(hops)):
            link_free[hops[h]] = max(starts[j] + w[j][h] for j in range(h + 1))
        done = link_free[hops[-1]] + routes.delay[r][-1]
        m_done[m] = done
        for d in dependents[m]:
            if done > dep_done[d]:
                dep_done[d] = done
            deps_left[d] -= 1
            if deps_left[d] == 0:
                heapq.heappush(events, (dep_done[d] + m_alpha[d], seq, d))
                seq += 1
        c = m_coll[m]
        c_left[c] -= 1
        if done > c_end[c]:
            c_end[c] = done  # provisional: the collective's latest receive so far
        if c_left[c] == 0:
            follow: list = []
            end_collective(c, c_end[c], follow)
            start_collectives(follow)

    return {"c_start_s": c_start, "c_end_s": c_end, "m_done_s": m_done,
            **frame_counts(arrays, payload, ack_every), "model_wall_seconds": time.perf_counter() - started}


def frame_counts(arrays: dict, payload: int, ack_every: int) -> dict:
    """Data frames, acks (one per ack_every frames, and one at the end) and frames on wires (each frame
    and ack once per hop) of the messages, as the engine counts them; exact integer sums."""
    nbytes = arrays["m_bytes"].astype(np.int64)
    frames = np.where(nbytes == 0, 1, -(-nbytes // payload))  # frames_of, per message
    acks = -(-frames // ack_every)
    hops_of_route = np.diff(arrays["route_off"].astype(np.int64))
    hops = hops_of_route[arrays["m_route"].astype(np.int64)]
    return {"data_packets": int(frames.sum()), "ack_packets": int(acks.sum()),
            "device_transmissions": int(((frames + acks) * hops).sum())}
