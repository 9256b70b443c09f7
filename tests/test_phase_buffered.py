"""Buffered stages (docs/pages/decisions/0002-buffered-stages.md), against hand-computed answers."""

import pytest

from artist.network.phase.engine import PhaseBundle, PhaseJob, PhaseNode, run_component

C = 1e9  # bytes/s, both links
T = 1e-3  # s: each competitor's on and off time


def _jobs(ups: int, periods: int = 10):
    """X sends through link 0 (up) then link 1 (down), continuously; Y is on link 0 for T after T off, Z on
    link 1 for T then off for T: at every instant exactly one of them shares one of X's links (each takes
    C/2 beside X: its C T / 2 bytes in T)."""
    work = 1.5 * C * T * periods  # what the down stage passes in `periods` periods of 2T when buffered
    x = PhaseJob((PhaseNode((), 0.0, True, (PhaseBundle(work, 10 * C, ((0, 1.0), (1, 1.0)), ups=ups),)),))
    y = PhaseJob((PhaseNode((), T, False),
                  PhaseNode((0,), 0.0, True, (PhaseBundle(C * T / 2, 10 * C, ((0, 1.0),)),))))
    z = PhaseJob((PhaseNode((), 0.0, True, (PhaseBundle(C * T / 2, 10 * C, ((1, 1.0),)),)),
                  PhaseNode((0,), T, False)))
    return [x, y, z], work


def test_a_flow_across_two_ports_gets_the_smaller_mean_share_when_its_bytes_can_wait_between_them():
    # buffered: while Y is off X's up stage runs at C and its down stage at C/2 beside Z (the buffer fills by
    # C T / 2 <= 1 MiB); while Y is on, up C/2 and down C (the buffer empties by the end): the down stage
    # passes 1.5 C T per period 2T, so X's bytes take 2T per 1.5 C T
    jobs, work = _jobs(ups=1)
    got = run_component(jobs, [C, C], engine="python", max_steps=6)
    assert got[0].step_seconds == pytest.approx(work / (0.75 * C), rel=1e-6)
    assert got[1].step_seconds == pytest.approx(2 * T, rel=1e-6)
    assert got[2].step_seconds == pytest.approx(2 * T, rel=1e-6)


def test_without_a_buffer_between_its_links_it_gets_the_smaller_share_at_every_instant():
    jobs, work = _jobs(ups=0)  # one stage: today's coupled flow, C/2 at every instant
    got = run_component(jobs, [C, C], engine="python", max_steps=6)
    assert got[0].step_seconds == pytest.approx(work / (0.5 * C), rel=1e-6)
