"""A sweep's ns-3 questions, found before any ns-3 run: each ns-3 run is simulated once with the
analytical backend standing in, and the step graphs it asks are recorded.

What ns-3 then simulates is not a step but each distinct collective alone (exact reuse,
artist/network/ns3/reuse.py): a bucket of one size on one group of GPUs is simulated once
for every model, policy and rack count that asks for it. So the questions are reduced to
Pieces: (collective kind, GPU group after the cache's canonical relabelling, bytes) on the
link parameters the group can reach.

The stand-in is exact about which questions are asked only where the policies' choices do
not depend on communication times; where they do (a policy weighing placements by their
step time), ns-3 answers may lead to a few other shapes, which the runs then simulate when
they meet them. The list is a prediction, not a promise (cost.py says so when it prints).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from artist.jsonkey import canonical_json
from artist.network.cache.key import graphs_key_material, touched_link_parameters
from artist.placement import Placement


@dataclass(frozen=True)
class Piece:
    """One collective alone: what exact reuse simulates once."""

    kind: str
    group: tuple[int, ...]  # GPU ids after canonical relabelling (send_recv: (src, dst))
    nbytes: int
    links: str  # canonical JSON of the link parameters the group can reach

    def placement(self, topology) -> Placement:
        return Placement(topology, tuple(sorted(self.group)))


@dataclass
class SweepQuestions:
    """The distinct step questions and collective pieces of a sweep's ns-3 runs, by network setting."""

    steps: set = dataclasses.field(default_factory=set)  # cache keys of distinct step questions
    lookups: int = 0  # step questions asked in all (the latency cache's look-ups)
    # (algorithm, channels, options JSON) -> piece -> (topology to build it on, times it was asked)
    pieces: dict = dataclasses.field(default_factory=dict)
    # steps whose collectives will probably overlap (co-running jobs, queued buckets): simulated whole, in one
    # run each, not from pieces: [(setting, topology, [pieces of the step])]
    whole: list = dataclasses.field(default_factory=list)
    # steps the ns-3 backend's fast path will answer at message level (artist/network/fastpath: no link
    # shared): no ns-3 run; [(setting, transfers of the step)]
    fast: list = dataclasses.field(default_factory=list)
    # flow backend: every distinct step question, timed whole by the flow engine: [(setting, topology, pieces)]
    flow: list = dataclasses.field(default_factory=list)
    runs: int = 0  # runs walked
    seconds: float = 0.0  # what finding them took

    @property
    def piece_count(self) -> int:
        return sum(len(p) for p in self.pieces.values())


class QuestionRecorder:
    """FabricModel that answers with `inner` (analytical) and records the questions a Cached ns-3 stack
    would get: step graphs relabelled onto canonical GPUs, keyed as the cache keys them."""

    def __init__(self, inner, questions: SweepQuestions, setting: tuple, paths=None, backend: str = "ns3"):
        self.inner = inner
        self.questions = questions
        self.setting = setting
        self.paths = paths  # an Ns3Model of the run's settings: asked which path a step takes (None: ns-3)
        self.backend = backend  # "ns3" or "flow": which backend's questions are recorded
        self._seen: set = set()

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def topology(self):
        return self.inner.topology

    def identity(self) -> dict:
        return self.inner.identity()

    def collective_seconds(self, group, nbytes, kind="all_reduce"):
        return self.inner.collective_seconds(group, nbytes, kind)

    def time(self, graphs: Mapping):
        self.questions.lookups += 1
        timings = self.inner.time(graphs)
        question = tuple(sorted(graphs.items()))
        if question in self._seen:
            return timings
        self._seen.add(question)
        material, order, relabelled = graphs_key_material(self.inner, graphs, self.topology)
        step = (self.setting, canonical_json(material["graphs"]), canonical_json(material["links"]))
        if step in self.questions.steps:
            return timings
        self.questions.steps.add(step)
        found = []
        for job in order:
            for node in relabelled[job].communication():
                if node.nbytes <= 0 or len(node.group) < 2:
                    continue
                links = canonical_json(touched_link_parameters(Placement(self.topology, tuple(sorted(node.group)))))
                found.append(Piece(node.kind, tuple(node.group), int(node.nbytes), links))
        if self.backend == "flow":  # the flow engine times every step question whole, from its transfers
            self.questions.flow.append((self.setting, self.topology, found))
            return timings
        if self.paths is not None:  # the rule the ns-3 backend applies, on the graphs the cache would ask about
            choice = self.paths.path_choice(relabelled)
            if choice.path != "ns3":
                self.questions.fast.append((self.setting, choice.messages))
                return timings
        if likely_overlap(graphs, timings):
            self.questions.whole.append((self.setting, self.topology, found))
            return timings
        pieces = self.questions.pieces.setdefault(self.setting, {})
        for piece in found:
            topology, count = pieces.get(piece, (self.topology, 0))
            pieces[piece] = (topology, count + 1)
        return timings


def likely_overlap(graphs: Mapping, timings: Mapping) -> bool:
    """Whether communication nodes of these graphs (all jobs together) run within each other's tails, on the
    stand-in's times, with the margin artist/network/ns3/reuse.py's likely_overlap uses."""
    busy = sorted((end - seconds, end) for job, graph in graphs.items()
                  for node, seconds, end in zip(graph.nodes, timings[job].node_seconds, timings[job].node_end)
                  if node.is_communication and seconds > 0)
    return any(b[0] <= a[1] + 0.1 * (a[1] - a[0]) + 20e-6 for a, b in zip(busy, busy[1:]))


def ns3_setting(run) -> tuple:
    """What an ns-3 answer depends on besides the piece: algorithm, channels, backend options."""
    return (run.comm.algorithm, run.comm.channels, canonical_json(dict(run.comm.options)))


def _path_model(run):
    """The run's ns-3 backend (not started: only its path rule is asked), or None if its fast path is off."""
    from artist.network.ns3 import Ns3Model

    model = Ns3Model(run.topology, run.comm.algorithm, run.comm.channels, **dict(run.comm.options))
    return model if model.fast_path else None


def collect_questions(runs: Iterable, models: Mapping, progress: Callable[[int], None] | None = None,
                      backend: str = "ns3") -> SweepQuestions:
    """Walk every run of this backend (ns3 or flow) with the analytical backend standing in (uncalibrated,
    no cache) and record its questions. Runs that differ only in their calibration ask the same questions:
    walked once. Runs with shared contention ask their components' steady states besides: not recorded."""
    from artist.network.analytical import AnalyticalModel
    from artist.policies.registry import make_policy
    from artist.simulator import simulate

    started = time.perf_counter()
    questions = SweepQuestions()
    walked = set()
    for run in runs:
        if run.comm.backend != backend or run.elastic is not None:  # the elastic and Crius loops ask their own
            continue
        axes = {k: v for k, v in run.axes.items() if k not in ("calibration", "backend")}
        signature = canonical_json({k: str(v) for k, v in axes.items()})
        if signature in walked:
            continue
        walked.add(signature)
        stand_in = AnalyticalModel(run.topology, run.comm.algorithm, run.comm.channels)
        recorder = QuestionRecorder(stand_in, questions, ns3_setting(run),
                                    _path_model(run) if backend == "ns3" else None, backend)
        policy = make_policy(run.policy.name, **run.policy.params)
        simulate(run.topology, run.jobs, models, policy, recorder, run.simulator)
        questions.runs += 1
        if progress is not None:
            progress(1)
    questions.seconds = time.perf_counter() - started
    return questions
