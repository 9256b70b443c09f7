"""PolluxAgent: one job's learner (Pollux section 4.1).

It records what its job measured in each configuration (nodes, K, m, s): the iteration time and, if
the job ran accumulation passes, one pass's compute time; and the job's latest gradient statistics
(grad_sqr, grad_var, from the job's own noise-scale estimator). It refits theta_sys when asked
for its model after a configuration it had not seen (so at most once per scheduling round however
often the job reports; Pollux refits every 30 s); the fit uses every configuration seen, a repeated
one replacing its earlier time. It answers:
- max_gpus: 2 x the most GPUs the job has ever held (exploration cap), within the job's own bounds;
- goodput(nodes, K): the best (m, s) on that allocation by its fitted model (None before any
  observation: the scheduler then assumes perfect scaling, as the artifact does);
- speedup over a base allocation, which the scheduler's fitness uses.
It never sees the network model or the simulator's ground truth, only these measurements.
"""

from __future__ import annotations

from artist.elastic.spec import ElasticSpec, LocalBatchLimit
from artist.perf.efficiency import noise_scale
from artist.policies.pollux.goodput import Config, best_config
from artist.policies.pollux.throughput import Observations, ThroughputParams, fit


class PolluxAgent:
    def __init__(self, spec: ElasticSpec, gpu_type: str, search: str = "adaptdl"):
        self.spec = spec
        self.search = search  # throughput.fit's search: "adaptdl" (Pollux's own agent) or "log"
        self.gpu_type = gpu_type
        self.limit: LocalBatchLimit = spec.limit(gpu_type)
        self._seen: dict[tuple[int, int, int, int], tuple[float, float | None]] = {}
        self._params: ThroughputParams | None = None
        self._stale = False  # a configuration seen since the last fit
        self.grad_sqr: float | None = None
        self.grad_var: float | None = None
        self.most_gpus = 0
        self.fits = 0
        self._cache: dict[tuple[int, int, float], Config | None] = {}

    def observe(self, nodes: int, replicas: int, local_batch: int, accum_steps: int, iter_seconds: float,
                accum_seconds: float | None, grad_sqr: float, grad_var: float) -> None:
        if not 1 <= nodes <= replicas or local_batch < 1 or accum_steps < 0 or not iter_seconds > 0:
            raise ValueError(f"bad observation: nodes {nodes}, replicas {replicas}, m {local_batch}, "
                             f"s {accum_steps}, {iter_seconds} s")
        self.grad_sqr, self.grad_var = float(grad_sqr), float(grad_var)
        self.most_gpus = max(self.most_gpus, replicas)
        key = (nodes, replicas, local_batch, accum_steps)
        new = key not in self._seen
        self._seen[key] = (float(iter_seconds), None if accum_seconds is None else float(accum_seconds))
        if new:
            self._stale = True

    @property
    def params(self) -> ThroughputParams | None:
        """The fitted theta_sys (None before any observation), refitted when first asked after a
        configuration the agent had not seen."""
        if self._stale:
            rows = [(*k, v[0], v[1]) for k, v in sorted(self._seen.items())]
            self._params = fit(Observations.of(rows), start=self._params, search=self.search)
            self._stale = False
            self.fits += 1
            self._cache.clear()
        return self._params

    @params.setter
    def params(self, value: ThroughputParams | None) -> None:
        self._params, self._stale = value, False
        self._cache.clear()

    @property
    def phi(self) -> float:
        if self.grad_sqr is None:
            return float("inf")
        return noise_scale(self.grad_sqr, self.grad_var, self.spec.initial_batch)

    @property
    def max_gpus(self) -> int:
        """2 x the most GPUs held so far (1 before the first observation), within the job's max_gpus and
        the GPUs its batch can feed at the smallest local batch ([A]: also <= 64 and max_bsz/min_local)."""
        batch = self.spec.fixed_batch or self.spec.max_batch
        feedable = max(1, batch // self.limit.min_local)
        return max(1, min(2 * self.most_gpus or 1, self.spec.max_gpus, feedable))

    def goodput(self, nodes: int, replicas: int) -> Config | None:
        if self.params is None:
            return None
        key = (nodes, replicas, self.phi)
        if key not in self._cache:
            self._cache[key] = best_config(self.params, self.phi, self.spec, self.limit, nodes, replicas)
        return self._cache[key]

    def report_stats(self, grad_sqr: float, grad_var: float) -> None:
        """New gradient statistics without a timing (e.g. at an epoch boundary)."""
        self.grad_sqr, self.grad_var = float(grad_sqr), float(grad_var)
