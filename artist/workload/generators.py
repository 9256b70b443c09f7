"""Seeded job generators: a batch at t = 0, a Poisson arrival stream and a replay of a trace's arrival gaps,
drawn from a JobMix."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from artist.workload.job import Job


@dataclass(frozen=True)
class JobMix:
    """What generated jobs look like: models, GPU demands and lengths to draw from."""

    models: tuple[str, ...]
    gpu_choices: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    gpu_weights: tuple[float, ...] | None = None
    # Iterations drawn log-uniformly in [min, max]: job lengths in cluster traces
    # are heavy-tailed (Philly, Jeon et al. ATC'19; Helios, Hu et al. SC'21).
    min_iterations: int = 1_000
    max_iterations: int = 100_000


def _draw_jobs(mix: JobMix, arrivals: np.ndarray, rng: np.random.Generator, prefix: str) -> list[Job]:
    n = len(arrivals)
    weights = None
    if mix.gpu_weights is not None:
        w = np.asarray(mix.gpu_weights, dtype=float)
        weights = w / w.sum()
    gpus = rng.choice(np.asarray(mix.gpu_choices), size=n, p=weights)
    model_idx = rng.integers(len(mix.models), size=n)
    lo, hi = np.log(mix.min_iterations), np.log(mix.max_iterations)
    iterations = np.maximum(1, np.round(np.exp(rng.uniform(lo, hi, size=n)))).astype(int)
    width = len(str(n - 1))
    return [
        Job(f"{prefix}{i:0{width}d}", float(arrivals[i]), mix.models[model_idx[i]], int(gpus[i]), int(iterations[i]))
        for i in range(n)
    ]


def batch_jobs(n: int, mix: JobMix, seed: int) -> list[Job]:
    """n jobs all arriving at t = 0."""
    rng = np.random.default_rng(seed)
    return _draw_jobs(mix, np.zeros(n), rng, "b")


def poisson_jobs(n: int, mix: JobMix, mean_interarrival_s: float, seed: int) -> list[Job]:
    """n jobs with exponential inter-arrival times (a Poisson process), the first at t = 0."""
    if not mean_interarrival_s > 0:
        raise ValueError("mean_interarrival_s must be > 0")
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(mean_interarrival_s, size=n)
    arrivals = np.concatenate([[0.0], np.cumsum(gaps[1:])]) if n else np.zeros(0)
    return _draw_jobs(mix, arrivals, rng, "p")


def replayed_jobs(n: int, mix: JobMix, gaps: np.ndarray, seed: int) -> list[Job]:
    """n jobs whose arrivals follow `gaps` (seconds between successive arrivals, in order), the first at t = 0;
    models, GPU counts and lengths drawn from the mix as poisson_jobs draws them."""
    if n - 1 > len(gaps):
        raise ValueError(f"{n} jobs need {n - 1} gaps; {len(gaps)} given")
    rng = np.random.default_rng(seed)
    arrivals = np.concatenate([[0.0], np.cumsum(np.asarray(gaps[:n - 1], dtype=float))]) if n else np.zeros(0)
    return _draw_jobs(mix, arrivals, rng, "r")
