"""Latency-cache speed: lookup latency of a hit (target: under 1 ms) and the hit rate of repeated sweeps.

    PYTHONPATH=. python benchmarks/cache_speed.py [--lookups 5000] [--runs 3] [--asks 2000] [--tiny]

--tiny: seconds, for the test that keeps the script working (20 lookups, 2 runs, 100 asks).

Prints figures only; nothing is asserted (speed is not a unit-test property). Uses a fresh
cache file in a temporary directory, never the user's cache. The inner backend is the
analytical model, so a "miss" here costs milliseconds; with ns-3 it costs seconds. Questions
are DDP step graphs (artist/parallel/ddp.py) asked through ``Cached.time``; the random sweep
lays each graph on the GPUs picked, so every lookup also relabels it onto canonical GPUs.
"""

from __future__ import annotations

import argparse
import atexit
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from artist.latency_table import build_latency_table, standard_shapes
from artist.network.analytical import AnalyticalModel
from artist.network.cache import CACHE_FILE_NAME, Cached, LatencyStore, cache_key, graphs_key_material
from artist.network.stack import CommSpec, forget_stacks
from artist.parallel.ddp import ddp_step
from artist.perf.compute import ComputeModel
from artist.placement import Placement, placement_from_shape
from artist.topology import load_topology
from artist.workload import load_models

REPO = Path(__file__).resolve().parent.parent


def _timings(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def _report(label: str, seconds: list[float]) -> None:
    us = np.array(seconds) * 1e6
    print(f"  {label:<38} mean {us.mean():8.1f} us   median {np.median(us):8.1f} us   "
          f"p99 {np.percentile(us, 99):8.1f} us")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lookups", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=3, help="repetitions of the small latency table")
    ap.add_argument("--asks", type=int, default=2000, help="random placements asked in the simulator-like sweep")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tiny", action="store_true", help="seconds, for the test that keeps the script working")
    args = ap.parse_args()
    if args.tiny:  # 2 runs: the second is the one that hits
        args.lookups, args.runs, args.asks = 20, 2, 100

    topo = load_topology(REPO / "topologies" / "dally-3tier.yaml")
    models = list(load_models().values())
    tmp = Path(tempfile.mkdtemp(prefix="artist-cache-bench-"))
    if args.tiny:  # a full run leaves its cache files to look at; the test's runs leave nothing, failed or not
        atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    path = tmp / CACHE_FILE_NAME
    compute = ComputeModel(topo)
    model = max(models, key=lambda m: len(m.buckets))  # the costliest key material to hash
    placement = placement_from_shape(topo, [[8, 8], [8, 8]])
    graphs = {"job": ddp_step(model, placement, compute.step_seconds(model, placement))}
    print(f"cache file: {path}")
    print(f"hit lookup latency ({args.lookups} lookups, model {model.name}, {len(model.buckets)} buckets = "
          f"{len(graphs['job'].nodes)} graph nodes, shape [[8,8],[8,8]]):")

    inner = AnalyticalModel(topo)
    _report("key only (relabel + material + sha256)",
            _timings(lambda: cache_key(graphs_key_material(inner, graphs, topo)[0]), args.lookups))
    warm = Cached(AnalyticalModel(topo), LatencyStore(path))
    first = warm.time(graphs)["job"]
    print(f"  {'first ask (miss, simulated)':<38} {first.result.wall_seconds * 1e6:8.1f} us")
    _report("hit, in-process memo", _timings(lambda: warm.time(graphs), args.lookups))
    cold = Cached(AnalyticalModel(topo), LatencyStore(path), memo=False)
    _report("hit, SQLite (memo off)", _timings(lambda: cold.time(graphs), args.lookups))
    warm.close()
    cold.close()

    print(f"\nrepeated small sweep: {len(models)} models x {len(standard_shapes())} standard shapes, {args.runs} runs,"
          " each run a fresh process-like Cached (no memo carried over):")
    spec = CommSpec(cache=str(path.with_name("table-" + CACHE_FILE_NAME)))
    hits = lookups = 0
    for run in range(args.runs):
        t = time.perf_counter()
        result = build_latency_table(topo, models, standard_shapes(), spec)
        forget_stacks()  # the next run starts with an empty memo, like a new process
        hits += result.hits
        lookups += result.hits + result.simulations
        print(f"  run {run + 1}: {result.hits:3d} hits, {result.simulations:3d} simulations, "
              f"{time.perf_counter() - t:6.3f} s")
    print(f"  hit rate over all runs: {100 * hits / lookups:.1f}% (ideal {100 * (args.runs - 1) / args.runs:.1f}%)")

    print(f"\nsimulator-like sweep: {args.asks} random placements of 1-32 GPUs (random machines and racks), "
          "each model's step graph on the GPUs picked, one Cached:")
    rng = np.random.default_rng(args.seed)
    sweep = Cached(AnalyticalModel(topo), LatencyStore(path.with_name("sweep-" + CACHE_FILE_NAME)))
    hit_times, miss_times = [], []
    for _ in range(args.asks):
        size = int(rng.choice([1, 2, 4, 8, 16, 32]))
        gpus = tuple(int(g) for g in rng.choice(topo.gpus, size=size, replace=False))
        m = models[int(rng.integers(len(models)))]
        p = Placement(topo, gpus)
        graph = ddp_step(m, p, compute.step_seconds(m, p))
        t = time.perf_counter()
        r = sweep.time({"job": graph})["job"]
        (hit_times if r.result.cache_hit else miss_times).append(time.perf_counter() - t)
    sweep.close()
    s = sweep.session
    print(f"  {s.hits} hits, {s.misses} misses: hit rate {100 * s.hits / args.asks:.1f}% "
          f"(distinct canonical shapes x models = {s.misses})")
    if hit_times:
        _report("hit (relabel + memo)", hit_times)
    if miss_times:
        print(f"  {'miss (analytical simulation)':<38} mean {statistics.mean(miss_times) * 1e3:8.2f} ms")
    print(f"  simulated seconds saved by hits: {s.saved_wall_seconds:.3f}")


if __name__ == "__main__":
    main()
