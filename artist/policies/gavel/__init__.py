"""Gavel (Narayanan et al., OSDI'20): heterogeneity-aware allocation as linear programs over a
per-(job, GPU type) throughput matrix, realised by round-based leases.

- throughputs.py: what the policy observes, profiled throughputs per (job, GPU type) at the job's
  GPU count (ThroughputProfiler), gathered into the matrix the LPs read; the equal-share throughput
- lp.py: the policies as LPs solved with HiGHS (scipy.optimize.linprog): max-sum-throughput and
  max-min fairness (LAS), space sharing off. Matrix in, allocation X[job, type] (fraction of time) out:
  the function API other policies reuse (Crius's Gavel baseline)
- rounds.py: the round-based realisation: per round, jobs picked across types by priority
  X / (fraction of rounds received), within each type's GPUs and the job's scale factor; then
  placed on nodes, keeping a re-picked job where it was
- policy.py: GavelPolicy, an elastic allocator (artist/elastic/allocators.py runs it in the event loop) for rigid jobs
  (Gavel+TunedJobs: the workload's GPU count and batch per job), for any number of GPU types

Nothing here imports the network model: throughputs come from a profiler the simulator side provides
(artist/elastic/profiling.py).
"""
