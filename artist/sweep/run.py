"""Sweeps: a spec's runs, executed in parallel, stored as they finish, tabulated and plotted.

    spec = load_sweep_spec("sweeps/quick.yaml")      # checks everything, expands the runs (spec.py)
    report = run_sweep(spec, "results/quick", n_jobs=-1)

Execution over the runs that are not done yet:
- ``backend="local"``: loky worker processes on this machine (``n_jobs``, -1 = all cores);
- ``backend="dask"``: an existing Dask cluster (``address`` of its scheduler), one Dask task
  per run; needs ``pip install 'dask[distributed]'`` on the driver and every worker;
- ``backend="ray"``: an existing Ray cluster (``address``, e.g. ``HEAD:6379``, ``ray://head:10001``
  or ``auto``), one Ray task per run; needs ``pip install 'ray[default]'`` everywhere.
Workers need ArtISt (and ns-3 for ns3 runs) installed, nothing else: they get
every input loaded and return tables, which the driver writes (store.py).
Each worker process builds its own network stack once and shares the latency cache
of its machine ($ARTIST_CACHE_DIR; on a cluster each machine keeps its own, on
a local disk: SQLite's WAL does not work over NFS).

On a Dask cluster, step by step:
    pip install -e '.[dask]'                                  # driver and every worker machine
    dask scheduler                                            # on the head: prints tcp://HEAD:8786
    DASK_DISTRIBUTED__WORKER__DAEMON=False dask worker tcp://HEAD:8786 --nworkers 8 --nthreads 1
    artist sweep sweeps/dally-racks.yaml --executor dask --address tcp://HEAD:8786
(--nthreads 1: a run is pure Python and holds the GIL; the daemon setting lets a
worker start the ns-3 child process, which daemonic processes may not.)
On a Ray cluster: pip install -e '.[ray]' everywhere; `ray start --head` on the
head, `ray start --address HEAD:6379` on the others; then
    artist sweep SPEC --executor ray --address auto           # on a cluster machine
Both are tested where installed: tests/test_sweep_dask.py (a LocalCluster) and
tests/test_sweep_ray.py (a head started with `ray start --head`).
"""

from __future__ import annotations

import os
import signal
import threading
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from artist.errors import InputError
from artist.network.provenance import AnswerCounts
from artist.report.evaluate import write_report_spec
from artist.sweep.runs import Run
from artist.sweep.spec import SweepSpec
from artist.sweep.store import ResultStore

EXECUTORS = ("local", "dask", "ray")


@dataclass
class SweepReport:
    out_dir: Path
    total: int  # runs in the spec
    already_done: int  # found complete in the store and skipped
    executed: list[str] = field(default_factory=list)  # run ids run and stored by this call
    failed: list[tuple[Run, str]] = field(default_factory=list)  # (run, traceback)
    cache_hits: int = 0
    cache_misses: int = 0
    wall_seconds: float = 0.0
    results_csv: Path | None = None
    results_parquet: Path | None = None
    plots: list[Path] = field(default_factory=list)
    prefetch: object = None  # prefetch.PrefetchReport when asked for
    answers: AnswerCounts = field(default_factory=AnswerCounts)  # the runs executed now: which path answered

    @property
    def cache_hit_rate(self) -> float | None:
        lookups = self.cache_hits + self.cache_misses
        return self.cache_hits / lookups if lookups else None


def describe_runs(spec: SweepSpec, out_dir: str | Path) -> list[str]:
    """The --dry-run listing: one line per run, with whether it is already done, then the count."""
    store = ResultStore(out_dir)
    lines, done = [], 0
    width = len(str(len(spec.runs)))
    for run in spec.runs:
        finished = store.is_done(run)
        done += finished
        lines.append(f"{run.index + 1:>{width}}  {run.run_id}  {'done' if finished else 'todo'}  {run.describe()}")
    lines.append(f"{len(spec.runs)} runs ({done} done, {len(spec.runs) - done} to run) -> {Path(out_dir)}")
    return lines


