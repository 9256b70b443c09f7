"""Sia (Jayaram Subramanya et al., SOSP'23): heterogeneity-aware goodput scheduling by an ILP over
per-type configurations (digest section 2).

- configs.py: the configuration set per GPU type (powers of two inside a node, whole nodes beyond)
- estimator.py: per-(job, type) goodput of every configuration: the job's fitted model on a type it has
  run multi-GPU on, else the bootstrap from one that it has, else linear from the 1-GPU profile
- matrix.py: the options of every job (adaptive, strong-scaling, rigid) with row-normalised, restart-
  factored, p-powered values
- pipeline.py: pipeline (scale-unit) jobs: P GPUs per replica per type, GPipe goodput from the artifact's
  GPT tables (or ArtISt's 1F1B step, artist/elastic/pipeline_step.py), the replica placement rule
- ilp.py: the ILP (at most one option per job, GPUs per type, pinned jobs) solved exactly with HiGHS
- placer.py: options -> GPUs per node (partial nodes never split, whole nodes whole, evictions)
- scheduler.py: SiaScheduler, the elastic loop's Allocator
"""
