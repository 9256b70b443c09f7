"""The performance model: the one place compute and communication meet.

    perf.estimate(model, placement) -> StepEstimate   what a policy asks (a job alone)
    perf.rates({job_id: (model, placement)})           what the simulator asks (every running job)

A step is a graph (artist/parallel): compute nodes timed by the ComputeModel,
communication nodes timed by the FabricModel; the step takes compute + exposed
communication. Policies never see the fabric; they see StepEstimates.

Contention: "isolated" times every job alone, so rates() is estimate() per
job. "shared" times the jobs of each contention component (perf/contention.py:
rack-spanning jobs with a rack in common) together, on their own GPUs, in
steady state, by one of two contention models (CONTENTION_MODELS):
- "phase" (default, the model of record for sweeps): network/phase/, every
  collective at its fabric's time alone, stretched where its channels share a
  link with another job's, the component's periodic steady state simulated
  phase by phase (a few events per collective, memoised by a canonical
  signature); any backend answers the alone times (analytical, flow, ns-3);
  a job's shared step is its step alone plus what contention adds in that model;
- "cosim" (the reference): network/steady.py, every job repeats its step in one
  FabricModel.time call until its step time is stable; the flow and ns-3
  backends co-simulate every transfer or packet (the analytical backend times
  each job alone).
Data-parallel and hybrid-parallel (1F1B, perf/hybrid.py) jobs alike. Policies
keep asking estimate(): a job alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

from artist.memo import memoised, memoised_by_identity
from artist.network.base import CommResult, FabricModel, GraphTiming
from artist.network.provenance import AnswerCounts
from artist.parallel.ddp import ddp_step
from artist.parallel.graph import Node, StepGraph
from artist.perf.compute import ComputeModel, OutOfMemory
from artist.perf.contention import contention_components
from artist.network.steady import SteadyStep, steady_step_times
from artist.parallel.hybrid import hybrid_step
from artist.parallel.plan import rank_grid
from artist.perf.hybrid import PlanEstimate, estimate_plan, forward_seconds
from artist.perf.hybrid_job import HybridJobModel
from artist.network.symmetry import fabric_form, fabric_key
from artist.placement import Placement
from artist.workload import ModelProfile

if TYPE_CHECKING:  # the phase model imports collective schedules: loaded only when shared contention runs
    from artist.network.phase import ComponentStep, PhaseContention

CONTENTION_MODES = ("isolated", "shared")
CONTENTION_MODELS = ("phase", "cosim")  # how "shared" times a component (module docstring)
MAX_STEP_GRAPHS = 256  # step graphs (and what is derived from them) kept per process: the running jobs, bounded


@dataclass(frozen=True)
class StepEstimate:
    step_seconds: float  # compute + exposed communication
    compute_seconds: float
    exposed_comm_seconds: float  # communication not hidden behind compute
    comm_seconds: float  # the communication nodes' own durations, summed
    samples_per_second: float  # 0 when the profile states no batch size
    comm: CommResult  # which backend answered, cache hit, packets, wall time
    efficiency: float = 1.0  # statistical efficiency (1: rigid jobs)

    @property
    def goodput(self) -> float:
        return self.samples_per_second * self.efficiency


def estimate_from_timing(graph: StepGraph, timing: GraphTiming, compute_seconds: float,
                         details: dict | None = None) -> StepEstimate:
    # exposed = makespan - compute, then step = compute + exposed: the same float operations as
    # wave 1's overlap rule and iteration time, so results stay bit-identical.
    exposed = max(0.0, timing.step_seconds - compute_seconds)
    step = compute_seconds + exposed
    result = timing.result if details is None else timing.result.replace(details={**timing.result.details,
                                                                                   **details})
    return StepEstimate(step, compute_seconds, exposed, timing.comm_seconds,
                        graph.samples / step if graph.samples else 0.0, result)


class PerfModel:
    def __init__(self, fabric: FabricModel, compute: ComputeModel, contention: str = "isolated",
                 contention_model: str = "phase"):
        if contention not in CONTENTION_MODES:
            raise ValueError(f"unknown contention mode {contention!r}; known: {', '.join(CONTENTION_MODES)}")
        if contention_model not in CONTENTION_MODELS:
            raise ValueError(f"unknown contention model {contention_model!r}; known: {', '.join(CONTENTION_MODELS)}")
        if contention == "shared" and contention_model == "phase":
            from artist.network.phase.native import engine_choice

            engine_choice()  # a bad ARTIST_PHASE_ENGINE is an InputError now, not at the first shared component
        self.fabric = fabric
        self.compute = compute
        self.contention = contention
        self.contention_model = contention_model
        self._memo: dict = {}
        self._shared_memo: dict = {}
        self._step_graphs: dict = {}
        # which path answered each question that reached the network (its memo misses); the simulator
        # starts a fresh count for every run (network/provenance.py)
        self.answers = AnswerCounts()

    def graph(self, model: ModelProfile, placement: Placement) -> tuple[StepGraph, float]:
        """The step graph of a data-parallel job, laid on the placement standing for its fabric form
        (network/symmetry.py: the canonical placement of its shape on a bundle spine), and its
        compute seconds on the real GPUs."""
        compute = self.compute.step_seconds(model, placement)
        return ddp_step(model, fabric_form(placement)[1], compute), compute

    def estimate(self, model: ModelProfile, placement: Placement) -> StepEstimate:
        """One step of `model` alone on `placement`, memoised per (model, fabric form, GPU types):
        by the topology's symmetry placements of one form (shape) and GPU mix take the same time."""
        if isinstance(model, HybridJobModel):
            return self._hybrid_estimate(model, placement)
        key = (model, placement.topology, fabric_key(placement), placement.gpu_type_counts)
        found = self._memo.get(key)
        if found is None:
            graph, compute = self.graph(model, placement)
            timing = self.fabric.time({"job": graph})["job"]
            found = self._memo[key] = estimate_from_timing(graph, timing, compute)
            self.answers.record(timing.result)
        return found

    def step_floor(self, model) -> float:
        """A lower bound on the model's step alone on any placement of this topology: its compute on the
        fastest GPU type that holds it (estimate_from_timing: a step is its compute plus exposed
        communication, never less). 0 for a hybrid job (its plans and pipeline bubble give no simple
        bound). Why: a policy can rule out, without searching, a move that could not pay for itself."""
        key = ("floor", model)
        found = self._memo.get(key)
        if found is None:
            found = 0.0
            if not isinstance(model, HybridJobModel):
                fits = []
                for gpu_type in dict.fromkeys(self.compute.topology.rack_gpu_types):
                    try:
                        fits.append(self.compute.seconds(model, gpu_type))
                    except OutOfMemory:
                        continue
                found = min(fits, default=0.0)
            self._memo[key] = found
        return found

    def _hybrid_plan(self, model: HybridJobModel, placement: Placement) -> PlanEstimate:
        """The fastest of the job's plans (one unless its plan is "auto") alone on the placement's GPUs in
        rank order (sorted ids), memoised per GPUs: unlike a DDP ring, which ranks share a machine depends
        on more than the shape."""
        key = ("hybrid", model, placement.topology, placement.gpus)
        found = self._memo.get(key)
        if found is None:
            # flow: machine-local collectives timed alone (exact, without_machine_local_communication)
            fabric = self.fabric
            if fabric.name == "flow":
                fabric = MachineLocalShortcut(fabric, placement.topology)
            found = self._memo[key] = min(
                (estimate_plan(fabric, placement.topology, model.config, plan, placement.gpus,
                               model.micro_batch_size) for plan in model.plans),
                key=lambda e: (e.step_seconds, e.plan.text()))
            self.answers.record(found.comm)
        return found

    def _hybrid_estimate(self, model: HybridJobModel, placement: Placement) -> StepEstimate:
        """A hybrid job's 1F1B step alone (_hybrid_plan). compute_seconds is the step less its exposed
        communication (the pipeline bubble included)."""
        est = self._hybrid_plan(model, placement)
        exposed = sum(est.exposed_seconds.values())
        return StepEstimate(est.step_seconds, est.step_seconds - exposed, exposed, est.comm_seconds,
                            est.samples_per_second, est.comm)

    def step_graph(self, model, placement: Placement) -> tuple[StepGraph, float]:
        """A job's step graph on its own GPUs (the ecmp hash and the NICs see them) and the compute seconds
        its shared step is measured against. A hybrid job runs the plan it would run alone (the fastest
        alone: contention does not re-plan) with every replica's passes (no first-replicas shortcut: other
        jobs' traffic may meet any of them); its compute is its alone step less its exposed communication,
        so its pipeline bubble counts as compute and contention shows as exposed communication.
        Memoised per (model, GPUs): a running job is in every component its leaf is in until it stops,
        and the same graph object lets the contention model reuse what it derived from it."""
        return memoised(self._step_graphs, (model, placement.topology, placement.gpus),
                        lambda: self._build_step_graph(model, placement), MAX_STEP_GRAPHS)

    def _build_step_graph(self, model, placement: Placement) -> tuple[StepGraph, float]:
        if isinstance(model, HybridJobModel):
            est = self._hybrid_plan(model, placement)
            config, plan = model.config, est.plan
            step = hybrid_step(config.layers_list(), rank_grid(plan, placement.gpus),
                               forward_seconds(config, plan, model.micro_batch_size, est.gpu),
                               model.micro_batch_size)
            return step.graph, est.step_seconds - sum(est.exposed_seconds.values())
        compute = self.compute.step_seconds(model, placement)
        return ddp_step(model, placement, compute), compute

    def rates(self, running: Mapping[str, tuple[ModelProfile, Placement]]) -> dict[str, StepEstimate]:
        """Every running job's step; isolated mode: each alone; shared mode: each with the other jobs of
        its contention component (a component of one: alone)."""
        if self.contention == "isolated":
            return {job_id: self.estimate(model, placement) for job_id, (model, placement) in running.items()}
        out: dict[str, StepEstimate] = {}
        for component in contention_components({j: p for j, (_, p) in running.items()}):
            if len(component) == 1:
                model, placement = running[component[0]]
                out[component[0]] = self.estimate(model, placement)
            else:
                out.update(self.shared({j: running[j] for j in component}))
        return {job_id: out[job_id] for job_id in running}

    def shared(self, jobs: Mapping[str, tuple[ModelProfile, Placement]]) -> dict[str, StepEstimate]:
        """The jobs' steady-state steps with all of them on the fabric at once, each graph on its own GPUs,
        by the contention model (module docstring), so the answer is what the jobs settle into, not an
        accident of a common start. A job alone repeats one identical step, so it is its estimate alone
        (phase) or timed once (cosim). The steps measured are in each answer's comm.details. Memoised per
        (models, GPUs) of the group."""
        key = ("shared",) + tuple((job, model, placement.topology, placement.gpus)
                                  for job, (model, placement) in jobs.items())
        found = self._shared_memo.get(key)
        if found is None and len(jobs) == 1 and self.contention_model == "phase":
            (job, (model, placement)), = jobs.items()
            found = {job: self.estimate(model, placement)}  # no step graph on its own GPUs needed
        if found is None:
            graphs, compute = {}, {}
            for job, (model, placement) in jobs.items():
                graphs[job], compute[job] = self.step_graph(model, placement)
            if len(jobs) == 1:
                job = next(iter(jobs))
                timing = self.fabric.time(graphs)[job]
                found = {job: estimate_from_timing(graphs[job], timing, compute[job],
                                                   {"steady_steps": 1, "steady_converged": True})}
            else:
                alone = ({job: self.estimate(model, placement) for job, (model, placement) in jobs.items()}
                         if self.contention_model == "phase" else None)
                found = shared_steady_estimates(self.fabric, {job: (graphs[job], compute[job], placement.topology)
                                                              for job, (_, placement) in jobs.items()},
                                                self.contention_model, alone)
            if len(self._shared_memo) >= 100_000:  # groups are combinatorial: keep the memo bounded
                self._shared_memo.clear()
            self._shared_memo[key] = found
            for estimate in found.values():
                self.answers.record(estimate.comm)
        return dict(found)


