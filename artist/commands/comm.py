"""`artist comm`: one job's communication time per iteration on one placement shape."""

from __future__ import annotations

import sys
from pathlib import Path

from artist.errors import InputError
from artist.network.factory import BACKENDS, make_comm_model
from artist.placement import parse_shape, placement_from_shape, shape_to_text
from artist.topology import load_topology
from artist.workload import ModelProfile, load_models


def add_parser(sub) -> None:
    p = sub.add_parser("comm", help="communication time of one model on one placement shape",
                       description="Raw and exposed all-reduce seconds per iteration of one model on one "
                                   "placement shape (racks -> machines -> GPU counts), with packets simulated "
                                   "and wall time.")
    p.add_argument("--topology", default="topologies/dally-3tier.yaml")
    p.add_argument("--racks", type=int, default=None, help="override the topology's rack count")
    p.add_argument("--model", required=True, help="model name under --models, or a model profile YAML file")
    p.add_argument("--models", default=None, help="directory of model profiles (default: workloads/models)")
    p.add_argument("--shape", required=True, help="placement shape, e.g. '[[4,4],[8]]'")
    p.add_argument("--backend", "--comm", dest="backend", default="analytical", choices=BACKENDS)
    p.add_argument("--algorithm", default="ring", help="all-reduce algorithm: ring | hierarchical")
    p.add_argument("--channels", type=int, default=1, help="parallel rings (NCCL channels)")
    p.add_argument("--transport", default="window", choices=("window", "tcp"),
                   help="ns3 only: message-level window transport or TCP DCTCP baseline")
    p.add_argument("--accelerate", action="store_true",
                   help="ns3 only: steady-state skipping for ring all-reduces (validated within 1%%, "
                        "see benchmarks/ns3_speed.py)")
    p.set_defaults(func=run)


def _model(args) -> ModelProfile:
    if args.model.endswith((".yaml", ".yml")) or Path(args.model).is_file():
        return ModelProfile.from_yaml(args.model)
    models = load_models(args.models)
    if args.model not in models:
        raise InputError(args.models or "workloads/models", "--model",
                         f"unknown model {args.model!r}; known: {', '.join(sorted(models))}")
    return models[args.model]


def run(args) -> int:
    if args.channels < 1:
        raise InputError("command line", "--channels", f"must be >= 1, got {args.channels}")
    topology = load_topology(args.topology, args.racks)
    try:
        shape = parse_shape(args.shape)
        placement = placement_from_shape(topology, shape)
    except ValueError as exc:
        raise InputError("command line", f"--shape {args.shape}", str(exc)) from None
    model = _model(args)
    options = {}
    if args.backend == "ns3":
        options = {"transport": args.transport, "accelerate": args.accelerate}
    try:
        comm = make_comm_model(args.backend, topology, algorithm=args.algorithm, channels=args.channels, **options)
        result = comm.iteration_comm_time(model, placement)
    except ValueError as exc:
        raise InputError("command line", "--algorithm/--channels", str(exc)) from None
    except RuntimeError as exc:  # Ns3SimulationError: names the placement, the sweep-safe failure
        print(f"artist comm: error: {exc}", file=sys.stderr)
        return 3
    print(f"model {model.name} on {shape_to_text(placement.canonical_shape)} ({placement.size} GPUs, "
          f"{placement.tier} tier), backend {args.backend}, {args.algorithm} x{args.channels}")
    print(f"buckets            {len(result.bucket_seconds)}")
    print(f"raw seconds        {result.collective_seconds:.9f}")
    print(f"exposed seconds    {result.exposed_seconds:.9f}")
    print(f"packets simulated  {result.packets}")
    print(f"wall seconds       {result.wall_seconds:.3f}")
    return 0
