"""Rates of window-limited flows through FIFO switch ports: the fluid fixed point.

Why: the ns-3 engine's transport (network/ns3/engine.cc, "window") keeps at
most a window of bytes in flight per connection and every switch egress port
is one FIFO queue. A port then shares its capacity by what each flow has
queued there, not equally: in the fluid limit a flow's rate is its bytes in
flight over its round-trip time,

    x_i = w_i / (d_i + sum of the queueing delays q_l of the ports it crosses),

where d_i is its base round-trip time and a port l has a queue (q_l > 0) only
if it is saturated (its flows' rates sum to its capacity c_l). This is the
known equilibrium of fixed-window flow control (J. Mo and J. Walrand, "Fair
end-to-end window-based congestion control", IEEE/ACM Trans. Networking 8(5),
2000; also the equilibrium of TCP Vegas, S. Low, L. Peterson, L. Wang, JACM
49(2), 2002): the x above are the unique maximiser of
sum_i (w_i log x_i - d_i x_i) subject to every port's capacity, and the q_l
its Lagrange multipliers. A flow crossing two congested ports waits in both
queues and gets less than its max-min share (max-min gives a flow crossing
two equally loaded ports the same rate as a flow crossing one; here, with
equal windows and negligible d, 1/3 against 2/3).

A sender's own link (its NVSwitch port or NIC) is taken as one more such
link. (The ns-3 engine's sending device takes its connections round-robin
frame by frame, which max-min describes better; with one connection per GPU
per channel, it matters only between the channels of one GPU. Treated alike,
the whole problem stays one convex program, whose solution below converges;
alternating a round-robin sender stage with the ports did not settle.)

Solution: coordinate descent on the convex dual, one link at a time: the
q_l >= 0 that makes sum_i w_i / (d_i + Q_i) = c_l over its flows (Q_i: all of
flow i's queueing), by safeguarded Newton on a decreasing function; links
whose flows' windows at base RTT fit (sum w_i / d_i <= c_l) never queue and
are skipped. Plain Python (components are small), starting from the previous
queues (warm start), to 0.1 % on the delays.
"""

from __future__ import annotations

_REL = 1e-9  # relative tolerance on a saturated link's load
_MOVE = 1e-3  # a sweep that moves no queueing delay by more than this (relative) ends the descent
_SWEEPS = 100  # coordinate-descent sweeps per solve (a cap; typically < 20)


def _port_delay(cap: float, members: list[int], others: list[float], window: list[float], rtt: list[float],
                start: float) -> float:
    """The q >= 0 with sum_i window_i / (rtt_i + others_i + q) = cap over the link's members
    (others_i: the flow's queueing elsewhere), 0 if the link is not saturated at q = 0."""

    def load(q: float) -> tuple[float, float]:
        total, slope = 0.0, 0.0
        for i, o in zip(members, others):
            e = rtt[i] + o + q
            x = window[i] / e
            total += x
            slope -= x / e
        return total, slope

    f0 = load(0.0)[0] - cap
    if f0 <= cap * _REL:
        return 0.0
    lo, hi = 0.0, sum(window[i] for i in members) / cap  # load(hi) <= cap: every rate <= window_i / hi
    q = min(max(start, lo), hi)
    for _ in range(200):
        f, slope = load(q)
        f -= cap
        if abs(f) <= cap * _REL:
            return q
        if f > 0:
            lo = q
        else:
            hi = q
        step = q - f / slope if slope < 0 else None
        q = step if step is not None and lo < step < hi else 0.5 * (lo + hi)
        if hi - lo <= 1e-15 * hi:
            return q
    return q


def window_rates(flow_links: list[list[int]], capacity: dict[int, float], window: list[float],
                 rtt: list[float], delay: dict[int, float] | None = None) -> list[float]:
    """Rates (bytes/s) of flows: flow_links[i] lists flow i's links; capacity maps link -> bytes/s;
    window: bytes a flow keeps in flight (> 0); rtt: base round-trip time per flow (s, > 0).
    delay: link -> queueing delay (s), read as the starting point and updated in place (the engine
    keeps it between calls)."""
    flows = len(flow_links)
    queues = {} if delay is None else delay
    ports: dict[int, list[int]] = {}
    for i, links in enumerate(flow_links):
        for link in links:
            ports.setdefault(link, []).append(i)
    port_order = sorted(ports)
    q = {link: queues.get(link, 0.0) for link in port_order}
    queued = [sum(q[link] for link in links) for links in flow_links]  # Q_i
    # a link whose flows' windows at base RTT fit in it never queues: only the others are solved for
    saturable = []
    for link in port_order:
        if sum(window[i] / rtt[i] for i in ports[link]) > capacity[link] * (1 + _REL):
            saturable.append(link)
        elif q[link]:
            for i in ports[link]:
                queued[i] -= q[link]
            q[link] = 0.0
    floor = {link: min(rtt[i] for i in ports[link]) for link in saturable}  # delays far below matter not
    for _sweep in range(_SWEEPS if saturable else 0):
        moved = False
        for link in saturable:
            members = ports[link]
            old = q[link]
            others = [queued[i] - old for i in members]
            new = _port_delay(capacity[link], members, others, window, rtt, old)
            if new != old:
                if abs(new - old) > _MOVE * max(new, old, floor[link]):
                    moved = True
                q[link] = new
                for i in members:
                    queued[i] += new - old
        if not moved:
            break
    queues.update(q)
    rates = [window[i] / (rtt[i] + queued[i]) for i in range(flows)]
    # the descent stops at 0.1 %: scale each flow down by its most overloaded link's excess, if any,
    # so that no link ever carries more than its capacity
    scale = [1.0] * flows
    for link, members in ports.items():
        load = sum(rates[i] for i in members)
        if load > capacity[link]:
            for i in members:
                scale[i] = min(scale[i], capacity[link] / load)
    return [x * f for x, f in zip(rates, scale)]
