"""ns-3 exact reuse (artist/network/ns3/reuse.py), the worker pool and the scheduler choice: every path
gives the full packet run's answers to the bit (node durations, step time, packets)."""

from __future__ import annotations

import pytest

from artist.network.cache import Cached, LatencyStore
from artist.parallel.graph import Node, StepGraph
from artist.perf.model import as_perf_model
from artist.placement import placement_from_shape
from artist.topology import load_topology
from artist.workload import ModelProfile
from conftest import REPO

ns3 = pytest.importorskip("artist.network.ns3")
from artist.network.ns3 import SCHEDULERS, Ns3Model, Ns3Pool, Ns3Worker  # noqa: E402
from artist.network.ns3.reuse import compose_timeline, overlapping  # noqa: E402

DALLY = load_topology(REPO / "topologies" / "dally-3tier.yaml")
TENSORS = (3_000_000, 1_000_000, 4_000_000, 2_000_000)  # 3 buckets of a 4 MB cap: 4 MB, 4 MB, 2 MB


def packet_model(pool, **options):
    """ns-3 answering every question itself (the fast path off): reuse is compared with full packet runs."""
    return Ns3Model(DALLY, pool=pool, fast_path=False, **options)


@pytest.fixture(scope="module")
def pool():
    workers = Ns3Pool(size=2)
    yield workers
    workers.close()


def model(name: str, compute_s: float) -> ModelProfile:
    return ModelProfile(name, tensor_bytes=TENSORS, compute_seconds=compute_s, reference_gpu="A100",
                        bucket_cap_bytes=4_000_000)


def step(comm, profile, shape):
    placement = placement_from_shape(DALLY, shape)
    graph, _ = as_perf_model(comm, DALLY).graph(profile, placement)
    timing = comm.time({"j": graph})["j"]
    return timing, (timing.node_seconds, timing.step_seconds, timing.result.packets)


def test_timeline_replays_the_engine_rules_on_integer_picoseconds():
    # Plain conversions stand in for ns-3's: starts at max(ready, end of the last predecessor).
    spec = {"collectives": [
        {"ready_s": 1e-6, "preds": [], "span_ps": 500_000},  # 1 us .. 1.5 us
        {"ready_s": 1.2e-6, "preds": [0], "span_ps": 100},  # waits for 0: 1.5 us .. +100 ps
        {"ready_s": 0.0, "preds": [], "timer_s": 2e-6},  # a timer: 0 .. 2 us
        {"ready_s": 1e-6, "preds": [1, 2], "span_ps": 7},  # the later predecessor (the timer) decides
    ]}
    out = compose_timeline(spec, lambda s: round(s * 1e12), lambda ps: ps / 1e12)
    assert out["start_ps"] == [1_000_000, 1_500_000, 0, 2_000_000]
    assert out["end_ps"] == [1_500_000, 1_500_100, 2_000_000, 2_000_007]


def test_overlap_means_a_shared_instant_of_busy_intervals():
    assert not overlapping([0, 11], [10, 5])
    assert overlapping([0, 10], [10, 5])  # starts at the instant the other falls quiet: not isolated
    assert overlapping([20, 0], [1, 30])  # order of the arguments does not matter


def test_composed_step_is_byte_identical_to_the_full_run(pool):
    profile = model("toy", 0.004)  # buckets ready 1-4 ms apart: the network is quiet between them
    for shape in ([[2, 2]], [[2], [2]]):
        full, full_answer = step(packet_model(pool, exact_reuse=False), profile, shape)
        composed, answer = step(packet_model(pool), profile, shape)
        assert composed.result.details.get("composed_from") == 3 and "composed_from" not in full.result.details
        assert answer == full_answer
        assert composed.result.details["simulated_end_seconds"] == full.result.details["simulated_end_seconds"]


def test_a_second_model_with_the_same_buckets_simulates_nothing_and_matches_its_full_run(pool):
    comm = packet_model(pool)
    step(comm, model("first", 0.004), [[2, 2]])
    simulated = comm.reuse.simulated
    _, answer = step(comm, model("second", 0.009), [[2, 2]])  # other compute, same bucket sizes
    assert comm.reuse.simulated == simulated and comm.reuse.reused >= 2
    _, full_answer = step(packet_model(pool, exact_reuse=False), model("second", 0.009), [[2, 2]])
    assert answer == full_answer


