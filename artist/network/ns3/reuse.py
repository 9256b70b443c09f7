"""Exact reuse: a run of several collectives answered from runs of each collective alone.

ns-3 time is an integer count of picoseconds and the engine is deterministic, so a
collective that starts while the network is quiet (every frame and ack of earlier
collectives delivered, every connection's window empty) runs exactly as it does alone,
shifted by its start time. A DDP step is such a run whenever each bucket starts after
the previous one's last ack (the usual case: buckets are separated by backward compute).

So a step graph's run is composed instead of simulated:
1. each distinct collective (kind, GPUs, bytes) is simulated once alone; its span (start
   to last byte) and quiet time (start to last event) in picoseconds are kept, in memory
   and in the latency cache, and reused by every model and step that asks for it;
2. the engine's timeline is replayed on those integers (compose_timeline: a collective
   starts at max(its ready time, the end of its last predecessor), timers add their
   seconds), using ns-3's own conversions between seconds and picoseconds (run in the
   worker), so every start and end is the double the full run would report;
3. if any two collectives' busy intervals [start, start + quiet] touch, the composition
   does not hold and the caller runs the whole graph in one ns-3 run, as before.
Only for the window transport (TCP keeps congestion state across collectives) on
topologies where a collective's paths do not depend on message numbering (no ecmp hash,
no rails): there the answers are byte-identical to the full run's
(tests/test_ns3_reuse.py checks the full run against every path here).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Callable, Sequence

# Bump when the meaning of a stored isolated answer changes.
PIECE_VERSION = 1


@dataclass(frozen=True)
class IsolatedAnswer:
    """One collective simulated alone from time 0."""

    span_ps: int  # start to its last byte received (what the engine reports as its end)
    quiet_ps: int  # start to the run's last event (the last ack): the network is quiet after it
    data_packets: int
    ack_packets: int
    frames_on_wires: int
    events: int
    nodes: int
    links: int
    wall_seconds: float

    @property
    def packets(self) -> int:
        return self.data_packets + self.ack_packets


def compose_timeline(spec: dict, to_ps: Callable[[float], int], to_seconds: Callable[[int], float]) -> dict:
    """The engine's collective timeline (engine.cc: StartFirstCollectives, CollectiveDone, StartRoots)
    replayed on integer picoseconds. spec["collectives"]: per collective in engine order, {"ready_s",
    "preds", and "span_ps" (a collective run alone) or "timer_s" (a timer, or a collective with nothing to
    send: 0)}. Returns starts and ends in picoseconds and as the engine's doubles; runs in the worker,
    where ns-3's conversions are (to_ps = Seconds(x), to_seconds = GetSeconds())."""
    colls = spec["collectives"]
    start_ps: list[int] = [0] * len(colls)
    end_ps: list[int] = [0] * len(colls)
    end_s: list[float] = [0.0] * len(colls)
    for c, coll in enumerate(colls):  # predecessors are earlier collectives (builder.py checks it)
        if coll["preds"]:
            last = max(coll["preds"], key=lambda p: end_ps[p])
            start_ps[c] = to_ps(max(float(coll["ready_s"]), end_s[last]))  # t0 = 0 on the window transport
        else:
            start_ps[c] = to_ps(float(coll["ready_s"]))
        span = coll.get("span_ps")
        end_ps[c] = start_ps[c] + (int(span) if span is not None else to_ps(float(coll["timer_s"])))
        end_s[c] = to_seconds(end_ps[c])
    return {"start_ps": start_ps, "end_ps": end_ps, "c_start_s": [to_seconds(s) for s in start_ps],
            "c_end_s": end_s, "error": ""}


def overlapping(starts: Sequence[int], quiet: Sequence[int]) -> bool:
    """Whether any two busy intervals [start, start + quiet] share an instant (then a collective
    would start while another's frames or acks are still in flight)."""
    spans = sorted(zip(starts, quiet))
    return any(b_start <= a_start + a_quiet for (a_start, a_quiet), (b_start, _) in zip(spans, spans[1:]))


def piece_key(schedule) -> tuple:
    """What an isolated answer depends on besides the model's identity and topology. A schedule is a
    deterministic function of these (collectives.py; its "algorithm" names the kind too: ring, hierarchical, tree,
    all_gather, reduce_scatter, all_to_all, send_recv); the transfer and step counts guard the rest."""
    return (schedule.algorithm, tuple(schedule.ranks), int(schedule.nbytes), int(schedule.channels),
            schedule.total_steps, len(schedule.transfers))


