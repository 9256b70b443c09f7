"""Persistent ns-3 worker processes with a wall-clock watchdog per run.

A worker loads the ns-3 engine once (worker.py: ~0.3 s with the compiled engine,
15-35 s on the cppyy fallback) and serves many runs. A run that does not answer
within its timeout, or a worker that dies, is killed (only that worker, by its
own process handle) and reported as Ns3SimulationError naming the placement
shape; the next run starts a fresh worker.
"""

from __future__ import annotations

import atexit
import multiprocessing as mp
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence

from artist.network.ns3.worker import ENGINE_MODES, worker_main

# A start normally takes well under a second (compiled engine, measured ~0.3 s on the 2-core
# development machine), but the first start of an installation compiles the engine (9-18 s there,
# up to engine_build.COMPILE_TIMEOUT_S = 240 s before it gives up with the compiler's message),
# and the cppyy fallback imports ns-3 and compiles at every start (~15-35 s there). The limit
# covers the slowest of these with margin (choice).
STARTUP_TIMEOUT_S = 300.0


class Ns3SimulationError(RuntimeError):
    """An ns-3 run hung, crashed or failed; `shape` is the placement that caused it."""

    def __init__(self, shape: str, problem: str):
        self.shape = shape
        self.problem = problem
        super().__init__(f"ns-3 simulation of placement {shape} failed: {problem}")

    def __reduce__(self):
        # Default exception pickling re-calls __init__ with the message only; joblib workers
        # send this error back to the parent, which must get the placement, not a TypeError.
        return type(self), (self.shape, self.problem)


class Ns3Worker:
    """engine: "auto" (the compiled engine where a C++ compiler is found, else the cppyy fallback),
    "compiled" or "jit" (see worker.py); info, once started, says which one loaded."""

    def __init__(self, startup_timeout_s: float = STARTUP_TIMEOUT_S, engine: str = "auto"):
        if engine not in ENGINE_MODES:
            raise ValueError(f"unknown ns-3 engine {engine!r}; known: {', '.join(ENGINE_MODES)}")
        self.startup_timeout_s = startup_timeout_s
        self.engine = engine
        self._proc = None
        self._conn = None
        self._lock = threading.Lock()
        self.info: dict = {}
        self.restarts = 0

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _start(self) -> None:
        # In a joblib (loky) worker the process-wide start method is 'loky'; a spawned child
        # copies that name and dies looking for it in a fresh interpreter. Put a standard one
        # back (repaired here, for every caller).
        if mp.get_start_method(allow_none=True) not in mp.get_all_start_methods():
            mp.set_start_method("spawn", force=True)
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        # daemon=True ends the worker at a clean exit of this process; if this process is killed,
        # the worker's lifeline ends it (worker_main arms artist/lifeline.py; spawn gives it a
        # multiprocessing parent_process, which is what the lifeline arms on).
        proc = ctx.Process(target=worker_main, args=(child, self.engine), daemon=True, name="artist-ns3-worker")
        proc.start()
        child.close()
        self._proc, self._conn = proc, parent
        if not parent.poll(self.startup_timeout_s):
            self._kill()
            raise Ns3SimulationError("-", f"ns-3 worker did not start within {self.startup_timeout_s:.0f} s")
        try:
            status, payload = parent.recv()
        except EOFError:
            code = proc.exitcode
            self._kill()
            raise Ns3SimulationError("-", f"ns-3 worker died while starting (exit code {code})") from None
        if status != "ready":
            self._kill()
            raise Ns3SimulationError("-", f"ns-3 worker could not start: {payload}")
        self.info = payload

    def ensure_started(self) -> dict:
        with self._lock:
            if not self.alive:
                if self._proc is not None:
                    self.restarts += 1
                self._start()
            return self.info

    def _kill(self) -> None:
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.kill()
            self._proc.join(10)
        if self._conn is not None:
            self._conn.close()
        self._proc = self._conn = None

    def run(self, request: dict, timeout_s: float, shape: str) -> dict:
        self.ensure_started()
        with self._lock:
            conn = self._conn
            conn.send(request)
            if not conn.poll(timeout_s):
                self._kill()
                raise Ns3SimulationError(shape, f"no answer within the {timeout_s:g} s watchdog; worker killed (a "
                                                f"longer run: --ns3-timeout, or timeout_s in a spec's ns3 options)")
            try:
                status, payload = conn.recv()
            except EOFError:
                proc = self._proc
                proc.join(5)
                code = proc.exitcode
                self._kill()
                raise Ns3SimulationError(shape, f"ns-3 worker crashed (exit code {code})") from None
        if status != "ok":
            raise Ns3SimulationError(shape, payload)
        if payload["error"]:
            raise Ns3SimulationError(shape, payload["error"])
        return payload

    def close(self) -> None:
        with self._lock:
            if self.alive:
                try:
                    self._conn.send(None)
                    self._proc.join(5)
                except (BrokenPipeError, OSError):
                    pass
            self._kill()


