"""`artist plans`: rank the hybrid-parallel plans of an LLM-zoo model on N GPUs by step time;
and `artist comm --model M --plan ...` (artist/commands/comm.py hands --plan here): one plan's
step, exposed communication and memory.

    artist comm --model gpt3-13b --plan dp=4,tp=8,pp=2 --topology dgx-h100 [--gpus 0-63] [--json]
    artist plans --model gpt3-13b --gpus 64 --topology dgx-h100 [--global-batch 512]

GPUs are taken in rank order (Megatron: TP fastest, then PP, then DP); without --gpus (comm) a
plan runs on the topology's first dp x tp x pp GPUs, machine after machine. Plans (artist plans)
are every tp dividing the GPU count up to one machine, every pp up to the model's blocks, ep over
the divisors of dp that divide the experts; a plan whose busiest GPU does not fit is reported
as refused, with the reason, never ranked.
"""

from __future__ import annotations

import json
import sys

from tqdm import tqdm

from artist.commands._args import integer
from artist.commands._common import add_network_arguments, add_topology_arguments, load_topology_from
from artist.errors import InputError
from artist.limits import MAX_GPUS
from artist.parallel.plan import DEFAULT_GLOBAL_BATCH, ParallelPlan, parse_plan, with_microbatches
from artist.perf.hybrid import PlanEstimate, estimate_plan, replicas_laid_out_alike
from artist.perf.hybrid_job import MAX_PLAN_NODES, candidate_plans, graph_nodes_bound
from artist.perf.memory import PlanDoesNotFit
from artist.topology import Topology
from artist.workload.zoo import ZOO, zoo_model

MAX_MICROBATCHES = 1 << 16  # a bound on graph size: far past any published pipeline (GPT-3: 1536 / dp)


def add_plan_arguments(p, *, in_comm: bool) -> None:
    """Options of a hybrid-parallel step (shared by `artist comm --plan` and `artist plans`)."""
    if in_comm:
        p.add_argument("--plan", default=None,
                       help="with --model from the LLM zoo: dp=D,tp=T,pp=P[,ep=E][,microbatches=M]")
        p.add_argument("--microbatches", type=integer(1, MAX_MICROBATCHES), default=None,
                       help="--plan: micro-batches per replica per step (default: global batch / (dp x "
                            "micro-batch size), as `artist plans` splits it)")
        if not any("--json" in action.option_strings for action in p._actions):  # comm may define it already
            p.add_argument("--json", action="store_true", help="--plan: print one JSON object")
    p.add_argument("--global-batch", type=integer(1, 1 << 24), default=DEFAULT_GLOBAL_BATCH,
                   help=f"sequences per step (default {DEFAULT_GLOBAL_BATCH}, the smallest batch of Megatron-LM's "
                        "Table 1){'; with --plan, where it states no microbatches' if in_comm else ''}")
    p.add_argument("--micro-batch-size", type=integer(1, 1 << 16), default=1, help="sequences per micro-batch")
    p.add_argument("--no-recompute", action="store_true", help="keep activations (default: full recomputation)")
    p.add_argument("--sequence-parallel", action="store_true",
                   help="Megatron sequence parallelism: each TP all-reduce becomes an all-gather and a reduce-scatter")
    p.add_argument("--no-overlap-dp", action="store_true",
                   help="all-reduce each stage's gradients after its last backward pass (default: per layer, "
                        "overlapped with the rest of the backward pass)")


def add_parser(sub) -> None:
    p = sub.add_parser("plans", help="rank the DP x TP x PP (x EP) plans of an LLM-zoo model on N GPUs",
                       description="Every plan of the model on the first N GPUs of the topology, timed (step "
                                   "graph, 1F1B) and ranked by step time; plans that do not fit in memory are "
                                   "listed as refused.")
    add_topology_arguments(p)
    p.add_argument("--model", required=True, help=f"LLM zoo model: {', '.join(ZOO)}")
    p.add_argument("--gpus", type=integer(1, MAX_GPUS), required=True, help="GPU count")
    p.add_argument("--top", type=integer(1, 10_000), default=10, help="plans to print (default 10)")
    add_plan_arguments(p, in_comm=False)
    add_network_arguments(p)
    p.set_defaults(func=run_plans, transport="window", accelerate=False)