def _cache_path(use_cache: bool, cache_dir: str | Path | None, executor: str) -> str | None:
    """What workers open: None = each worker's own default ($ARTIST_CACHE_DIR, ...)."""
    if not use_cache:
        return None
    from artist.network.cache import CACHE_FILE_NAME, default_cache_path

    if cache_dir is not None:
        return str((Path(cache_dir) / CACHE_FILE_NAME).resolve())
    # Local workers share the driver's cache file; remote workers use their machine's.
    return str(default_cache_path().resolve()) if executor == "local" else None


@contextmanager
def sigint_held():
    """SIGINT blocked in this thread while worker processes start, so they start with it blocked: Ctrl-C (sent
    to the whole foreground process group) then reaches this process alone, which stops the workers (closing
    joblib's generator kills them) and says in one line what is saved, instead of each worker printing the
    traceback of an interrupted import. A Ctrl-C inside the window stays pending and is raised on leaving it."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    # Python's resource tracker unblocks SIGINT in this thread after starting its own process (3.11's
    # multiprocessing.resource_tracker: SIG_UNBLOCK, not the mask it found): start both trackers first
    from multiprocessing import resource_tracker

    from joblib.externals.loky.backend import resource_tracker as loky_resource_tracker

    resource_tracker.ensure_running()
    loky_resource_tracker.ensure_running()
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _outcomes(todo: Sequence[Run], spec: SweepSpec, n_jobs: int, executor: str, address: str | None,
              cache_path: str | None, use_cache: bool, preloaded: dict | None = None):
    """Each run's RunOutcome, yielded as it finishes (so it is stored at once)."""
    from artist.sweep.worker import execute

    if executor == "local":
        if n_jobs == 1 or len(todo) <= 1:
            for run in todo:
                yield execute(run, spec.models, cache_path, use_cache)
            return
        from joblib import Parallel, delayed

        # loky worker processes; batch_size=1: runs are long and uneven. The runs already fill the cores:
        # each worker's ns-3 pool (artist/network/ns3/runner.py) keeps to one ns-3 process unless told otherwise.
        # (loky workers take this process's environment when they start; restored afterwards).
        before = os.environ.get("ARTIST_NS3_WORKERS")
        os.environ["ARTIST_NS3_WORKERS"] = before or "1"
        try:
            parallel = Parallel(n_jobs=n_jobs, backend="loky", return_as="generator_unordered", batch_size=1)
            with sigint_held():  # the workers start (and dispatch begins) inside Parallel's call
                outcomes = parallel(delayed(execute)(run, spec.models, cache_path, use_cache) for run in todo)
            yield from outcomes
        finally:
            if before is None:
                os.environ.pop("ARTIST_NS3_WORKERS", None)
    elif executor == "dask":
        yield from _dask_outcomes(todo, spec, n_jobs, address, cache_path, use_cache, preloaded)
    elif executor == "ray":
        yield from _ray_outcomes(todo, spec, n_jobs, address, cache_path, use_cache, preloaded)
    else:
        raise InputError("command line", "--executor", f"unknown executor {executor!r}; known: {', '.join(EXECUTORS)}")


# The cluster backends use their own task APIs, not joblib's: joblib's Ray backend cannot return
# results unordered, and joblib runs everything in the driver when a Dask cluster has one thread.


def _throttled(todo: Sequence[Run], n_jobs: int, submit, wait_one):
    """Submit runs keeping at most n_jobs in flight (-1: all at once); yield each outcome as it
    finishes. submit(run) -> handle; wait_one(handles) -> (outcome, the handles still running)."""
    waiting, in_flight = list(todo), []
    while waiting or in_flight:
        while waiting and (n_jobs == -1 or len(in_flight) < n_jobs):
            in_flight.append(submit(waiting.pop(0)))
        outcome, in_flight = wait_one(in_flight)
        yield outcome


