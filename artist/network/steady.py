"""Steady-state step times of jobs that train together: every job repeats its step.

    steady_step_times(model, {job: StepGraph, ...}) -> {job: SteadyStep}

One step of each job from a common start says how the jobs' first steps
overlap, which is an accident of the start; jobs that keep training settle
into a pattern in which each one's step time is stable (or repeats with a
period). Here every job's step graph is unrolled into `n_j` consecutive steps
(step k+1's first nodes wait for every node of step k, as an iteration's
forward pass waits for the previous optimizer step), all jobs run in ONE call
of the model (model.time: ns-3 co-simulation or the flow backend; both
measure the same way), and each job's steps are read from its own graph.

Only steps that end before the first job runs out of steps count (the
"horizon"): up to then every job is still running, so no measured step saw
fewer co-runners than the others. A job's steady step time is the mean of its
last `window` steps within the horizon; it is stable when that mean is within
`tolerance` (relative) of the mean of the `window` steps before them (a mean
over several steps also settles when the pattern repeats with a period, e.g.
a short job meeting a long one's communication every other step). The first
step is never measured (transport and co-runners start together).

Until every job is stable, the run is repeated with each job's step count
grown so that the horizon doubles (from the step times just measured); the
slowest job never runs more than `max_steps` steps, a job k times faster at
most k x `max_steps` (so a short DDP step beside a long LLM step still sees
enough of it), and no job more than `fast_steps`, so no input runs without
bound; a model with a size limit per run (the flow backend's `max_transfers`,
measured by its `transfer_bound`) also caps the steps so that a run fits it
(the first run may then hold fewer than 2 x `window` + 1 steps per job). A
job whose steps do not settle within these caps keeps the mean of the steps it
had, and says so (converged False).

A job alone repeats one identical step (same state at every step start), so
its steady step time is its single step time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

from artist.network.base import CommResult
from artist.parallel.graph import Node, StepGraph

TOLERANCE = 0.03  # relative difference between the last two windows' mean step times (choice)
WINDOW = 4  # steps per window (choice: even, so that a pattern of period 1, 2 or 4 averages out)
MAX_STEPS = 40  # steps of the slowest job per run (a cap so that no input runs without bound)
MAX_FAST_STEPS = 1000  # steps of any job per run (cap; a job k times faster than the slowest may run k x MAX_STEPS)


@dataclass(frozen=True)
class SteadyStep:
    step_seconds: float  # steady-state step time: mean of the last measured steps
    first_step_seconds: float  # the first step, from the common start
    steps_run: int  # steps of this job simulated in the final run
    steps_measured: int  # ... of which ended within the horizon (all jobs running)
    converged: bool  # the last two windows agree within the tolerance
    runs: int  # model runs it took (each a fresh co-simulation from the common start)
    comm_seconds: float = 0.0  # communication nodes' own durations per step, mean over the same steps
    result: CommResult | None = field(default=None, compare=False)  # the final run's provenance


def repeat_graph(graph: StepGraph, steps: int) -> StepGraph:
    """`steps` copies of the graph one after another: step k+1's nodes without dependencies
    depend on step k's sinks (the nodes nothing depends on), so it starts when step k ends."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    n = len(graph.nodes)
    needed = {d for node in graph.nodes for d in node.deps}
    sinks = tuple(i for i in range(n) if i not in needed)
    nodes = []
    for k in range(steps):
        base = k * n
        for node in graph.nodes:
            deps = tuple(base + d for d in node.deps)
            if not deps and k > 0:
                deps = tuple(base - n + s for s in sinks)
            nodes.append(Node(base + node.id, node.kind, deps, node.seconds, node.group, node.nbytes))
    return StepGraph(tuple(nodes), graph.samples)


def step_ends(node_end, nodes_per_step: int, steps: int) -> list[float]:
    """End of each step of an unrolled graph (its latest node), from the common start."""
    return [max(node_end[k * nodes_per_step:(k + 1) * nodes_per_step], default=0.0) for k in range(steps)]


