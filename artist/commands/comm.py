"""`artist comm`: one job's communication per step on one placement shape, or one collective alone.

    artist comm --model resnet50 --shape '[[8,8]]'
    artist comm --collective all_gather --bytes 64MiB --gpus 0-7,64-71
    artist comm --collective send_recv --bytes 1GiB --gpus 0,64      (from the first GPU to the second)
    artist comm --topology dally-3tier-ecmp-4to1 --backend flow --job resnet50:0-7,64-71 --job vgg11:8-15,72-79
                                   (each job's step alone and, in steady state, with the others on the fabric;
                                    --json for a list)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tqdm import tqdm

from artist.commands._common import (add_accelerate_argument, add_network_arguments, add_topology_arguments,
                                     build_stack, calibration_path, load_topology_from, ns3_options)
from artist.commands.cache import cache_path_from_args
from artist.commands.plans import add_plan_arguments, run_plan
from artist.errors import InputError
from artist.network.collectives import NCCL_CHOICE
from artist.network.stack import CommSpec
from artist.parallel.graph import COMMUNICATION, Node, StepGraph
from artist.perf.model import as_perf_model
from artist.placement import Placement, parse_shape, placement_from_shape, shape_to_text
from artist.workload import ModelProfile, load_models

# Sizes as nccl-tests and people write them: decimal and binary multiples of bytes.
_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
MAX_BYTES = 2**50  # 1 PiB per rank: far beyond any collective a GPU holds (limit, so no size allocates without bound)


def add_parser(sub) -> None:
    p = sub.add_parser("comm", help="communication of one model's step, or of one collective, on a placement",
                       description="Raw and exposed all-reduce seconds per step of one model on one placement "
                                   "shape (racks -> machines -> GPU counts), or the time of one collective "
                                   "(--collective) of --bytes per rank on a GPU group, with packets simulated "
                                   "and wall time. Answers come from and go to the latency cache.")
    add_topology_arguments(p)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--model", help="model name under --models, or a model profile YAML file")
    what.add_argument("--collective", choices=COMMUNICATION,
                      help="time one collective alone (payload per rank as nccl-tests' size)")
    what.add_argument("--job", action="append", metavar="MODEL:GPUS",
                      help="a data-parallel job of MODEL on GPUS (ids and ranges, e.g. resnet50:0-7,64-71; global "
                           "ids rack by rack, machine by machine); repeat for jobs sharing the fabric: each job's "
                           "step time alone and shared (--backend flow or ns3)")
    p.add_argument("--json", action="store_true",
                   help="--job: print a JSON list of {job, backend, alone_s, shared_s (steady state), steps_measured, "
                        "converged}; --model and --collective: an object of the text's fields (raw_seconds, "
                        "exposed_seconds or seconds, answered_by, packets_simulated, from_cache); --plan: an object "
                        "with step_s, compute_s, exposed_comm_s by kind, bubble_fraction and memory_gib_per_gpu")
    p.add_argument("--models", default=None, help="directory of model profiles (default: workloads/models)")
    p.add_argument("--bytes", dest="nbytes", default=None,
                   help="--collective: payload per rank, e.g. 67108864, 64MiB, 100MB")
    p.add_argument("--shape", default=None, help="placement shape, e.g. '[[4,4],[8]]'")
    p.add_argument("--gpus", default=None,
                   help="--collective: the GPU ids of the group, e.g. 0-7,64-71 (send_recv: src,dst)")
    add_network_arguments(p)
    p.add_argument("--transport", default="window", choices=("window", "tcp"),
                   help="ns3 only: message-level window transport or TCP DCTCP baseline")
    p.add_argument("--arbitration", default="fifo", choices=("fifo", "round-robin"),
                   help="ns3 window transport only: switch output arbitration (fifo: deep drop-tail queues; "
                        "round-robin: per-flow queues, the fabric the flow backend is validated against)")
    add_accelerate_argument(p)
    p.add_argument("--no-fast-path", action="store_true",
                   help="ns3 only: a full packet run even where no link is shared (no message-level fast path)")
    add_plan_arguments(p, in_comm=True)
    p.set_defaults(func=run)


def _model(args) -> ModelProfile:
    if args.model.endswith((".yaml", ".yml")) or Path(args.model).is_file():
        return ModelProfile.from_yaml(args.model)
    models = load_models(args.models)
    if args.model not in models:
        raise InputError(args.models or "workloads/models", "--model",
                         f"unknown model {args.model!r}; known: {', '.join(sorted(models))}")
    return models[args.model]


def parse_bytes(text: str) -> int:
    number = text.strip().lower()
    unit = number.lstrip("0123456789")
    digits = number[:len(number) - len(unit)]
    if not digits or unit.strip() not in _UNITS:
        raise InputError("command line", f"--bytes {text}",
                         "expected a whole number of bytes with an optional unit (B, KB, MB, GB, KiB, MiB, GiB)")
    value = int(digits) * _UNITS[unit.strip()]
    if not 1 <= value <= MAX_BYTES:
        raise InputError("command line", f"--bytes {text}", f"must be between 1 byte and {MAX_BYTES} bytes")
    return value


def parse_gpus(text: str, topology) -> tuple[int, ...]:
    """'0-7,64-71' -> (0, ..., 7, 64, ..., 71), in the order written."""
    gpus: list[int] = []
    try:
        for part in text.split(","):
            first, _, last = part.strip().partition("-")
            lo, hi = int(first), int(last or first)
            if hi < lo or hi - lo >= topology.gpus:
                raise ValueError
            gpus.extend(range(lo, hi + 1))
    except ValueError:
        raise InputError("command line", f"--gpus {text}", "expected GPU ids and ranges, e.g. 0-7,64-71") from None
    if len(set(gpus)) != len(gpus) or not all(0 <= g < topology.gpus for g in gpus):
        raise InputError("command line", f"--gpus {text}",
                         f"GPU ids must be distinct and in [0, {topology.gpus}) on this topology")
    return tuple(gpus)


def _group(args, topology) -> tuple[int, ...]:
    if (args.gpus is None) == (args.shape is None):
        raise InputError("command line", "--collective", "give the group as --gpus or --shape (one of them)")
    if args.gpus is not None:
        gpus = parse_gpus(args.gpus, topology)
    else:
        gpus = _placement(args, topology).gpus
    if args.collective == "send_recv":
        if len(gpus) != 2:
            raise InputError("command line", "--gpus", f"send_recv needs two GPUs (src,dst), got {len(gpus)}")
        return gpus
    return tuple(sorted(gpus))


def _placement(args, topology) -> Placement:
    try:
        return placement_from_shape(topology, parse_shape(args.shape))
    except ValueError as exc:
        raise InputError("command line", f"--shape {args.shape}", str(exc)) from None


def _spec(args) -> CommSpec:
    options = ()
    if args.backend == "ns3":
        options = (("transport", args.transport),)
        options += (("fast_path", False),) if args.no_fast_path else ()
        options += (("arbitration", args.arbitration),) if args.arbitration != "fifo" else ()
    options += ns3_options(args)
    return CommSpec(args.backend, args.algorithm, args.channels, options, calibration_path(args.calibration),
                    cache_path_from_args(args)).resolved()


def _provenance(comm, spec: CommSpec) -> dict:
    """What --json prints of an answer's provenance (the text lines' fields)."""
    from artist.network.provenance import answer_path

    return {"packets_simulated": comm.packets, "answered_by": answer_path(comm), "wall_seconds": comm.wall_seconds,
            "from_cache": bool(comm.cache_hit) if spec.cache else None}


def _provenance_lines(answer: dict) -> None:
    """The text of an answer's provenance fields (_provenance)."""
    print(f"packets simulated    {answer['packets_simulated']}")
    # one vocabulary with --json and the results' answers_* columns (ns3_packet, ns3_message_level, ...)
    print(f"answered by          {answer['answered_by']}")
    print(f"wall seconds         {answer['wall_seconds']:.3f}")
    cached = answer["from_cache"]
    print(f"answered from cache  {'cache off' if cached is None else 'yes' if cached else 'no'}")


