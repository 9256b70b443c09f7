"""Batch prefetch: a sweep's ns-3 collectives answered in parallel, longest first, before its runs start.

    report = prefetch(runs, models, cache_path=..., executor="local", workers=2)

The distinct collectives are found by questions.py (the analytical backend standing in),
costed by cost.py, and simulated alone (exact reuse, artist/network/ns3/reuse.py) in order
of predicted cost, longest first, so that the last to finish are short:
- locally on a pool of ns-3 workers (one per core), each answer written to the latency
  cache as it arrives (an interrupted prefetch keeps everything it finished; the runs then
  find those answers and compose their steps from them);
- on a Dask or Ray cluster, one task per collective; the answers come back to the driver,
  which hands them to every run (a cluster machine's cache is its own), and into the local
  cache when there is one.
A progress bar counts predicted CPU-seconds, so its ETA is the remaining predicted work.
Runs whose ns-3 options turn exact reuse off (tcp transport, accelerate) are not prefetched.
"""

from __future__ import annotations

import json
import queue
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from typing import Mapping, Sequence

from artist.parallel.graph import Node
from artist.sweep.cost import piece_cost
from artist.sweep.questions import collect_questions


@dataclass
class PrefetchReport:
    pieces: int = 0  # distinct collectives found
    found: int = 0  # already answered (cache)
    simulated: int = 0  # answered now
    skipped: int = 0  # pieces of settings exact reuse does not serve
    predicted_cpu_seconds: float = 0.0  # of those simulated now
    wall_seconds: float = 0.0
    preloaded: dict = field(default_factory=dict)  # reuse memo key -> IsolatedAnswer (cluster executors)


def _reusable(options: dict) -> bool:
    return options.get("transport", "window") == "window" and not options.get("accelerate", False)


def _work(questions, store) -> tuple[list, int]:
    """[(cost, model, schedule, label)] longest first, of pieces not answered yet; and how many were."""
    from artist.network.ns3 import Ns3Model

    work, found, models = [], 0, {}
    for (algorithm, channels, options_json), pieces in questions.pieces.items():
        options = json.loads(options_json)
        if not _reusable(options):
            continue
        for piece, (topology, _) in pieces.items():
            key = (algorithm, channels, options_json, id(topology))
            model = models.get(key)
            if model is None:
                model = models[key] = Ns3Model(topology, algorithm, channels, **options)
                model.reuse.store = store
            schedule = model._node_schedule(Node(0, piece.kind, group=piece.group, nbytes=piece.nbytes),
                                            accelerate=False)
            if model.reuse.found(model, schedule) is not None:
                found += 1
                continue
            cost = piece_cost(topology, piece, algorithm, channels, options.get("mtu", 9000),
                              options.get("ack_every", 8)).cpu_seconds
            work.append((cost, model, schedule, f"{piece.kind} {piece.nbytes} B on {len(piece.group)} GPUs"))
    work.sort(key=lambda w: -w[0])
    return work, found


def prefetch(runs: Sequence, models: Mapping, *, cache_path: str | None, executor: str = "local",
             address: str | None = None, workers: int = 1, progress: bool = True) -> PrefetchReport:
    from tqdm import tqdm

    from artist.network.cache import LatencyStore

    started = time.perf_counter()
    ns3_runs = [r for r in runs if r.comm.backend == "ns3"]
    report = PrefetchReport()
    if not ns3_runs:
        return report
    with tqdm(total=len(ns3_runs), desc="prefetch: finding ns-3 questions", unit="run", disable=not progress,
              dynamic_ncols=True) as bar:
        questions = collect_questions(ns3_runs, models, progress=bar.update)
    report.pieces = questions.piece_count
    store = LatencyStore(cache_path) if cache_path is not None else None
    work, report.found = _work(questions, store)
    report.skipped = report.pieces - report.found - len(work)
    report.predicted_cpu_seconds = sum(w[0] for w in work)
    bar = tqdm(total=round(report.predicted_cpu_seconds, 1), desc="prefetch: ns-3 collectives",
               unit="CPU-s", disable=not progress or not work, dynamic_ncols=True)
    try:
        if executor == "local":
            _local(work, workers, bar, report)
        else:
            _cluster(work, executor, address, bar, report)
    finally:
        bar.close()
        if store is not None:
            store.flush()
    report.wall_seconds = time.perf_counter() - started
    return report


