"""ns-3 backend against independent expectations (hand-written α-β formulas, conservation).

All tests share one worker process (ns-3 imported once); the watchdog test kills
it and checks that the next run gets a fresh one.
"""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

import pytest

from artist.network.analytical import StartupLatency, schedule_seconds
from artist.network.base import FabricModel
from artist.network.collectives import Schedule, Transfer, allreduce_schedule, collective_schedule
from artist.perf.model import as_perf_model
from artist.parallel.graph import Node, StepGraph
from artist.placement import placement_from_shape
from artist.topology import load_topology
from artist.workload import ModelProfile
from conftest import REPO, make_topology

pytestmark = pytest.mark.ns3

ns3 = pytest.importorskip("artist.network.ns3")
from artist.network.ns3 import Ns3Model, Ns3SimulationError, Ns3Worker  # noqa: E402

NO_STARTUP = StartupLatency(base_s=0.0, nvlink_step_s=0.0, net_step_s=0.0)
NCCL = StartupLatency()  # NCCL tuning.cc figures (see analytical.py)
DALLY = load_topology(REPO / "topologies" / "dally-3tier.yaml")
NV_BPS, NIC_BPS = 2400e9, 400e9  # dally-3tier.yaml machine / rack tiers
NV_PATH_S = 2 * 0.005e-6 + 0.1e-6  # 2 GPU-NVSwitch links + NVSwitch (dally-3tier.yaml)
NIC_PATH_S = 2 * 0.01e-6 + 0.13e-6  # 2 NIC links + rack switch


@pytest.fixture(scope="session")
def worker():
    w = Ns3Worker()
    w.ensure_started()
    yield w
    w.close()


def p2p(topology, shape, nbytes) -> tuple:
    placement = placement_from_shape(topology, shape)
    ranks = tuple(placement.ranks_in_ring_order())
    return placement, Schedule("p2p", ranks, nbytes, 1, (Transfer(0, 1, nbytes, 0, 0, ()),))


@pytest.mark.parametrize("transport", ["window", "tcp"])
@pytest.mark.parametrize("shape,bps,path_s", [([[1, 1]], NIC_BPS, NIC_PATH_S), ([[2]], NV_BPS, NV_PATH_S)])
def test_point_to_point_transfer_takes_size_over_bandwidth_plus_path_latency(worker, transport, shape, bps, path_s):
    nbytes = 16_000_000
    model = Ns3Model(DALLY, latency=NO_STARTUP, transport=transport, worker=worker)
    _, schedule = p2p(DALLY, shape, nbytes)
    res = model.run_schedules([schedule], [0.0], str(shape))
    expected = nbytes * 8 / bps + path_s
    assert res["collective_seconds"][0] == pytest.approx(expected, rel=0.02)
    assert res["collective_seconds"][0] >= nbytes * 8 / bps  # never faster than the wire
    assert res["node_rx_bytes"][:2] == [0, nbytes]


def test_ring_in_one_machine_matches_hand_computed_alpha_beta(worker):
    n, nbytes = 8, 64_000_000
    placement = placement_from_shape(DALLY, [[8]])
    seconds = Ns3Model(DALLY, worker=worker).collective_seconds(placement, nbytes)
    # Uniform links: every one of the 2(N-1) dependent steps costs α + S/(N B) + path latency.
    hand = NCCL.base_s + 2 * (n - 1) * (NCCL.nvlink_step_s + nbytes / n * 8 / NV_BPS + NV_PATH_S)
    assert seconds == pytest.approx(hand, rel=0.10)
    analytical = schedule_seconds(allreduce_schedule("ring", placement, nbytes), DALLY, NCCL)
    assert seconds == pytest.approx(analytical, rel=0.10)


def test_ring_across_two_machines_is_paced_by_the_nic(worker):
    n, nbytes = 16, 64_000_000
    placement = placement_from_shape(DALLY, [[8, 8]])
    seconds = Ns3Model(DALLY, worker=worker).collective_seconds(placement, nbytes)
    # The ring is a pipeline: rank p sends step k+1 as soon as it has step k, so the
    # one NIC link per direction carries its 2(N-1) chunks back to back (NVLink hops
    # are 6x faster and hide their α). Hand α-β: base + first NIC α + 2(N-1) S/(N B_nic)
    # + path latency.
    hand = NCCL.base_s + NCCL.net_step_s + 2 * (n - 1) * nbytes / n * 8 / NIC_BPS + NIC_PATH_S
    assert seconds == pytest.approx(hand, rel=0.10)


