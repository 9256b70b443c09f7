"""ns-3 backend speed and accuracy: prints figures, asserts nothing.

    PYTHONPATH=. python benchmarks/ns3_speed.py [--tcp] [--tcp-64] [--repeats N] [--tiny]

--tiny: seconds, for the test that keeps the script working (1 repeat, a 1-rack big iteration, the 8- and
16-GPU cases; the one-off compile stays, ~10-15 s of it).

First, what a user waits for: the whole-process wall time of one uncached
16-GPU `artist comm` query (ResNet-50 on [[8,8]], --no-cache) with the ns-3
backend divided by the same with the analytical backend, each a fresh Python
process, median of --repeats runs (goal: <= 2). The compiled engine is built
before the timing (the one-off compile, into a fresh directory, is printed
separately), so the ns-3 figure is an installation's every-day start.

Second, the whole ResNet-50 DDP step on 1 024 GPUs (16 racks of dally-3tier,
--big-racks) with steady-state skipping, start-up included (goal: <= 60 s).

Then, for 8 GPUs / 1 machine, 16 GPUs / 2 machines and 64 GPUs / 2 racks on the
dally-3tier topology, one ring all-reduce of the ResNet-50 gradient
(25,557,032 fp32 parameters = 102,228,128 bytes, torchvision num_params):
wall seconds, packets simulated per wall second, ns-3 / analytical time ratio,
for the full packet-level run and for steady-state skipping (accelerate=True),
with the relative difference between the two (goal: < 1 %); the same for a ring all-gather and
reduce-scatter of those bytes per rank, and for an all-to-all of 1 GiB per rank (extrapolated from two
smaller runs). Then the whole ResNet-50 iteration (DDP buckets, one ns-3 run) on
64 GPUs. With --tcp the same
collectives run on the TCP DCTCP baseline transport to compare transports
(--tcp-64 includes the 64-GPU case, which takes minutes).
Goal: the 64-GPU case under 10 s wall on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from artist.network.analytical import AnalyticalModel
from artist.network.ns3 import STEADY_ALL_TO_ALL_BYTES, Ns3Model, Ns3Worker, engine_build, worker as ns3_worker
from artist.perf.model import as_perf_model
from artist.placement import placement_from_shape
from artist.topology import load_topology
from artist.workload import ModelProfile, load_models

REPO = Path(__file__).resolve().parent.parent
RESNET50_BYTES = 25_557_032 * 4  # torchvision resnet50 num_params x fp32
CASES = (("8 GPUs / 1 machine", [[8]]), ("16 GPUs / 2 machines", [[8, 8]]),
         ("64 GPUs / 2 racks", [[8, 8, 8, 8], [8, 8, 8, 8]]))


def one_allreduce(nbytes: int) -> ModelProfile:
    # One bucket holding the whole gradient; compute time is irrelevant to the raw time.
    return ModelProfile("resnet50-gradient", (nbytes,), compute_seconds=0.103644, reference_gpu="A100",
                        bucket_cap_bytes=nbytes)


COMM_QUERY = ("comm", "--model", "resnet50", "--shape", "[[8,8]]", "--topology", "topologies/dally-3tier.yaml",
              "--no-cache")


def build_compiled_engine() -> None:
    """Print the one-off compile time (into a fresh directory), then make sure the installation's
    cache holds the engine, so that the timed processes start as they will every day."""
    toolchain = engine_build.find_toolchain()
    if toolchain is None:
        print("no C++ compiler found: the ns-3 worker uses the cppyy fallback (slow start)")
        return
    sources = ns3_worker.engine_sources()
    with tempfile.TemporaryDirectory() as fresh:
        once = engine_build.build_library(sources, toolchain, root=Path(fresh))
    print(f"one-off engine compile ({toolchain.compiler_version}): {once.compile_seconds:.1f} s")
    installed = engine_build.build_library(sources, toolchain)
    print(f"compiled engine {'built now' if installed.compiled else 'already built'}: {installed.path}")


def comm_processes(backend: str, repeats: int) -> tuple[list[float], list[float]]:
    """Wall times of fresh `python -m artist.cli comm` processes on this backend, and the query's
    own wall time each printed (for ns3: worker start + simulation)."""
    whole, query = [], []
    with tempfile.TemporaryDirectory(prefix="artist-bench-cache-") as cache:
        env = {**os.environ, "ARTIST_CACHE_DIR": cache}
        for _ in range(repeats):
            started = time.perf_counter()
            out = subprocess.run([sys.executable, "-m", "artist.cli", *COMM_QUERY, "--backend", backend], cwd=REPO,
                                 env=env, check=True, capture_output=True, text=True).stdout
            whole.append(time.perf_counter() - started)
            query.append(float(next(line.split()[-1] for line in out.splitlines() if line.startswith("wall seconds"))))
    return whole, query


def whole_process_ratio(repeats: int) -> None:
    print(f"whole process, uncached `artist comm` ResNet-50 on [[8,8]] (16 GPUs), median of {repeats}")
    build_compiled_engine()
    median = {}
    for backend in ("analytical", "ns3"):
        whole, query = comm_processes(backend, repeats)
        median[backend] = statistics.median(whole)
        print(f"{backend:10} {median[backend]:6.2f} s   of which the query {statistics.median(query):5.2f} s   "
              f"(runs: {', '.join(f'{t:.2f}' for t in whole)})", flush=True)
    print(f"ns3 / analytical whole-process wall time: {median['ns3'] / median['analytical']:.2f} (goal <= 2)\n")


def measure(comm: Ns3Model, model: ModelProfile, placement) -> tuple[float, float, int, float]:
    """(raw, exposed, packets, wall) of one DDP step alone, asked through the performance model."""
    started = time.perf_counter()
    step = as_perf_model(comm, placement.topology).estimate(model, placement)
    wall = time.perf_counter() - started
    return step.comm_seconds, step.exposed_comm_seconds, step.comm.packets, wall


def big_iteration(racks: int) -> None:
    """The whole ResNet-50 DDP step on racks x 64 GPUs of dally-3tier, steady-state skipping
    (the only way a step this size is simulated), in a fresh worker, start-up included."""
    topo = load_topology(REPO / "topologies" / "dally-3tier.yaml", racks)
    placement = placement_from_shape(topo, [[8] * 8] * racks)
    worker = Ns3Worker()
    started = time.perf_counter()
    raw, exposed, packets, _ = measure(Ns3Model(topo, worker=worker, accelerate=True), load_models()["resnet50"],
                                       placement)
    wall = time.perf_counter() - started
    worker.close()
    print(f"resnet50 iteration on {placement.size} GPUs ({racks} racks, accelerated): wall {wall:.1f} s "
          f"(goal <= 60 s), raw {raw:.9f} s exposed {exposed:.9f} s, packets {packets}\n", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tcp", action="store_true", help="also run the TCP DCTCP transport (8 and 16 GPUs)")
    parser.add_argument("--tcp-64", action="store_true", help="also run TCP on the 64-GPU case (slow)")
    parser.add_argument("--repeats", type=int, default=5, help="runs per backend of the whole-process figure")
    parser.add_argument("--big-racks", type=int, default=16, help="racks of the big-iteration figure (16 = 1024 GPUs)")
    parser.add_argument("--tiny", action="store_true", help="seconds, for the test that keeps the script working")
    args = parser.parse_args()
    cases = CASES
    if args.tiny:  # 1 rack: the big iteration still spans machines; 16 GPUs: the smallest case with NIC hops
        args.repeats, args.big_racks, cases = 1, 1, CASES[:2]
    whole_process_ratio(args.repeats)
    big_iteration(args.big_racks)
    topo = load_topology(REPO / "topologies" / "dally-3tier.yaml")
    worker = Ns3Worker()
    t = time.perf_counter()
    worker.ensure_started()
    print(f"worker start ({worker.info['engine']} engine, loaded in the worker in "
          f"{worker.info['load_seconds']:.2f} s): "
          f"{time.perf_counter() - t:.2f} s")
    analytical = AnalyticalModel(topo)
    # packet runs (the message-level fast path, on by default, would answer these collectives alone)
    full = Ns3Model(topo, worker=worker, fast_path=False)
    fast = Ns3Model(topo, worker=worker, accelerate=True)
    tcp = Ns3Model(topo, worker=worker, transport="tcp", fast_path=False)
    model = one_allreduce(RESNET50_BYTES)
    print(f"\nring all-reduce of {RESNET50_BYTES} bytes, 1 channel, window transport")
    print(f"{'case':22} {'mode':12} {'wall s':>8} {'packets':>10} {'pkt/wall s':>11} {'sim s':>12} "
          f"{'ns3/analyt':>10} {'vs full':>9}")
    for label, shape in cases:
        placement = placement_from_shape(topo, shape)
        a = analytical.collective_seconds(placement, RESNET50_BYTES)
        ref = None
        runs = [("full", full), ("accelerated", fast)]
        if args.tcp and (args.tcp_64 or placement.size <= 16):
            runs.append(("tcp full", tcp))
        for mode, comm in runs:
            seconds, _, packets, wall = measure(comm, model, placement)
            ref = seconds if ref is None else ref
            print(f"{label:22} {mode:12} {wall:8.2f} {packets:10d} {packets / wall:11.0f} {seconds:12.9f} "
                  f"{seconds / a:10.4f} {100 * (seconds - ref) / ref:+8.4f}%", flush=True)
    print(f"\nring all-gather and reduce-scatter of {RESNET50_BYTES} bytes per rank, 1 channel: full packet run "
          f"vs steady-state skipping")
    print(f"{'case':22} {'collective':15} {'full wall s':>11} {'skip wall s':>11} {'full s':>12} {'skipped s':>12} "
          f"{'vs full':>9}")
    for label, shape in cases:
        placement = placement_from_shape(topo, shape)
        for kind in ("all_gather", "reduce_scatter"):
            t = time.perf_counter()
            ref = full.collective_seconds(placement, RESNET50_BYTES, kind)
            t_full, t = time.perf_counter() - t, time.perf_counter()
            got = fast.collective_seconds(placement, RESNET50_BYTES, kind)
            t_fast = time.perf_counter() - t
            print(f"{label:22} {kind:15} {t_full:11.2f} {t_fast:11.2f} {ref:12.9f} {got:12.9f} "
                  f"{100 * (got - ref) / ref:+8.4f}%", flush=True)
    a2a_bytes = 2**30
    print(f"\nall-to-all of {a2a_bytes} bytes per rank, 1 channel: full packet run vs steady-state skipping "
          f"(extrapolated from runs at {STEADY_ALL_TO_ALL_BYTES} bytes and half of it)")
    print(f"{'case':22} {'full wall s':>11} {'skip wall s':>11} {'full s':>12} {'skipped s':>12} {'vs full':>9}")
    for label, shape in cases:
        placement = placement_from_shape(topo, shape)
        t = time.perf_counter()
        ref = full.collective_seconds(placement, a2a_bytes, "all_to_all")
        t_full, t = time.perf_counter() - t, time.perf_counter()
        got = fast.collective_seconds(placement, a2a_bytes, "all_to_all")
        t_fast = time.perf_counter() - t
        print(f"{label:22} {t_full:11.2f} {t_fast:11.2f} {ref:12.9f} {got:12.9f} {100 * (got - ref) / ref:+8.4f}%",
              flush=True)
    resnet = load_models()["resnet50"]
    placement = placement_from_shape(topo, cases[-1][1])
    print(f"\nresnet50 iteration ({len(resnet.buckets)} DDP buckets, one ns-3 run) on {cases[-1][0]}")
    for mode, comm in (("full", full), ("accelerated", fast)):
        raw, exposed, packets, wall = measure(comm, resnet, placement)
        print(f"{mode:12} raw {raw:.9f} s exposed {exposed:.9f} s packets {packets} wall {wall:.2f} s", flush=True)
    worker.close()


if __name__ == "__main__":
    main()
