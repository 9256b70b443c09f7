"""One sweep run inside a worker process: build the network stack (once per process), simulate, tabulate.

Workers receive everything loaded (topology, jobs, models, calibration
profile) and touch no file but the latency cache, so the same task runs in a
local joblib worker or on a Dask or Ray worker of another machine. They return
tables; the driver writes them (store.py), so a result store on the
driver's disk is all a cluster needs.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import time
import traceback
from dataclasses import dataclass, field
from typing import Mapping

import pandas as pd

from artist import lifeline
from artist.metrics import job_table, summary, utilisation_table
from artist.network.stack import cached_layer, fabric_for
from artist.policies.plugins import load_plugin
from artist.policies.registry import make_policy
from artist.simulator import simulate
from artist.sweep.runs import Run
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
    tables: dict = field(default_factory=dict)  # more per-run tables, name -> DataFrame (elastic runs)
    info: dict = field(default_factory=dict)  # more of how it went, for run.json (elastic: policy seconds)
    answers: object = None  # AnswerCounts: which path answered its network questions (network/provenance.py)

    @property
    def ok(self) -> bool:
        return self.error is None


def comm_for(run: Run, cache_path: str | None, use_cache: bool):
    """The network stack the simulator asks (built once per process, stack.fabric_for), with the
    cache at cache_path (None: this worker machine's default cache) unless use_cache is False,
    and the run's calibration profile as shipped (the worker may not have the file)."""
    if run.comm.backend == "ns3":
        _check_may_start_processes()
    if use_cache and cache_path is None:
        from artist.network.cache import default_cache_path

        cache_path = str(default_cache_path())
    spec = dataclasses.replace(run.comm, cache=cache_path if use_cache else None)
    return fabric_for(spec, run.topology, run.calibration.profile)


def _check_may_start_processes() -> None:
    """The ns-3 backend runs ns-3 in a child process; daemonic processes (Dask workers by default)
    may not have children, and multiprocessing's own message for it names nothing useful."""
    import multiprocessing as mp

    if mp.current_process().daemon:
        raise RuntimeError("the ns3 backend starts an ns-3 child process, but this worker process is daemonic "
                           "(the Dask default) and may not have children: start the Dask workers with "
                           "DASK_DISTRIBUTED__WORKER__DAEMON=False in their environment")


def execute(run: Run, models: Mapping[str, ModelProfile], cache_path: str | None = None,
            use_cache: bool = True, preloaded: Mapping | None = None) -> RunOutcome:
    """One run, whichever loop it takes; its outcome records the CPU seconds of this process
    (`cpu_seconds` in run.json: the run's own process; ns-3 worker processes it asked are not in it).
    preloaded: ns-3 collectives answered by a cluster prefetch (prefetch.py), given to the run's model."""
    cpu = time.process_time()
    outcome = _execute(run, models, cache_path, use_cache, preloaded)
    outcome.info = {**outcome.info, "cpu_seconds": round(time.process_time() - cpu, 3)}
    return outcome


def _execute(run: Run, models: Mapping[str, ModelProfile], cache_path: str | None,
             use_cache: bool, preloaded: Mapping | None) -> RunOutcome:
    # In a worker process (loky, or a Dask worker under its nanny): exit if the process that
    # started it dies, as a kill -9 of the sweep would otherwise leave it simulating. Does
    # nothing in the user's own process (-j 1 runs here) nor in a Ray worker (artist/lifeline.py).
    lifeline.arm()
    if run.elastic is not None:  # the elastic loop or Crius' (its config's execute), not artist/simulator.py
        from artist.sweep.elastic import execute_elastic

        if hasattr(run.elastic, "execute"):
            return run.elastic.execute(run, models, cache_path, use_cache)

        return execute_elastic(run, models, cache_path, use_cache)
    started = time.perf_counter()
    hits = misses = 0
    try:
        comm = comm_for(run, cache_path, use_cache)
        if preloaded:
            from artist.sweep.prefetch import seed_runs_memo

            seed_runs_memo(comm, preloaded)
        cached = cached_layer(comm)
        before = (cached.session.hits, cached.session.misses) if cached is not None else (0, 0)
        if run.policy.plugin:  # a fresh worker process: the user's file registers the policy here too
            load_plugin(run.policy.plugin)
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
                          time.perf_counter() - started, socket.gethostname(), os.getpid(),
                          info=result.answers.cost(), answers=result.answers)
    except Exception:  # noqa: BLE001 - reported by the driver with the run's parameters, never dropped
        return RunOutcome(run.run_id, None, None, None, hits, misses, time.perf_counter() - started,
                          socket.gethostname(), os.getpid(), error=traceback.format_exc())