def zoo_or_error(name: str):
    try:
        return zoo_model(name)
    except KeyError as exc:
        raise InputError("command line", f"--model {name}", str(exc.args[0])) from None


def _check_size(model, plan: ParallelPlan) -> None:
    nodes = graph_nodes_bound(model, plan)
    if nodes > MAX_PLAN_NODES:
        raise InputError("command line", "--plan", f"{plan.text()} would build ~{nodes} step-graph nodes "
                                                   f"(at most {MAX_PLAN_NODES}); use fewer micro-batches")


def _estimate(args, topology, model, plan, gpus, shortcut: bool = False) -> PlanEstimate:
    """shortcut: with the analytical backend (jobs timed in isolation) build only the first replica
    set's passes when every replica is laid out alike (perf.hybrid.replicas_laid_out_alike): same answer."""
    from artist.commands.comm import _spec
    from artist.commands._common import build_stack

    _check_size(model, plan)
    fabric = build_stack(_spec(args), topology)
    first_only = shortcut and args.backend == "analytical" and replicas_laid_out_alike(topology, plan, gpus)
    return estimate_plan(fabric, topology, model, plan, gpus, args.micro_batch_size,
                         recompute=not args.no_recompute, overlap_dp=not args.no_overlap_dp,
                         first_replicas_only=first_only, sequence_parallel=args.sequence_parallel)


def _plan_gpus(args, topology, plan: ParallelPlan) -> tuple[int, ...]:
    from artist.commands.comm import _placement, parse_gpus

    if args.gpus is not None:
        gpus = parse_gpus(args.gpus, topology)
    elif args.shape is not None:
        gpus = _placement(args, topology).gpus
    else:
        if plan.gpus > topology.gpus:
            raise InputError("command line", "--plan", f"{plan.text()} needs {plan.gpus} GPUs; the topology has "
                                                       f"{topology.gpus} (use --racks)")
        return tuple(range(plan.gpus))
    if len(gpus) != plan.gpus:
        raise InputError("command line", "--gpus" if args.gpus is not None else "--shape",
                         f"{len(gpus)} GPUs given; plan {plan.text()} needs dp x tp x pp = {plan.gpus}")
    return gpus


def plan_estimate(args, topology) -> PlanEstimate:
    """`artist comm --model M --plan ...`'s estimate of one plan's step."""
    model = zoo_or_error(args.model)
    try:
        if args.microbatches is not None:
            if "microbatches" in args.plan:
                raise ValueError("microbatches given in --plan and as --microbatches")
            plan = parse_plan(args.plan, microbatches=args.microbatches)
        else:  # as stated, else the global batch's split (the one default: parallel/plan.py)
            plan = with_microbatches(args.plan, 0 if "microbatches" in args.plan else args.global_batch,
                                     args.micro_batch_size)
        if plan.ep > 1 and not model.is_moe:
            raise ValueError(f"ep={plan.ep}: model {model.name} has no experts")
    except ValueError as exc:
        raise InputError("command line", f"--plan {args.plan}", str(exc)) from None
    gpus = _plan_gpus(args, topology, plan)
    try:
        est = _estimate(args, topology, model, plan, gpus)
    except InputError:  # already names its file or option (a calibration profile, a limit)
        raise
    except (PlanDoesNotFit, ValueError, KeyError) as exc:
        raise InputError("command line", f"--plan {args.plan}", str(exc.args[0] if exc.args else exc)) from None
    return est


