"""Crius' own loop (5-minute rounds over LLM jobs with Cells, heterogeneous pools): simulation.py runs
Crius and its baselines (artist/policies/crius/), truth.py times the plan a job runs on its real GPUs,
sweep.py runs a spec and prints the paper's table beside it. `loop: crius` sweeps go through
artist/sweep/crius.py."""