def _dask_outcomes(todo: Sequence[Run], spec: SweepSpec, n_jobs: int, address: str, cache_path: str | None,
                   use_cache: bool, preloaded: dict | None = None):
    try:
        from distributed import Client, wait
    except ImportError:
        raise InputError("command line", "--executor dask",
                         "dask.distributed is not installed: pip install 'dask[distributed]'") from None
    from artist.sweep.worker import execute

    def wait_one(futures):
        done = wait(futures, return_when="FIRST_COMPLETED").done
        first = next(f for f in futures if f in done)  # the earliest submitted of those done
        return first.result(), [f for f in futures if f is not first]

    _check_reachable(address, "dask scheduler")
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError) as exc:
        raise InputError("command line", "--address", f"cannot reach the dask scheduler at {address}: "
                                                      f"{' '.join(str(exc).split())}") from None
    with client:
        models = client.scatter(spec.models, broadcast=True)  # shipped once, not once per run
        answers = client.scatter(preloaded, broadcast=True) if preloaded else None
        yield from _throttled(todo, n_jobs, lambda run: client.submit(execute, run, models, cache_path, use_cache,
                                                                      answers, pure=False), wait_one)


CONNECT_TIMEOUT_S = 10.0  # a cluster's scheduler answers a TCP connect in milliseconds