def shared_steady_estimates(fabric: FabricModel, jobs: Mapping[str, tuple[StepGraph, float, object]],
                            contention_model: str = "phase", alone: Mapping[str, StepEstimate] | None = None
                            ) -> dict[str, StepEstimate]:
    """Two or more jobs' steady-state steps together on the fabric: {job: (its step graph on its own GPUs,
    its compute seconds, its topology)} -> {job: StepEstimate}. Machine-local communication is timed alone
    (without_machine_local_communication, exact), the rest by the contention model (module docstring).
    alone: each job's StepEstimate alone (phase: the shared step is it plus what contention adds; without
    it, the step is the phase model's own). The rigid loop (PerfModel.shared) and the elastic loop's shared
    mode (artist/elastic/contention.py) both time components this way."""
    graphs, local = {}, {}
    for job, (graph, _, topology) in jobs.items():
        graphs[job], local[job] = _without_local(fabric, graph, topology)
    if contention_model == "phase":
        steps = phase_model_of(fabric).steady(graphs)
        return {job: _phase_estimate(graphs[job], steps[job], jobs[job][1], local[job],
                                     None if alone is None else alone[job], fabric.name) for job in jobs}
    if contention_model != "cosim":
        raise ValueError(f"unknown contention model {contention_model!r}; known: {', '.join(CONTENTION_MODELS)}")
    steady = steady_step_times(fabric, graphs)
    return {job: _steady_estimate(graphs[job], steady[job], jobs[job][1], local[job]) for job in jobs}


