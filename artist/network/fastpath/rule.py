"""The rule that picks who answers a question: the message-level model (timing.py) or ns-3.

    choose_path(arrays, transport) -> PathChoice(path, reason)

The message-level model is exact only for what it models: every link a message crosses carries
that message's connection alone while it runs. So the rule takes the message-level path only when

1. the transport is the engine's window transport (TCP's congestion control is not modelled);
2. no directed link (a device's output queue) is used by two transfers that can be in flight at
   once: two connections (another channel, another pair, another job) of one collective, or two
   collectives not ordered by their predecessor lists (another bucket in flight, another
   collective of a hybrid step, another job's graph). A link used by collectives that run one
   after another (DDP buckets on one ring, a TP all-reduce after a DP one) is not shared;
3. the window cannot limit any connection: its first hop is its slowest (so no queue builds
   downstream) and the window covers the bytes a connection can have unacknowledged, bounded by
   ack_bound_bytes below.

Anything else goes to ns-3; PathChoice.reason says why, in one line.

Acks travel the reverse links, which may carry another connection's data; they are not counted as
sharing. Where condition 2 holds, a directed link carries the data of one connection and the acks
of at most one (the connection on its reverse, whose data link would otherwise be shared): one
66-byte ack per ack_every frames of 9 018 bytes, at most 0.09 % of the link's time at the defaults,
which is the model's error budget for them (measured: 0.00-0.09 %, README "ns-3 fast path").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from artist.network.fastpath.timing import (ACK_PAYLOAD_BYTES, PPP_HEADER_BYTES, TRANSPORT_HEADER_BYTES,
                                            payload_per_frame)

NS3 = "ns3"
MESSAGE_LEVEL = "ns3-message-level"
# Frames the engine's pump keeps queued on a sender's device (engine.cc Pump: "< 8"): an ack may
# wait behind as many data frames on each reverse hop.
PUMP_QUEUE_FRAMES = 8


@dataclass(frozen=True)
class PathChoice:
    path: str  # NS3 or MESSAGE_LEVEL
    reason: str  # one line: why
    messages: int = 0  # messages of the question's schedules (Ns3Model.path_choice fills it; the cost model reads it)


def _ancestors(arrays: dict) -> list[int]:
    """Per collective, the bit set (int) of collectives that end before it starts (transitively)."""
    off, idx = arrays["c_pred_off"].tolist(), arrays["c_pred_idx"].tolist()
    anc: list[int] = []
    for c in range(len(off) - 1):
        bits = 0
        for p in idx[off[c]:off[c + 1]]:
            bits |= anc[p] | (1 << p)
        anc.append(bits)
    return anc


def _distinct_uses(arrays: dict) -> list[tuple[int, int, int]]:
    """The distinct (route, connection, collective) of the messages, in order of first appearance."""
    route, conn, coll = (arrays[k].astype(np.int64) for k in ("m_route", "m_conn", "m_coll"))
    conns, colls = int(conn.max(initial=0)) + 1, int(coll.max(initial=0)) + 1
    _, first = np.unique((route * conns + conn) * colls + coll, return_index=True)
    first.sort()
    return list(zip(route[first].tolist(), conn[first].tolist(), coll[first].tolist()))


def shared_links(arrays: dict) -> list[tuple[int, str]]:
    """Directed links (2 x link + direction) used by two transfers that can be in flight at once,
    each with a short description. Empty: no link is shared."""
    off, link, direction = (arrays[k].tolist() for k in ("route_off", "route_link", "route_dir"))
    route_links = [[2 * link[k] + direction[k] for k in range(off[r], off[r + 1])] for r in range(len(off) - 1)]
    # directed link -> {collective: connection} and the collectives using it, in index order
    users: dict[int, dict[int, int]] = {}
    found: list[tuple[int, str]] = []
    flagged: set[int] = set()
    for r, conn, c in _distinct_uses(arrays):
        for dl in route_links[r]:
            by_coll = users.setdefault(dl, {})
            other = by_coll.setdefault(c, conn)
            if other != conn and dl not in flagged:
                flagged.add(dl)
                found.append((dl, f"collective {c} sends two connections over it"))
    anc = None
    for dl, by_coll in users.items():
        if dl in flagged or len(by_coll) < 2:
            continue
        anc = anc if anc is not None else _ancestors(arrays)
        colls = sorted(by_coll)
        for a, b in zip(colls, colls[1:]):  # a chain in the predecessor order, or two may overlap
            if not (anc[b] >> a) & 1:
                found.append((dl, f"collectives {a} and {b} may be in flight at once"))
                break
    return found


def ack_bound_bytes(bps: list[float], delay: list[float], rev_bps: list[float], mtu: int, ack_every: int) -> float:
    """An upper bound on a connection's unacknowledged bytes when its first hop is its slowest: the
    pump's queue, the frames on the path, ack_every frames awaiting their ack, and what the first
    hop sends while the ack returns behind up to PUMP_QUEUE_FRAMES data frames on every reverse hop."""
    frame = payload_per_frame(mtu) + TRANSPORT_HEADER_BYTES + PPP_HEADER_BYTES
    ack = ACK_PAYLOAD_BYTES + TRANSPORT_HEADER_BYTES + PPP_HEADER_BYTES
    forward = sum(frame * 8.0 / b for b in bps) + sum(delay)
    back = sum((ack + PUMP_QUEUE_FRAMES * frame) * 8.0 / b for b in rev_bps) + sum(delay)
    rate = bps[0] / 8.0
    return payload_per_frame(mtu) * (PUMP_QUEUE_FRAMES + ack_every + 1) + rate * (forward + back)


def window_limits(arrays: dict, mtu: int, window_bytes: int, ack_every: int) -> str | None:
    """Why the window could limit some connection (None: it cannot)."""
    off, link = arrays["route_off"].tolist(), arrays["route_link"].tolist()
    bps_of, delay_of = arrays["link_bps"].tolist(), arrays["link_delay_s"].tolist()
    for r in np.unique(arrays["m_route"]).tolist():
        links = link[off[r]:off[r + 1]]
        bps = [bps_of[k] for k in links]
        delay = [delay_of[k] for k in links]
        if min(bps[1:], default=bps[0]) < bps[0]:
            return f"route {r}: a hop after the first is slower than the first, so a queue (bounded only by " \
                   f"the window) can build"
        bound = ack_bound_bytes(bps, delay, bps[::-1], mtu, ack_every)
        if bound > window_bytes:
            return f"route {r}: up to {bound:.0f} B unacknowledged > window {window_bytes} B"
    return None


def choose_path(arrays: dict, transport: str, mtu: int, window_bytes: int, ack_every: int) -> PathChoice:
    """MESSAGE_LEVEL where the model is exact up to acks (see the module docstring), else NS3."""
    if transport != "window":
        return PathChoice(NS3, f"transport {transport!r}: only the window transport has a message-level model")
    if not len(arrays["m_route"]):
        return PathChoice(MESSAGE_LEVEL, "no message crosses a link")
    shared = shared_links(arrays)
    if shared:
        dl, why = shared[0]
        return PathChoice(NS3, f"{len(shared)} shared link(s), e.g. link {dl // 2} direction {dl % 2}: {why}")
    why = window_limits(arrays, mtu, window_bytes, ack_every)
    if why is not None:
        return PathChoice(NS3, f"the window may limit: {why}")
    return PathChoice(MESSAGE_LEVEL, "no link shared, window never limits")
