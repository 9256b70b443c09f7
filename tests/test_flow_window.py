"""Window sharing (flow/window.py): the fluid fixed point of window flow control through FIFO links."""

from __future__ import annotations

import math
import random

import pytest
from fabric_helpers import allreduce_graph, colliding_pairs, ecmp_topology

from artist.network.flow import FlowModel
from artist.network.flow.window import window_rates

MIB = 1 << 20


def test_a_flow_crossing_two_congested_links_gets_a_third_with_equal_windows():
    # Flow 0 crosses links 10 and 11 (capacity 1), flow 1 only 10, flow 2 only 11; senders 0, 1, 2
    # are fast. With negligible base RTT, x_i = w / (sum of queues): x0 = w / (q10 + q11), x1 = w /
    # q10, x2 = w / q11, and each link full: by symmetry q10 = q11 = q, 1/(2q) + 1/q = 1/w -> x0 =
    # 1/3, x1 = x2 = 2/3 (max-min would give 1/2 to everyone).
    cap = {0: 10.0, 1: 10.0, 2: 10.0, 10: 1.0, 11: 1.0}
    flows = [[0, 10, 11], [1, 10], [2, 11]]
    rates = window_rates(flows, cap, [1.0] * 3, [1e-9] * 3)
    assert rates == pytest.approx([1 / 3, 2 / 3, 2 / 3], rel=1e-3)
    # With base RTT d = w / c = 1: x0 = 1 / (1 + 2q), x1 = 1 / (1 + q), x0 + x1 = 1 -> q^2 = 1/2
    rates = window_rates(flows, cap, [1.0] * 3, [1.0] * 3)
    q = math.sqrt(0.5)
    assert rates == pytest.approx([1 / (1 + 2 * q), 1 / (1 + q), 1 / (1 + q)], rel=1e-3)


def test_window_rates_are_a_fixed_point_that_respects_every_capacity():
    rng = random.Random(3)
    for _ in range(30):
        links = list(range(8))
        cap = {link: rng.uniform(1.0, 4.0) for link in links}
        flows = [rng.sample(links, rng.randint(1, 4)) for _ in range(rng.randint(1, 10))]
        window = [rng.uniform(0.5, 2.0) for _ in flows]
        rtt = [rng.uniform(0.01, 0.5) for _ in flows]
        delay: dict[int, float] = {}
        rates = window_rates(flows, cap, window, rtt, delay)
        for link in links:
            load = sum(x for x, f in zip(rates, flows) if link in f)
            assert load <= cap[link] * (1 + 1e-12)
            if delay.get(link, 0.0) > 1e-9:  # a queue only where the link is full (to the 0.1 % descent)
                assert load == pytest.approx(cap[link], rel=5e-3)
        for x, f, w, d in zip(rates, flows, window, rtt):  # each rate is its window over its RTT
            assert x == pytest.approx(w / (d + sum(delay.get(link, 0.0) for link in f)), rel=5e-3)


def test_window_sharing_keeps_the_hand_computed_collision_factor_and_refuses_unknown_models():
    # Two identical 2-GPU rings on one spine port each way: equal windows and RTTs share it evenly,
    # as max-min does, so the bandwidth part doubles in both models.
    topo = ecmp_topology(oversubscription=2.0)
    a, b = colliding_pairs(topo, collide=True)
    s = 64 * MIB
    for sharing in ("window", "maxmin"):
        model = FlowModel(topo, sharing=sharing)
        tiny = model.time({"a": allreduce_graph(a, 2)})["a"].step_seconds
        alone = model.time({"a": allreduce_graph(a, s)})["a"].step_seconds
        shared = model.time({"a": allreduce_graph(a, s), "b": allreduce_graph(b, s)})
        for job in ("a", "b"):
            assert (shared[job].step_seconds - tiny) / (alone - tiny) == pytest.approx(2.0, rel=0.01)
    with pytest.raises(ValueError, match="unknown link sharing"):
        FlowModel(topo, sharing="fair")