_WITHOUT_LOCAL: dict = {}  # per (fabric, graph, topology) objects: the network graph and summed local seconds


def _without_local(fabric, graph: StepGraph, topology) -> tuple[StepGraph, float]:
    """without_machine_local_communication's graph and summed local seconds, memoised per graph object
    (PerfModel.step_graph keeps a running job's graph)."""
    def make():
        network, seconds = without_machine_local_communication(fabric, graph, topology)
        return network, sum(seconds.values())

    return memoised_by_identity(_WITHOUT_LOCAL, (fabric, graph, topology), make, MAX_STEP_GRAPHS)


_PHASE_MODELS: dict = {}


def phase_model_of(fabric) -> PhaseContention:
    """One PhaseContention per fabric object in this process (its memo outlives one component)."""
    from artist.network.phase import PhaseContention

    return memoised_by_identity(_PHASE_MODELS, (fabric,), lambda: PhaseContention(fabric), 64)


def _phase_estimate(graph: StepGraph, step: ComponentStep, compute_seconds: float, local_comm_seconds: float,
                    alone: StepEstimate | None, backend: str) -> StepEstimate:
    """A job's StepEstimate from the phase model: its step alone plus the contention the model adds
    (shared - alone in the model, >= 0), or with no alone estimate the model's own step."""
    added = max(0.0, step.shared.step_seconds - step.alone.step_seconds)
    added_comm = max(0.0, step.shared.comm_seconds - step.alone.comm_seconds)
    details = {"contention_model": "phase", "phase_engine": step.shared.engine, "steady_steps": step.shared.steps,
               "steady_converged": step.shared.converged, "first_step_seconds": step.shared.first_step_seconds,
               "contention_added_seconds": added}
    if alone is not None:
        exposed = alone.exposed_comm_seconds + added
        step_seconds = alone.compute_seconds + exposed
        return StepEstimate(step_seconds, alone.compute_seconds, exposed, alone.comm_seconds + added_comm,
                            graph.samples / step_seconds if graph.samples else 0.0,
                            alone.comm.replace(cache_hit=False, details={**alone.comm.details, **details}),
                            alone.efficiency)
    exposed = max(0.0, step.shared.step_seconds - compute_seconds)
    step_seconds = compute_seconds + exposed
    return StepEstimate(step_seconds, compute_seconds, exposed, step.shared.comm_seconds + local_comm_seconds,
                        graph.samples / step_seconds if graph.samples else 0.0,
                        CommResult(backend, details=details))


