"""Contention at the granularity of collective phases: jobs sharing links, in steady state, fast.

    PhaseContention(fabric).steady({job: StepGraph, ...}) -> {job: ComponentStep}

demand.py: a collective as one lock-step bundle of flows per channel; engine.py:
the periodic steady state of a component's jobs, rates re-shared only when a
bundle starts or drains; model.py: the fabric's alone times, the shared links,
the canonical signature that memoises components. The per-transfer flow engine
(network/flow/) and ns-3 co-simulation (network/ns3/) are its references
(benchmarks/contention_accuracy.py).
"""

from artist.network.phase.model import PHASE_VERSION, ComponentStep, PhaseContention

__all__ = ["PhaseContention", "ComponentStep", "PHASE_VERSION"]