@pytest.mark.parametrize("algorithm,channels", [("ring", 2), ("hierarchical", 1)])
def test_every_rank_receives_exactly_its_bytes(worker, algorithm, channels):
    topo = make_topology()  # 2 racks x 2 machines x 4 GPUs
    placement = placement_from_shape(topo, [[4, 4], [4]])
    schedule = allreduce_schedule(algorithm, placement, 3_000_001, channels)
    res = Ns3Model(topo, algorithm=algorithm, channels=channels, worker=worker).run_schedules(
        [schedule], [0.0], "[[4,4],[4]]")
    n = placement.size
    assert res["node_rx_bytes"][:n] == schedule.bytes_received_per_rank()
    assert res["node_tx_bytes"][:n] == schedule.bytes_sent_per_rank()
    # Conservation by hand: an all-reduce moves 2(N-1)/N of the payload per rank and channel.
    assert sum(res["node_rx_bytes"]) == sum(schedule.bytes_sent_per_rank())
    assert all(t >= 0 for t in res["m_done_s"])


def toy_model() -> ModelProfile:
    return ModelProfile("toy", tensor_bytes=(3_000_000, 1_000_000, 4_000_000, 2_000_000), compute_seconds=0.004,
                        reference_gpu="A100", bucket_cap_bytes=4_000_000)


def test_buckets_in_one_run_match_separate_collectives_and_overlap_rule(worker):
    model = toy_model()
    placement = placement_from_shape(DALLY, [[4, 4]])
    comm = Ns3Model(DALLY, worker=worker, fast_path=False)  # ns-3 itself (tests/test_fastpath_*.py: the fast path)
    perf = as_perf_model(comm, DALLY)
    graph, compute = perf.graph(model, placement)
    timing = comm.time({"j": graph})["j"]
    buckets = [s for n, s in zip(graph.nodes, timing.node_seconds) if n.kind == "all_reduce"]
    assert len(buckets) == len(model.buckets) >= 2
    separate = [comm.collective_seconds(placement, b) for b, _ in model.buckets]
    assert buckets == pytest.approx(separate, rel=1e-3)
    # the critical path of the measured durations is the simulated timeline
    assert timing.result.details["simulated_end_seconds"] == pytest.approx(timing.step_seconds, abs=1e-9)
    assert timing.result.packets > 0 and timing.result.wall_seconds > 0


def test_repeated_runs_give_identical_results(worker):
    model = toy_model()
    placement = placement_from_shape(DALLY, [[2], [2]])
    a = as_perf_model(Ns3Model(DALLY, worker=worker), DALLY).estimate(model, placement)
    b = as_perf_model(Ns3Model(DALLY, worker=worker), DALLY).estimate(model, placement)
    assert (a.comm_seconds, a.exposed_comm_seconds, a.comm.packets) == (b.comm_seconds, b.exposed_comm_seconds,
                                                                         b.comm.packets)


@pytest.mark.parametrize("nbytes", [20_000_000, 400_000])  # NIC-bound and latency-bound
def test_steady_state_skipping_agrees_with_full_run(worker, nbytes):
    topo = make_topology(racks=2, machines_per_rack=2, gpus_per_machine=2)
    placement = placement_from_shape(topo, [[2, 2], [2, 2]])  # ring hop pattern repeats every 4 positions
    fast_model = Ns3Model(topo, worker=worker, accelerate=True, steady_steps=4)
    schedule = allreduce_schedule("ring", placement, nbytes)
    prefix = fast_model._schedule(placement, nbytes)
    assert fast_model._ring_period(schedule) == 4 and prefix.steps == 10 < prefix.total_steps == schedule.steps
    assert prefix.transfers == schedule.transfers[:len(prefix.transfers)]  # the full schedule's first steps
    full = Ns3Model(topo, worker=worker).collective_seconds(placement, nbytes)
    assert fast_model.collective_seconds(placement, nbytes) == pytest.approx(full, rel=0.01)


