"""Sweeps of Crius' jobs (artist/crius/simulation.py, in the event loop): specs with `loop: crius`.

    name: crius-fig16
    loop: crius
    cluster: crius-1280             # a Crius cluster (topologies/clusters/crius-*.yaml), or any cluster or
                                    # topology file whose GPU types have datasheet figures (dally-3tier)
    jobs: 1000                      # jobs per workload
    arrivals_per_hour: 150          # the synthetic Philly-shaped workload (artist/crius/workload.py)
    philly_log: ../traces/x.csv     # optional: arrivals and durations of a Philly cluster_job_log instead
    seeds: [1, 2]                   # axis; each seed draws one workload that every policy runs
    policies: [crius, gavel, fcfs, gandiva, elasticflow-ls]   # axis
    depth: 3                        # Crius' search depth
    comm: [none, analytical]        # optional axis (default analytical): the network of the whole Crius world

One run per (policy, seed): every loop's results columns (artist/metrics.py jobs_summary: JCT and
queueing statistics, exposed communication per iteration, GPU utilisation, restarts; which path answered
the ground truth's network questions) plus Crius' own columns (throughput_mean,
throughput_peak, estimation_accuracy_avg/min, ..._packed_avg/min, packed_starts_fraction,
tuning_accuracy_avg, profile_gpu_h, tuning_h), per-run jobs and throughput tables. The scheduler's
seconds per decision are wall-clock: run.json only, not the results table (byte-identical for a seed).
The network is Crius' Catalogue's (artist/network stack, ring, uncalibrated): `comm` names its backend,
`analytical` (default) or `none` (communication free: the network ablations' network-less baseline); the
backend times both Crius' offline communication profiles (its estimator, CommTable) and the ground truth
(the 1F1B step on the real placement), as a real cluster would show both the same network. flow and ns3
are refused: the profiles sample collectives up to 64 GiB per pool, hours of ns-3. Unfinished jobs leave NaN
JCT statistics over the finished ones only.
"""

from __future__ import annotations

import dataclasses
import math
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import pandas as pd

from artist import shipped
from artist.errors import InputError
from artist.jsonkey import canonical_json
from artist.limits import MAX_ARRIVAL_S
from artist.metrics import jobs_summary
from artist.network.stack import CommSpec
from artist.simulator import SimulatorConfig
from artist.sweep.axes import NO_CALIBRATION, PolicyChoice, TopologyChoice, WorkloadChoice
from artist.sweep.identity import run_id_of, sha256_file
from artist.sweep.runs import Run
from artist.yamlio import Fields

CRIUS_TOP_LEVEL = {"name", "loop", "cluster", "jobs", "arrivals_per_hour", "philly_log", "seeds", "policies", "depth",
                   "comm", "notes", "report", "reduced"}
CRIUS_BACKENDS = ("analytical", "none")
MAX_JOBS = 100_000  # a spec asking for more is refused (the run would not end in reasonable time)
IDENTITY_FORMAT = "crius-1"


@dataclass(frozen=True)
class CriusRunConfig:
    """What a Crius run needs (workers read no spec file): the workload is drawn in the worker from the seed."""
    cluster: str
    jobs: int
    arrivals_per_hour: float
    philly_log: str | None
    depth: int
    backend: str = "analytical"  # the network of the estimator's profiles and of the ground truth

    @property
    def gpus(self) -> int:
        from artist.policies.crius.cluster import crius_cluster

        return sum(p.topology.gpus for p in crius_cluster(self.cluster).values())

    def execute(self, run: Run, models: Mapping, cache_path: str | None, use_cache: bool):
        return execute_crius(run)


