"""Crius' jobs (LLM jobs with Cells on heterogeneous pools) in the exact event loop: exact.py is the
workload (profiling, plans, restarts, each round's progress), allocators.py runs Crius and its baselines
(artist/policies/crius/) at 5-minute rounds, simulation.py runs one, truth.py times the plan a job runs on
its real GPUs, sweep.py runs a spec and prints the paper's table beside it. `loop: crius` sweeps go through
artist/sweep/crius.py."""
