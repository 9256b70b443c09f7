"""The options of every job and their values (digest 2.2 d, f, g, h).

An option is a configuration with the GPUs it takes from its type's pool (its footprint) and a value:

    G_ij  = N_min_i x Ĝ_ij / min_k Ĝ_ik        row-normalised: the job's smallest valid option is worth N_min
    G_ij *= r_i   for every option other than the job's current one (a restart, or a move to another type)
    G'_ij = round(G_ij ** p, 2), clipped at 3000 ([A])

    r_i = max(T_i - N_i S_i, 0) / (T_i + S_i)    (T age, N restarts so far, S restart seconds; 1 while T < S)

Job classes: adaptive and strong-scaling jobs (fixed batch: throughput as goodput) may take any
configuration of C with min GPUs <= GPUs <= the cap (Sia's scale-up rule: 2 x the most GPUs the job has
held on that type; with the 1-GPU profiles, i.e. bootstrapping, the largest of these over the types, as the
artifact shares max_replicas across types when it projects throughputs); a rigid job takes exactly its
n GPUs on one type: one option per type, on one node if n fits one (a partial node), else on ceil(n / R)
whole nodes (the footprint counts the whole nodes:
ours, so that the placement guarantee holds), with N_min = n (the reconstructed rigid term of the draft).
A pipeline job (a view with `pipeline`, pipeline.py) takes the configurations of the types it has a
pipeline for whose GPU count is a whole number of its replicas (P x N, within its cap), valued by its
GPipe goodput, with N_min = the GPUs of its least-valued option (P of that type: Sia's "row minimum = P").
Options of value 0 (nothing fits, or beyond the cap) are not options at all: the artifact sets them to
1e-4, whose power (100 for p = -0.5) no solution of the ILP ever picks, so the answer is the same.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from artist.policies.sia.configs import Configuration, TypeShape
from artist.policies.sia.estimator import estimate
from artist.policies.sia import pipeline as pmp

CLIP = 3000.0          # [A] sia_goodput_clip_val
DECIMALS = 2           # [A] rounding after the power


@dataclass(frozen=True)
class Option:
    job: int                 # index into the round's jobs
    config: Configuration
    footprint: int           # GPUs of the type it takes
    value: float             # G'_ij (after normalisation, restart factor and power)
    current: bool = False    # the job's configuration now


def restart_factor(age: float, restarts: int, restart_seconds: float) -> float:
    if age < restart_seconds:
        return 1.0
    return max(age - restarts * restart_seconds, 0.0) / (age + restart_seconds)


def current_config(view, shapes: Mapping[str, TypeShape]) -> tuple[str, int] | None:
    gpus = int(np.asarray(view.current).sum())
    return (view.gpu_type, gpus) if gpus > 0 else None


def job_candidates(view, shapes: Mapping[str, TypeShape], configs: Sequence[Configuration]
                   ) -> list[tuple[Configuration, int]]:
    """(configuration, footprint) the job may take before values are known."""
    job = getattr(view, "pipeline", None)
    if job is not None:
        for t, pt in job.types.items():
            if t in shapes:
                pmp.check_type(t, pt.stages, shapes[t].gpus_per_node)
        return [(c, c.gpus) for c in configs if c.gpu_type in job.types
                and c.gpus % job.types[c.gpu_type].stages == 0 and c.gpus <= job.max_gpus]
    if view.category == "rigid":
        n = int(view.gpus_wanted)
        out = []
        for t, shape in shapes.items():
            if n > shape.gpus:
                continue
            nodes = 1 if n <= shape.gpus_per_node else math.ceil(n / shape.gpus_per_node)
            out.append((Configuration(t, nodes, n), n if nodes == 1 else nodes * shape.gpus_per_node))
        return out
    low = max(int(view.min_gpus), 1)
    caps = {t: a.max_gpus for t, a in view.agents.items()}
    if view.profile:   # bootstrapping: one cap for every type, the largest ([A] share_max_replicas)
        caps = dict.fromkeys(caps, max(caps.values()))
    return [(c, c.gpus) for c in configs if low <= c.gpus <= caps[c.gpu_type]]


def job_options(i: int, view, shapes: Mapping[str, TypeShape], configs: Sequence[Configuration],
                p: float) -> list[Option]:
    cands = job_candidates(view, shapes, configs)
    raw = np.zeros(len(cands))
    by_type: dict[str, list[int]] = {}
    for k, (c, _) in enumerate(cands):
        by_type.setdefault(c.gpu_type, []).append(k)
    job = getattr(view, "pipeline", None)
    for t, idx in by_type.items():
        if job is not None:
            raw[idx] = [pmp.goodput(job, t, cands[k][0].nodes, cands[k][0].gpus) for k in idx]
            continue
        raw[idx] = estimate(view, t, np.array([cands[k][0].nodes for k in idx]),
                            np.array([cands[k][0].gpus for k in idx]), shapes)
    valid = [k for k in range(len(cands)) if raw[k] > 0]
    if not valid:
        return []
    if job is not None:
        n_min = cands[min(valid, key=lambda k: (raw[k], k))][0].gpus
    else:
        n_min = int(view.gpus_wanted) if view.category == "rigid" else max(int(view.min_gpus), 1)
    norm = n_min * raw / raw[valid].min()
    cur = current_config(view, shapes)
    factor = restart_factor(view.age, view.restarts, view.restart_seconds)
    out = []
    for k in valid:
        c, footprint = cands[k]
        is_current = cur is not None and (c.gpu_type, c.gpus) == cur
        g = norm[k] if is_current else factor * norm[k]
        with np.errstate(divide="ignore"):
            value = min(float(np.float64(g) ** p) if g > 0 or p > 0 else math.inf, CLIP)
        out.append(Option(i, c, footprint, round(value, DECIMALS), is_current))
    return out
