"""Contention at the granularity of collective phases: jobs sharing links, in steady state, fast.

    PhaseContention(fabric).steady({job: StepGraph, ...}) -> {job: ComponentStep}

The model of record for shared contention (perf/model.py, `contention_model:
phase`). demand.py: a collective as one lock-step bundle of flows per channel;
engine.py: the periodic steady state of a component's jobs, rates re-shared
only when a bundle starts or drains; model.py: the fabric's alone times, the
links several jobs cross, the canonical signature that memoises components.
The per-transfer flow engine (network/flow/) and ns-3 co-simulation
(network/ns3/) are its references (`contention_model: cosim`).

What it assumes: a collective alone takes its backend's time; its start-up
latency (that time less its bandwidth part) comes first and loads no link;
its channels then drain at one rate per edge each, max-min fair per edge on
the links other jobs also cross. Its cost is a few events per collective and
step instead of one per transfer, and a job that nobody can disturb skips whole
steps at its alone time. The engine's loop runs compiled (engine.cc, built once
per installation with the system's C++ compiler; native.py), with the Python
loop as its bit-identical reference and fallback.

Cost at trace scale (benchmarks/contention_scale.py; components of 20-30 jobs,
most of them LLM jobs of 2 000-7 000 collectives a step, in a 1 000-job trace
on 1 024 GPUs): 0.5-2 CPU-s a component, where the Python loop with 4-step
windows took 4-6 CPU-s and stopped at its event cap before the slowest job had
ended a step. What bounds it (engine.py): windows of 1-4 steps of the slowest
job (window_of: enough for 64 of its contended phases; on such components
within 0.5 %, max 1.07 %, of 4-step windows) and an event budget (1 M events,
then the first step end where every job has ended two steps; within 1.1 %,
median 0.07 %, of runs of 300 M events; those components never settle within
1 % over 32 steps of their slowest job).

Accuracy (benchmarks/contention_accuracy.py --model phase; every job's steady
shared step, the reference's own step alone plus what the phase model adds;
error = phase / reference - 1), measured 2026-11-27 on a 2-core machine with
the engine as it stands (compiled, windows of 1-4 steps, event budget; the 24
scenarios' jobs have few phases, so their windows are 4 steps; the same table
as the Python loop's with 4-step windows and a 200 k event cap gave):

    reference                          scenarios  jobs  median |err|  max |err|  slowdown diff median / max
    ns-3, round-robin arbitration      24 (s..)   114     1.85 %       18.82 %        0.025 / 0.331
    per-transfer flow engine           24 (s..)   114     1.40 %       17.14 %        0.021 / 0.311

    cost on the 24 scenarios: phase 0.9 CPU-s, ns-3 353 CPU-s, flow 153 CPU-s (170-390x)

The goals (median <= 3 %, max <= 10 %, slowdown within 0.05) hold for the
median, not for the maximum. The largest errors are two regimes the model does
not capture: (1) jobs whose channels share one NIC (2 channels, one GPU per
machine) and whose ring rounds are latency-bound (s10, s20: ns-3 and the flow
engine show 15-20 % slowdowns where the phase model shows none; alone, each
channel sends in bursts at the full NIC rate while the other waits out its
start-up latency, and those bursts collide on a spine port, which per-edge
fluid rates averaged over the channels do not see); (2) small, latency-heavy
rings beside large ones on a heavily shared port (s06, s12, s21: up to
+19 %; the phase model puts a collective's whole start-up latency first, so its
bandwidth part meets the large ring's full share). Two variants that spread the
latency over the bandwidth part were measured against the flow engine and
rejected: fluid mean rates (median 1.70 %, max 17.3 %) and a mean-field model of
burst collisions (median 1.92 %, max 31.8 %).
"""

from artist.network.phase.model import PHASE_VERSION, ComponentStep, PhaseContention

__all__ = ["PhaseContention", "ComponentStep", "PHASE_VERSION"]
