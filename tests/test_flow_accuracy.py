"""The flow backend against ns-3 co-simulation on the first contention scenarios of
benchmarks/contention_accuracy.py, first step from a common start (the benchmark's --first-step;
its steady-state table, whose maximum error exceeds 15 %, is in artist/network/flow/__init__.py's
docstring; tests/test_steady_state.py checks both backends' steady state by hand). Kept to four
small scenarios and one step: ns-3 is slow."""

from __future__ import annotations

import statistics

import pytest

pytest.importorskip("ns3")

from artist.network.flow import FlowModel  # noqa: E402
from artist.network.flow.scenarios import contention_scenarios  # noqa: E402
from artist.network.ns3 import Ns3Model  # noqa: E402


def test_flow_matches_ns3_co_simulation_on_small_contention_scenarios():
    errors, slowdowns = [], []
    for sc in contention_scenarios(4):
        flow = FlowModel(sc.topology, channels=sc.channels).time(sc.graphs)
        ns3 = Ns3Model(sc.topology, channels=sc.channels)
        packets = ns3.time(sc.graphs)
        errors += [abs(flow[j].step_seconds / packets[j].step_seconds - 1) for j in sc.graphs]
        alone = {j: ns3.time({j: g})[j].step_seconds for j, g in sc.graphs.items()}
        slowdowns += [packets[j].step_seconds / alone[j] for j in sc.graphs]
    assert max(slowdowns) > 1.3  # the scenarios do contend (ns-3's own answer)
    assert statistics.median(errors) <= 0.05
    assert max(errors) <= 0.15
