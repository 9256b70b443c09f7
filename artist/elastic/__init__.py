"""Elastic, goodput-driven jobs (Pollux, Qiao et al. OSDI'21): what they may change and their measured data.

- spec.py: ElasticSpec (GPU range, initial/max batch, per-GPU-type local batch limits, restart cost),
  split_batch (total batch -> local batch m and accumulation passes s), candidate_batches
- measured.py: the Pollux artifact's measured tables of one application (gradient statistics per
  epoch and batch, compute time per local batch) -> MeasuredApplication
- applications.py: the six Pollux applications as shipped in workloads/pollux/

Statistical efficiency itself is artist/perf/efficiency.py.
"""