def load_crius_spec(f: Fields, path: Path):
    """The SweepSpec of a `loop: crius` spec (checked and expanded; InputError on anything wrong)."""
    from artist.policies.crius.cluster import CLUSTERS, crius_cluster
    from artist.crius.simulation import POLICIES
    from artist.sweep import spec as rigid

    f.unknown_keys(CRIUS_TOP_LEVEL)
    base = path.resolve().parent
    name = f.string("name", path.stem)
    cluster = f.string("cluster")
    if cluster not in CLUSTERS:  # a cluster or topology file (relative to the spec, or a shipped name)
        found = shipped.find_topology(cluster, base=base)
        if not found.is_file():
            raise f.error("cluster", f"neither a Crius cluster ({', '.join(CLUSTERS)}) nor a topology or cluster "
                                     f"file: {cluster!r}")
        cluster = str(found.resolve())
    try:
        pools = crius_cluster(cluster)
    except (KeyError, ValueError) as exc:
        raise f.error("cluster", exc.args[0]) from None
    label = cluster if cluster in CLUSTERS else Path(cluster).stem  # (a Crius cluster's runs keep their ids)
    jobs = f.integer("jobs", minimum=1, maximum=MAX_JOBS)
    philly = None
    if f.has("philly_log"):
        philly = rigid._resolve(base, f.string("philly_log"))
        if not philly.is_file():
            raise f.error("philly_log", f"no such file: {philly}")
    rate = f.number("arrivals_per_hour", 150.0, positive=True, maximum=1e6)
    if philly is None and jobs / rate * 3600.0 > MAX_ARRIVAL_S:  # (1e-300 per hour ran for ever)
        raise f.error("arrivals_per_hour", f"{jobs} jobs at {rate:g} per hour arrive over {jobs / rate * 3600:.3g} s, "
                                           f"past the {MAX_ARRIVAL_S:g} s limit (artist.limits)")
    if philly is not None:  # read now what the runs will read (a truncated log failed in every run)
        from itertools import islice

        from artist.workload.traces.philly import json_array_objects

        for _ in islice(json_array_objects(philly), jobs):
            pass
    depth = f.integer("depth", 3, minimum=0, maximum=10)
    seeds = [rigid._integer(f, "seeds", i, v, minimum=0, maximum=2**32 - 1)
             for i, v in enumerate(rigid._listed(f, "seeds", [0]))]
    if len(set(seeds)) != len(seeds):
        raise f.error("seeds", f"a seed is listed twice: {seeds}")
    raw = rigid._listed(f, "policies")
    for i, p in enumerate(raw):
        if p not in POLICIES:
            raise InputError(f.source, f"field 'policies[{i}]'", f"unknown Crius policy {p!r}; known: "
                                                                 f"{', '.join(POLICIES)}")
    rigid._unique(f, "policies", raw, "policy")
    backends = _backends(f)
    config = CriusRunConfig(cluster, jobs, rate, str(philly) if philly else None, depth)
    first = next(iter(pools.values())).topology
    topology = TopologyChoice(label, dataclasses.replace(first, name=label), "")
    pool_files = {gpu_type: sha256_file(pool.source_file) for gpu_type, pool in pools.items()}
    if philly:
        workload = WorkloadChoice(f"philly-{philly.stem}-{jobs}", f.string("philly_log"), str(philly),
                                  {"philly_sha256": sha256_file(philly), "jobs": jobs})
    else:
        workload = WorkloadChoice(f"synthetic-{jobs}@{rate:g}/h", f"crius_jobs({jobs}, {rate:g}/h)",
                                  f"crius_jobs({jobs}, {rate:g}/h)", {"jobs": jobs, "arrivals_per_hour": rate})
    racks = sum(p.topology.racks for p in pools.values())
    runs = []
    for policy_name in raw:
        policy = PolicyChoice(policy_name, policy_name, {}, canonical_json({}))
        for seed in seeds:
            for backend in backends:
                identity = {"format": IDENTITY_FORMAT, "cluster": label, "pools_sha256": pool_files,
                            "policy": policy_name, "depth": depth, "workload": {**workload.identity, "seed": seed}}
                if backend != "analytical":  # the analytical runs keep the ids they had before `comm` existed
                    identity["backend"] = backend
                axes = {"topology": label, "racks": racks, "policy": policy_name, "workload": workload.label,
                        "seed": seed, "backend": backend, "algorithm": "ring", "channels": 1, "calibration": ""}
                runs.append(Run(len(runs), run_id_of(identity), identity, axes, topology.topology, (), policy,
                                workload, CommSpec(backend), NO_CALIBRATION, SimulatorConfig(),
                                elastic=dataclasses.replace(config, backend=backend)))
    spec = rigid.SweepSpec(name, f.source, [topology], None, [PolicyChoice(p, p, {}, "{}") for p in raw], [workload],
                           seeds, backends, ["ring"], [1], [NO_CALIBRATION], SimulatorConfig(), {}, "",
                           {b: {} for b in backends})
    spec.runs = runs
    spec.notes = []
    return spec