@pytest.mark.parametrize("kind", ["all_gather", "reduce_scatter"])
@pytest.mark.parametrize("nbytes, channels", [(20_000_000, 1), (400_000, 1), (20_000_000, 2)])  # NIC-bound,
# latency-bound (both at message level: nothing shared), and packets (two rotated rings share links)
def test_steady_state_skipping_of_a_ring_pass_agrees_with_full_run_and_says_so(worker, kind, nbytes, channels):
    from artist.network.provenance import answer_path

    topo = make_topology(racks=4, machines_per_rack=2, gpus_per_machine=2)
    placement = placement_from_shape(topo, [[2, 2]] * 4)  # 16 GPUs: 15 steps, the hop pattern every 4
    fast_model = Ns3Model(topo, worker=worker, accelerate=True, steady_steps=4, channels=channels)
    schedule = collective_schedule(kind, "ring", placement, nbytes, channels)
    prefix = fast_model._schedule(placement, nbytes, kind)
    assert prefix.steps == 10 < prefix.total_steps == schedule.steps == 15
    assert prefix.transfers == schedule.transfers[:len(prefix.transfers)]  # the full schedule's first steps
    full_model = Ns3Model(topo, worker=worker, channels=channels)
    full = full_model.collective_seconds(placement, nbytes, kind)
    packets = full_model.time({"one": StepGraph((Node(0, kind, group=placement.gpus, nbytes=nbytes),))})["one"]
    assert (packets.result.packets > 0) == (channels > 1)  # the packet case is one
    assert fast_model.collective_seconds(placement, nbytes, kind) == pytest.approx(full, rel=0.01)
    graph = StepGraph((Node(0, kind, group=placement.gpus, nbytes=nbytes),))
    timing = fast_model.time({"one": graph})["one"]
    assert answer_path(timing.result) == "ns3_steady_state"
    assert timing.step_seconds == pytest.approx(full, rel=0.01)


