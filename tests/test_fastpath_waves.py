"""The vectorised paths of a message-level answer give the same bits as the message-by-message ones.

- fastpath/waves.py (numpy, a wave of messages at a time) against timing.py's event loop, on engine inputs
  of real schedules (it must answer those) and on random ones with shared links (it must answer exactly
  or refuse);
- collectives.py's columnar schedules (numpy dependencies) against the transfer-by-transfer rule;
- builder.py's columnar engine input against a message-by-message build.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from artist.network.analytical import StartupLatency
from artist.network.collectives import Transfer, TransferTable, collective_schedule, ring_allreduce
from artist.network.fastpath import time_engine_input
from artist.network.ns3.builder import EngineCollective, _gpu_nodes, _NetworkBuilder, build_engine_input
from artist.placement import placement_from_shape
from artist.topology import load_topology

MTU, ACK_EVERY = 9000, 8


def _events_and_waves(arrays):
    events = time_engine_input(arrays, MTU, ACK_EVERY, method="events")
    waves = time_engine_input(arrays, MTU, ACK_EVERY, method="waves")
    for res in (events, waves):
        if res is not None:
            res.pop("model_wall_seconds")
    return events, waves


def _bucket_chain(schedules, gaps):
    """DDP-like: buckets back to back after compute timers (the shape Ns3Model.time builds)."""
    out = []
    for i, (s, gap) in enumerate(zip(schedules, gaps)):
        out.append(EngineCollective(None, 0.0, (len(out) - 1,) if out else (), gap))
        out.append(EngineCollective(s, 0.001 * i, (len(out) - 1,)))
    return out


@pytest.mark.parametrize("topology,racks,shape", [
    ("dally-3tier", 2, [[8, 8, 8, 8], [8, 8, 8, 8]]),
    ("dally-3tier", 2, [[3, 5], [2, 1]]),
    ("dally-3tier-ecmp-2to1", 2, [[8, 8], [8]]),
    ("dgx-h100", 2, [[8, 8]]),
])
def test_waves_answer_rings_with_the_event_loops_bits(topology, racks, shape):
    topo = load_topology(f"topologies/{topology}.yaml", racks)
    placement = placement_from_shape(topo, shape)
    sizes = [25_000_000, 3_000_001, 0, 77]
    schedules = [collective_schedule("all_reduce", "ring", placement, b) for b in sizes]
    schedules.append(collective_schedule("all_gather", "ring", placement, 1_000_000))
    arrays = build_engine_input(topo, _bucket_chain(schedules, [1e-4, 0.0, 2e-3, 0.0, 1e-6]), StartupLatency()).arrays
    events, waves = _events_and_waves(arrays)
    assert waves is not None  # a ring on one channel: every link one connection, ready times increasing
    assert waves == events  # the same floats, bit for bit (== on floats: no tolerance)
    assert time_engine_input(arrays, MTU, ACK_EVERY)["c_end_s"] == events["c_end_s"]  # auto takes waves


def test_waves_refuse_or_match_on_random_inputs_with_shared_links():
    """Random small networks and message graphs, links shared at will: waves answer with the event
    loop's bits or refuse; both happen (the refusals are what keeps the answers exact)."""
    rng = random.Random(7)
    answered = refused = 0
    for _ in range(150):
        links = rng.randint(2, 5)
        routes = [rng.sample(range(links), rng.randint(1, min(3, links))) for _ in range(rng.randint(1, 4))]
        n_colls = rng.randint(1, 3)
        m_route, m_coll, m_bytes, dep_off, dep_idx, c_first = [], [], [], [0], [], [0]
        for c in range(n_colls):
            first = len(m_route)
            for i in range(rng.randint(0, 6)):
                m_route.append(rng.randrange(len(routes)))
                m_coll.append(c)
                m_bytes.append(rng.choice([0, 1, 8984, 50_000, 200_003]))
                if i and rng.random() < 0.7:
                    dep_idx.extend(sorted(rng.sample(range(first, first + i), rng.randint(1, min(2, i)))))
                dep_off.append(len(dep_idx))
            c_first.append(len(m_route))
        preds = [[p for p in range(c) if rng.random() < 0.6] for c in range(n_colls)]
        u32 = lambda xs: np.asarray(xs, dtype=np.uint32)  # noqa: E731
        arrays = {
            "link_bps": np.asarray([rng.choice([1e11, 4e11, 1.2e12]) for _ in range(links)]),
            "link_delay_s": np.asarray([rng.choice([0.0, 5e-7, 1e-6]) for _ in range(links)]),
            "route_off": u32([0] + list(np.cumsum([len(r) for r in routes]))),
            "route_link": u32([k for r in routes for k in r]), "route_dir": u32([0 for r in routes for _ in r]),
            "m_route": u32(m_route), "m_coll": u32(m_coll), "m_conn": u32(m_route),
            "m_bytes": np.asarray(m_bytes, dtype=np.uint64),
            "m_alpha_s": np.asarray([rng.choice([0.0, 2e-6]) for _ in m_route], dtype=np.float64),
            "dep_off": u32(dep_off), "dep_idx": u32(dep_idx),
            "c_ready_s": np.asarray([rng.choice([0.0, 1e-5]) for _ in range(n_colls)]),
            "c_base_s": np.asarray([rng.choice([0.0, 3e-6]) for _ in range(n_colls)]),
            "c_first": u32(c_first), "c_pred_off": u32([0] + list(np.cumsum([len(p) for p in preds]))),
            "c_pred_idx": u32([p for ps in preds for p in ps]),
        }
        events, waves = _events_and_waves(arrays)
        if waves is None:
            refused += 1
        else:
            answered += 1
            assert waves == events
    assert answered > 20 and refused > 20