def _backends(f: Fields) -> list[str]:
    """The `comm` axis: backend names of CRIUS_BACKENDS (default analytical)."""
    from artist.sweep import spec as rigid

    raw = rigid._listed(f, "comm", ["analytical"])
    for i, b in enumerate(raw):
        if b not in CRIUS_BACKENDS:
            key = f"comm[{i}]" if isinstance(f.raw("comm"), list) else "comm"
            raise InputError(f.source, f"field '{key}'", f"Crius' loop takes backend {' or '.join(CRIUS_BACKENDS)}, "
                                                         f"got {b!r} (its offline profiles sample collectives up to "
                                                         f"64 GiB: flow or ns3 would take hours per pool)")
    rigid._unique(f, "comm", raw, "backend")
    return raw


def simulate_crius(config: CriusRunConfig, policy: str, seed: int):
    """(Result, jobs drawn) of one Crius run: the seed's workload on the cluster under the policy."""
    from artist.crius.simulation import crius_fabrics, simulate
    from artist.crius.truth import GroundTruth
    from artist.policies.crius.catalogue import Catalogue
    from artist.policies.crius.cluster import crius_cluster
    from artist.crius.workload import crius_jobs, philly_jobs

    pools = crius_cluster(config.cluster)
    catalogue = Catalogue(pools, crius_fabrics(pools, CommSpec(config.backend)))
    truth = GroundTruth(catalogue.fabrics)
    if config.philly_log:
        jobs = philly_jobs(config.philly_log, pools, catalogue, config.jobs, seed, truth)
    else:
        jobs = crius_jobs(pools, catalogue, config.jobs, seed, config.arrivals_per_hour, truth)
    return simulate(pools, jobs, policy, config.depth, catalogue, truth), jobs


def tables_of(result) -> tuple[pd.DataFrame, dict, pd.DataFrame]:
    """(jobs, results row, throughput per round) of a finished Crius run."""
    rows = []
    for j in result.jobs:
        s = j.spec
        rows.append({"job_id": s.job_id, "model": s.model, "gpu_type_requested": s.gpu_type, "gpus_requested": s.n_g,
                     "global_batch": s.global_batch, "iterations": s.iterations, "arrival_s": s.arrival,
                     "start_s": math.nan if j.start is None else j.start,
                     "finish_s": math.nan if j.finish is None else j.finish,
                     "jct_s": math.nan if j.finish is None else j.finish - s.arrival,
                     "queueing_delay_s": math.nan if j.start is None else j.start - s.arrival,
                     "comm_seconds_per_iteration": (result.comm_seconds.get(s.job_id, 0.0) / s.iterations
                                                    if j.finish is not None else math.nan),
                     "restarts": j.restarts})
    jobs = pd.DataFrame(rows)
    s = result.summary()
    utilisation = result.gpu_seconds / (result.gpus * result.makespan) if result.makespan > 0 else 0.0
    row = {**jobs_summary(jobs, result.makespan, utilisation),  # every loop's columns (artist/metrics.py)
           "throughput_mean": float(s["avg_throughput"]), "throughput_peak": float(s["peak_throughput"]),
           "estimation_accuracy_avg": s["estimation_accuracy_avg"],
           "estimation_accuracy_min": s["estimation_accuracy_min"],
           "estimation_accuracy_packed_avg": s["estimation_accuracy_packed_avg"],
           "estimation_accuracy_packed_min": s["estimation_accuracy_packed_min"],
           "packed_starts_fraction": s["packed_starts"], "tuning_accuracy_avg": s["tuning_accuracy_avg"],
           "profile_gpu_h": s["profile_gpu_h"], "tuning_h": s["tuning_h"],
           **(result.answers.columns() if result.answers is not None else {})}
    throughput = pd.DataFrame(result.throughput, columns=["time_s", "throughput"])
    return jobs, row, throughput


def execute_crius(run: Run):
    """sweep/worker.py's execute for a Crius run."""
    import traceback

    from artist.sweep.worker import RunOutcome

    started = time.perf_counter()
    try:
        result, _ = simulate_crius(run.elastic, run.policy.name, int(run.axes["seed"]))
        jobs, row, throughput = tables_of(result)
        info = {"decision_s_per_job": float(result.summary()["decision_s_per_job"])}  # wall-clock
        return RunOutcome(run.run_id, jobs, row, throughput, 0, 0, time.perf_counter() - started,
                          socket.gethostname(), os.getpid(), info=info)
    except Exception:  # noqa: BLE001 - reported by the driver with the run's parameters, never dropped
        return RunOutcome(run.run_id, None, None, None, 0, 0, time.perf_counter() - started,
                          socket.gethostname(), os.getpid(), error=traceback.format_exc())
