"""Crius workloads: jobs with a random model, global batch, GPU type and GPU count, as Crius adapts traces
("GPU count and type are generated randomly", sec. 8.1; the authors' traces/regenerate_sim_trace.py).

    jobs = crius_jobs(pools, catalogue, count=60, seed=1, arrivals_per_hour=20)
    jobs = philly_jobs("cluster_job_log", pools, catalogue, count=500, seed=1)   # with a Philly log
    (both take truth=GroundTruth(catalogue.fabrics) to share its memo with the simulation)

Arrival times and durations: philly_jobs takes them from a Philly cluster_job_log (msr-fiddle/philly-
traces, read by artist/workload/traces/philly.py); the log is not shipped with the repository, so
crius_jobs draws arrivals from a Poisson process (rate given) and each job's duration on its own
request log-normal with median DURATION_MEDIAN_S, sigma DURATION_SIGMA, capped at DURATION_MAX_S:
INVENTED parameters shaped like Philly's heavy-tailed run times (Jeon et al., ATC'19: most jobs minutes to
hours, a tail of days), not fitted to it. The job's iterations = duration / its true step time on its
request (as the authors turn Philly run times into iterations).

Model mix (Crius Table 2 families present in the LLM zoo; Wide-ResNet is not in the zoo, so it is absent):
BERT 0.76/1.3/2.6/6.7 B with global batch 128/256/512, GShard MoE 0.69/1.3/2.4/10/27 B with 256/512/1024.
Weights (ours, after the authors' generator's shape): family 40 % BERT / 60 % MoE; batch the smallest
50/65, middle 10/65, largest 5/65 (the authors' prob_list_batch_size); size uniform; GPU count from
{1, 2, 4, 8, 16} with weights 10/15/20/20/15 (the authors' prob_list_gpu_num increments); GPU type uniform.
A draw whose request cannot run (no plan fits) is drawn again, as the authors' generator does.
"""

from __future__ import annotations

import numpy as np

from artist.crius.truth import GroundTruth
from artist.policies.crius.cluster import PoolAllocator
from artist.policies.crius.jobs import JobSpec

FAMILIES = {
    "bert": (("bert-0.76b", "bert-1.3b", "bert-2.6b", "bert-6.7b"), (128, 256, 512)),
    "moe": (("moe-0.69b", "moe-1.3b", "moe-2.4b", "moe-10b", "moe-27b"), (256, 512, 1024)),
}
FAMILY_WEIGHTS = {"bert": 0.4, "moe": 0.6}
BATCH_WEIGHTS = (50 / 65, 10 / 65, 5 / 65)
GPU_COUNTS = (1, 2, 4, 8, 16)
GPU_COUNT_WEIGHTS = (10, 15, 20, 20, 15)
DURATION_MEDIAN_S = 3600.0  # INVENTED (see module docstring)
DURATION_SIGMA = 1.2  # INVENTED
DURATION_MAX_S = 24 * 3600.0  # INVENTED
MAX_DRAWS = 1000  # per job: a cluster on which nothing can run is refused, not drawn forever


def _draw(rng, pools, catalogue, truth, duration_of):
    """One runnable job: (model, batch, N_G, type, true step seconds on its packed request, duration)."""
    types = sorted(pools)
    families = sorted(FAMILY_WEIGHTS)
    fam_p = np.array([FAMILY_WEIGHTS[f] for f in families])
    cnt_p = np.array(GPU_COUNT_WEIGHTS, dtype=float) / sum(GPU_COUNT_WEIGHTS)
    for _ in range(MAX_DRAWS):
        family = families[int(rng.choice(len(families), p=fam_p))]
        models, batches = FAMILIES[family]
        model = models[int(rng.integers(len(models)))]
        batch = batches[int(rng.choice(3, p=BATCH_WEIGHTS))]
        n_g = GPU_COUNTS[int(rng.choice(len(GPU_COUNTS), p=cnt_p))]
        gpu_type = types[int(rng.integers(len(types)))]
        duration = duration_of(rng)
        if n_g > pools[gpu_type].gpus:
            continue
        run = catalogue.run_plan(model, batch, n_g, gpu_type, n_g, False)
        if run is None:
            continue
        gpus = PoolAllocator(pools[gpu_type].topology).take(n_g)
        return model, batch, n_g, gpu_type, truth.seconds(run, gpus), duration
    raise ValueError(f"no runnable job found in {MAX_DRAWS} draws (is the cluster too small for the zoo?)")


def crius_jobs(pools, catalogue, count: int, seed: int, arrivals_per_hour: float,
               truth: GroundTruth | None = None) -> list[JobSpec]:
    if count < 0 or arrivals_per_hour <= 0:
        raise ValueError("count must be >= 0 and arrivals_per_hour > 0")
    truth = truth or GroundTruth(catalogue.fabrics)
    rng = np.random.default_rng(seed)

    def duration_of(r):
        return min(DURATION_MAX_S, float(r.lognormal(np.log(DURATION_MEDIAN_S), DURATION_SIGMA)))

    jobs, now = [], 0.0
    for k in range(count):
        now += float(rng.exponential(3600.0 / arrivals_per_hour))
        model, batch, n_g, gpu_type, step, duration = _draw(rng, pools, catalogue, truth, duration_of)
        jobs.append(JobSpec(f"j{k:04d}", round(now, 3), model, batch, n_g, gpu_type, max(1, int(duration / step))))
    return jobs


def philly_jobs(path, pools, catalogue, count: int, seed: int, truth: GroundTruth | None = None) -> list[JobSpec]:
    """The first `count` GPU jobs of a Philly cluster_job_log with a logged run time (submission order):
    arrivals from the log (relative to the first), durations as logged, model / batch / GPU count / type
    drawn as crius_jobs draws them (the log's own GPU count is not used, as Crius' adaptation)."""
    from artist.workload.traces.philly import read_philly
    from artist.workload.traces.record import LoadReport

    truth = truth or GroundTruth(catalogue.fabrics)
    report = LoadReport(str(path), "philly")
    records = sorted((r for r in read_philly(path, report) if r.gpus > 0 and r.duration and r.duration > 0),
                     key=lambda r: (r.submit, r.job_id))[:count]
    rng = np.random.default_rng(seed)
    jobs = []
    for k, record in enumerate(records):
        model, batch, n_g, gpu_type, step, duration = _draw(rng, pools, catalogue, truth, lambda r: record.duration)
        jobs.append(JobSpec(f"p{k:05d}-{record.job_id}", round(record.submit - records[0].submit, 3), model, batch,
                            n_g, gpu_type, max(1, int(duration / step))))
    return jobs
