"""Sweeps of the elastic loop (artist/elastic/simulation.py): specs with `loop: elastic`.

    name: pollux
    loop: elastic                                   # the 60 s-round loop of elastic jobs
    topology: ../topologies/pollux-t4.yaml          # one or a list (axis); GPUs per node = its machines
    elastic: {applications: ../workloads/pollux, round_seconds: 60}   # optional; these are the defaults
    policies:                                       # axis; names of artist/policies/pollux/registry.py
      - pollux
      - {name: optimus-oracle, params: {tuned_jobs: true}, label: Optimus+Oracle+TunedJobs}
    workloads:                                      # axis; Pollux-artifact workload CSVs
      - {spec: ../workloads/pollux/workloads/workload-6.csv,
         realistic: ../workloads/pollux/workloads-realistic/workload-6.csv, label: workload-6}
    seeds: [0]                                      # axis; Pollux's GA seed
    comm: analytical                                # the network model of the synchronisation (as rigid)

A workload's `spec` file gives each job's arrival and application and the TunedJobs GPU count and batch;
`realistic` (optional) the same jobs with the trace's GPU count and batch M0 x GPUs, for baselines with
`tuned_jobs: false`. Which columns a run uses is fixed when the runs are expanded (the policy's
job_config), so a worker gets its jobs ready-made. Rigid-loop fields (calibration, simulator) are refused.

A run writes the usual per-run files (summary.json, jobs, utilisation) and the elastic time series
(timeseries: per job and round; cluster: per round), all byte-identical for a seed; policy wall time per
round is wall-clock, so it goes to policy_rounds.csv and run.json only (not into the results table).
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from artist.errors import InputError
from artist.jsonkey import canonical_json
from artist.network.stack import CommSpec
from artist.simulator import SimulatorConfig
from artist.sweep.axes import NO_CALIBRATION, PolicyChoice, WorkloadChoice
from artist.sweep.identity import run_id_of, run_identity, sha256_file
from artist.sweep.runs import Run
from artist.yamlio import Fields

ELASTIC_TOP_LEVEL = {"name", "loop", "topology", "racks", "policies", "workloads", "seeds", "comm", "models",
                     "elastic", "notes", "report", "reduced"}


@dataclass(frozen=True)
class ElasticRunConfig:
    """What an elastic run needs besides the topology and jobs, loaded by the driver (workers read no file)."""
    apps: Mapping  # application -> (MeasuredApplication, ElasticSpec)
    gpu_type: str
    round_seconds: float


def _sha256_dir(directory: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    for p in sorted(directory.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(directory)).encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def load_elastic_spec(f: Fields, path: Path, backend_override: str | None):
    """The SweepSpec of a `loop: elastic` spec (checked and expanded; InputError on anything wrong)."""
    from artist.elastic.applications import POLLUX_DIR, pollux_applications
    from artist.sweep import spec as rigid

    f.unknown_keys(ELASTIC_TOP_LEVEL)
    base = path.resolve().parent
    name = f.string("name", path.stem)
    models, models_sha = rigid._models(f, base)
    topologies = rigid._topologies(f, base)
    racks = rigid._racks(f)
    seeds = [rigid._integer(f, "seeds", i, v, minimum=0, maximum=2**32 - 1)
             for i, v in enumerate(rigid._listed(f, "seeds", [0]))]
    if len(set(seeds)) != len(seeds):
        raise f.error("seeds", f"a seed is listed twice: {seeds}")
    backends, algorithms, channels, comm_options = rigid._comm(f, backend_override)
    rigid._check_comm_options(f, topologies[0].topology, backends, algorithms, channels, comm_options)

    ef = f.sub("elastic") if f.has("elastic") else Fields({}, f.source, "elastic.")
    ef.unknown_keys({"applications", "round_seconds"})
    apps_dir = rigid._resolve(base, ef.string("applications")) if ef.has("applications") else POLLUX_DIR
    if not (apps_dir / "applications.yaml").is_file():
        raise ef.error("applications", f"no applications.yaml in {apps_dir}")
    apps = pollux_applications(str(apps_dir))
    gpu_types = sorted({t for app, _ in apps.values() for t in app.compute})
    if len(gpu_types) != 1:
        raise ef.error("applications", f"one GPU type expected in the tables, found {gpu_types}")
    round_seconds = ef.number("round_seconds", 60.0, minimum=1.0, maximum=3600.0)
    config = ElasticRunConfig(apps, gpu_types[0], round_seconds)
    identity_extra = {"loop": "elastic", "applications_sha256": _sha256_dir(apps_dir), "round_seconds": round_seconds}
    from artist.workload.traces.pollux import APPLICATIONS

    missing = sorted(set(apps) - set(APPLICATIONS)) + sorted(APPLICATIONS[a][0] for a in apps
                                                              if a in APPLICATIONS and APPLICATIONS[a][0] not in models)
    if missing:
        raise f.error("models", f"no model profile for {', '.join(missing)} (the gradients of the synchronisation)")

    policies = _policies(f)
    workloads, job_rows = _workloads(f, base, apps)
    for p in policies:
        if not _tuned(p) and any(rows[1] is None for rows in job_rows):
            raise f.error("policies", f"{p.label}: tuned_jobs: false needs a `realistic` file for every workload")
    spec = rigid.SweepSpec(name, f.source, topologies, racks, policies, workloads, seeds, backends, algorithms,
                           channels, [NO_CALIBRATION], SimulatorConfig(), models, models_sha, comm_options)
    spec.runs = _expand(spec, job_rows, config, identity_extra)
    spec.notes = []
    return spec


def _tuned(policy: PolicyChoice) -> bool:
    from artist.policies.pollux.registry import uses_tuned_jobs

    return uses_tuned_jobs(policy.name, policy.params)


def _policies(f: Fields) -> list[PolicyChoice]:
    from artist.policies.pollux.registry import ELASTIC_POLICIES, elastic_policy_names, make_elastic_policy
    from artist.sweep import spec as rigid

    out = []
    for pf in rigid._entries(f, "policies", "name", {"name", "params", "label"},
                             "elastic policy names or {name, params, label} mappings"):
        name = pf.string("name")
        if name not in ELASTIC_POLICIES:
            raise pf.error("name", f"unknown elastic policy {name!r}; known: {', '.join(elastic_policy_names())}")
        params = pf.raw("params", {})
        if not isinstance(params, dict):
            raise pf.error("params", f"expected a mapping of parameter names to values, got {params!r}")
        try:
            params_json = canonical_json(params)
            make_elastic_policy(name, params, [1])
        except KeyError as exc:
            raise pf.error("params", exc.args[0]) from None
        except (TypeError, ValueError) as exc:
            raise pf.error("params", f"rejected by policy {name!r}: {exc}") from None
        label = pf.string("label", name if not params else f"{name}({params_json[1:-1]})")
        out.append(PolicyChoice(label, name, params, params_json))
    rigid._unique(f, "policies", [p.label for p in out], "policy")
    return out


def _read_jobs(path: Path, apps: Mapping, where: Fields, key: str):
    from artist.elastic.simulation import ElasticJobSpec
    from artist.workload.traces.pollux import read_pollux
    from artist.workload.traces.record import LoadReport

    jobs = []
    for rec in read_pollux(path, LoadReport(str(path), "pollux")):
        if rec.model not in apps:
            raise where.error(key, f"{path}: application {rec.model!r} has no measured tables")
        jobs.append(ElasticJobSpec(rec.job_id, float(rec.submit), rec.model, gpus=int(rec.gpus),
                                   batch=int(rec.batch_size)))
    if not jobs:
        raise where.error(key, f"{path}: no jobs")
    if len({j.job_id for j in jobs}) != len(jobs):
        raise where.error(key, f"{path}: a job name is listed twice")
    return tuple(jobs)


def _workloads(f: Fields, base: Path, apps: Mapping):
    from artist.sweep import spec as rigid

    out, rows = [], []
    for wf in rigid._entries(f, "workloads", "spec", {"spec", "realistic", "label"},
                             "Pollux workload CSVs or {spec, realistic, label} mappings"):
        tuned_path = rigid._resolve(base, wf.string("spec"))
        if not tuned_path.is_file():
            raise wf.error("spec", f"no such workload file {tuned_path}")
        tuned = _read_jobs(tuned_path, apps, wf, "spec")
        realistic, identity = None, {"trace_sha256": sha256_file(tuned_path)}
        if wf.has("realistic"):
            real_path = rigid._resolve(base, wf.string("realistic"))
            if not real_path.is_file():
                raise wf.error("realistic", f"no such workload file {real_path}")
            realistic = _read_jobs(real_path, apps, wf, "realistic")
            if [(j.job_id, j.arrival, j.app) for j in realistic] != [(j.job_id, j.arrival, j.app) for j in tuned]:
                raise wf.error("realistic", f"{real_path}: not the same jobs (name, time, application) as {tuned_path}")
            identity["realistic_sha256"] = sha256_file(real_path)
        out.append(WorkloadChoice(wf.string("label", tuned_path.stem), wf.string("spec"), str(tuned_path), identity))
        rows.append((tuned, realistic))
    rigid._unique(f, "workloads", [w.label for w in out], "workload")
    return out, rows


def _jobs_for(policy: PolicyChoice, rows) -> tuple:
    from artist.policies.pollux.registry import ELASTIC_POLICIES

    tuned, realistic = rows
    jobs = tuned if _tuned(policy) else realistic
    config = ELASTIC_POLICIES[policy.name].job_config
    if config == "both":
        return jobs
    return tuple(dataclasses.replace(j, gpus=0, batch=j.batch if config == "batch" else 0) for j in jobs)


def _expand(spec, job_rows, config: ElasticRunConfig, identity_extra: dict) -> list[Run]:
    runs: list[Run] = []
    sim = spec.simulator
    for t in spec.topologies:
        for racks in (spec.racks or [t.topology.racks]):
            try:
                topology = t.topology.with_racks(racks)
            except ValueError as exc:
                raise InputError(spec.source, "field 'racks'", f"{t.topology.name}: {exc}") from None
            for policy in spec.policies:
                for wi, workload in enumerate(spec.workloads):
                    jobs = _jobs_for(policy, job_rows[wi])
                    too_big = next((j for j in jobs if j.gpus > topology.gpus), None)
                    if too_big is not None:
                        raise InputError(spec.source, f"field 'workloads[{wi}]'",
                                         f"job {too_big.job_id} asks for {too_big.gpus} GPUs, {topology.gpus} exist")
                    for seed in spec.seeds:
                        for backend, algorithm, channels in itertools.product(spec.backends, spec.algorithms,
                                                                              spec.channels):
                            options = spec.comm_options[backend]
                            identity = run_identity(t, racks, spec.models_sha256, policy, workload, seed, backend,
                                                    algorithm, channels, options, NO_CALIBRATION, sim)
                            identity["elastic"] = identity_extra
                            axes = {"topology": t.topology.name, "racks": racks, "policy": policy.label,
                                    "workload": workload.label, "seed": seed, "backend": backend,
                                    "algorithm": algorithm, "channels": channels, "calibration": ""}
                            runs.append(Run(len(runs), run_id_of(identity), identity, axes, topology, jobs, policy,
                                            workload, CommSpec(backend, algorithm, channels, options), NO_CALIBRATION,
                                            sim, elastic=config))
    return runs


def simulate_elastic(run: Run, models: Mapping, fabric):
    """The run's ElasticSimulation on `fabric` (the network model of the synchronisation), and its timer."""
    from artist.elastic.simulation import ElasticSimulation
    from artist.elastic.steptime import NetworkStepTimer
    from artist.policies.pollux.registry import make_elastic_policy
    from artist.workload.traces.pollux import APPLICATIONS

    config: ElasticRunConfig = run.elastic
    topology = run.topology
    capacity = [topology.gpus_per_machine] * topology.machines
    timer = NetworkStepTimer(topology, fabric, {k: a for k, (a, _) in config.apps.items()},
                             {k: models[APPLICATIONS[k][0]] for k in config.apps})
    policy = make_elastic_policy(run.policy.name, run.policy.params, capacity, seed=int(run.axes["seed"]))
    sim = ElasticSimulation(capacity, config.gpu_type, run.jobs, config.apps, timer, policy,
                            round_seconds=config.round_seconds)
    return sim.run(), timer


