"""Crius' jobs (LLM jobs with Cells on heterogeneous pools) in the exact event loop: exact.py is the
workload (profiling, plans, restarts, each round's progress), allocators.py runs Crius and its baselines
(artist/policies/crius/) at 5-minute rounds, simulation.py runs one, truth.py times the plan a job runs on
its real GPUs. Sweeps of Crius' jobs (`crius:` workloads) go through
artist/sweep/crius.py."""
