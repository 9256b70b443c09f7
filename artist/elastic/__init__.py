"""Elastic, goodput-driven jobs (Pollux, Qiao et al. OSDI'21): what they may change and their measured data.

- spec.py: ElasticSpec (GPU range, initial/max batch, per-GPU-type local batch limits, restart cost),
  split_batch / split_batches (total batch -> local batch m and accumulation passes s),
  candidate_batches
- measured.py: the Pollux artifact's measured tables of one application (gradient statistics per
  epoch and batch, compute time per local batch) -> MeasuredApplication
- applications.py: the six Pollux applications as shipped in workloads/pollux/
- progress.py: ElasticProgress, the ground truth of a job's progress in M0-equivalent steps (epochs,
  gain, restart delay)
- jobs.py: ElasticJobs, what happens inside a job (admission, Sia's profiling, (m, s) tuning, restarts,
  training spans its agent observes, shared contention per round)
- exact.py: elastic jobs in the exact event loop (artist/simulator.py): simulate_elastic, the loop's record
  of a job and its per-round clock; allocators.py: an elastic allocator as the loop's policy
- cluster.py: clusters of several GPU types (pools), their step timer and their nodes on one GPU map
- result.py: ElasticResult; metrics.py: its tables
- fairness_hetero.py: Sia's finish-time fairness across GPU types (rho = sum_g N_g/N rho_g) for summaries
- pipeline_step.py: a pipeline job's iteration by ArtISt's 1F1B step on its placement (Sia's scale-unit jobs)

Statistical efficiency itself is artist/perf/efficiency.py.
"""
