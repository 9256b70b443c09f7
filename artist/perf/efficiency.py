"""Statistical efficiency of a batch size (Pollux, Qiao et al. OSDI'21, section 3.1).

A job trained at total batch M instead of its initial batch M0 needs more samples for the same
progress. With the pre-conditioned gradient noise scale phi (Eq. 5):

    EFFICIENCY(M) = (phi + M0) / (phi + M)                       (Eq. 6, in (0, 1] for M >= M0)
    GOODPUT = THROUGHPUT x EFFICIENCY                             (Eq. 4)
    gain(M) = (M / M0) x EFFICIENCY(M)                            progress of one step, in M0-steps

The gain is what one optimiser step at batch M is worth in steps at M0 ("M0-equivalent" steps, the
unit of the artifact's `progress` column). Pollux's artifact keeps the gradient statistics as two
numbers, grad_sqr (|g|^2) and grad_var (the gradient variance at batch M0); phi = M0 x var / sqr
(digest 1.2, [A] adaptdl/goodput.py), so EFFICIENCY and gain above equal the artifact's
(var + sqr) / (var / scale + sqr) with scale = M / M0.

GradientNoiseReplay replays measured statistics: per epoch and per measured batch size (the
artifact's validation-<batch>.csv tables), linearly interpolated in batch size between the two
nearest measured sizes, as the artifact's simulator does. Outside the measured range it refuses:
the tables say nothing there.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Mapping

import numpy as np


def noise_scale(grad_sqr: float, grad_var: float, initial_batch: float) -> float:
    """phi (samples) from the artifact's gradient statistics: M0 x var / sqr (inf if sqr <= 0:
    all noise, no signal, so any batch is as good as M0 per sample)."""
    if grad_sqr <= 0:
        return float("inf")
    return initial_batch * grad_var / grad_sqr


def efficiency(batch, initial_batch: float, phi: float):
    """EFFICIENCY(M) = (phi + M0) / (phi + M) (Eq. 6). Vectorised in batch. phi = inf gives 1."""
    batch = np.asarray(batch, dtype=float)
    if np.isinf(phi):
        return np.ones_like(batch) if batch.ndim else 1.0
    out = (phi + initial_batch) / (phi + batch)
    return out if out.ndim else float(out)


def gain(batch, initial_batch: float, phi: float):
    """M0-equivalent steps made by one step at batch M: (M / M0) x EFFICIENCY(M). Vectorised in batch."""
    out = np.asarray(batch, dtype=float) / initial_batch * efficiency(batch, initial_batch, phi)
    return out if np.ndim(out) else float(out)


@dataclass(frozen=True)
class EpochCurve:
    """One measured training run at a fixed batch size (one validation-<batch>.csv): per epoch the
    cumulative progress (M0-equivalent steps) at its end, the metric, and the gradient statistics."""
    batch: int
    progress: np.ndarray
    metric: np.ndarray
    grad_sqr: np.ndarray
    grad_var: np.ndarray
    source: str = ""


class GradientNoiseReplay:
    """Gradient statistics and epoch boundaries of one application, replayed from measured curves.

    initial_batch is M0 (the artifact uses the smallest measured batch). epochs caps how many epochs
    are used (every curve must have at least that many rows)."""

    def __init__(self, curves: Mapping[int, EpochCurve], initial_batch: int | None = None,
                 epochs: int | None = None, name: str = ""):
        if not curves:
            raise ValueError(f"{name or 'application'}: no measured gradient curves")
        self.name = name
        self.batches: list[int] = sorted(curves)
        self.curves = {b: curves[b] for b in self.batches}
        self.initial_batch = int(initial_batch if initial_batch is not None else self.batches[0])
        shortest = min(len(c.progress) for c in self.curves.values())
        self.epochs = shortest if epochs is None else int(epochs)
        if not 1 <= self.epochs <= shortest:
            raise ValueError(f"{name}: {self.epochs} epochs asked, the shortest measured curve has {shortest}")
        # An epoch ends when every curve has passed it: the artifact takes the smallest cumulative
        # progress over batch sizes as the epoch's end (its get_progress).
        ends = np.min(np.stack([c.progress[:self.epochs] for c in self.curves.values()]), axis=0)
        self.epoch_end_progress: np.ndarray = ends

    def _bracket(self, batch: float) -> tuple[int, int, float]:
        """The measured batches around `batch` and the weight of the upper one."""
        if not self.batches[0] <= batch <= self.batches[-1]:
            raise ValueError(f"{self.name}: batch {batch} outside the measured range "
                             f"[{self.batches[0]}, {self.batches[-1]}]")
        i = bisect.bisect_left(self.batches, batch)
        hi = self.batches[i]
        if hi == batch or i == 0:
            return hi, hi, 0.0
        lo = self.batches[i - 1]
        return lo, hi, (batch - lo) / (hi - lo)

    def grad_stats(self, batch: float, epoch: int) -> tuple[float, float]:
        """(grad_sqr, grad_var) during `epoch` (0-based) at total batch `batch`."""
        if not 0 <= epoch < self.epochs:
            raise ValueError(f"{self.name}: epoch {epoch} outside 0..{self.epochs - 1}")
        lo, hi, w = self._bracket(batch)
        a, b = self.curves[lo], self.curves[hi]
        sqr = (1 - w) * a.grad_sqr[epoch] + w * b.grad_sqr[epoch]
        var = (1 - w) * a.grad_var[epoch] + w * b.grad_var[epoch]
        return float(sqr), float(var)

    def phi(self, batch: float, epoch: int) -> float:
        sqr, var = self.grad_stats(batch, epoch)
        return noise_scale(sqr, var, self.initial_batch)

    def efficiency(self, batch: float, epoch: int) -> float:
        return float(efficiency(batch, self.initial_batch, self.phi(batch, epoch)))

    def gain(self, batch: float, epoch: int) -> float:
        """M0-equivalent steps per optimiser step at `batch` during `epoch`."""
        return float(gain(batch, self.initial_batch, self.phi(batch, epoch)))

    def gains(self, batch: float) -> np.ndarray:
        """gain(batch, e) for every epoch e at once (the same arithmetic, so equal to the last bit)."""
        lo, hi, w = self._bracket(batch)
        a, b, n = self.curves[lo], self.curves[hi], self.epochs
        sqr = (1 - w) * a.grad_sqr[:n] + w * b.grad_sqr[:n]
        var = (1 - w) * a.grad_var[:n] + w * b.grad_var[:n]
        m0 = self.initial_batch
        signal = sqr > 0
        with np.errstate(invalid="ignore"):  # inf / inf where there is no signal: replaced by 1
            phi = np.where(signal, m0 * var / np.where(signal, sqr, 1.0), np.inf)  # noise_scale, vectorised
            eff = np.where(signal, (phi + m0) / (phi + batch), 1.0)                 # efficiency, vectorised
        return float(batch) / m0 * eff

    def epoch_of(self, progress: float) -> int:
        """The epoch a job with this much progress is in (epochs finished so far)."""
        return int(np.searchsorted(self.epoch_end_progress, progress, side="right"))

    @property
    def total_progress(self) -> float:
        """M0-equivalent steps to finish every epoch (the completion target)."""
        return float(self.epoch_end_progress[-1])
