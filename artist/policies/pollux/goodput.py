"""Goodput of a configuration and the agent's choice of (m, s) (Pollux Eq. 4 and 13).

GOODPUT(a, m, s) = THROUGHPUT(a, m, s) x EFFICIENCY(K m (s + 1)). For an allocation (nodes, K), the
agent scans the candidate total batches (artist.elastic.spec.candidate_batches), splits each into the
fewest accumulation passes that fit the GPU type's memory (split_batch), and keeps the best; a batch
no local batch fits gets goodput 0 (digest 1.3 step 4). A fixed-batch job has efficiency 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from artist.elastic.spec import ElasticSpec, LocalBatchLimit, candidate_batches, split_batches
from artist.perf.efficiency import efficiency
from artist.policies.pollux.throughput import ThroughputParams, throughput


@dataclass(frozen=True)
class Config:
    goodput: float        # M0-equivalent samples per second (throughput x efficiency)
    batch: int            # total batch M = K m (s + 1)
    local_batch: int      # m
    accum_steps: int      # s


def best_config(params: ThroughputParams, phi: float, spec: ElasticSpec, limit: LocalBatchLimit,
                nodes: int, replicas: int) -> Config | None:
    """argmax over (m, s) of the predicted goodput on `replicas` GPUs over `nodes` nodes; None if no
    configuration fits (even the smallest local batch on every GPU exceeds the maximum batch)."""
    total = candidate_batches(replicas, spec, limit)
    if total.size == 0:
        return None
    m, s = split_batches(total, replicas, limit, spec.initial_batch)
    fits = (m >= limit.min_local) & (m <= limit.max_local)
    if not fits.any():
        return None
    m, s = m[fits], s[fits]
    batch = replicas * m * (s + 1)
    rate = throughput(params, nodes, replicas, m, s)
    if spec.fixed_batch is None:
        rate = rate * efficiency(batch, spec.initial_batch, phi)
    best = int(np.argmax(rate))  # first of equal goodputs: the smallest batch
    return Config(float(rate[best]), int(batch[best]), int(m[best]), int(s[best]))