class Ns3Pool:
    """Several workers, each keeping ns-3 loaded across questions, answering independent runs at once.

    map() hands each request to the first free worker (one thread per worker waits on its pipe;
    the simulation runs in the worker process, so the parent's GIL is not in the way). Workers start
    when first needed, so a pool of N costs nothing until N runs are asked for at once."""

    def __init__(self, workers: Sequence[Ns3Worker] = (), size: int | None = None,
                 factory: Callable[[], Ns3Worker] = Ns3Worker):
        self.workers = list(workers)
        self.size = max(len(self.workers), size or 0, 1)
        self._factory = factory
        self._lock = threading.Lock()

    @property
    def first(self) -> Ns3Worker:
        """The worker for single questions (and the one whose versions identity() is checked against)."""
        return self.worker(0)

    def worker(self, i: int) -> Ns3Worker:
        with self._lock:
            while len(self.workers) <= i:
                self.workers.append(self._factory())
            return self.workers[i]

    def warm(self, n: int) -> None:
        """Start the first n workers in the background (a start is ~0.3 s of another process), so that
        they are loaded by the time the caller has built its requests. A failed start is not reported
        here: the next run starts that worker again and raises."""
        for i in range(min(n, self.size)):
            worker = self.worker(i)
            if not worker.alive:
                threading.Thread(target=_start_quietly, args=(worker,), daemon=True,
                                 name="artist-ns3-warm").start()

    def map(self, requests: Sequence[tuple[dict, float, str]]) -> list[dict]:
        """Answers of (request, timeout_s, label) in order; requests run in the order given (callers put
        the longest first), on min(size, len(requests)) workers. The first failure is raised after every
        started run has ended."""
        return self.each(requests, lambda worker, request: worker.run(*request))

    def each(self, items: Sequence, work: Callable[[Ns3Worker, object], object]) -> list:
        """work(worker, item) for every item, in order, items handed out in the order given to
        min(size, len(items)) threads, each with a worker of its own (one thread, the first worker, when
        there is one item or one worker). The first failure is raised after every started item has ended."""
        if len(items) <= 1 or self.size == 1:
            return [work(self.first, item) for item in items]
        n = min(self.size, len(items))
        workers = [self.worker(i) for i in range(n)]
        queue = list(enumerate(items))
        answers: list = [None] * len(items)
        take = threading.Lock()

        def drain(worker: Ns3Worker) -> None:
            while True:
                with take:
                    if not queue:
                        return
                    i, item = queue.pop(0)
                answers[i] = work(worker, item)

        with ThreadPoolExecutor(max_workers=n, thread_name_prefix="artist-ns3-pool") as threads:
            for f in [threads.submit(drain, w) for w in workers]:
                f.result()
        return answers

    def close(self) -> None:
        for w in self.workers:
            w.close()


def _start_quietly(worker: Ns3Worker) -> None:
    try:
        worker.ensure_started()
    except Exception:  # noqa: BLE001 - raised again by the run that needs this worker
        pass


def default_pool_size() -> int:
    """$ARTIST_NS3_WORKERS, else every core this process may use."""
    text = os.environ.get("ARTIST_NS3_WORKERS", "").strip()
    if text:
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"ARTIST_NS3_WORKERS must be a whole number of workers, got {text!r}") from None
        if not 1 <= value <= 1024:
            raise ValueError(f"ARTIST_NS3_WORKERS must be between 1 and 1024, got {value}")
        return value
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


_shared: Ns3Worker | None = None
_shared_pool: Ns3Pool | None = None


def shared_worker() -> Ns3Worker:
    """The process-wide worker every Ns3Model uses unless given its own."""
    global _shared
    if _shared is None:
        _shared = Ns3Worker()
        atexit.register(_shared.close)
    return _shared


def shared_pool() -> Ns3Pool:
    """The process-wide pool (its first worker is shared_worker()); size from default_pool_size()."""
    global _shared_pool
    if _shared_pool is None or _shared_pool.first is not shared_worker():
        _shared_pool = Ns3Pool([shared_worker()], size=default_pool_size())
        atexit.register(_shared_pool.close)
    return _shared_pool
