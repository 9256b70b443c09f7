"""`artist simulate`: one policy over one workload on one topology."""

from __future__ import annotations

import time

import pandas as pd

from artist.commands.cache import cache_path_from_args
from artist.latency_table import BackendSpec
from artist.metrics import summary, job_table, write_tables
from artist.network.cache import CACHE_FILE_NAME
from artist.network.factory import BACKENDS
from artist.policies.registry import make_policy, policy_names
from artist.simulator import SimulatorConfig, simulate
from artist.topology import load_topology
from artist.workload import load_models
from artist.workload_spec import jobs_from_spec


def add_parser(sub) -> None:
    p = sub.add_parser("simulate", help="run one policy over one workload",
                       description="Run one scheduling policy over a job trace on a topology.")
    p.add_argument("--topology", default="topologies/dally-3tier.yaml")
    p.add_argument("--racks", type=int, default=None, help="override the topology's rack count")
    p.add_argument("--workload", default="workloads/traces/small.csv",
                   help="trace CSV (canonical or Helios) or a generator: batch:n=500 | poisson:n=400,interarrival=120")
    p.add_argument("--models", default=None, help="directory of model profiles (default: workloads/models)")
    p.add_argument("--policy", default="fifo", help=f"one of: {', '.join(policy_names())}")
    p.add_argument("--policy-param", action="append", default=[], metavar="KEY=VALUE",
                   help="policy parameter (repeatable); values are parsed as YAML scalars")
    p.add_argument("--comm", default="analytical", choices=BACKENDS, help="network model backend")
    p.add_argument("--algorithm", default="ring", help="all-reduce algorithm: ring | hierarchical")
    p.add_argument("--channels", type=int, default=1, help="parallel rings (NCCL channels)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the latency cache")
    p.add_argument("--cache-dir", default=None, help=f"directory holding {CACHE_FILE_NAME} (default: $ARTIST_CACHE_DIR)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--restore-seconds", type=float, default=SimulatorConfig.restore_seconds)
    p.add_argument("--round-interval", type=float, default=SimulatorConfig.round_interval_s,
                   help="periodic scheduling round in seconds (0: only on events)")
    p.add_argument("--out", default=None, help="directory for jobs/summary/utilisation tables (CSV + parquet)")
    p.set_defaults(func=run)


def parse_params(items: list[str]) -> dict:
    import yaml

    params = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise SystemExit(f"artist simulate: --policy-param expects KEY=VALUE, got {item!r}")
        params[key] = yaml.safe_load(value)
    return params


def _cache_line(comm, spec: BackendSpec) -> str:
    if spec.cache_path is None:
        return "cache: off"
    comm.flush()  # counters into the store now, not only at exit
    s = comm.session
    return f"cache: {s.hits} hits, {s.misses} simulations (cache {spec.cache_path})"


def run(args) -> int:
    topology = load_topology(args.topology, args.racks)
    models = load_models(args.models)
    jobs = jobs_from_spec(args.workload, models, args.seed)
    try:
        policy = make_policy(args.policy, **parse_params(args.policy_param))
    except KeyError as exc:
        raise SystemExit(f"artist simulate: {exc.args[0]}")
    # Same construction as latency tables: Cached(backend) unless --no-cache, so an ns-3 answer
    # computed by any command is reused by every other.
    spec = BackendSpec(args.comm, args.algorithm, args.channels, cache_path_from_args(args)).resolved()
    comm = spec.build(topology)
    config = SimulatorConfig(round_interval_s=args.round_interval or None, restore_seconds=args.restore_seconds)
    started = time.perf_counter()
    result = simulate(topology, jobs, models, policy, comm, config)
    wall = time.perf_counter() - started
    jobs_df = job_table(result)
    row = summary(result, jobs_df)
    print(f"topology {topology.name} ({topology.racks} racks, {topology.gpus} GPUs), {len(jobs)} jobs, "
          f"policy {policy.name}, comm {args.comm}; simulated in {wall:.2f} s wall")
    with pd.option_context("display.width", 200, "display.max_columns", 50):
        print(pd.DataFrame([row]).T.rename(columns={0: "value"}).to_string())
    print(_cache_line(comm, spec))
    if args.out:
        written = write_tables(result, args.out)
        print(f"tables written to {args.out}: {', '.join(sorted(p.name for p in written.values()))}")
    return 0