def _steady_estimate(graph: StepGraph, steady: SteadyStep, compute_seconds: float,
                     local_comm_seconds: float = 0.0) -> StepEstimate:
    """A job's StepEstimate from its steady-state step (steady.py), with the same float rule as
    estimate_from_timing; local_comm_seconds: the machine-local communication taken out of the graph
    (shared_steady_estimates), counted back into comm_seconds."""
    exposed = max(0.0, steady.step_seconds - compute_seconds)
    step = compute_seconds + exposed
    details = {"steady_steps": steady.steps_measured, "steady_converged": steady.converged,
               "steady_runs": steady.runs, "first_step_seconds": steady.first_step_seconds}
    result = steady.result.replace(details={**steady.result.details, **details})
    return StepEstimate(step, compute_seconds, exposed, steady.comm_seconds + local_comm_seconds,
                        graph.samples / step if graph.samples else 0.0, result)


def without_machine_local_communication(fabric, graph: StepGraph, topology) -> tuple[StepGraph, dict[int, float]]:
    """The graph with every communication node inside one machine replaced by a fixed-duration node
    of its time alone (fabric.collective_seconds), and those nodes' seconds. Why exact: a path
    inside a machine crosses only its GPUs' NVSwitch ports (network/links.py), which belong to the
    job and which no rack-crossing path uses, so such a collective meets no other job's traffic and
    none of its own job's network traffic; it takes its alone time unless it overlaps another
    machine-local collective on the same GPUs, which a 1F1B stage's serial passes and a DDP job's
    one-at-a-time buckets do not do (tests/test_llm_contention.py checks a 16-GPU GPT-3 step both
    ways). Why: a TP group's all-reduces are most of an LLM step's transfers (~500 k of 518 k per
    step of a 16-GPU GPT-3 1.3B, 8 micro-batches, 2 channels), repeated for every steady step."""
    nodes, local = [], {}
    asked: dict = {}  # (group, bytes, kind) -> seconds: a step repeats each TP collective per layer and micro-batch
    for node in graph.nodes:
        if node.is_communication:
            question = (node.group, node.nbytes, node.kind)
            seconds = asked.get(question)
            if seconds is None and question not in asked:
                if len({topology.machine_of(g) for g in node.group}) == 1:
                    group = Placement(topology, tuple(sorted(node.group)))
                    seconds = fabric.collective_seconds(group, int(node.nbytes), node.kind)
                asked[question] = seconds
            if seconds is not None:
                local[node.id] = seconds
                node = Node(node.id, "compute", node.deps, seconds, node.group)
        nodes.append(node)
    return StepGraph(tuple(nodes), graph.samples), local


