"""Buffered stages (docs/pages/decisions/0002-buffered-stages.md), against hand-computed answers, in both
engines (engine.py's loop and engine.cc)."""

import pytest

from artist.network.phase.engine import BUFFER_BYTES, PhaseBundle, PhaseJob, PhaseNode, run_component

C = 1e9  # bytes/s, both links
ENGINES = ("python", "compiled")


def _jobs(ups: int, work: float, t: float):
    """X sends `work` through link 0 (up) then link 1 (down), continuously; Y is on link 0 for t after t off,
    Z on link 1 for t then off for t: at every instant exactly one of them shares one of X's links (each takes
    C/2 beside X: its C t / 2 bytes in t)."""
    x = PhaseJob((PhaseNode((), 0.0, True, (PhaseBundle(work, 10 * C, ((0, 1.0), (1, 1.0)), ups=ups),)),))
    y = PhaseJob((PhaseNode((), t, False),
                  PhaseNode((0,), 0.0, True, (PhaseBundle(C * t / 2, 10 * C, ((0, 1.0),)),))))
    z = PhaseJob((PhaseNode((), 0.0, True, (PhaseBundle(C * t / 2, 10 * C, ((1, 1.0),)),)),
                  PhaseNode((0,), t, False)))
    return [x, y, z]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_flow_across_two_ports_gets_the_smaller_mean_share_when_its_bytes_can_wait_between_them(engine):
    # while Y is off X's up stage runs at C and its down stage at C/2 beside Z (the buffer fills by
    # C t / 2 <= 1 MiB); while Y is on, up C/2 and down C (the buffer empties by the end): the down stage
    # passes 1.5 C t per period 2t, so X's bytes take 2t per 1.5 C t
    t = 1e-3
    work = 1.5 * C * t * 10
    got = run_component(_jobs(1, work, t), [C, C], engine=engine, max_steps=6)
    assert got[0].step_seconds == pytest.approx(work / (0.75 * C), rel=1e-6)
    assert got[1].step_seconds == pytest.approx(2 * t, rel=1e-6)
    assert got[2].step_seconds == pytest.approx(2 * t, rel=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_without_a_buffer_between_its_links_it_gets_the_smaller_share_at_every_instant(engine):
    t = 1e-3
    work = 1.5 * C * t * 10
    got = run_component(_jobs(0, work, t), [C, C], engine=engine, max_steps=6)  # one stage: C/2 at every instant
    assert got[0].step_seconds == pytest.approx(work / (0.5 * C), rel=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_buffer_holds_at_most_its_bound_then_the_stages_move_as_one(engine):
    # t long enough to fill the buffer (B = 1 MiB) while Y is off: up at C, down at C/2 until the buffer is
    # full after 2B / C, then both at C/2; while Y is on: up C/2, down C until it is empty after 2B / C, then
    # both at C/2. The down stage passes C t / 2 + (2B + (t - 2B / C) C / 2) = C t + B per period 2t
    t = 4e-3
    assert 2 * BUFFER_BYTES / C < t
    work = (C * t + BUFFER_BYTES) * 5
    got = run_component(_jobs(1, work, t), [C, C], engine=engine, max_steps=6)
    assert got[0].step_seconds == pytest.approx(10 * t, rel=1e-6)
    assert got[1].step_seconds == pytest.approx(2 * t, rel=1e-6)
    assert got[2].step_seconds == pytest.approx(2 * t, rel=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_job_alone_moves_its_stages_as_one(engine):
    # nothing to wait for: a two-stage bundle of a job alone drains at the smaller of its cap and its links
    job = PhaseJob((PhaseNode((), 1e-3, False), PhaseNode((0,), 0.0, True,
                                                          (PhaseBundle(4e6, 10 * C, ((0, 1.0), (1, 2.0)), ups=1),))))
    got = run_component([job], [C, C], engine=engine, steps=3)
    assert got[0].step_seconds == pytest.approx(1e-3 + 4e6 / (C / 2), rel=1e-9)
