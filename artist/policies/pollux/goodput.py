"""Goodput of a configuration and the agent's choice of (m, s) (Pollux Eq. 4 and 13).

GOODPUT(a, m, s) = THROUGHPUT(a, m, s) x EFFICIENCY(K m (s + 1)). For an allocation (nodes, K), the
agent scans the candidate total batches (artist.elastic.spec.candidate_batches), splits each into the
fewest accumulation passes that fit the GPU type's memory (split_batch), and keeps the best; a batch
no local batch fits gets goodput 0 (digest 1.3 step 4). A fixed-batch job has efficiency 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from artist.elastic.spec import CEIL_EPS, BATCH_CANDIDATES, ElasticSpec, LocalBatchLimit
from artist.perf.efficiency import efficiency
from artist.policies.pollux.throughput import ThroughputParams, throughput


@dataclass(frozen=True)
class Config:
    goodput: float        # M0-equivalent samples per second (throughput x efficiency)
    batch: int            # total batch M = K m (s + 1)
    local_batch: int      # m
    accum_steps: int      # s


def _grid(params: ThroughputParams, phi: float, spec: ElasticSpec, limit: LocalBatchLimit,
          nodes: np.ndarray, replicas: np.ndarray):
    """Predicted goodput of every candidate batch of every (nodes, K) pair: arrays (pairs, candidates)
    of goodput (0 where m does not fit the memory or no batch is feasible), batch, m and s. The same
    candidates and split as candidate_batches and split_batch (artist/elastic/spec.py), vectorised."""
    k = np.asarray(replicas, dtype=float)[:, None]
    n = np.asarray(nodes, dtype=float)[:, None]
    if spec.fixed_batch is not None:
        total = np.full((k.shape[0], 1), float(spec.fixed_batch))
        feasible = np.ones_like(k, dtype=bool)
    else:
        low = np.maximum(spec.initial_batch, k * limit.min_local)
        feasible = low <= spec.max_batch
        total = np.geomspace(np.minimum(low, spec.max_batch)[:, 0], spec.max_batch, BATCH_CANDIDATES, axis=1)
    local = total / k
    accum = np.ceil(local / limit.max_local - CEIL_EPS) - 1
    accum = np.where((k == 1) & (local > spec.initial_batch + CEIL_EPS), np.maximum(accum, 1), accum)
    accum = np.maximum(accum, 0)
    m = np.ceil(local / (accum + 1) - CEIL_EPS)
    fits = feasible & (m >= limit.min_local) & (m <= limit.max_local)
    batch = k * m * (accum + 1)
    rate = throughput(params, n, k, m, accum)
    if spec.fixed_batch is None:
        rate = rate * efficiency(batch, spec.initial_batch, phi)
    return np.where(fits, rate, 0.0), batch, m, accum


def best_goodputs(params: ThroughputParams, phi: float, spec: ElasticSpec, limit: LocalBatchLimit,
                  nodes, replicas) -> np.ndarray:
    """max over (m, s) of the predicted goodput for each (nodes, K) pair (0: nothing fits)."""
    rate, *_ = _grid(params, phi, spec, limit, np.atleast_1d(nodes), np.atleast_1d(replicas))
    return rate.max(axis=1)


def best_config(params: ThroughputParams, phi: float, spec: ElasticSpec, limit: LocalBatchLimit,
                nodes: int, replicas: int) -> Config | None:
    """argmax over (m, s) of the predicted goodput on `replicas` GPUs over `nodes` nodes; None if no
    configuration fits (even the smallest local batch on every GPU exceeds the maximum batch)."""
    rate, batch, m, s = _grid(params, phi, spec, limit, np.array([nodes]), np.array([replicas]))
    if not rate[0].any():
        return None
    best = int(np.argmax(rate[0]))  # first of equal goodputs: the smallest batch
    return Config(float(rate[0, best]), int(batch[0, best]), int(m[0, best]), int(s[0, best]))