def _local(work: list, workers: int, bar, report: PrefetchReport) -> None:
    """Pieces on a pool of ns-3 workers; each answer kept (cache) in this thread as it arrives."""
    from artist.network.ns3 import Ns3Pool

    pool = Ns3Pool(size=max(1, workers))
    free: queue.Queue = queue.Queue()
    for i in range(min(pool.size, max(1, len(work)))):
        free.put(pool.worker(i))

    def simulate(model, schedule, label):
        request, ei = model.reuse.request(model, schedule, label)
        worker = free.get()
        try:
            t = time.perf_counter()
            return worker.run(request, model.timeout_s, label), ei, time.perf_counter() - t, worker
        finally:
            free.put(worker)

    threads = ThreadPoolExecutor(max_workers=free.qsize() or 1, thread_name_prefix="artist-prefetch")
    try:
        futures = {threads.submit(simulate, m, s, label): (cost, m, s, label) for cost, m, s, label in work}
        for f in as_completed(futures):
            cost, model, schedule, label = futures[f]
            res, ei, wall, worker = f.result()
            model.reuse.accept(model, schedule, res, ei, label, wall, worker)  # into the cache now: nothing is lost
            report.simulated += 1
            bar.update(round(cost, 1))
    finally:
        threads.shutdown(wait=True, cancel_futures=True)
        pool.close()


def answer_piece(topology, algorithm: str, channels: int, options: dict, schedule) -> tuple[tuple, dict]:
    """On a cluster worker: one collective alone; (the reuse memo key, the answer's fields)."""
    from artist.network.ns3 import Ns3Model

    model = Ns3Model(topology, algorithm, channels, **options)
    answer = model.reuse.isolated(model, [schedule], f"{schedule.algorithm} {schedule.nbytes} B")[0]
    return model.reuse.memo_key(model, schedule), asdict(answer)


def _cluster(work: list, executor: str, address: str, bar, report: PrefetchReport) -> None:
    from artist.network.ns3.reuse import IsolatedAnswer

    def task_args(model, schedule):
        return model.topology, model.algorithm, model.channels, _options_of(model), schedule

    def accept(item, key, fields):
        cost, model, schedule, _ = item
        answer = IsolatedAnswer(**fields)
        report.preloaded[key] = answer
        if model.reuse.store is not None:
            model.reuse._keep(model, schedule, answer)
        report.simulated += 1
        bar.update(round(cost, 1))

    if executor == "dask":
        from distributed import Client, as_completed as dask_completed

        with Client(address) as client:
            futures = {client.submit(answer_piece, *task_args(m, s), pure=False, priority=len(work) - i): w
                       for i, w in enumerate(work) for _, m, s, _ in [w]}
            for f in dask_completed(futures):
                accept(futures[f], *f.result())
    elif executor == "ray":
        import ray

        ray.init(address=address)
        try:
            task = ray.remote(num_cpus=1)(answer_piece)
            refs = {task.remote(*task_args(m, s)): w for w in work for _, m, s, _ in [w]}
            pending = list(refs)
            while pending:
                (done,), pending = ray.wait(pending, num_returns=1)
                accept(refs[done], *ray.get(done))
        finally:
            ray.shutdown()
    else:
        raise ValueError(f"unknown executor {executor!r}")


def _options_of(model) -> dict:
    """The Ns3Model keyword options that rebuild it elsewhere (transport settings)."""
    return {"latency": model.latency, **asdict(model.transport), "timeout_s": model.timeout_s}


def seed_runs_memo(comm, preloaded: Mapping) -> None:
    """Give a run's ns-3 model the answers a cluster prefetch brought back."""
    layer = comm
    for _ in range(4):  # Calibrated(Cached(Ns3Model)) at most
        reuse = getattr(layer, "reuse", None)
        if reuse is not None and hasattr(reuse, "memo"):
            reuse.memo.update(preloaded)
            return
        layer = getattr(layer, "inner", None)
        if layer is None:
            return