def _check_reachable(address: str, what: str) -> None:
    """A TCP connect to host:port of the address (tcp://, ray:// or bare), so that a wrong address is one line
    in seconds, not a library's traceback after its own 30-60 s of retries. Addresses without a port (ray's
    'auto') are left to the library."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        raise InputError("command line", "--address", f"not a host:port address: {address!r}") from None
    if not host or port is None:
        return
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise InputError("command line", "--address", f"no {what} answers at {address} "
                                                      f"({exc.strerror or exc})") from None


def _ray_outcomes(todo: Sequence[Run], spec: SweepSpec, n_jobs: int, address: str, cache_path: str | None,
                  use_cache: bool, preloaded: dict | None = None):
    try:
        import ray
    except ImportError:
        raise InputError("command line", "--executor ray", "ray is not installed: pip install 'ray[default]'") from None
    from artist.sweep.worker import execute

    def wait_one(refs):
        (done,), running = ray.wait(refs, num_returns=1)
        return ray.get(done), running

    _check_reachable(address, "ray cluster")
    try:
        ray.init(address=address)
    except Exception as exc:  # noqa: BLE001 - ray raises many kinds (ConnectionError, RuntimeError, ImportError)
        raise InputError("command line", "--address", f"cannot start ray with address {address}: "
                                                      f"{' '.join(str(exc).split())[:300]}") from None
    try:
        task = ray.remote(num_cpus=1)(execute)  # a run is one single-threaded process
        models = ray.put(spec.models)  # shipped once, not once per run
        answers = ray.put(preloaded) if preloaded else None
        yield from _throttled(todo, n_jobs, lambda run: task.remote(run, models, cache_path, use_cache, answers),
                              wait_one)
    finally:
        ray.shutdown()


def run_sweep(spec: SweepSpec, out_dir: str | Path, *, n_jobs: int = -1, executor: str = "local",
              address: str | None = None, use_cache: bool = True, cache_dir: str | Path | None = None,
              progress: bool = True, plots: bool = True, prefetch: bool = False,
              on_stored: Callable[[Run, object], None] | None = None) -> SweepReport:
    """Run what is not done yet, store each run as it finishes, then write the table and the plots
    (only when every run succeeded: a table with holes would look complete). prefetch: first answer the
    runs' distinct ns-3 collectives in parallel, longest first (prefetch.py)."""
    from tqdm import tqdm

    if executor not in EXECUTORS:
        raise InputError("command line", "--executor", f"unknown executor {executor!r}; known: {', '.join(EXECUTORS)}")
    if executor != "local" and not address:
        raise InputError("command line", "--address", f"--executor {executor} needs the address of a running cluster")
    if n_jobs == 0 or n_jobs < -1:
        raise InputError("command line", "-j", f"must be a positive worker count or -1 (all cores), got {n_jobs}")
    started = time.perf_counter()
    by_id = {run.run_id: run for run in spec.runs}
    with ResultStore(out_dir) as store:
        others = store.sweeps_logged() - {spec.name}
        if others:  # its results table and plots would be replaced by this sweep's
            raise InputError("command line", "--out", f"{store.out} holds the results of sweep "
                                                      f"{sorted(others)[0]!r}, not {spec.name!r}; choose another "
                                                      f"directory")
        todo = [run for run in spec.runs if not store.is_done(run)]
        report = SweepReport(store.out, len(spec.runs), len(spec.runs) - len(todo))
        cache_path = _cache_path(use_cache, cache_dir, executor)
        if todo and cache_path is not None:
            from artist.network.cache import check_cache_usable

            check_cache_usable(cache_path)  # a damaged cache: one line now, not a failure in every run
        preloaded = None
        if prefetch and todo and (use_cache or executor != "local"):
            from artist.sweep.prefetch import prefetch as prefetch_collectives

            workers = n_jobs if n_jobs > 0 else default_workers()
            report.prefetch = prefetch_collectives(todo, spec.models, cache_path=cache_path, executor=executor,
                                                   address=address, workers=workers, progress=progress)
            preloaded = report.prefetch.preloaded or None
        bar = tqdm(total=len(todo), desc=f"sweep {spec.name}", unit="run", disable=not progress or not todo,
                   dynamic_ncols=True)
        try:
            # Ctrl-C closes the generator: joblib then warns about the cancelled tasks, which the
            # command's one-line summary already accounts for.
            warnings.filterwarnings("ignore", message=r".*tasks which were still being processed", category=UserWarning)
            for outcome in _outcomes(todo, spec, n_jobs, executor, address, cache_path, use_cache, preloaded):
                run = by_id[outcome.run_id]
                report.cache_hits += outcome.cache_hits
                report.cache_misses += outcome.cache_misses
                if outcome.answers is not None:
                    report.answers.merge(outcome.answers)
                if outcome.ok:
                    store.write_run(run, outcome)
                    report.executed.append(run.run_id)
                    if on_stored is not None:
                        on_stored(run, outcome)
                else:
                    report.failed.append((run, outcome.error))
                    # one line here; the whole traceback in OUT/failed/ (a sweep of many runs stays readable)
                    kept = store.write_failure(run, outcome.error or "")
                    last = (outcome.error or "").strip().splitlines()[-1:] or ["?"]
                    bar.write(f"run failed: {run.describe()}: {last[0]} (traceback: {kept})")
                rate = report.cache_hit_rate
                bar.set_postfix_str(f"cache hits {'-' if rate is None else f'{100 * rate:.1f}%'}, "
                                    f"{report.cache_misses} simulated, {len(report.failed)} failed", refresh=False)
                bar.update(1)
        finally:
            bar.close()
        if not report.failed:
            report.results_csv, report.results_parquet = store.write_results(spec.runs)
            if spec.report is not None:  # what `artist report` checks the results against
                write_report_spec(store.out, spec.report)
            if plots:
                from artist.sweep.plots import plot_sweep

                report.plots = plot_sweep(store.out)
        report.wall_seconds = time.perf_counter() - started
        from artist.sweep.stamp import sweep_stamp

        store.append_log({"name": spec.name, "spec": spec.source, **sweep_stamp(spec.source), "runs": report.total,
                          "already_done": report.already_done, "executed": len(report.executed),
                          "failed": len(report.failed), "executor": executor, "n_jobs": n_jobs,
                          "cache_hits": report.cache_hits, "cache_misses": report.cache_misses,
                          "wall_seconds": round(report.wall_seconds, 3)})
    return report


def default_workers() -> int:
    """Cores this process may use (-j -1)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def default_out_dir(spec: SweepSpec) -> Path:
    return Path("results") / spec.name