def _old_dependencies(raw):
    """The transfer-by-transfer rule: sorted by (step, channel, src, dst); each transfer depends on what
    its sender received in the latest earlier step in which it received anything, same channel."""
    raw = sorted(raw, key=lambda t: (t[3], t[4], t[0], t[1]))
    last: dict[tuple[int, int], tuple[int, list[int]]] = {}
    out, pending, current = [], [], None
    for i, (src, dst, nbytes, step, ch) in enumerate(raw):
        if step != current:
            for rank, c, j in pending:
                if (rank, c) in last and last[(rank, c)][0] == current:
                    last[(rank, c)][1].append(j)
                else:
                    last[(rank, c)] = (current, [j])
            pending, current = [], step
        out.append(Transfer(src, dst, nbytes, step, ch, tuple(last[(src, ch)][1]) if (src, ch) in last else ()))
        pending.append((dst, ch, i))
    return tuple(out)


@pytest.mark.parametrize("kind,algorithm,channels", [
    ("all_reduce", "ring", 1), ("all_reduce", "ring", 3), ("all_reduce", "hierarchical", 2),
    ("all_gather", "ring", 2), ("reduce_scatter", "ring", 1),
])
def test_columnar_schedules_have_the_transfer_by_transfer_dependencies(kind, algorithm, channels):
    topo = load_topology("topologies/dally-3tier.yaml", 2)
    placement = placement_from_shape(topo, [[4, 4], [4]])
    schedule = collective_schedule(kind, algorithm, placement, 1_000_003, channels)
    assert isinstance(schedule.transfers, TransferTable)
    raw = [(t.src, t.dst, t.nbytes, t.step, t.channel) for t in schedule.transfers]
    assert tuple(schedule.transfers) == _old_dependencies(raw[::-1])  # from any order: sorted, then the rule
    assert schedule.transfers == TransferTable.of(tuple(schedule.transfers))  # columns <-> objects round trip
    prefix = ring_allreduce(placement, 1_000_003, channels, max_steps=3)
    assert prefix.steps == 3 and tuple(prefix.transfers) == tuple(
        t for t in ring_allreduce(placement, 1_000_003, channels).transfers if t.step < 3)


def _old_messages(topology, collectives, latency):
    """Message columns built one message at a time (routes and connections numbered on first use)."""
    nb = _NetworkBuilder(topology, _gpu_nodes(collectives))
    cols = {k: [] for k in ("m_src", "m_dst", "m_route", "m_conn", "m_bytes", "m_alpha_s", "dep_idx")}
    conns, first = {}, 0
    for coll in collectives:
        if coll.schedule is None:
            continue
        node = [nb.rank_of[g] for g in coll.schedule.ranks]
        for t in coll.schedule.transfers:
            src, dst = node[t.src], node[t.dst]
            route, kind = nb.route(src, dst, t.channel)
            for k, v in (("m_src", src), ("m_dst", dst), ("m_route", route), ("m_bytes", t.nbytes),
                         ("m_conn", conns.setdefault((coll.job, src, dst, t.channel), len(conns))),
                         ("m_alpha_s", latency.per_step(kind))):
                cols[k].append(v)
            cols["dep_idx"].extend(first + d for d in t.deps)
        first += len(coll.schedule.transfers)
    cols["route_link"] = [link for steps in nb.route_steps for link, _ in steps]
    return cols, nb.link_names


@pytest.mark.parametrize("topology", ["dally-3tier", "dally-3tier-ecmp-2to1", "dgx-h100-rails"])
def test_columnar_engine_input_is_the_message_by_message_one(topology):
    topo = load_topology(f"topologies/{topology}.yaml", 2)
    placement = placement_from_shape(topo, [[8, 8], [8]] if topo.machines_per_rack >= 2 else [[8], [8]])
    gpus = placement.gpus
    collectives = [
        EngineCollective(collective_schedule("all_reduce", "ring", placement, 5_000_000, 2), job=0),
        EngineCollective(None, 0.0, (0,), 1e-4),
        EngineCollective(collective_schedule("all_to_all", "ring", placement, 300_000), 0.0, (1,), job=1),
        EngineCollective(collective_schedule("send_recv", "ring", placement, 4_000, 2, src_dst=(gpus[0], gpus[-1])),
                         job=0),
    ]
    ei = build_engine_input(topo, collectives, StartupLatency())
    old, link_names = _old_messages(topo, collectives, StartupLatency())
    for k, v in old.items():
        assert ei.arrays[k].tolist() == v, k
    assert ei.link_names == link_names
    sent = [0] * len(ei.gpus)
    for s, b in zip(old["m_src"], old["m_bytes"]):
        sent[s] += b
    assert ei.expected_tx == sent and sum(ei.expected_rx) == sum(sent)
