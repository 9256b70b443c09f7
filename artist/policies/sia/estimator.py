"""Sia's goodput estimate of a job on a configuration (digest 2.2 a, b).

Per (job, GPU type) the job has a PolluxAgent (artist/policies/pollux/agent.py) fitted to what the job
measured on that type: its 1-GPU profile and, once it has run there, its own iterations. Ĝ of a
configuration (nodes, GPUs) of type B is
- the agent's best goodput over (m, s) (Pollux Eq. 4, 13) once the job has run multi-GPU on B;
- else, if it has run multi-GPU on some type A (the first in cluster order, [A]), the bootstrap
      est_B(N) = xput_B(1) / xput_A(1) x Ĝ_A(N)
  with xput(1) = the largest profiled local batch over its 1-GPU iteration time on that type (the
  memory-limited atomic throughput, [A]) and Ĝ_A on the same GPU count over ceil(N / GPUs per node of A)
  nodes ([A] recomputes the nodes);
- else, with a 1-GPU model of B: N x Ĝ_B(1) (no multi-GPU run anywhere: scaling assumed perfect);
- else (never profiled nor run on B): only the smallest GPU count is valid, with value 1.
Statistical efficiency is per job, not per type: phi comes from the latest gradient statistics the job
reported on any type. A fixed-batch job (rigid, strong-scaling) gets throughput, as Pollux's agent gives.
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np

from artist.policies.pollux.goodput import best_goodputs
from artist.policies.sia.configs import TypeShape


def _phi(view) -> float:
    agents = [view.agent, *view.agents.values()]
    for agent in agents:
        if agent.grad_sqr is not None:
            return agent.phi
    return float("inf")


def one_gpu_throughput(view, gpu_type: str) -> float | None:
    """Samples per second of one GPU of the type at its largest profiled local batch (None: no profile)."""
    table = (view.profile or {}).get(gpu_type)
    if not table:
        return None
    m = max(table)
    return m / table[m]


def multi_gpu_types(view) -> list[str]:
    """Types on which the job has run on more than one GPU, in the agents' (cluster) order."""
    return [t for t, a in view.agents.items() if a.most_gpus > 1 and a.params is not None]


def estimate(view, gpu_type: str, nodes: np.ndarray, gpus: np.ndarray, shapes: Mapping[str, TypeShape]
             ) -> np.ndarray:
    """Ĝ of the job on (nodes, gpus) of gpu_type, elementwise; 0 where nothing fits."""
    nodes = np.atleast_1d(np.asarray(nodes, dtype=int))
    gpus = np.atleast_1d(np.asarray(gpus, dtype=int))
    agent = view.agents[gpu_type]
    phi = _phi(view)
    fitted = multi_gpu_types(view)
    if gpu_type in fitted:
        return best_goodputs(agent.params, phi, agent.spec, agent.limit, nodes, gpus)
    if fitted:
        source = fitted[0]
        mine, theirs = one_gpu_throughput(view, gpu_type), one_gpu_throughput(view, source)
        if mine is not None and theirs:
            a = view.agents[source]
            per = shapes[source].gpus_per_node
            source_nodes = np.array([math.ceil(g / per) for g in gpus])
            return mine / theirs * best_goodputs(a.params, phi, a.spec, a.limit, source_nodes, gpus)
    if agent.params is not None:
        one = best_goodputs(agent.params, phi, agent.spec, agent.limit, np.array([1]), np.array([1]))[0]
        return gpus * one
    return np.where(gpus == gpus.min(), 1.0, 0.0)
