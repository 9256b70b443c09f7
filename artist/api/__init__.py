"""The implementation of ArtISt's Python API; import the names from `artist` itself (artist/__init__.py).

One module per job, each a thin layer over the code the `artist` command of that job runs:
- inputs.py: load_topology, load_workload, load_models
- simulation.py: simulate and its Result (`artist simulate`)
- sweeps.py: run_sweep (`artist sweep`)
- calibration.py: calibrate, check, load_profile (`artist calibrate`)
- network.py: comm (`artist comm`), compute_latency_table (`artist latency-table`)
- plans.py: plans (`artist plans`)
- _options.py: each keyword checked as the command's option of that name checks it
"""
