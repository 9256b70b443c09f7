"""One sweep run inside a worker process: build the CommModel (once per process), simulate, tabulate.

Workers receive everything loaded (topology, jobs, models, calibration
profile) and touch no file but the latency cache, so the same task runs in a
local joblib worker or on a Dask or Ray worker of another machine. They return
tables; the driver writes them (sweep_store.py), so a result store on the
driver's disk is all a cluster needs.
"""

from __future__ import annotations

import os
import socket
import time
import traceback
from collections import OrderedDict
from dataclasses import dataclass
from typing import Mapping

import pandas as pd

from artist import lifeline
from artist.metrics import job_table, summary, utilisation_table
from artist.policies.registry import make_policy
from artist.simulator import simulate
from artist.sweep_spec import Run, canonical_json
from artist.workload import ModelProfile


@dataclass
class RunOutcome:
    run_id: str
    jobs: pd.DataFrame | None
    summary: dict | None
    utilisation: pd.DataFrame | None
    cache_hits: int  # latency look-ups this run answered from the cache
    cache_misses: int  # latency look-ups this run had to simulate
    wall_seconds: float
    host: str
    pid: int
    error: str | None = None  # a traceback when the run failed

    @property
    def ok(self) -> bool:
        return self.error is None


# One CommModel per setting per process: a worker imports ns-3 once and the
# cache's in-process memo serves every later run of that worker.
_PROCESS_MODELS: "OrderedDict[tuple, tuple]" = OrderedDict()
_PROCESS_MODELS_MAX = 16


def comm_model_for(run: Run, cache_path: str | None, use_cache: bool):
    """(the CommModel the simulator asks, the Cached layer inside it or None)."""
    cal = run.calibration.profile
    key = (run.backend, run.algorithm, run.channels, canonical_json(run.comm_options), run.topology,
           cal.id if cal is not None else None, cache_path, use_cache, os.getpid())
    entry = _PROCESS_MODELS.get(key)
    if entry is None:
        from artist.network.cache import LatencyStore
        from artist.network.factory import build_comm_stack

        if run.backend == "ns3":
            _check_may_start_processes()
        store = LatencyStore(cache_path) if use_cache else None  # cache_path None: the worker's default store
        model, cached = build_comm_stack(run.backend, run.topology, algorithm=run.algorithm, channels=run.channels,
                                         options=run.comm_options, store=store, profile=cal)
        entry = _PROCESS_MODELS[key] = (model, cached)
        while len(_PROCESS_MODELS) > _PROCESS_MODELS_MAX:
            _PROCESS_MODELS.popitem(last=False)
    return entry


def _check_may_start_processes() -> None:
    """The ns-3 backend runs ns-3 in a child process; daemonic processes (Dask workers by default)
    may not have children, and multiprocessing's own message for it names nothing useful."""
    import multiprocessing as mp

    if mp.current_process().daemon:
        raise RuntimeError("the ns3 backend starts an ns-3 child process, but this worker process is daemonic "
                           "(the Dask default) and may not have children: start the Dask workers with "
                           "DASK_DISTRIBUTED__WORKER__DAEMON=False in their environment")


def execute(run: Run, models: Mapping[str, ModelProfile], cache_path: str | None = None,
            use_cache: bool = True) -> RunOutcome:
    # In a worker process (loky, or a Dask worker under its nanny): exit if the process that
    # started it dies, as a kill -9 of the sweep would otherwise leave it simulating. Does
    # nothing in the user's own process (-j 1 runs here) nor in a Ray worker (artist/lifeline.py).
    lifeline.arm()
    started = time.perf_counter()
    hits = misses = 0
    try:
        comm, cached = comm_model_for(run, cache_path, use_cache)
        before = (cached.session.hits, cached.session.misses) if cached is not None else (0, 0)
        policy = make_policy(run.policy.name, **run.policy.params)
        try:
            result = simulate(run.topology, run.jobs, models, policy, comm, run.simulator)
        finally:
            if cached is not None:
                hits = cached.session.hits - before[0]
                misses = cached.session.misses - before[1]
                cached.flush()  # joblib workers may never run atexit handlers: push counters now
        jobs = job_table(result)
        row = summary(result, jobs)
        row.pop("policy")  # the results table names the policy by its axis label
        return RunOutcome(run.run_id, jobs, row, utilisation_table(result), hits, misses,
                          time.perf_counter() - started, socket.gethostname(), os.getpid())
    except Exception:  # noqa: BLE001 - reported by the driver with the run's parameters, never dropped
        return RunOutcome(run.run_id, None, None, None, hits, misses, time.perf_counter() - started,
                          socket.gethostname(), os.getpid(), error=traceback.format_exc())
