"""The message-level model's closed form against a frame-by-frame brute force (no ns-3).

timing.py times a message's last frame through a route as a longest path through the (frame, hop)
grid, D_h(n) = max_j(start_j + W[j][h]); here the same frames are pushed through the same links one
by one with the tandem-queue recurrence (a frame leaves hop h when it has arrived and the frame
before it has left, plus its own transmission time), from random link states, ready times and sizes.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from artist.network.fastpath import frames_of, path_weights, time_engine_input

MTU = 9000
PAYLOAD = MTU - 16
WIRE_EXTRA = 18  # transport header + PPP header


def brute_force(bps, delay, nbytes, ready, link_free):
    """Departure of every frame at every hop, frame by frame; returns the last frame's per-hop departures."""
    n = frames_of(nbytes, PAYLOAD)
    sizes = [PAYLOAD] * (n - 1) + [nbytes - (n - 1) * PAYLOAD]
    prev = list(link_free)  # departure of the previous frame at each hop
    for size in sizes:
        arrive = ready
        for h, b in enumerate(bps):
            leave = max(arrive, prev[h]) + (size + WIRE_EXTRA) * 8.0 / b
            prev[h] = leave
            arrive = leave + delay[h]
    return prev


def closed_form(bps, delay, nbytes, ready, link_free):
    w = path_weights(tuple(bps), tuple(delay), nbytes, PAYLOAD)
    starts = list(link_free)
    starts[0] = max(starts[0], ready)
    return [max(starts[j] + w[j][h] for j in range(h + 1)) for h in range(len(bps))]


@pytest.mark.parametrize("seed", range(40))
def test_closed_form_equals_frame_by_frame_tandem_queue(seed):
    rng = random.Random(seed)
    hops = rng.randint(1, 4)
    bps = [rng.choice([100e9, 400e9, 800e9, 2400e9, 3.2e12]) for _ in range(hops)]
    delay = [rng.uniform(0, 1e-6) for _ in range(hops)]
    nbytes = rng.choice([0, 1, PAYLOAD - 1, PAYLOAD, PAYLOAD + 1, rng.randint(1, 3_000_000)])
    ready = rng.uniform(0, 1e-4)
    link_free = [rng.choice([-np.inf, rng.uniform(0, 2e-4)]) for _ in range(hops)]
    expected = brute_force(bps, delay, nbytes, ready, link_free)
    assert closed_form(bps, delay, nbytes, ready, link_free) == pytest.approx(expected, rel=1e-12, abs=1e-18)


def test_a_ring_of_three_messages_by_hand():
    """Two GPUs on one 2-hop route each way (A -> B, B -> A), one message each then a dependent one back:
    the engine arrays built by hand, the times by hand."""
    bps, delay = 400e9, 1e-7
    nbytes = 2 * PAYLOAD  # two full frames
    frame = (PAYLOAD + WIRE_EXTRA) * 8 / bps
    # links 0 (A - switch) and 1 (switch - B); route 0: A -> B over (0, a->b), (1, a->b); route 1: back
    arrays = {
        "link_bps": np.array([bps, bps]), "link_delay_s": np.array([delay, delay]),
        "route_off": np.array([0, 2, 4], dtype=np.uint32), "route_link": np.array([0, 1, 1, 0], dtype=np.uint32),
        "route_dir": np.array([0, 0, 1, 1], dtype=np.uint32),
        "m_route": np.array([0, 1, 1], dtype=np.uint32), "m_bytes": np.array([nbytes] * 3, dtype=np.uint64),
        "m_alpha_s": np.array([1e-6, 2e-6, 3e-6]), "m_coll": np.array([0, 0, 0], dtype=np.uint32),
        "dep_off": np.array([0, 0, 0, 1], dtype=np.uint32), "dep_idx": np.array([0], dtype=np.uint32),
        "c_ready_s": np.array([5e-6]), "c_base_s": np.array([8e-6]), "c_first": np.array([0, 3], dtype=np.uint32),
        "c_pred_off": np.array([0, 0], dtype=np.uint32), "c_pred_idx": np.array([], dtype=np.uint32),
    }
    res = time_engine_input(arrays, MTU, ack_every=8)
    start = 5e-6 + 8e-6
    # message 0 (A -> B): two frames out of A back to back, the second then crosses the switch's link
    done0 = start + 1e-6 + 3 * frame + 2 * delay
    # message 1 (B -> A, no dependency) starts alpha 2 us after the roots; message 2 (B -> A, same
    # connection) is ready 3 us after message 0 is received, when message 1 has long left B's links
    done1 = start + 2e-6 + 3 * frame + 2 * delay
    ready2 = done0 + 3e-6
    assert ready2 > done1
    done2 = ready2 + 3 * frame + 2 * delay
    assert res["m_done_s"] == pytest.approx([done0, done1, done2], rel=1e-12)
    assert res["c_start_s"] == [5e-6] and res["c_end_s"] == pytest.approx([max(done0, done1, done2)], rel=1e-12)
    assert res["data_packets"] == 6 and res["ack_packets"] == 3  # 2 frames each; one ack at each end