def collective_answer(args, topology) -> dict:
    """--collective: the time of one collective alone, as --json prints it."""
    if args.nbytes is None:
        raise InputError("command line", "--bytes", "--collective needs --bytes (payload per rank)")
    nbytes = parse_bytes(args.nbytes)
    group = _group(args, topology)
    spec = _spec(args)
    comm = build_stack(spec, topology)
    graph = StepGraph((Node(0, args.collective, group=group, nbytes=nbytes),))
    timing = comm.time({"collective": graph})["collective"]  # an Ns3SimulationError is one line (artist.cli)
    placement = Placement(topology, group)
    return {"collective": args.collective, "bytes_per_rank": nbytes,
            "shape": shape_to_text(placement.canonical_shape), "gpus": placement.size,
            "tier": placement.tier, "backend": args.backend, "algorithm": args.algorithm,
            "channels": args.channels, "calibrated": spec.calibration is not None,
            "seconds": timing.node_seconds[0], **_nccl_choice(args, placement, nbytes),
            **_provenance(timing.result, spec)}


def _nccl_choice(args, placement, nbytes: int) -> dict:
    """Algorithm nccl: what NCCL picks for this collective ({} otherwise, or for a point-to-point kind)."""
    if args.algorithm != NCCL_CHOICE:
        return {}
    from artist.network.nccl.chosen import choice_on

    choice = choice_on(placement, args.collective, nbytes)
    if choice is None:
        return {"nccl_choice": None}
    return {"nccl_choice": {"algorithm": choice.algorithm, "protocol": choice.protocol, "channels": choice.channels}}