def run_plan(args, topology) -> int:
    """`artist comm --model M --plan ...`."""
    est = plan_estimate(args, topology)
    plan = est.plan
    if args.json:
        json.dump(est.as_json(), sys.stdout, sort_keys=True)
        print()
        return 0
    print(f"model {est.model}, plan {plan.text()}, micro-batch {est.micro_batch_size}, {plan.gpus} GPUs "
          f"({est.gpu.name}), backend {args.backend}, {args.algorithm} x{args.channels}")
    print(f"step seconds         {est.step_seconds:.6f}")
    print(f"compute seconds      {est.compute_seconds:.6f}   (busiest stage, one GPU)")
    for tag in ("tp", "pp", "dp", "ep"):
        print(f"exposed {tag.upper()} seconds   {est.exposed_seconds[tag]:.6f}")
    print(f"bubble fraction      {est.bubble_fraction:.4f}")
    print(f"memory GiB per GPU   {est.memory_gib:.2f}   (stage {est.memory.stage})")
    print(f"MFU                  {est.mfu:.4f}")
    print(f"samples per second   {est.samples_per_second:.3f}")
    print(f"graph nodes          {est.nodes}")
    print(f"packets simulated    {est.comm.packets}")
    return 0


def rank_plans(args, topology: Topology | None = None) -> tuple[Topology, object, list[PlanEstimate],
                                                                 list[tuple[ParallelPlan, str]]]:
    """`artist plans`: (topology, zoo model, the plans that fit by step time, (plan, reason) of those refused).
    topology: already loaded (the Python API), else as args names it."""
    topology = load_topology_from(args) if topology is None else topology
    model = zoo_or_error(args.model)
    if args.gpus > topology.gpus:
        raise InputError("command line", f"--gpus {args.gpus}", f"the topology has {topology.gpus} GPUs (use --racks)")
    ranked, refused = [], []
    candidates = list(candidate_plans(model, args.gpus, topology.gpus_per_machine, args.global_batch,
                                      args.micro_batch_size))
    # each plan is a step graph timed by the backend (ns-3: seconds to minutes): a bar with an ETA, on a terminal
    for plan in tqdm(candidates, desc=f"plans of {model.name}", unit="plan", file=sys.stderr, disable=None,
                     dynamic_ncols=True, leave=False):
        try:
            ranked.append(_estimate(args, topology, model, plan, range(plan.gpus), shortcut=True))
        except (PlanDoesNotFit, InputError) as exc:
            refused.append((plan, str(exc)))
    if not ranked and not refused:
        raise InputError("command line", "--global-batch",
                         f"{args.global_batch} sequences split into no plan of {args.gpus} GPUs at micro-batch "
                         f"{args.micro_batch_size}")
    ranked.sort(key=lambda e: (e.step_seconds, e.plan.text()))
    return topology, model, ranked, refused


def run_plans(args) -> int:
    topology, model, ranked, refused = rank_plans(args)
    print(f"model {model.name} on {args.gpus} GPUs of {topology.name}, global batch {args.global_batch}, "
          f"micro-batch {args.micro_batch_size}, backend {args.backend}: {len(ranked)} plans fit, "
          f"{len(refused)} refused")
    print(f"{'rank':>4}  {'plan':<40} {'step s':>10} {'TP s':>8} {'PP s':>8} {'DP s':>8} {'EP s':>8} "
          f"{'bubble':>7} {'GiB':>6} {'MFU':>6}")
    for i, e in enumerate(ranked[:args.top], 1):
        x = e.exposed_seconds
        print(f"{i:>4}  {e.plan.text():<40} {e.step_seconds:>10.4f} {x['tp']:>8.4f} {x['pp']:>8.4f} "
              f"{x['dp']:>8.4f} {x['ep']:>8.4f} {e.bubble_fraction:>7.3f} {e.memory_gib:>6.1f} {e.mfu:>6.3f}")
    for plan, reason in refused[:args.top]:
        print(f"refused {plan.text()}: {reason.split(': ', 2)[-1]}")
    return 0
