"""Sweeps: a spec's cross product of runs, executed in parallel, stored as they finish, plotted.

- spec.py: reading and checking a sweep spec (load_sweep_spec); axes.py: the axes' values
- runs.py: the runs (the cross product) and identity.py: each run's identity and id
- run.py: executing the runs not done yet, locally (joblib) or on Dask / Ray (run_sweep)
- worker.py: one run inside a worker process; store.py: the resumable result store
- plots.py: the figures of a finished sweep
"""
