"""The ground truth of one elastic job's training progress (what a simulator advances, never what a
policy reads).

Progress is counted in M0-equivalent steps (the unit of the artifact's `progress` column): a step at
total batch M during epoch e is worth gain_e(M) = (M / M0) EFFICIENCY_e(M) of them, with the gradient
noise scale of that epoch replayed from the measured curves. The job is done when its progress reaches
the end of the last measured epoch. (The artifact can also stop at a target validation metric, which
makes the completion epoch depend on the batch size; its simulator configures no target for any of the
six applications, so every batch size trains the measured epochs, and the batch size enters through
the gain.) Between epoch boundaries the rate is constant, so `advance` moves exactly to a boundary and
stops there: the caller may then re-tune (m, s), as the artifact's simulator does at epoch ends.

A resize costs the job's restart delay (checkpoint-restart), during which it holds its GPUs and makes
no progress; the first start is free and is not counted as a restart (as the artifact).
"""

from __future__ import annotations

from dataclasses import dataclass

from artist.perf.efficiency import GradientNoiseReplay


@dataclass
class ElasticProgress:
    replay: GradientNoiseReplay
    restart_seconds: float
    progress: float = 0.0              # M0-equivalent steps done
    restart_left: float = 0.0          # seconds of checkpoint-restart still to pay
    restarts: int = 0
    started: bool = False
    first_start_delay: bool = False  # the delay at the first start too, not counted as a restart (artifacts)
    slowdown: float = 1.0  # progress divided by this (the Sia artifact's per-application calibration; rules.py)

    @property
    def epoch(self) -> int:
        return self.replay.epoch_of(self.progress)

    @property
    def done(self) -> bool:
        return self.progress >= self.replay.total_progress

    def resize(self) -> None:
        """A new allocation: pay the restart delay (not for the first start, unless first_start_delay)."""
        if self.started:
            self.restarts += 1
            self.restart_left = self.restart_seconds
        elif self.first_start_delay:
            self.restart_left = self.restart_seconds
        self.started = True

    def rate(self, batch: float, iter_seconds: float) -> float:
        """M0-equivalent steps per second at this batch in the current epoch."""
        if not iter_seconds > 0:
            raise ValueError(f"iteration seconds must be positive, got {iter_seconds}")
        return self.replay.gain(batch, min(self.epoch, self.replay.epochs - 1)) / iter_seconds / self.slowdown

    def seconds_to_boundary(self, batch: float, iter_seconds: float) -> float:
        """Seconds from now to the end of the restart delay, else of the epoch (the last one's end is
        completion) at this configuration: where advance() stops next."""
        if self.restart_left > 0:
            return self.restart_left
        rate = self.rate(batch, iter_seconds)
        return (float(self.replay.epoch_end_progress[self.epoch]) - self.progress) / rate

    def advance(self, seconds: float, batch: float, iter_seconds: float, snap: float = 0.0) -> float:
        """Run for up to `seconds` at this configuration; stop early at the end of a restart delay, at
        an epoch boundary or at completion. Returns the seconds used. `snap`: a restart end or boundary
        at most that far beyond `seconds` counts as reached (an event loop's clock, which put an event
        at the boundary, may land a rounding error short of it)."""
        if seconds < 0:
            raise ValueError(f"seconds must be >= 0, got {seconds}")
        if self.done or seconds == 0:
            return 0.0
        if self.restart_left > 0:
            used = self.restart_left if self.restart_left <= seconds + snap else seconds
            self.restart_left -= used
            return used
        rate = self.rate(batch, iter_seconds)
        boundary = float(self.replay.epoch_end_progress[self.epoch])
        to_boundary = (boundary - self.progress) / rate
        if to_boundary <= seconds + snap:
            self.progress = boundary
            return to_boundary
        self.progress += rate * seconds
        return seconds
