"""What an oracle knows of an elastic job: the exact iterations it has left at a given total batch.

Optimus+Oracle (Pollux section 5.2) is given "the exact number of iterations until completion" of each
job, from running it ahead of time. Here that is computed from the job's ground truth: the measured
epoch ends (in M0-equivalent steps) and the gain per step at the batch in each epoch
(artist/perf/efficiency.py), so

    remaining(M) = sum over the epochs e not yet finished of (end_e - max(start_e, progress)) / gain_e(M)

It is simulator-side knowledge, handed to a policy only through JobView.remaining_iterations.
"""

from __future__ import annotations

import weakref

import numpy as np

from artist.perf.efficiency import GradientNoiseReplay


_PER_EPOCH: "weakref.WeakKeyDictionary[GradientNoiseReplay, dict]" = weakref.WeakKeyDictionary()


def _per_epoch(replay: GradientNoiseReplay, batch: float) -> tuple[np.ndarray, np.ndarray]:
    """(gain per iteration in each epoch, iterations from each epoch's start to completion) at this
    batch, memoised per (replay, batch): a run asks for the same few batches every round."""
    memo = _PER_EPOCH.setdefault(replay, {})
    if batch not in memo:
        ends = replay.epoch_end_progress
        widths = np.diff(np.concatenate([[0.0], ends]))
        gains = replay.gains(batch)
        suffix = np.cumsum((widths / gains)[::-1])[::-1]
        memo[batch] = (gains, suffix)
    return memo[batch]


def remaining_iterations(replay: GradientNoiseReplay, progress: float, batch: float) -> float:
    """Iterations at total batch `batch` (clipped to the measured range) from `progress` to completion."""
    ends = replay.epoch_end_progress
    if progress >= ends[-1]:
        return 0.0
    batch = float(np.clip(batch, replay.batches[0], replay.batches[-1]))
    gains, suffix = _per_epoch(replay, batch)
    e = replay.epoch_of(progress)
    after = float(suffix[e + 1]) if e + 1 < replay.epochs else 0.0
    return (ends[e] - progress) / gains[e] + after