def test_collectives_alone_are_reused_from_the_latency_cache_by_another_process(pool, tmp_path):
    store = tmp_path / "cache.sqlite"
    first = Cached(packet_model(pool), LatencyStore(store))
    step(first, model("first", 0.004), [[4]])
    assert first.inner.reuse.simulated == 2  # 4 MB and 2 MB
    again = Cached(packet_model(pool), LatencyStore(store))  # a fresh model: its memory is empty
    _, answer = step(again, model("other", 0.006), [[4]])
    assert again.inner.reuse.simulated == 0 and again.inner.reuse.reused == 2
    assert LatencyStore(store).counters()["misses"] == 2  # the two steps; collectives alone are not questions
    _, full_answer = step(packet_model(pool, exact_reuse=False), model("other", 0.006), [[4]])
    assert answer[:2] == full_answer[:2]


def test_overlapping_collectives_fall_back_to_one_run(pool):
    # Two collectives of different groups at once: they share the NVSwitch machine, so a composition
    # would be wrong; the full run answers (and equals a model without reuse).
    graph = StepGraph((Node(0, "all_reduce", group=(0, 1), nbytes=4_000_000),
                       Node(1, "all_reduce", group=(2, 3), nbytes=4_000_000),
                       Node(2, "all_reduce", group=(0, 1, 2, 3), nbytes=1_000_000, deps=(0, 1))))
    comm = packet_model(pool)
    timing = comm.time({"j": graph})["j"]
    assert comm.reuse.predicted_overlaps == 1 and comm.reuse.simulated == 0  # not even tried
    assert "composed_from" not in timing.result.details
    comm.reuse.likely_overlap = lambda *args: False  # tried anyway: ns-3's own times show the overlap
    assert comm.time({"j": graph})["j"].node_seconds == timing.node_seconds and comm.reuse.fallbacks == 1
    full = packet_model(pool, exact_reuse=False).time({"j": graph})["j"]
    assert timing.node_seconds == full.node_seconds


def test_groups_of_different_sizes_compose_exactly(pool):
    # A 2-GPU and a 4-GPU collective separated by a timer: each alone builds a smaller network than the
    # full run (which holds both groups), and the answers still agree to the bit.
    graph = StepGraph((Node(0, "all_reduce", group=(0, 1, 8, 9), nbytes=3_000_000),
                       Node(1, "compute", seconds=5e-4, deps=(0,), group=(0,)),
                       Node(2, "all_gather", group=(0, 8), nbytes=2_000_000, deps=(1,)),
                       Node(3, "compute", seconds=1e-4, deps=(2,), group=(0,)),
                       Node(4, "send_recv", group=(9, 1), nbytes=1_000_000, deps=(3,))))
    composed = packet_model(pool).time({"j": graph})["j"]
    full = packet_model(pool, exact_reuse=False).time({"j": graph})["j"]
    assert composed.result.details.get("composed_from") == 3
    assert (composed.node_seconds, composed.step_seconds, composed.result.packets) == \
        (full.node_seconds, full.step_seconds, full.result.packets)


def test_every_scheduler_gives_the_same_answer(pool):
    profile = model("toy", 0.001)
    answers = {name: step(packet_model(pool, scheduler=name, exact_reuse=False), profile, [[2], [2]])[1]
               for name in SCHEDULERS}
    assert len(set(answers.values())) == 1
    with pytest.raises(ValueError, match="unknown ns-3 scheduler"):
        packet_model(pool, scheduler="fastest")


def test_the_pool_answers_in_order_on_several_workers(pool):
    comm = packet_model(pool, exact_reuse=False)
    sizes = [4_000_000, 1_000_000, 2_000_000]
    placement = placement_from_shape(DALLY, [[1, 1]])
    one_by_one = [comm.collective_seconds(placement, b) for b in sizes]
    from artist.network.collectives import allreduce_schedule
    from artist.network.ns3.builder import EngineCollective

    requests = [comm.request([EngineCollective(allreduce_schedule("ring", placement, b), 0.0)])[0] for b in sizes]
    answers = pool.map([(r, 60.0, "[[1,1]]") for r in requests])
    assert len({w.pid for w in pool.workers}) == 2  # both workers started and served
    assert [a["c_end_s"][0] - a["c_start_s"][0] for a in answers] == one_by_one


def test_pool_size_from_the_environment(monkeypatch):
    from artist.network.ns3.runner import default_pool_size

    monkeypatch.setenv("ARTIST_NS3_WORKERS", "3")
    assert default_pool_size() == 3
    for bad in ("0", "many"):
        monkeypatch.setenv("ARTIST_NS3_WORKERS", bad)
        with pytest.raises(ValueError, match="ARTIST_NS3_WORKERS"):
            default_pool_size()
    assert Ns3Pool([Ns3Worker()]).size == 1