def step_comm_seconds(graph: StepGraph, node_seconds, steps: int) -> list[float]:
    """The communication nodes' own durations summed per step of an unrolled graph."""
    n = len(graph.nodes)
    comm = [i for i, node in enumerate(graph.nodes) if node.is_communication]
    return [sum(node_seconds[k * n + i] for i in comm) for k in range(steps)]


def steady_step_times(model, graphs: Mapping[str, StepGraph], tolerance: float = TOLERANCE, window: int = WINDOW,
                      max_steps: int = MAX_STEPS, fast_steps: int = MAX_FAST_STEPS) -> dict[str, SteadyStep]:
    """Each job's steady step time with all the jobs running together (see the module docstring)."""
    if window < 1 or max_steps < 2 * window + 1 or not tolerance > 0 or fast_steps < max_steps:
        raise ValueError(f"need window >= 1, max_steps >= 2 x window + 1, tolerance > 0, fast_steps >= max_steps; "
                         f"got window {window}, max_steps {max_steps}, tolerance {tolerance}, fast_steps {fast_steps}")
    jobs = list(graphs)
    per_step = _transfers_per_step(model, graphs)
    counts = _within_limit(model, per_step, {j: 2 * window + 1 for j in jobs}, {j: 1 for j in jobs})
    runs = 0
    while True:
        runs += 1
        timing, ends, horizon, series = _run_steps(model, graphs, counts)
        comms = {j: step_comm_seconds(graphs[j], timing[j].node_seconds, counts[j]) for j in jobs}
        out = {}
        for j in jobs:
            seconds, within = series[j]
            measured = seconds[1:]  # the first step is the common start's
            comm = comms[j][:len(seconds)]
            w = min(window, len(measured) // 2)
            if w >= 1:
                last = sum(measured[-w:]) / w
                before = sum(measured[-2 * w:-w]) / w
                stable = w == window and within > 0 and abs(last - before) <= tolerance * last
                comm_mean = sum(comm[-w:]) / w
            else:
                last = sum(measured) / len(measured) if measured else seconds[0]
                stable = False
                comm_mean = sum(comm[1:]) / len(measured) if measured else comm[0]
            out[j] = SteadyStep(last, seconds[0], counts[j], within, stable, runs, comm_mean, timing[j].result)
        first_out = [j for j in jobs if ends[j][-1] <= horizon]  # the horizon grows only with their steps
        mean = {j: ends[j][-1] / counts[j] for j in jobs}
        slowest = max(mean.values())
        cap = {j: min(fast_steps, max(max_steps, math.ceil(max_steps * slowest / mean[j]) if mean[j] > 0
                                      else fast_steps)) for j in jobs}
        if all(s.converged for s in out.values()) or any(counts[j] >= cap[j] for j in first_out):
            return out
        # grow so the horizon doubles: each job's steps from its mean step time so far
        grown = {}
        for j in jobs:
            grown[j] = min(cap[j], max(counts[j] + 1, math.ceil(2 * horizon / mean[j]) + 1 if mean[j] > 0 else cap[j]))
        grown = _within_limit(model, per_step, grown, counts)
        if grown == counts:  # the model's size limit allows no longer run: keep what was measured
            return out
        counts = grown


def _run_steps(model, graphs: Mapping[str, StepGraph], counts: Mapping[str, int]):
    """One run of every job's graph repeated counts[j] times: (timing, each job's step ends, the horizon,
    {job: (its step times within the horizon, how many)}; a job without one step within the horizon
    gets its whole run's steps and 0)."""
    timing = model.time({j: repeat_graph(g, counts[j]) for j, g in graphs.items()})
    ends = {j: step_ends(timing[j].node_end, len(g.nodes), counts[j]) for j, g in graphs.items()}
    horizon = min(e[-1] for e in ends.values())
    series = {}
    for j in graphs:
        e = [0.0] + [t for t in ends[j] if t <= horizon * (1 + 1e-12)]
        within = len(e) - 1
        if within == 0:  # not one step before the horizon: its whole run, unsettled
            e = [0.0] + ends[j]
        series[j] = ([b - a for a, b in zip(e, e[1:])], within)
    return timing, ends, horizon, series


@dataclass(frozen=True)
class LongRunStep:
    step_seconds: float  # mean of the second half of its steps within the horizon (the first step excluded)
    steps_measured: int  # steps within the horizon
    drift: float  # |mean of the last quarter / step_seconds - 1|: how far the mean still moves


def long_run_step_times(model, graphs: Mapping[str, StepGraph], slowest_steps: int = 100,
                        fast_steps: int = 4000) -> dict[str, LongRunStep]:
    """Each job's long-run mean step time with all the jobs running together: a reference estimator for
    components that never settle into a pattern steady_step_times can see in a few windows (many jobs of
    different periods meet in ever-new alignments, so the mean of the last 4 steps keeps wandering by
    several per cent; measured on benchmarks/contention_accuracy.py's larger scenarios: up to 9 % from the
    mean of a long run, whose last quarter and second half agree within ~1 %).

    A first run of 2 x WINDOW + 1 steps per job gives each job's mean step; then one run in which the
    slowest job has `slowest_steps` steps and a job k times faster k x as many (at most `fast_steps`; both
    runs within the model's size limit per run, as steady_step_times). Its mean is over the second half of
    the steps within the horizon, so the common start is forgotten."""
    if slowest_steps < 8 or fast_steps < slowest_steps:
        raise ValueError(f"need slowest_steps >= 8 and fast_steps >= slowest_steps, got {slowest_steps}, "
                         f"{fast_steps}")
    per_step = _transfers_per_step(model, graphs)
    pilot = _within_limit(model, per_step, {j: 2 * WINDOW + 1 for j in graphs}, {j: 1 for j in graphs})
    _, ends, _, _ = _run_steps(model, graphs, pilot)
    mean = {j: ends[j][-1] / pilot[j] for j in graphs}
    slowest = max(mean.values())
    counts = {j: min(fast_steps, math.ceil(slowest_steps * slowest / mean[j]) + 1 if mean[j] > 0 else fast_steps)
              for j in graphs}
    _, _, _, series = _run_steps(model, graphs, _within_limit(model, per_step, counts, pilot))
    out = {}
    for j, (seconds, within) in series.items():
        measured = seconds[1:] or seconds
        half = measured[len(measured) // 2:]
        quarter = measured[len(measured) * 3 // 4:]
        step = sum(half) / len(half)
        out[j] = LongRunStep(step, within, abs(sum(quarter) / len(quarter) / step - 1) if step > 0 else 0.0)
    return out


def _transfers_per_step(model, graphs: Mapping[str, StepGraph]) -> dict[str, int] | None:
    """Each job's transfers per step by the model's own bound, or None for a model without a size limit."""
    limited = _size_limited(model)
    if limited is None:
        return None
    return {j: limited.transfer_bound({j: g}) for j, g in graphs.items()}


def _size_limited(model):
    """The model, or the model it wraps (a cache, a calibration: `.inner`), that has a size limit per run."""
    while model is not None and not hasattr(model, "transfer_bound"):
        model = getattr(model, "inner", None)
    return model


def _within_limit(model, per_step: dict[str, int] | None, wanted: dict[str, int],
                  floor: dict[str, int]) -> dict[str, int]:
    """`wanted` step counts, or, where they would exceed the model's size limit per run, counts between
    `floor` and `wanted` grown by the same fraction of the way (so the run fits; `floor` is returned when
    nothing more fits, and a floor that does not fit is left for the model to refuse)."""
    if per_step is None:
        return wanted
    limit = _size_limited(model).max_transfers
    size = sum(per_step[j] * wanted[j] for j in wanted)
    if size <= limit:
        return wanted
    base = sum(per_step[j] * floor[j] for j in wanted)
    extra = size - base
    fraction = max(0.0, (limit - base) / extra) if extra > 0 else 0.0
    return {j: floor[j] + math.floor((wanted[j] - floor[j]) * fraction) for j in wanted}