# Schedule.algorithm -> the collective kind the analytical model times (for likely_overlap).
_KIND_OF = {"ring": "all_reduce", "hierarchical": "all_reduce", "tree": "all_reduce", "all_gather": "all_gather",
            "reduce_scatter": "reduce_scatter", "all_to_all": "all_to_all", "send_recv": "send_recv"}


class ExactReuse:
    """Isolated answers of one Ns3Model, in memory and (when attached) in the latency store."""

    def __init__(self):
        self.memo: dict[tuple, IsolatedAnswer] = {}
        self.store = None  # a LatencyStore, attached by the Cached layer (artist/network/cache/cached.py)
        self.simulated = 0  # isolated runs done by this object
        self.reused = 0  # isolated answers found (memory or store) instead of simulated
        self.composed = 0  # runs answered by composition
        self.fallbacks = 0  # runs whose collectives overlapped: simulated whole
        self.predicted_overlaps = 0  # runs not tried: their collectives were expected to overlap
        self._analytical = None  # the stand-in likely_overlap times collectives with

    @staticmethod
    def applies(model) -> bool:
        from artist.network.symmetry import shape_symmetric

        return model.transport.transport == "window" and shape_symmetric(model.topology)

    # ---- isolated answers ------------------------------------------------------
    def _store_key(self, model, schedule) -> tuple[str, dict]:
        from artist.jsonkey import digest
        from artist.network.cache.key import touched_link_parameters
        from artist.network.code import code_digest
        from artist.placement import Placement

        algorithm, ranks, nbytes, channels, total_steps, transfers = piece_key(schedule)
        material = {"piece_version": PIECE_VERSION, "piece": "ns3 collective alone", "schedule": algorithm,
                    "ranks": list(ranks), "nbytes": nbytes, "total_steps": total_steps, "transfers": transfers,
                    "links": touched_link_parameters(Placement(model.topology, tuple(sorted(ranks)))),
                    "backend": model.identity(), "code": code_digest(model)}
        return digest(material), material

    def _lookup(self, model, schedule) -> IsolatedAnswer | None:
        key = self.memo_key(model, schedule)
        found = self.memo.get(key)
        if found is None and self.store is not None:
            stored = self.store.get(self._store_key(model, schedule)[0])
            if stored is not None and "isolated" in stored.result.details:
                found = IsolatedAnswer(**stored.result.details["isolated"])
                self.memo[key] = found
        return found

    def _keep(self, model, schedule, answer: IsolatedAnswer) -> None:
        self.memo[self.memo_key(model, schedule)] = answer
        if self.store is None:
            return
        from artist.network.cache.store import CachedTiming, Claim

        key, material = self._store_key(model, schedule)
        outcome = self.store.get_or_claim(key)
        if isinstance(outcome, Claim):
            seconds = answer.span_ps * 1e-12
            result = CachedTiming(((seconds,),), seconds, seconds, model.name, packets=answer.packets,
                                  details={"isolated": asdict(answer)})
            material = {**material, "model": f"alone:{material['nbytes']}", "key_version": PIECE_VERSION}
            from artist.placement import Placement

            self.store.put(outcome, material, f"{schedule.algorithm} {schedule.nbytes} B alone",
                           Placement(model.topology, tuple(sorted(schedule.ranks))), result, answer.wall_seconds,
                           count_miss=False)

    def memo_key(self, model, schedule) -> tuple:
        return (repr(sorted(model.identity().items())), piece_key(schedule))

    def found(self, model, schedule) -> IsolatedAnswer | None:
        """The answer kept in memory or in the attached store, or None."""
        return self._lookup(model, schedule)

    @staticmethod
    def request(model, schedule, label: str = "-"):
        """(the worker's request, its engine input) to simulate schedule alone (label: the question's
        placement, named if it is refused)."""
        from artist.network.ns3.builder import EngineCollective

        return model.request([EngineCollective(schedule, 0.0, (), 0.0, 0)], label)

    def accept(self, model, schedule, res: dict, ei, label: str, wall_seconds: float, worker=None) -> IsolatedAnswer:
        """A worker's answer to request(): checked, kept (memory and store), returned."""
        model.check_result(res, ei, label, worker)
        answer = IsolatedAnswer(int(res["c_end_ps"][0]), int(res["last_event_ps"]), res["data_packets"],
                                res["ack_packets"], res["device_transmissions"], res["events"],
                                len(ei.node_names), len(ei.link_names), res.get("sim_wall_seconds", wall_seconds))
        self._keep(model, schedule, answer)
        self.simulated += 1
        return answer

    def isolated(self, model, schedules: Sequence, label: str) -> list[IsolatedAnswer]:
        """Each schedule's isolated answer: found, else simulated on the model's pool, longest first."""
        answers: dict[tuple, IsolatedAnswer] = {}
        todo: dict[tuple, object] = {}
        for s in schedules:
            k = piece_key(s)
            if k in answers or k in todo:
                continue
            found = self._lookup(model, s)
            if found is not None:
                answers[k] = found
                self.reused += 1
            else:
                todo[k] = s
        order = sorted(todo, key=lambda k: -_size(todo[k]))
        requests = [self.request(model, todo[k], label) for k in order]
        started = time.perf_counter()
        results = model.pool.map([(req, model.timeout_s, label) for req, _ in requests])
        for k, (req, ei), res in zip(order, requests, results):
            answers[k] = self.accept(model, todo[k], res, ei, label, time.perf_counter() - started)
        return [answers[piece_key(s)] for s in schedules]

    # ---- composition -----------------------------------------------------------------
    def likely_overlap(self, model, collectives: Sequence, comm: Sequence[int]) -> bool:
        """Whether the collectives will probably overlap (co-running jobs, buckets queued back to back),
        judged on the analytical model's times, so that the isolated runs are not spent on a run that
        must be simulated whole anyway. Only a shortcut: the exact check is run()'s, on ns-3's answers."""
        from artist.network.analytical import AnalyticalModel, schedule_seconds
        from artist.placement import Placement

        if self._analytical is None or self._analytical.topology is not model.topology:
            self._analytical = AnalyticalModel(model.topology, model.algorithm, model.channels, model.latency)
        end: list[float] = []
        busy = []
        for i, c in enumerate(collectives):
            start = max([float(c.ready_s)] + [end[p] for p in c.preds])
            if i in comm:
                kind = _KIND_OF.get(c.schedule.algorithm)
                if kind is None:  # not a schedule the analytical model builds: time it transfer by transfer
                    seconds = schedule_seconds(c.schedule, model.topology, model.latency)
                else:  # memoised per group form: no pass over the transfers
                    group = Placement(model.topology, tuple(sorted(c.schedule.ranks)))
                    seconds = self._analytical.collective_seconds(group, c.schedule.nbytes, kind)
                busy.append((start, start + seconds))
            else:
                seconds = float(c.timer_s) if c.schedule is None else 0.0
            end.append(start + seconds)
        busy.sort()
        # Margin: the analytical time can be a few % short of ns-3's, and acks return after the last byte.
        return any(b[0] <= a[1] + 0.1 * (a[1] - a[0]) + 20e-6 for a, b in zip(busy, busy[1:]))

    def run(self, model, collectives: Sequence, label: str) -> dict | None:
        """The engine's result fields time() reads, for collectives (EngineCollective) composed from
        isolated answers; None when they overlap (the caller then runs them together)."""
        comm = [i for i, c in enumerate(collectives) if c.schedule is not None and c.schedule.transfers]
        if not comm:
            return None
        if self.likely_overlap(model, collectives, set(comm)):
            self.predicted_overlaps += 1
            return None
        pieces = self.isolated(model, [collectives[i].schedule for i in comm], label)
        by_index = dict(zip(comm, pieces))
        spec = {"collectives": [
            {"ready_s": float(c.ready_s), "preds": list(c.preds),
             **({"span_ps": by_index[i].span_ps} if i in by_index else
                {"timer_s": float(c.timer_s) if c.schedule is None else 0.0})}
            for i, c in enumerate(collectives)]}
        timeline = model.pool.first.run({"timeline": spec}, model.timeout_s, label)
        if overlapping([timeline["start_ps"][i] for i in comm], [by_index[i].quiet_ps for i in comm]):
            self.fallbacks += 1
            return None
        self.composed += 1
        return {
            "c_start_s": timeline["c_start_s"], "c_end_s": timeline["c_end_s"], "t0_s": 0.0,
            "collective_seconds": [e - s for s, e in zip(timeline["c_start_s"], timeline["c_end_s"])],
            "packets": sum(p.packets for p in pieces), "device_transmissions": sum(p.frames_on_wires for p in pieces),
            "events": sum(p.events for p in pieces), "sim_wall_seconds": sum(p.wall_seconds for p in pieces),
            "nodes": max(p.nodes for p in pieces), "links": max(p.links for p in pieces),
            "composed_from": len(pieces), "path": "ns3",  # every piece a packet run of its own (fastpath.NS3)
        }


def _size(schedule) -> int:
    """Work of a schedule, to run the longest first: bytes on the wire."""
    return sum(t.nbytes for t in schedule.transfers)