def run_collective(args, topology) -> int:
    answer = collective_answer(args, topology)
    if args.json:
        print(json.dumps(answer, indent=2))
        return 0
    print(f"{args.collective} of {answer['bytes_per_rank']} B per rank on {answer['shape']} "
          f"({answer['gpus']} GPUs, {answer['tier']} tier), backend {args.backend}, {args.algorithm} "
          f"x{args.channels}{', calibrated' if answer['calibrated'] else ''}")
    print(f"seconds              {answer['seconds']:.9f}")
    if "nccl_choice" in answer:
        choice = answer["nccl_choice"]
        pick = (f"{choice['algorithm']} / {choice['protocol']}, {choice['channels']} channels" if choice else
                "none (point-to-point: timed by its schedule)")
        print(f"nccl choice          {pick}")
    _provenance_lines(answer)
    return 0


def _jobs(args, topology) -> dict[str, tuple[ModelProfile, Placement]]:
    """--job MODEL:GPUS texts -> {text: (model, placement)}; GPUs of two jobs must not overlap."""
    jobs: dict[str, tuple[ModelProfile, Placement]] = {}
    owner: dict[int, str] = {}
    for text in args.job:
        name, sep, gpus_text = text.rpartition(":")
        if not sep or not name or not gpus_text:
            raise InputError("command line", f"--job {text}", "expected MODEL:GPUS, e.g. resnet50:0-7,64-71")
        if text in jobs:
            raise InputError("command line", f"--job {text}", "the same job is given twice")
        gpus = parse_gpus(gpus_text, topology)
        for g in gpus:
            if g in owner:
                raise InputError("command line", f"--job {text}", f"GPU {g} is already given to --job {owner[g]}")
            owner[g] = text
        args.model = name
        model = _model(args)
        topology.check_reference_gpu({model.reference_gpu})
        jobs[text] = (model, Placement(topology, gpus))
    return jobs


def jobs_answer(args, topology) -> list[dict]:
    """--job: every job's step alone and with all the jobs on the fabric at once, as --json prints it."""
    if args.backend == "analytical":
        raise InputError("command line", "--backend analytical",
                         "--job compares step times alone and shared: the analytical backend times every job "
                         "alone; use --backend flow or ns3")
    jobs = _jobs(args, topology)
    spec = _spec(args)
    perf = as_perf_model(build_stack(spec, topology), topology)
    # each job alone on its own GPUs (the ecmp hash sees them), then all together in steady state: on ns-3 each
    # can take minutes, so a bar with an ETA on a terminal (the shared run costs about the alone ones together)
    with tqdm(total=2 * len(jobs), desc="comm --job", unit="job-step", file=sys.stderr, disable=None,
              dynamic_ncols=True, leave=False) as bar:
        alone = {}
        for job in jobs:
            bar.set_postfix_str(f"alone: {job}", refresh=True)
            alone[job] = perf.shared({job: jobs[job]})[job]
            bar.update(1)
        bar.set_postfix_str("all jobs together", refresh=True)
        shared = perf.shared(jobs)
        bar.update(len(jobs))
    return [{"job": job, "backend": args.backend, "alone_s": alone[job].step_seconds,
             "shared_s": shared[job].step_seconds, "steps_measured": shared[job].comm.details["steady_steps"],
             "converged": shared[job].comm.details["steady_converged"]} for job in jobs]


