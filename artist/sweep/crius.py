"""Sweeps of Crius' jobs (artist/crius/simulation.py, in the event loop): specs whose workloads are Crius'
LLM jobs (`crius:`), in the fields every sweep has.

    name: crius-fig16
    topology: crius-1280            # a Crius cluster (topologies/clusters/crius-*.yaml), or any cluster or
                                    # topology file whose GPU types have datasheet figures (dally-3tier)
    workloads:                      # axis; each entry Crius' jobs:
      - crius:jobs=1000,arrivals_per_hour=150      # the synthetic Philly-shaped workload (artist/crius/workload.py)
      - {spec: 'crius:jobs=60,philly_log=../traces/x.json', label: philly}   # arrivals and durations of a
                                                                             # Philly cluster_job_log instead
    seeds: [1, 2]                   # axis; each seed draws one workload that every policy runs
    policies: [{name: crius, params: {depth: 3}}, gavel, fcfs, gandiva-crius, elasticflow-ls]   # axis;
                                    # depth: Crius' search depth (default 3)
    comm: [none, analytical]        # optional axis (default analytical): the network of the whole Crius world

One run per (workload, policy, seed): every loop's results columns (artist/metrics.py jobs_summary: JCT and
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

CRIUS_TOP_LEVEL = {"name", "loop", "topology", "workloads", "seeds", "policies", "comm", "notes", "report", "reduced"}
CRIUS_WORKLOAD = "crius:"  # the workload text of Crius' jobs: crius:jobs=N[,arrivals_per_hour=R][,philly_log=PATH]
CRIUS_WORKLOAD_KEYS = ("jobs", "arrivals_per_hour", "philly_log")
DEFAULT_ARRIVALS_PER_HOUR = 150.0  # Crius' evaluation (sec. 8.1: 150 jobs an hour on 1 280 GPUs)
# the fields a spec of Crius' jobs had before they were the common ones: where each went
OLD_FIELDS = {"cluster": "topology: NAME", "jobs": "workloads: ['crius:jobs=N,arrivals_per_hour=R']",
              "arrivals_per_hour": "workloads: ['crius:jobs=N,arrivals_per_hour=R']",
              "philly_log": "workloads: ['crius:jobs=N,philly_log=PATH']",
              "depth": "policies: [{name: crius, params: {depth: D}}]"}
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


def is_crius_workload(text) -> bool:
    """Whether a workload entry (its text, or a mapping with `spec`) is Crius' jobs."""
    if isinstance(text, dict):
        text = text.get("spec")
    return isinstance(text, str) and text.startswith(CRIUS_WORKLOAD)


def _cluster(f: Fields, base: Path) -> tuple[str, str, dict]:
    """(cluster, its label, its pools) of the `topology` field: a Crius cluster's name, or a topology or
    cluster file (relative to the spec, or a shipped name)."""
    from artist.policies.crius.cluster import CLUSTERS, crius_cluster

    cluster = f.string("topology")
    if cluster not in CLUSTERS:
        found = shipped.find_topology(cluster, base=base)
        if not found.is_file():
            raise f.error("topology", f"neither a Crius cluster ({', '.join(CLUSTERS)}) nor a topology or cluster "
                                      f"file: {cluster!r}")
        cluster = str(found.resolve())
    try:
        pools = crius_cluster(cluster)
    except (KeyError, ValueError) as exc:
        raise f.error("topology", exc.args[0]) from None
    label = cluster if cluster in CLUSTERS else Path(cluster).stem  # (a Crius cluster's runs keep their ids)
    return cluster, label, pools


def _crius_workload(f: Fields, i: int, entry, base: Path) -> tuple[WorkloadChoice, int, float, str | None]:
    """(choice, jobs, arrivals per hour, Philly log) of workloads[i] (`crius:jobs=N,...`)."""
    from artist.sweep import spec as rigid

    where = f"workloads[{i}]"
    ef = Fields({"spec": entry} if isinstance(entry, str) else entry, f.source, f"{where}.")
    ef.unknown_keys({"spec", "label"})
    text = ef.string("spec")
    if not is_crius_workload(text):
        raise InputError(f.source, f"field '{where}.spec'", f"a sweep of Crius' jobs takes Crius' workloads "
                                                             f"only ({CRIUS_WORKLOAD}jobs=N,arrivals_per_hour=R), "
                                                             f"not {text!r}")
    values: dict = {}
    for item in filter(None, text[len(CRIUS_WORKLOAD):].split(",")):
        key, eq, value = item.partition("=")
        if not eq or key not in CRIUS_WORKLOAD_KEYS or key in values:
            raise InputError(f.source, f"field '{where}.spec'",
                             f"{CRIUS_WORKLOAD} takes {', '.join(CRIUS_WORKLOAD_KEYS)} once each as key=value; "
                             f"got {item!r}")
        values[key] = value
    if "jobs" not in values:
        raise InputError(f.source, f"field '{where}.spec'", f"{CRIUS_WORKLOAD} needs jobs=N")
    jobs = _whole(f, where, "jobs", values["jobs"], 1, MAX_JOBS)
    philly = None
    if "philly_log" in values:
        philly = rigid._resolve(base, values["philly_log"])
        if not philly.is_file():
            raise InputError(f.source, f"field '{where}.spec'", f"philly_log: no such file: {philly}")
        from itertools import islice

        from artist.workload.traces.philly import json_array_objects

        for _ in islice(json_array_objects(philly), jobs):  # read now what the runs will read
            pass
    rate = _rate(f, where, values.get("arrivals_per_hour"))
    if philly is None and jobs / rate * 3600.0 > MAX_ARRIVAL_S:  # (1e-300 per hour ran for ever)
        raise InputError(f.source, f"field '{where}.spec'",
                         f"{jobs} jobs at {rate:g} per hour arrive over {jobs / rate * 3600:.3g} s, past the "
                         f"{MAX_ARRIVAL_S:g} s limit (artist.limits)")
    if philly:
        default = f"philly-{philly.stem}-{jobs}"
        choice = WorkloadChoice(ef.string("label", default), values["philly_log"], str(philly),
                                {"philly_sha256": sha256_file(philly), "jobs": jobs})
    else:
        default = f"synthetic-{jobs}@{rate:g}/h"
        choice = WorkloadChoice(ef.string("label", default), f"crius_jobs({jobs}, {rate:g}/h)",
                                f"crius_jobs({jobs}, {rate:g}/h)", {"jobs": jobs, "arrivals_per_hour": rate})
    return choice, jobs, rate, str(philly) if philly else None


