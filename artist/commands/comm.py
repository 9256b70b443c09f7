"""`artist comm`: one job's communication time per iteration on one placement shape."""

from __future__ import annotations

from pathlib import Path

from artist.commands._common import (add_network_arguments, add_topology_arguments, build_stack,
                                     calibration_path, load_topology_from)
from artist.commands.cache import cache_path_from_args
from artist.errors import InputError
from artist.network.stack import CommSpec
from artist.placement import parse_shape, placement_from_shape, shape_to_text
from artist.workload import ModelProfile, load_models


def add_parser(sub) -> None:
    p = sub.add_parser("comm", help="communication time of one model on one placement shape",
                       description="Raw and exposed all-reduce seconds per iteration of one model on one "
                                   "placement shape (racks -> machines -> GPU counts), with packets simulated "
                                   "and wall time. Answers come from and go to the latency cache.")
    add_topology_arguments(p)
    p.add_argument("--model", required=True, help="model name under --models, or a model profile YAML file")
    p.add_argument("--models", default=None, help="directory of model profiles (default: workloads/models)")
    p.add_argument("--shape", required=True, help="placement shape, e.g. '[[4,4],[8]]'")
    add_network_arguments(p)
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
    topology = load_topology_from(args)
    try:
        shape = parse_shape(args.shape)
        placement = placement_from_shape(topology, shape)
    except ValueError as exc:
        raise InputError("command line", f"--shape {args.shape}", str(exc)) from None
    model = _model(args)
    topology.check_reference_gpu({model.reference_gpu})
    options = ()
    if args.backend == "ns3":
        options = (("accelerate", args.accelerate), ("transport", args.transport))
    spec = CommSpec(args.backend, args.algorithm, args.channels, options, calibration_path(args.calibration),
                    cache_path_from_args(args)).resolved()
    comm = build_stack(spec, topology)
    result = comm.iteration_comm_time(model, placement)  # an Ns3SimulationError is one line (artist.cli)
    print(f"model {model.name} on {shape_to_text(placement.canonical_shape)} ({placement.size} GPUs, "
          f"{placement.tier} tier), backend {args.backend}, {args.algorithm} x{args.channels}"
          f"{'' if spec.calibration is None else ', calibrated'}")
    print(f"buckets              {len(result.bucket_seconds)}")
    print(f"raw seconds          {result.collective_seconds:.9f}")
    print(f"exposed seconds      {result.exposed_seconds:.9f}")
    print(f"packets simulated    {result.packets}")
    print(f"wall seconds         {result.wall_seconds:.3f}")
    print(f"answered from cache  {'yes' if result.cache_hit else 'no' if spec.cache else 'cache off'}")
    return 0