def tables_of(run: Run, result, timer) -> tuple[pd.DataFrame, dict, pd.DataFrame, dict[str, pd.DataFrame]]:
    """(jobs, summary, utilisation, extra tables) of a finished elastic run (artist/elastic/metrics.py)."""
    from artist.elastic import metrics

    config: ElasticRunConfig = run.elastic
    topology = run.topology
    isolated = metrics.IsolatedRates(config.apps, timer, config.gpu_type, topology.gpus_per_machine)
    jobs = metrics.job_table(result, isolated, topology.gpus, config.round_seconds)
    series = metrics.job_timeseries(result, config.round_seconds)
    cluster = metrics.cluster_timeseries(result, series, topology.gpus, config.round_seconds)
    row = metrics.summary(result, jobs, cluster, topology.gpus, config.round_seconds)
    utilisation = cluster[["time_s", "allocated_gpus", "utilisation_fraction"]].copy()
    policy = pd.DataFrame({"round": np.arange(1, len(result.policy_seconds) + 1),
                           "policy_seconds": result.policy_seconds})
    return jobs, row, utilisation, {"timeseries": series, "cluster": cluster, "policy_rounds": policy}


def execute_elastic(run: Run, models: Mapping, cache_path: str | None, use_cache: bool):
    """sweep/worker.py's execute for an elastic run."""
    import traceback

    from artist.network.stack import cached_layer
    from artist.sweep.worker import RunOutcome, comm_for

    started = time.perf_counter()
    hits = misses = 0
    try:
        fabric = comm_for(run, cache_path, use_cache)
        cached = cached_layer(fabric)
        before = (cached.session.hits, cached.session.misses) if cached is not None else (0, 0)
        try:
            result, timer = simulate_elastic(run, models, fabric)
            jobs, row, utilisation, extra = tables_of(run, result, timer)
        finally:
            if cached is not None:
                hits = cached.session.hits - before[0]
                misses = cached.session.misses - before[1]
                cached.flush()
        seconds = np.array(result.policy_seconds)
        info = {"policy_seconds_median": float(np.median(seconds)) if seconds.size else 0.0,
                "policy_seconds_p95": float(np.percentile(seconds, 95)) if seconds.size else 0.0,
                "policy_seconds_max": float(seconds.max()) if seconds.size else 0.0}
        return RunOutcome(run.run_id, jobs, row, utilisation, hits, misses, time.perf_counter() - started,
                          socket.gethostname(), os.getpid(), tables=extra, info=info)
    except Exception:  # noqa: BLE001 - reported by the driver with the run's parameters, never dropped
        return RunOutcome(run.run_id, None, None, None, hits, misses, time.perf_counter() - started,
                          socket.gethostname(), os.getpid(), error=traceback.format_exc())
