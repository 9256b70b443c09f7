"""Collective schedules: conservation laws and dependency structure."""

import pytest

from artist.network.collectives import allreduce_schedule, split_bytes
from artist.placement import placement_from_shape


@pytest.mark.parametrize("shape", [[[4]], [[4, 4]], [[3, 1], [2]], [[4, 4], [4, 4]]])
@pytest.mark.parametrize("channels", [1, 3])
def test_ring_byte_conservation(topo_2x2x4, shape, channels):
    nbytes = 10_000_003
    placement = placement_from_shape(topo_2x2x4, shape)
    n = placement.size
    schedule = allreduce_schedule("ring", placement, nbytes, channels)
    # every rank sends and receives 2(N-1)/N of the payload (up to chunk rounding)
    for sent, received in zip(schedule.bytes_sent_per_rank(), schedule.bytes_received_per_rank()):
        assert sent == pytest.approx(2 * (n - 1) / n * nbytes, abs=2 * n * channels)
        assert received == pytest.approx(2 * (n - 1) / n * nbytes, abs=2 * n * channels)
    assert schedule.steps == 2 * (n - 1)
    # in total, each of the N chunks of each channel travels 2(N-1) hops... in bytes: 2(N-1) x payload
    assert sum(schedule.bytes_sent_per_rank()) == 2 * (n - 1) * nbytes


def test_ring_dependencies_are_the_previous_receive(topo_2x2x4):
    schedule = allreduce_schedule("ring", placement_from_shape(topo_2x2x4, [[4]]), 4000)
    for i, t in enumerate(schedule.transfers):
        if t.step == 0:
            assert t.deps == ()
        else:
            (dep,) = t.deps
            d = schedule.transfers[dep]
            assert d.dst == t.src and d.step == t.step - 1


def test_hierarchical_conservation_and_shape(topo_2x2x4):
    nbytes = 8_000_000
    placement = placement_from_shape(topo_2x2x4, [[4, 4]])
    schedule = allreduce_schedule("hierarchical", placement, nbytes)
    # intra RS (g-1) + inter (2(m-1)) + intra AG (g-1) steps
    assert schedule.steps == 3 + 2 + 3
    # each rank: intra 2 x (g-1)/g x S, inter 2 x (m-1)/m x S/g
    per_rank = 2 * 3 / 4 * nbytes + 2 * 1 / 2 * nbytes / 4
    assert all(s == per_rank for s in schedule.bytes_sent_per_rank())


def test_hierarchical_rejects_uneven_machines(topo_2x2x4):
    with pytest.raises(ValueError, match="same GPU count"):
        allreduce_schedule("hierarchical", placement_from_shape(topo_2x2x4, [[3, 1]]), 1000)


def test_split_bytes_is_exact():
    assert split_bytes(10, 3) == [4, 3, 3]
    assert sum(split_bytes(123_456_789, 7)) == 123_456_789