def run_jobs(args, topology) -> int:
    """Every --job's step alone and with all the jobs on the fabric at once."""
    rows = jobs_answer(args, topology)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    above = "".join(f"; {level.name} {level.model}, oversubscription {level.oversubscription:g}"
                    for level in topology.levels[1:])  # levels above the spine, if any
    print(f"{len(rows)} job(s) on {topology.name} (spine {topology.spine_model}, oversubscription "
          f"{topology.oversubscription:g}{above}), backend {args.backend}, {args.algorithm} x{args.channels}")
    print("shared: steady state (every job repeats its step until stable; steps = steps measured, "
          "* = not settled within the cap)")
    print(f"{'job':40} {'alone s':>12} {'shared s':>12} {'slowdown':>9} {'steps':>6}")
    for row in rows:
        print(f"{row['job']:40} {row['alone_s']:>12.6f} {row['shared_s']:>12.6f} "
              f"{row['shared_s'] / row['alone_s']:>9.3f} {row['steps_measured']:>5}{'' if row['converged'] else '*'}")
    return 0


def answer(args, topology) -> dict | list[dict]:
    """What `artist comm ... --json` prints: --job's rows, --collective's or --plan's object, else --model's step."""
    if args.job is not None:
        return jobs_answer(args, topology)
    if args.collective is not None:
        return collective_answer(args, topology)
    if args.plan is not None:
        from artist.commands.plans import plan_estimate

        return plan_estimate(args, topology).as_json()
    return step_answer(args, topology)


def step_answer(args, topology) -> dict:
    """--model and --shape: a data-parallel step's raw and exposed all-reduce seconds, as --json prints them."""
    if args.microbatches is not None:
        raise InputError("command line", "--microbatches", "only with --plan")
    if args.shape is None:
        raise InputError("command line", "--shape", "--model needs --shape (the placement shape)")
    placement = _placement(args, topology)
    model = _model(args)
    topology.check_reference_gpu({model.reference_gpu})
    spec = _spec(args)
    comm = build_stack(spec, topology)
    step = as_perf_model(comm, topology).estimate(model, placement)  # an Ns3SimulationError is one line
    return {"model": model.name, "shape": shape_to_text(placement.canonical_shape),
            "gpus": placement.size, "tier": placement.tier, "backend": args.backend,
            "algorithm": args.algorithm, "channels": args.channels,
            "calibrated": spec.calibration is not None, "buckets": len(model.buckets),
            "raw_seconds": step.comm_seconds, "exposed_seconds": step.exposed_comm_seconds,
            **_provenance(step.comm, spec)}


def run(args) -> int:
    topology = load_topology_from(args)
    if args.job is not None:
        return run_jobs(args, topology)
    if args.collective is not None:
        return run_collective(args, topology)
    if args.plan is not None:
        return run_plan(args, topology)
    answer_ = step_answer(args, topology)
    if args.json:
        print(json.dumps(answer_, indent=2))
        return 0
    print(f"model {answer_['model']} on {answer_['shape']} ({answer_['gpus']} GPUs, "
          f"{answer_['tier']} tier), backend {args.backend}, {args.algorithm} x{args.channels}"
          f"{', calibrated' if answer_['calibrated'] else ''}")
    print(f"buckets              {answer_['buckets']}")
    print(f"raw seconds          {answer_['raw_seconds']:.9f}")
    print(f"exposed seconds      {answer_['exposed_seconds']:.9f}")
    _provenance_lines(answer_)
    return 0
