"""A mixed LLM workload: a Poisson stream of hybrid-parallel jobs of LLM-zoo models, each with a fixed plan;
and a stream mixing them into data-parallel jobs (llm_fraction= of the batch and poisson generators).

    llm:n=40,interarrival=900,models=gpt3-1.3b|gpt3-6.7b|llama2-13b,gpus=8|16|32,global_batch=512

Jobs are drawn as poisson_jobs draws them (same seed -> same jobs): a model, a GPU count and a
length in training steps; each then gets the plan of perf/hybrid_job.py's default_plan (TP inside a
machine, the fewest pipeline stages that fit the GPU memory, DP for the rest), or with plan=auto the
plan "auto" (the fastest plan on whatever placement it gets), and the global batch.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from artist.parallel.plan import DEFAULT_GLOBAL_BATCH
from artist.workload.generators import JobMix, poisson_jobs
from artist.workload.job import Job

# The default mix: the zoo's GPT-3 (Brown et al. 2020, Table 2.1) and LLaMA-2 (Touvron et al. 2023)
# sizes that train on one to eight 8-GPU machines; the project's choice, not a measured mix.
DEFAULT_LLM_MODELS = ("gpt3-1.3b", "gpt3-2.7b", "gpt3-6.7b", "gpt3-13b", "llama2-7b", "llama2-13b")
DEFAULT_LLM_GPUS = (8, 16, 32, 64)
MIX_STREAM = 0x11A  # any constant: names mix_in_llm_jobs' coin-flip stream apart from the job draws of a seed


def llm_jobs(n: int, mix: JobMix, mean_interarrival_s: float, seed: int, global_batch: int = DEFAULT_GLOBAL_BATCH,
             gpu_memory_bytes: float = 80 * 2**30, gpus_per_machine: int = 8, auto: bool = False) -> list[Job]:
    """ValueError (naming the model and GPU count) when a drawn (model, GPUs) has no plan that fits.
    auto: every job's plan is "auto" (the performance model takes the fastest plan on each placement)."""
    from artist.perf.hybrid_job import default_plan
    from artist.workload.zoo import zoo_model

    plans: dict[tuple[str, int], str] = {}
    out = []
    for job in poisson_jobs(n, mix, mean_interarrival_s, seed):
        key = (job.model, job.gpus)
        if auto:
            plans[key] = "auto"
        elif key not in plans:
            plans[key] = default_plan(zoo_model(job.model), job.gpus, global_batch, gpu_memory_bytes,
                                      gpus_per_machine).text()
        out.append(replace(job, job_id="l" + job.job_id[1:], plan=plans[key], global_batch=global_batch))
    return out


def mix_in_llm_jobs(ddp: list[Job], llm: list[Job], fraction: float, seed: int) -> list[Job]:
    """Job i is llm[i] with probability `fraction`, else ddp[i], each keeping ddp[i]'s arrival (one
    arrival stream, two kinds of jobs). The coin flips come from their own stream (seed, MIX_STREAM),
    so the DDP and LLM draws stay what poisson_jobs / llm_jobs draw for that seed."""
    if len(ddp) != len(llm):
        raise ValueError(f"{len(ddp)} DDP jobs and {len(llm)} LLM jobs: one of each per arrival expected")
    coins = np.random.default_rng([seed, MIX_STREAM]).random(len(ddp))
    return [replace(b, arrival=a.arrival) if coin < fraction else a for a, b, coin in zip(ddp, llm, coins)]