def _whole(f: Fields, where: str, key: str, text: str, minimum: int, maximum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise InputError(f.source, f"field '{where}.spec'", f"{key} must be a whole number, got {text!r}") from None
    if not minimum <= value <= maximum:
        raise InputError(f.source, f"field '{where}.spec'", f"{key} must be in [{minimum}, {maximum}], got {value}")
    return value


def _rate(f: Fields, where: str, text: str | None) -> float:
    if text is None:
        return DEFAULT_ARRIVALS_PER_HOUR
    try:
        rate = float(text)
    except ValueError:
        rate = math.nan
    if not (math.isfinite(rate) and 0 < rate <= 1e6):
        raise InputError(f.source, f"field '{where}.spec'", f"arrivals_per_hour must be a number in (0, 1e6], "
                                                             f"got {text!r}")
    return rate


def _crius_policies(f: Fields) -> list[tuple[PolicyChoice, int]]:
    """(policy, its search depth) per `policies` entry: a name of Crius' registry, or {name, params, label}
    with params {depth: D} for crius only."""
    from artist.crius.simulation import POLICIES
    from artist.policies.crius.scheduler import SEARCH_DEPTH
    from artist.sweep import spec as rigid

    out = []
    for i, pf in enumerate(rigid._entries(f, "policies", "name", {"name", "params", "label"}, "policies")):
        name = pf.string("name")
        if name not in POLICIES:
            raise InputError(f.source, f"field 'policies[{i}]'", f"unknown policy {name!r} for Crius' jobs; known: "
                                                                 f"{', '.join(POLICIES)}")
        params = pf.sub("params") if pf.has("params") else Fields({}, f.source, f"policies[{i}].params.")
        params.unknown_keys({"depth"} if name == "crius" else set())
        depth = params.integer("depth", SEARCH_DEPTH, minimum=0, maximum=10)
        label = pf.string("label", name)
        chosen = {"depth": depth} if params.has("depth") else {}
        out.append((PolicyChoice(label, name, chosen, canonical_json(chosen)), depth))
    rigid._unique(f, "policies", [p.label for p, _ in out], "policy label")
    return out


def load_crius_spec(f: Fields, path: Path):
    """The SweepSpec of a sweep of Crius' jobs (checked and expanded; InputError on anything wrong)."""
    from artist.sweep import spec as rigid

    f.unknown_keys(CRIUS_TOP_LEVEL)
    base = path.resolve().parent
    name = f.string("name", path.stem)
    cluster, label, pools = _cluster(f, base)
    raw = f.raw("workloads")
    if not isinstance(raw, list) or not raw:
        raise f.error("workloads", f"expected a non-empty list of Crius' workloads ({CRIUS_WORKLOAD}jobs=N,...)")
    workloads = [_crius_workload(f, i, entry, base) for i, entry in enumerate(raw)]
    rigid._unique(f, "workloads", [w.label for w, *_ in workloads], "workload label")
    seeds = [rigid._integer(f, "seeds", i, v, minimum=0, maximum=2**32 - 1)
             for i, v in enumerate(rigid._listed(f, "seeds", [0]))]
    if len(set(seeds)) != len(seeds):
        raise f.error("seeds", f"a seed is listed twice: {seeds}")
    policies = _crius_policies(f)
    backends = _backends(f)
    first = next(iter(pools.values())).topology
    topology = TopologyChoice(label, dataclasses.replace(first, name=label), "")
    pool_files = {gpu_type: sha256_file(pool.source_file) for gpu_type, pool in pools.items()}
    racks = sum(p.topology.racks for p in pools.values())
    runs = []
    for workload, jobs, rate, philly in workloads:
        for policy, depth in policies:
            config = CriusRunConfig(cluster, jobs, rate, philly, depth)
            for seed in seeds:
                for backend in backends:
                    identity = {"format": IDENTITY_FORMAT, "cluster": label, "pools_sha256": pool_files,
                                "policy": policy.name, "workload": {**workload.identity, "seed": seed}}
                    if policy.name == "crius":  # the only policy the search depth changes
                        identity["depth"] = depth
                    if policy.label != policy.name:
                        identity["label"] = policy.label
                    if backend != "analytical":  # the analytical runs keep the ids they had before `comm` existed
                        identity["backend"] = backend
                    axes = {"topology": label, "racks": racks, "policy": policy.label, "workload": workload.label,
                            "seed": seed, "backend": backend, "algorithm": "ring", "channels": 1, "calibration": ""}
                    runs.append(Run(len(runs), run_id_of(identity), identity, axes, topology.topology, (), policy,
                                    workload, CommSpec(backend), NO_CALIBRATION, SimulatorConfig(),
                                    elastic=dataclasses.replace(config, backend=backend)))
    spec = rigid.SweepSpec(name, f.source, [topology], None, [p for p, _ in policies], [w for w, *_ in workloads],
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
