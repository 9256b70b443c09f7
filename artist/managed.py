"""Jobs whose progress their own workload keeps, run by the exact event loop (artist/simulator.py).

A rigid job's progress is iterations at the rate of its placement, and the loop keeps it (JobState). Other
jobs change inside: an elastic job re-picks its batch at every epoch and pays a restart per new allocation
(artist/elastic/exact.py), a Crius job runs the plan its scheduler tuned for its (type, count)
(artist/crius/exact.py). Their workload implements ManagedWorkload; the loop gives their jobs GPUs, events
(arrival, their own events, periodic rounds, stops) and its one clock, and asks the workload what happens.
Their records (states()) carry the loop's bookkeeping under JobState's names and `managed = True`.
"""

from __future__ import annotations

from typing import Protocol, Sequence


class ManagedWorkload(Protocol):
    absent: tuple[int, ...]  # GPU ids of the loop's topology that do not exist (never free)

    def check(self, topology, config) -> None:
        """ValueError if the workload cannot run on this topology or with this loop configuration."""

    def states(self) -> list:
        """The loop's record of every job (job_id, arrival = when it reaches the loop, managed = True)."""

    def arrive(self, state, now: float) -> None:
        """The job reaches the loop (it waits for its policy from now)."""

    def start(self, state, placement, now: float, to_next_round: float) -> float:
        """The job starts on `placement` (it held none): its configuration there; returns the restart
        seconds it pays before progressing. Sets state.placement and state.iteration_seconds."""

    def seconds_to_event(self, state, now: float) -> float | None:
        """Seconds from now to the job's next own event (None: none known until its next round)."""

    def own_event(self, state, now: float) -> bool:
        """One of the job's own events happened now: True when the job completed."""

    def fold(self, state, now: float) -> None:
        """Progress up to now (before the job stops or ends)."""

    def stop(self, state, now: float) -> None:
        """The job was stopped (folded already): it holds no GPUs from now."""

    def round_end(self, running: Sequence, now: float) -> None:
        """A periodic round is reached (every round, before its decisions); `running`: jobs holding GPUs."""

    def round_begin(self, running: Sequence, now: float, seconds: float) -> Sequence:
        """After a round's decisions: a round of `seconds` begins; returns the jobs whose next own event
        moved (the loop queues it anew)."""
