"""EXPERIMENT (not shipped): the phase engine with every bundle as two stages, its up links then its down
links, bytes buffered between them up to W per edge: 0 <= xU - xD <= W. Stages drain independently while
the buffer is strictly inside its bounds; a stage whose buffer bound binds moves with the other (coupled:
one flow on all links, today's model)."""
from __future__ import annotations

import heapq
import math

import numpy as np

from artist.grouping import groups_sharing
import artist.network.phase.engine as E

W = float(1 << 20)
EPS = 1e-3  # bytes
DOWN: list[bool] = []  # per canonical link: a down link (set by the patch below)


def run_component(jobs, capacity, steps=None, window=E.WINDOW, tolerance=E.TOLERANCE, max_steps=E.MAX_STEPS,
                  max_events=E.MAX_EVENTS, alone=None, event_budget=E.EVENT_BUDGET, engine=None, links=None):
    if len(jobs) == 1 or steps is not None:
        return E.run_component(jobs, capacity, steps, window, tolerance, max_steps, max_events, alone,
                               event_budget, "python", links)
    down = list(DOWN)
    alone_steps = None if alone is None else [a.step_seconds for a in alone]
    alone_comms = None if alone is None else [a.comm_seconds for a in alone]
    if links is not None:
        jobs = [E._renumbered(job, mapping) for job, mapping in zip(jobs, links)]
    windows = [E.window_of(job, window) for job in jobs]
    bursty = any(b.exposed > 0 for job in jobs for node in job.nodes for b in node.bundles)
    # classes: (bundle key, stage) stage 0 all links, 1 up, 2 down
    class_of: dict = {}
    class_bursts: list = []
    class_shown: list = []

    def cls(j, b, stage):
        key = ((j, b.crossings, b.cap, b.burst_rate, b.exposed, b.shown) if bursty else (b.crossings, b.cap, b.shown),
               stage)
        c = class_of.get(key)
        if c is None:
            c = class_of[key] = len(class_of)
            class_bursts.append((j, b.burst_rate, b.exposed))
            class_shown.append(b.shown)
        return c

    showing = any(b.shown > 0 for job in jobs for node in job.nodes for b in node.bundles)
    state = [E._Job(j) for j in jobs]
    capacity = np.asarray(capacity, dtype=np.float64)
    heap: list = []
    seq = 0
    now = 0.0
    events = 0
    done = False
    bundles: dict[int, dict] = {}  # id -> record
    next_id = 0
    memo: dict = {}
    dirty: set = set()  # links whose groups need new rates

    def push(when, job, node):
        nonlocal seq
        seq += 1
        heapq.heappush(heap, (when, seq, job, node))

    def start_step(j):
        s = state[j]
        s.deps_left = [len(n.deps) for n in s.spec.nodes]
        s.left = len(s.spec.nodes)
        s.step_start = now
        s.comm = 0.0
        for i in s.roots:
            start_node(j, i)

    def start_node(j, i):
        state[j].started[i] = now
        push(now + state[j].spec.nodes[i].seconds, j, i)

    def end_node(j, i):
        nonlocal done
        s = state[j]
        node = s.spec.nodes[i]
        s.comm += (now - s.started[i]) if node.communication else node.comm_seconds
        s.left -= 1
        for d in s.dependents[i]:
            s.deps_left[d] -= 1
            if s.deps_left[d] == 0:
                start_node(j, d)
        if s.left == 0:
            s.ends.append(now)
            s.comms.append(s.comm)
            if E._should_stop(state, steps, windows, tolerance, max_steps, events >= event_budget):
                done = True
            else:
                start_step(j)
                if alone_steps is not None:
                    skip_undisturbed(j)

    def skip_undisturbed(j):
        nonlocal now
        if bundles or alone_steps[j] <= 0:
            return
        horizon = min((t for t, _, job, _ in heap if job != j), default=math.inf)
        if not math.isfinite(horizon):
            return
        k = math.floor((horizon - now) / alone_steps[j]) - 1
        if k < 1:
            return
        s = state[j]
        heap[:] = [e for e in heap if e[2] != j]
        heapq.heapify(heap)
        base = now
        for n in range(1, k + 1):
            s.ends.append(base + n * alone_steps[j])
            s.comms.append(alone_comms[j])
        saved, now = now, base + k * alone_steps[j]
        start_step(j)
        now = saved

    def advance(r):
        dt = now - r["since"]
        if dt > 0:
            r["xU"] = min(r["work"], r["xU"] + r["rU"] * dt)
            r["xD"] = min(r["xU"], r["xD"] + r["rD"] * dt)
            if r["xU"] - r["xD"] > W:
                r["xU"] = r["xD"] + W
            if r["work"] - r["xU"] <= EPS:
                r["xU"] = r["work"]
            if r["xU"] - r["xD"] <= EPS:
                r["xD"] = r["xU"]
            elif r["xU"] - r["xD"] >= W - EPS:
                r["xU"] = r["xD"] + W
        r["since"] = now

    def buffer_state(r):
        if r["xU"] >= r["work"] - EPS:
            return 3  # up done
        b = r["xU"] - r["xD"]
        if b <= EPS:
            return 0
        if b >= W - EPS:
            return 2
        return 1

    def next_event(r):
        t = math.inf
        rU, rD, xU, xD, work = r["rU"], r["rD"], r["xU"], r["xD"], r["work"]
        if rD > 0:
            t = min(t, (work - xD) / rD)
        if xU < work - EPS:
            if rU > 0:
                t = min(t, (work - xU) / rU)
            b = xU - xD
            if rD > rU * (1 + 1e-12) and b > EPS:
                t = min(t, b / (rD - rU))
            if rU > rD * (1 + 1e-12) and b < W - EPS:
                t = min(t, (W - b) / (rU - rD))
        return now + t

    def entries_of(r, mode):
        """flow entries for the max-min helpers: [j, i, _, work, cap, crossings, _, class]"""
        b = r["b"]
        if mode == "c" or not r["up"] or not r["dn"]:
            return [("c", [r["j"], r["i"], None, b.work, b.cap, b.crossings, None, r["cls"][0]])]
        if mode == "d":
            return [("D", [r["j"], r["i"], None, b.work, b.cap, r["dn"], None, r["cls"][2]])]
        return [("U", [r["j"], r["i"], None, b.work, b.cap, r["up"], None, r["cls"][1]]),
                ("D", [r["j"], r["i"], None, b.work, b.cap, r["dn"], None, r["cls"][2]])]

    def maxmin(flows):
        ordered = sorted(range(len(flows)), key=lambda k: flows[k][7])
        fl = [flows[k] for k in ordered]
        if bursty:
            fl = E._collision_caps(fl, class_bursts, capacity)
        rates = E._rates_shown(fl, class_shown, capacity) if showing else E._rates(fl, capacity)
        out = [0.0] * len(flows)
        for k, v in zip(ordered, rates.tolist()):
            out[k] = v
        return out

    def rates_for(members):
        """modes and (rU, rD) per member record"""
        states = [buffer_state(r) for r in members]
        key = tuple(sorted((r["cls"][0], s) for r, s in zip(members, states)))
        # same-class same-state members get the same answer: memo by key, answers in key order
        modes = ["d" if s == 3 else "s" for s in states]
        for _ in range(len(members) + 2):
            flows, owner = [], []
            for k, r in enumerate(members):
                for tag, e in entries_of(r, modes[k]):
                    flows.append(e)
                    owner.append((k, tag))
            rates = maxmin(flows)
            rU = [0.0] * len(members)
            rD = [0.0] * len(members)
            for (k, tag), v in zip(owner, rates):
                if tag == "c":
                    rU[k] = rD[k] = v
                elif tag == "U":
                    rU[k] = v
                else:
                    rD[k] = v
            for k in range(len(members)):
                if modes[k] == "d":
                    rU[k] = 0.0
            changed = False
            for k, r in enumerate(members):
                if modes[k] != "s" or not r["up"] or not r["dn"]:
                    continue
                if states[k] == 0 and rD[k] > rU[k] * (1 + 1e-9):
                    modes[k] = "c"
                    changed = True
                elif states[k] == 2 and rU[k] > rD[k] * (1 + 1e-9):
                    modes[k] = "c"
                    changed = True
            if not changed:
                break
        return rU, rD

    for j in range(len(state)):
        start_step(j)
    loops = 0
    while heap or bundles:
        loops += 1
        if False:
            print("loops", loops, "events", events, "now", now, "bundles", len(bundles), [len(s.ends) for s in state], flush=True)
            for r in bundles.values():
                print("   ", r["j"], r["i"], r["work"], r["xU"], r["xD"], r["rU"], r["rD"], r["t"], r["up"], r["dn"], r["b"].crossings, flush=True)
            pass
        if done or events >= max_events:
            break
        t_timer = heap[0][0] if heap else math.inf
        t_b = min((r["t"] for r in bundles.values()), default=math.inf)
        now = min(t_timer, t_b)
        if now == math.inf:
            break
        finished = []
        for bid, r in list(bundles.items()):
            if r["t"] <= now + 1e-15 * max(1.0, now):
                advance(r)
                if r["xD"] >= r["work"] - EPS or r["xD"] >= r["work"] * (1 - 1e-9):
                    finished.append(bid)
                dirty.update(l for l, _ in r["b"].crossings)
        for bid in finished:
            r = bundles.pop(bid)
            events += 1
            s = state[r["j"]]
            s.bundles_left[r["i"]] -= 1
            if s.bundles_left[r["i"]] == 0:
                end_node(r["j"], r["i"])
        while heap and heap[0][0] <= now and not done:
            _, _, j, i = heapq.heappop(heap)
            events += 1
            node = state[j].spec.nodes[i]
            if node.bundles:
                state[j].bundles_left[i] = len(node.bundles)
                for b in node.bundles:
                    up = tuple((l, m) for l, m in b.crossings if not down[l])
                    dn = tuple((l, m) for l, m in b.crossings if down[l])
                    r = {"j": j, "i": i, "b": b, "work": b.work, "up": up, "dn": dn, "xU": 0.0, "xD": 0.0,
                         "rU": 0.0, "rD": 0.0, "since": now, "t": math.inf,
                         "cls": (cls(j, b, 0), cls(j, b, 1), cls(j, b, 2))}
                    if not up or not dn:  # one stage: no buffer between shared links
                        r["up"], r["dn"] = (), ()
                    if not b.crossings:  # no shared link: its cap, nobody else's business
                        r["rU"] = r["rD"] = b.cap
                        r["t"] = next_event(r)
                    bundles[next_id] = r
                    next_id += 1
                    dirty.update(l for l, _ in b.crossings)
            else:
                end_node(j, i)
        if dirty and bundles:
            live = list(bundles.values())
            groups = groups_sharing({k: [l for l, _ in r["b"].crossings] for k, r in enumerate(live)})
            for group in groups:
                members = [live[k] for k in group]
                if not any(l in dirty for r in members for l, _ in r["b"].crossings):
                    continue
                for r in members:
                    advance(r)
                rU, rD = rates_for(members)
                for r, u, d in zip(members, rU, rD):
                    if not r["up"]:  # one stage
                        u = d = max(u, d)
                    r["rU"], r["rD"] = u, d
                    r["t"] = next_event(r)
        dirty.clear()
    return [E._result(state, j, windows, tolerance, done and steps is None, now) for j in range(len(state))]


def install():
    import artist.network.phase.model as M
    orig_bw = M.link_bandwidth_bps
    seen: list = []

    def bw(topology, link):
        seen.append(link)
        return orig_bw(topology, link)

    def rc(jobs, capacity, *a, **k):
        if len(jobs) > 1 and k.get("steps") is None:
            kinds = seen[-len(capacity):]
            DOWN[:] = ["down" in str(link[0]) for link in kinds]
        return run_component(jobs, capacity, *a, **k)

    M.link_bandwidth_bps = bw
    M.run_component = rc
