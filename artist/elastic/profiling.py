"""Profiling a rigid job alone on each GPU type: what a throughput-matrix policy (Gavel) may observe.

The simulator side measures it, not the policy: the job's iteration time from the loop's StepTimer (the
ground truth: measured compute + the network model) on its GPU count placed on as few nodes of the type
as hold it, at the (m, s) the loop runs its fixed batch with (split_batch within the type's memory; the
loop's clamp to the maximum batch). The policy receives only the number, samples per second (or
iterations per second: the Sia artifact's Gavel reads those); 0 where the batch fits no local batch of the
type's memory. Where the run's rules slow a job's progress (elastic.rules goodput_slowdown: the Sia
artifact's calibration), the profile sees the slowed rate, as a measurement of the job would. Profiling is
not charged (Gavel assumes the throughputs known; digest 2.6 for Sia's own profiling cost).
"""

from __future__ import annotations

from typing import Mapping, Sequence

from artist.elastic.measured import MeasuredApplication
from artist.elastic.spec import ElasticSpec, fixed_batch_config


UNITS = ("samples", "iterations")  # per second: samples (ArtISt's Gavel), whole-batch iterations (Sia artifact's)


class IsolatedProfiler:
    """throughput(job_id, gpu_type, gpus) for the jobs of a workload (ElasticJobSpec with gpus and batch)."""

    def __init__(self, timer, apps: Mapping[str, tuple[MeasuredApplication, ElasticSpec]], jobs: Sequence,
                 gpus_per_node: Mapping[str, int], unit: str = "samples", slowdowns: Mapping[str, float] = {}):
        if unit not in UNITS:
            raise ValueError(f"throughput unit must be one of {', '.join(UNITS)}, got {unit!r}")
        self.timer, self.gpus_per_node = timer, dict(gpus_per_node)
        self._jobs = {j.job_id: j for j in jobs}
        self._apps = apps
        self.unit, self.slowdowns = unit, dict(slowdowns)
        self.calls = 0

    def throughput(self, job_id: str, gpu_type: str, gpus: int) -> float:
        job = self._jobs.get(job_id)
        if job is None or not job.batch:
            raise ValueError(f"job {job_id}: no rigid configuration to profile (needs gpus and batch)")
        if gpu_type not in self.gpus_per_node:
            raise ValueError(f"GPU type {gpu_type!r}: GPUs per node unknown (known: {sorted(self.gpus_per_node)})")
        app, spec = self._apps[job.app]
        if gpu_type not in app.compute:
            return 0.0  # never measured on this type: the job cannot be placed there
        # (m, s) as the loop's _tune picks them (kept equal by tests/test_gavel_loop.py)
        split = fixed_batch_config(job.batch, gpus, spec, gpu_type)
        if split is None:
            return 0.0
        m, s = split
        per_node = [self.gpus_per_node[gpu_type]] * (gpus // self.gpus_per_node[gpu_type])
        if gpus % self.gpus_per_node[gpu_type]:
            per_node.append(gpus % self.gpus_per_node[gpu_type])
        self.calls += 1
        iter_seconds, _ = self.timer.seconds(job.app, gpu_type, per_node, m, s)
        iter_seconds *= self.slowdowns.get(job.app, 1.0)  # progress divided by the factor: iterations take longer
        return (1.0 if self.unit == "iterations" else gpus * m * (s + 1)) / iter_seconds
