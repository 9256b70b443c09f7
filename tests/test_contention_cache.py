"""Cache keys of contention components: all graphs of a component relabelled together."""

from __future__ import annotations

import pytest
from fabric_helpers import allreduce_graph, colliding_pairs, ecmp_topology

from artist.network.cache import Cached, LatencyStore
from artist.network.flow import FlowModel

MIB = 1 << 20


@pytest.fixture
def store(tmp_path):
    return LatencyStore(tmp_path / "cache.sqlite")


def test_a_component_on_other_racks_shares_the_key_and_the_answer(store):
    topo = ecmp_topology(racks=3, oversubscription=2.0)  # 4 GPUs per rack
    a, b = colliding_pairs(ecmp_topology(racks=2, oversubscription=2.0), collide=True)  # racks 0 and 1
    moved = tuple(tuple(g + 4 for g in job) for job in (a, b))  # the same positions on racks 1 and 2
    cached = Cached(FlowModel(topo), store)
    first = {"a": allreduce_graph(a, 8 * MIB), "b": allreduce_graph(b, 8 * MIB)}
    second = {"x": allreduce_graph(moved[0], 8 * MIB), "y": allreduce_graph(moved[1], 8 * MIB)}
    assert cached.key_for(first) == cached.key_for(second)
    got = cached.time(first)
    again = cached.time(second)
    assert again["x"].result.cache_hit and again["x"].node_seconds == got["a"].node_seconds
    # the cached answer is the co-simulation's (relabelling keeps the ECMP hash's inputs)
    direct = FlowModel(topo).time(second)
    assert direct["x"].node_seconds == got["a"].node_seconds and direct["y"].node_seconds == got["b"].node_seconds
    assert got["a"].step_seconds > FlowModel(topo).time({"a": first["a"]})["a"].step_seconds * 1.5


def test_components_differing_in_who_meets_whom_get_other_keys(store):
    topo = ecmp_topology(racks=2)
    cached = Cached(FlowModel(topo), store)
    together = {"a": allreduce_graph((0, 4), MIB), "b": allreduce_graph((1, 5), MIB)}
    apart = {"a": allreduce_graph((0, 4), MIB), "b": allreduce_graph((1, 6), MIB)}
    alone = {"a": allreduce_graph((0, 4), MIB)}
    keys = {cached.key_for(g) for g in (together, apart, alone)}
    assert len(keys) == 3
    # job names do not matter, nor their order
    assert cached.key_for({"q": together["b"], "p": together["a"]}) == cached.key_for(together)
