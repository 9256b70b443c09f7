"""`artist simulate`: one policy over one workload on one topology."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from artist import shipped
from artist.commands._args import integer, number
from artist.commands._common import (add_network_arguments, add_topology_arguments, build_stack,
                                     calibration_path, load_topology_from, ns3_options, progress_enabled,
                                     writable_dir)
from artist.commands.cache import cache_path_from_args
from artist.errors import InputError, Interrupted
from artist.limits import MAX_ARRIVAL_S, MAX_RESTORE_S, MIN_ROUND_INTERVAL_S
from artist.perf.model import CONTENTION_MODELS
from artist.metrics import summary, write_tables
from artist.network.stack import CommSpec, cached_layer
from artist.policies.base import Policy
from artist.policies.registry import make_policy_checked, policy_names
from artist.simulator import SimulationResult, SimulatorConfig, simulate
from artist.topology import Topology
from artist.workload import Job, ModelProfile, load_models
from artist.workload.spec import job_too_large, jobs_from_spec


def add_parser(sub) -> None:
    p = sub.add_parser("simulate", help="run one policy over one workload",
                       description="Run one scheduling policy over a job trace on a topology.")
    add_topology_arguments(p)
    p.add_argument("--workload", default=str(shipped.DEFAULT_TRACE),
                   help="trace CSV (canonical or Helios), a published trace as FORMAT:path=FILE,... (philly, pai, "
                        "helios, acme, pollux, gavel, tiresias, crius; the docs) or a generator: batch:n=500 | "
                        "poisson:n=400,interarrival=120 (default: workloads/traces/small.csv)")
    p.add_argument("--models", default=None, help="directory of model profiles (default: workloads/models)")
    p.add_argument("--policy", default="fifo",
                   help=f"one of: {', '.join(policy_names())}; or a policy of elastic jobs (pollux, sia, gavel, "
                        f"optimus-oracle, crius, fcfs, elasticflow-ls); on --topology crius-testbed or crius-1280, "
                        f"Crius' policies over its LLM jobs: `artist list policies`")
    p.add_argument("--policy-param", action="append", default=[], metavar="KEY=VALUE",
                   help="policy parameter (repeatable); values are parsed as YAML scalars")
    p.add_argument("--plugin", default=None, metavar="FILE.py",
                   help="a Python file whose @register calls add policies (a policy in one file; docs)")
    add_network_arguments(p)
    p.add_argument("--seed", type=integer(0, 2**32 - 1), default=0)
    p.add_argument("--restore-seconds", type=number(0.0, MAX_RESTORE_S), default=SimulatorConfig.restore_seconds,
                   help="checkpoint-restore cost (s) paid when a preempted job resumes or a job migrates")
    p.add_argument("--contention", default="isolated", choices=("isolated", "shared"),
                   help="isolated: every job at its step time alone; shared: jobs on common links re-rated "
                        "together at every start and stop")
    p.add_argument("--contention-model", default="phase", choices=CONTENTION_MODELS,
                   help="how shared contention times jobs on common links: phase (fast: collectives stretched "
                        "phase by phase, alone times from --backend) or cosim (the reference: --backend flow or "
                        "ns3 co-simulates every transfer or packet)")
    p.add_argument("--round-interval", type=number(MIN_ROUND_INTERVAL_S, MAX_ARRIVAL_S, allow=(0.0,)),
                   default=SimulatorConfig.round_interval_s,
                   help=f"periodic scheduling round in seconds, >= {MIN_ROUND_INTERVAL_S:g} (0: only on events)")
    p.add_argument("--out", default=None, help="directory for jobs/summary/utilisation tables (CSV + parquet)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--progress", action="store_true", help="progress bar even when stderr is not a terminal")
    p.set_defaults(func=run)


def parse_params(items: list[str]) -> dict:
    import yaml

    from artist.yamlio import parse_yaml, yaml_problem

    params = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise InputError("command line", "--policy-param", f"expects KEY=VALUE, got {item!r}")
        try:
            params[key] = parse_yaml(value)
        except yaml.YAMLError as exc:  # any YAML error is the user's value
            where, problem = yaml_problem(exc, value)
            raise InputError("command line", f"--policy-param {key}",
                             f"not a YAML value: {value!r} ({problem}{', ' + where if where else ''})") from None
    return params


def load_jobs(workload: str, models: Mapping[str, ModelProfile], seed: int, cluster_gpus: int | None) -> list[Job]:
    """The jobs of --workload (jobs_from_spec) for a cluster of cluster_gpus GPUs; what a published trace's load
    kept, dropped and assumed said on stderr."""
    notes: list[str] = []
    jobs = jobs_from_spec(workload, models, seed, cluster_gpus, notes)
    for line in notes:
        print(f"note: {line.strip()}", file=sys.stderr)
    return jobs


def _cache_line(comm, spec: CommSpec) -> str:
    cached = cached_layer(comm)
    if cached is None:
        return "cache: off"
    cached.flush()  # counters into the store now, not only at exit
    s = cached.session
    return f"cache: {s.hits} hits, {s.misses} simulations (cache {spec.cache})"


def run(args) -> int:
    if args.plugin:
        from artist.policies.plugins import load_plugin

        load_plugin(args.plugin)
    from artist.commands import simulate_jobs

    dialect = simulate_jobs.dialect_of(args.policy, args.topology, args.workload)
    if dialect is not None:
        return simulate_jobs.run(args, parse_params(args.policy_param), dialect)
    run_ = simulate_rigid(args)
    topology, spec = run_.topology, run_.spec
    row = summary(run_.result)
    print(f"topology {topology.name} ({topology.racks} racks, {topology.gpus} GPUs), {len(run_.jobs)} jobs, "
          f"policy {run_.policy.name}, backend {args.backend}"
          f"{'' if spec.calibration is None else ', calibrated'}; simulated in {run_.wall_seconds:.2f} s wall")
    with pd.option_context("display.width", 200, "display.max_columns", 50):
        print(pd.DataFrame([row]).T.rename(columns={0: "value"}).to_string())
    print(_cache_line(run_.comm, spec))
    if args.out is not None:
        out = Path(args.out)  # (checked writable before the run)
        written = write_tables(run_.result, out)
        print(f"tables written to {out}: {', '.join(sorted(p.name for p in written.values()))}")
    return 0


@dataclass
class RigidRun:
    """One run of the rigid loop (artist/simulator.py) and what it ran on."""

    result: SimulationResult
    topology: Topology
    jobs: list[Job]
    policy: Policy
    spec: CommSpec  # the network stack's spec (cache and calibration resolved)
    comm: object  # the stack built from it
    wall_seconds: float


def simulate_rigid(args, params: dict | None = None, *, topology: Topology | None = None,
                   jobs: Sequence[Job] | None = None, models: Mapping[str, ModelProfile] | None = None) -> RigidRun:
    """`artist simulate`'s run of a rigid policy, every input checked before the loop starts. args: the command's
    options; params: the policy's parameters (default: parsed from --policy-param); topology, jobs, models: already
    loaded (the Python API, artist.simulate), else loaded as args names them."""
    if args.policy not in policy_names():
        raise InputError("command line", "--policy", f"unknown policy {args.policy!r}; `artist list policies` "
                                                     f"lists every one")
    params = parse_params(args.policy_param) if params is None else params
    policy = make_policy_checked(args.policy, params, "command line", "--policy-param")
    topology = load_topology_from(args) if topology is None else topology
    models = load_models(args.models) if models is None else models
    if jobs is None:
        jobs = load_jobs(args.workload, models, args.seed, topology.gpus)
    else:  # jobs built by hand may name a model the trace readers would have refused
        unknown = sorted({j.model for j in jobs if not j.plan} - set(models))
        if unknown:
            raise InputError(args.workload, None, f"unknown model(s) {', '.join(unknown)}; known: "
                                                  f"{', '.join(sorted(models))}")
    jobs = list(jobs)
    if not jobs:
        raise InputError(args.workload, None, "no jobs")
    biggest = job_too_large(jobs, topology.gpus)
    if biggest is not None:
        raise InputError(args.workload, f"job {biggest.job_id}", f"asks for {biggest.gpus} GPUs, but {topology.name} "
                                                                 f"with {topology.racks} rack(s) has {topology.gpus}")
    topology.check_reference_gpu({models[j.model].reference_gpu for j in jobs if not j.plan})
    if args.out is not None:
        writable_dir(args.out)
    spec = CommSpec(args.backend, args.algorithm, args.channels, ns3_options(args),
                    calibration=calibration_path(args.calibration), cache=cache_path_from_args(args)).resolved()
    comm = build_stack(spec, topology)
    if args.contention == "shared" and args.contention_model == "phase":
        from artist.network.phase.model import phase_refusal

        refusal = phase_refusal(args.algorithm)
        if refusal:
            raise InputError("command line", "--contention-model", refusal)
    config = SimulatorConfig(round_interval_s=args.round_interval or None, restore_seconds=args.restore_seconds,
                             contention=args.contention, contention_model=args.contention_model)
    if args.backend == "ns3":
        print("note: the ns3 backend answers each new placement shape with a packet-level run (seconds to minutes "
              "each; the first also starts ns-3); answers are cached", file=sys.stderr)

    from tqdm import tqdm

    bar = tqdm(total=len(jobs), desc=f"simulate {args.policy}", unit="job", disable=not progress_enabled(args),
               dynamic_ncols=True)

    def on_finish(finished: int, total: int, now: float) -> None:
        bar.update(1)
        bar.set_postfix_str(f"t={now / 3600:.2f} h simulated", refresh=False)

    started = time.perf_counter()
    try:
        result = simulate(topology, jobs, models, policy, comm, config, on_finish)
    except KeyboardInterrupt:
        saved = "" if spec.cache is None else f"; the network answers computed so far are in {spec.cache}"
        raise Interrupted(f"no tables written{saved}: run the same command again (cached answers are reused)") from None
    finally:
        bar.close()
    return RigidRun(result, topology, jobs, policy, spec, comm, time.perf_counter() - started)