class MachineLocalShortcut:
    """A FabricModel that times a graph's machine-local communication alone
    (without_machine_local_communication) and the rest with the fabric given; the timings keep every
    node, so critical-path readers (perf/hybrid.py) see the same graph. PerfModel times hybrid jobs
    alone through it on the flow backend."""

    def __init__(self, fabric: FabricModel, topology):
        self.fabric, self.topology, self.name = fabric, topology, fabric.name

    def identity(self) -> dict:
        return self.fabric.identity()

    def collective_seconds(self, group: Placement, nbytes: int, kind: str = "all_reduce") -> float:
        return self.fabric.collective_seconds(group, nbytes, kind)

    def time(self, graphs: Mapping[str, StepGraph]) -> dict[str, GraphTiming]:
        reduced, local = {}, {}
        for job, graph in graphs.items():
            reduced[job], local[job] = without_machine_local_communication(self.fabric, graph, self.topology)
        timings = self.fabric.time(reduced)
        out = {}
        for job, graph in graphs.items():
            seconds = [local[job].get(i, s) for i, s in enumerate(timings[job].node_seconds)]
            out[job] = GraphTiming.of(graph, seconds, timings[job].result)
        return out


def as_perf_model(perf_or_fabric, topology) -> PerfModel:
    """A PerfModel as given, or a FabricModel wrapped with the default compute model
    (reference time / GPU speed), for callers that only choose the network."""
    if isinstance(perf_or_fabric, PerfModel):
        return perf_or_fabric
    if not callable(getattr(perf_or_fabric, "time", None)):
        raise TypeError(f"expected a PerfModel or a FabricModel, got {type(perf_or_fabric).__name__}")
    return PerfModel(perf_or_fabric, ComputeModel(topology))