@pytest.mark.parametrize("nbytes", [8 * 2**20, 24 * 2**20])
def test_steady_state_all_to_all_is_extrapolated_from_two_runs_within_one_percent(worker, nbytes):
    from artist.network.ns3 import STEADY_ALL_TO_ALL_FLOW_BYTES
    from artist.network.provenance import answer_path

    topo = make_topology(racks=2, machines_per_rack=2, gpus_per_machine=2)
    placement = placement_from_shape(topo, [[2, 2], [2, 2]])  # 8 GPUs, every pair's flow at once
    anchor = 2 * 8 * STEADY_ALL_TO_ALL_FLOW_BYTES  # 2 MiB: the smallest the flow-size guard allows here
    fast = Ns3Model(topo, worker=worker, accelerate=True, steady_all_to_all_bytes=anchor)
    full = Ns3Model(topo, worker=worker)
    at, half = (full.collective_seconds(placement, b, "all_to_all") for b in (anchor, anchor // 2))
    # by hand: the time at the anchor plus the time per byte between half the anchor and the anchor
    assert fast.collective_seconds(placement, nbytes, "all_to_all") == at + (nbytes - anchor) * (at - half) / (
        anchor // 2)
    truth = full.collective_seconds(placement, nbytes, "all_to_all")
    assert fast.collective_seconds(placement, nbytes, "all_to_all") == pytest.approx(truth, rel=0.01)
    assert fast.collective_seconds(placement, anchor, "all_to_all") == at  # up to the anchor: run in full
    graph = StepGraph((Node(0, "all_to_all", group=placement.gpus, nbytes=nbytes),))
    timing = fast.time({"one": graph})["one"]
    assert answer_path(timing.result) == "ns3_steady_state"
    assert timing.step_seconds == fast.collective_seconds(placement, nbytes, "all_to_all")


def test_several_sizes_at_once_on_two_workers_answer_as_one_by_one(worker, tmp_path):
    """collective_runs spreads the sizes over the pool's workers; Cached stores each answer with the wall
    seconds of its own run, and a later question is a cache hit. The answers are the one-by-one ones, bit
    for bit (2 channels: the rotated rings share links, so these are packet runs)."""
    from artist.network.cache.cached import Cached
    from artist.network.cache.store import LatencyStore
    from artist.network.ns3.runner import Ns3Pool

    topo = make_topology(racks=2, machines_per_rack=2, gpus_per_machine=2)
    placement = placement_from_shape(topo, [[2, 2], [2, 2]])
    sizes = [4_000_000, 1_000_000, 2_000_000, 1_000_000]
    one = Ns3Model(topo, worker=worker, channels=2)
    expected = [one.collective_seconds(placement, b) for b in sizes]
    second = Ns3Worker()
    try:
        pool = Ns3Pool([worker, second])
        runs = Ns3Model(topo, pool=pool, channels=2).collective_runs(placement, sizes)
        assert [seconds for seconds, _ in runs] == expected
        assert all(wall > 0 for _, wall in runs) and second.alive  # both workers ran some
        cached = Cached(Ns3Model(topo, pool=pool, channels=2), LatencyStore(tmp_path / "cache.sqlite"))
        assert cached.collective_seconds_many(placement, sizes) == expected
        assert cached.session.misses == 3 and cached.session.hits == 0  # three distinct sizes, each stored once
        stored = [cached.store.get(cached._collective_key(placement, b, "all_reduce")[0]) for b in sizes[:3]]
        assert all(answer is not None and answer.wall_seconds > 0 for answer in stored)
        assert cached.collective_seconds(placement, sizes[0]) == expected[0] and cached.session.hits == 1
    finally:
        second.close()


def test_ns3_answers_through_the_fabric_model_interface(worker):
    from artist.network.stack import CommSpec

    comm = CommSpec("ns3", options={"worker": worker}).build(DALLY)
    assert isinstance(comm, Ns3Model) and isinstance(comm, FabricModel)
    ident = comm.identity()
    assert ident["backend"] == "ns3" and ident["ns3_version"].startswith("3.44")
    single = as_perf_model(comm, DALLY).estimate(toy_model(), placement_from_shape(DALLY, [[1]]))
    assert single.exposed_comm_seconds == 0.0 and single.comm.packets == 0


@pytest.mark.parametrize("extra", [[], ["--no-fast-path"]])
def test_cli_comm_prints_raw_exposed_packets_and_wall(worker, monkeypatch, tmp_path, extra):
    from artist.cli import main
    from artist.network.ns3 import runner

    monkeypatch.setattr(runner, "_shared", worker)
    monkeypatch.setenv("ARTIST_CACHE_DIR", str(tmp_path))  # a cold cache: the default one may hold the answer
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        code = main(["comm", "--topology", str(REPO / "topologies" / "dally-3tier.yaml"), "--model",
                     str(REPO / "workloads" / "models" / "resnet18.yaml"), "--shape", "[[2]]", "--backend", "ns3",
                     *extra])
    assert code == 0
    text = out.getvalue()
    for label in ("raw seconds", "exposed seconds", "packets simulated", "wall seconds", "answered by"):
        assert label in text
    packets = int(text.split("packets simulated")[1].split()[0])
    path = text.split("answered by")[1].split()[0]
    # [[2]] alone shares no link: the message-level fast path answers unless told not to; then the step is
    # composed of its collectives' packet runs (exact reuse), in the results columns' words
    assert (path, packets > 0) == (("ns3_reuse", True) if extra else ("ns3_message_level", False))


def test_a_packet_run_too_large_to_end_is_refused_before_it_starts(worker, monkeypatch, tmp_path):
    """1 TiB per rank on 16 GPUs is ~3.7e9 jumbo data packets (2 x 15/16 x 2^40 B x 16 ranks / 9000 B), hours
    of simulation: one line and exit 3 at once, instead of the watchdog after 600 s. The fast path still
    answers the same question."""
    from artist.cli import main
    from artist.network.ns3 import runner

    monkeypatch.setattr(runner, "_shared", worker)
    monkeypatch.setenv("ARTIST_CACHE_DIR", str(tmp_path))
    args = ["comm", "--collective", "all_reduce", "--bytes", "1TiB", "--shape", "[[8],[8]]", "--backend", "ns3",
            "--no-cache"]
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = main(args + ["--no-fast-path"])
    lines = err.getvalue().strip().splitlines()
    assert code == 3 and len(lines) == 1
    assert "[[8],[8]]" in lines[0] and "3.67e+09 data packets" in lines[0] and "bound" in lines[0]
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        assert main(args) == 0


def test_hung_simulation_is_killed_by_the_watchdog_and_reported(worker):
    placement = placement_from_shape(DALLY, [[2]])
    first_pid = worker.pid
    hanging = Ns3Model(DALLY, worker=worker, debug_hang=True, timeout_s=3.0)
    with pytest.raises(Ns3SimulationError) as err:
        hanging.collective_seconds(placement, 1_000_000)
    assert err.value.shape == "[[2]]" and "watchdog" in str(err.value)
    assert not worker.alive
    # The next run gets a fresh worker and a normal answer.
    seconds = Ns3Model(DALLY, worker=worker).collective_seconds(placement, 1_000_000)
    assert seconds > 0 and worker.pid != first_pid
