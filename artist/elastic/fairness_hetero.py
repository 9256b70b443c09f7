"""Finish-time fairness across GPU types (Sia, Jayaram Subramanya et al. SOSP'23, Fig. 8; digest 2.6 and
section 4 item 5), a metric of the elastic loop's summary on a multi-type cluster.

    rho_j   = sum_g (N_g / N) rho_{j,g}                 N_g GPUs of type g, N all GPUs
    rho_j,g = JCT_j / T_iso_{j,g}(N_g / N_avg_j)        the job alone on its share of type g

N_avg_j is the job's average contention: the mean number of jobs in the system (arrived, not finished)
over its life [arrival, finish), integrated exactly from the arrivals and finishes (sum over jobs i of
the overlap of i's life with j's, over j's JCT; j itself counts, so N_avg >= 1).

T_iso (IsolatedTimes, ground truth, no restarts, no profiling) is the time to finish every epoch alone on
a share s of type g: per epoch, the best progress rate over the total batches the job may use (its fixed
batch for a rigid or strong-scaling job; Pollux's candidate batches for an adaptive one) on k GPUs of the
type consolidated on the fewest machines, timed by the loop's StepTimer (measured compute of the type +
ArtISt's network), with the replayed statistical efficiency of that epoch. The share becomes GPUs as:
- s < 1: one GPU time-shared, the one-GPU rate x s;
- s >= 1: the best rate on k <= floor(s) GPUs (more GPUs than it can use never slow a job alone),
  capped by the type's GPUs and the job's max_gpus, linearly interpolated towards floor(s) + 1 GPUs for
  the fractional part (time-sharing one more GPU);
- a rigid job runs only on its own n GPUs: its rate x min(1, s / n) (time-shared when s < n); a type
  with fewer than n GPUs cannot run it alone and is left out of its sum (the weights renormalised over
  the types that can).
Our reading where the draft is silent [I]: Sia defines rho_g with "N_g / N_avg GPUs of type g" and names
no batch or GPU-count rule for the isolated run.

Summary fields (fairness_fields, hooked into ElasticResult.summary when a run attached its IsolatedTimes):
ftf_hetero_worst (max rho), ftf_hetero_unfair_fraction (rho > 1), ftf_hetero_mean.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from artist.elastic.spec import candidate_batches, clamp_local_batch, split_batch
from artist.perf.efficiency import gain


def contention(arrivals: Sequence[float], finishes: Sequence[float]) -> np.ndarray:
    """Per job, the average number of jobs in the system over its life (exact, from the overlaps)."""
    a = np.asarray(arrivals, dtype=float)
    f = np.asarray(finishes, dtype=float)
    if np.any(f <= a):
        raise ValueError("every job must finish after it arrives")
    overlap = np.clip(np.minimum(f[:, None], f[None, :]) - np.maximum(a[:, None], a[None, :]), 0.0, None)
    return overlap.sum(axis=1) / (f - a)


def hetero_rho(jct: float, isolated: Mapping[str, float], gpus_by_type: Mapping[str, int]) -> float:
    """sum_g (N_g / N) x jct / isolated[g] over the types in `isolated` (weights over those types)."""
    if not isolated:
        raise ValueError("no GPU type can run the job alone")
    total = sum(gpus_by_type[g] for g in isolated)
    return float(sum(gpus_by_type[g] / total * jct / isolated[g] for g in isolated))


def epoch_gains(replay, batch: float) -> np.ndarray:
    """M0-equivalent steps per optimiser step at `batch`, per epoch (the replay's interpolated statistics)."""
    batches = replay.batches
    b = float(np.clip(batch, batches[0], batches[-1]))
    i = int(np.searchsorted(batches, b))
    hi = batches[i]
    lo, w = (hi, 0.0) if hi == b or i == 0 else (batches[i - 1], (b - batches[i - 1]) / (hi - batches[i - 1]))
    e = replay.epochs
    sqr = (1 - w) * replay.curves[lo].grad_sqr[:e] + w * replay.curves[hi].grad_sqr[:e]
    var = (1 - w) * replay.curves[lo].grad_var[:e] + w * replay.curves[hi].grad_var[:e]
    m0 = replay.initial_batch
    out = np.empty(e)
    for k in range(e):   # phi per epoch (inf where no signal: efficiency 1), as GradientNoiseReplay.gain
        phi = math.inf if sqr[k] <= 0 else m0 * var[k] / sqr[k]
        out[k] = gain(b, m0, phi)
    return out


class IsolatedTimes:
    """T_iso of a finished job of an ElasticResult on a share of one GPU type (module docstring)."""

    def __init__(self, timer, gpus_by_type: Mapping[str, int], gpus_per_machine: Mapping[str, int]):
        self.timer = timer
        self.gpus_by_type, self.gpus_per_machine = dict(gpus_by_type), dict(gpus_per_machine)
        self._rates: dict[tuple, np.ndarray] = {}

    def _rate(self, job, gpu_type: str, k: int) -> np.ndarray:
        """Best M0-equivalent steps per second per epoch on k GPUs of the type (0: nothing fits)."""
        spec, app = job.elastic, job.app
        key = (job.spec.app, spec.fixed_batch, gpu_type, k)
        if key not in self._rates:
            limit = spec.limit(gpu_type)
            per = self.gpus_per_machine[gpu_type]
            per_node = [per] * (k // per) + ([k % per] if k % per else [])
            best = np.zeros(app.replay.epochs)
            for batch in candidate_batches(k, spec, limit):
                split = split_batch(batch, k, limit, spec.initial_batch)
                if split is None:
                    continue
                m, s = split
                m = clamp_local_batch(m, s, k, spec, limit)
                iter_s, _ = self.timer.seconds(job.spec.app, gpu_type, per_node, m, s)
                best = np.maximum(best, epoch_gains(app.replay, k * m * (s + 1)) / iter_s)
            self._rates[key] = best
        return self._rates[key]

    def _best(self, job, gpu_type: str, k: int) -> np.ndarray:
        return np.max(np.stack([self._rate(job, gpu_type, i) for i in range(1, k + 1)]), axis=0)

    def seconds(self, job, gpu_type: str, share: float) -> float | None:
        """Alone on `share` GPUs of the type; None when the job cannot run there alone."""
        if not share > 0:
            raise ValueError(f"a share must be positive, got {share}")
        n_g = self.gpus_by_type[gpu_type]
        if job.category == "rigid":
            n = job.spec.gpus
            if n > n_g:
                return None
            rate = self._rate(job, gpu_type, n) * min(1.0, share / n)
        else:
            cap = max(1, min(n_g, job.elastic.max_gpus))
            k = max(1, min(math.floor(share), cap))
            if share < 1:
                rate = self._rate(job, gpu_type, 1) * share
            elif share > k and k < cap:
                low, high = self._best(job, gpu_type, k), self._best(job, gpu_type, k + 1)
                rate = low + (share - k) * (high - low)
            else:
                rate = self._best(job, gpu_type, k)
        if np.any(rate <= 0):
            return None
        widths = np.diff(np.concatenate([[0.0], job.app.replay.epoch_end_progress]))
        return float(np.sum(widths / rate))


def job_rhos(result, isolated: IsolatedTimes) -> dict[str, float]:
    """rho of every job of the result (jobs no type can run alone are left out)."""
    jobs = result.jobs
    if not jobs:
        return {}
    n_avg = contention([j.spec.arrival for j in jobs], [j.finish for j in jobs])
    out = {}
    for j, n in zip(jobs, n_avg):
        iso = {}
        for g, n_g in isolated.gpus_by_type.items():
            t = isolated.seconds(j, g, n_g / n)
            if t is not None:
                iso[g] = t
        if iso:
            out[j.spec.job_id] = hetero_rho(j.finish - j.spec.arrival, iso, isolated.gpus_by_type)
    return out


def fairness_fields(result) -> dict:
    """The summary's FTF fields, or {} when the run attached no IsolatedTimes (result.isolated)."""
    isolated = getattr(result, "isolated", None)
    if isolated is None:
        return {}
    rhos = np.array(list(job_rhos(result, isolated).values()))
    if not len(rhos):
        return {}
    return {"ftf_hetero_worst": float(rhos.max()), "ftf_hetero_unfair_fraction": float(np.mean(rhos > 1)),
            "ftf_hetero_mean": float(rhos.mean())}
