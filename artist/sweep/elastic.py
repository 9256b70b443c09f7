"""Sweeps of elastic jobs (artist/elastic/exact.py: the event loop, allocations decided every round): specs
with `loop: elastic`.

    name: pollux
    loop: elastic                                   # elastic jobs, decided every 60 s round
    topology: ../topologies/pollux-t4.yaml          # one or a list (axis); GPUs per node = its machines; or a
                                                    # cluster file of several GPU types (topologies/clusters/)
    elastic: {applications: ../workloads/pollux, round_seconds: 60, contention: isolated}   # optional; defaults
                                                    # (applications: Pollux's on T4s only, else Sia's)
    policies:                                       # axis; names of artist/policies/pollux/registry.py
                                                    # (sia, pollux, gavel, optimus-oracle, tiresias, crius,
                                                    # the rigid ones), or a plugin file's policy (docs)
      - pollux
      - {name: smallest-first, plugin: ../my_policies/smallest_first.py}
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

A cluster file (artist/elastic/cluster.py: pools of one GPU type each, e.g. Sia's sia-hetero-64.yaml) needs
tables of every pool's type: `applications` a folder with gpu_types.yaml (Sia's, workloads/sia: the Pollux
applications plus Sia's per-type tables, artist/elastic/applications.py heterogeneous_applications). Each
pool's synchronisation is timed by the spec's network backend on that pool's topology (PooledStepTimer);
`racks` is refused for a cluster (each pool keeps its file's racks). Finish-time fairness on a cluster is
Sia's heterogeneous rho (sum over types of N_g / N x rho_g, each rho_g against the job alone on its share
N_g / N_avg of that type; artist/elastic/metrics.py heterogeneous_rho).

A run writes the usual per-run files (summary.json, jobs, utilisation) and the elastic time series
(timeseries: per job and round; cluster: per round), all byte-identical for a seed; policy wall time per
round is wall-clock, so it goes to policy_rounds.csv and run.json only (not into the results table).

`elastic.contention`: `isolated` (default: every job timed alone) or `shared` (jobs meeting on a pool's links
timed together every round, artist/elastic/contention.py; flow and ns-3 show slowdowns, analytical times each
alone). It enters the run's identity only when shared (isolated runs keep their ids and caches); shared runs
add `contention_slowdown` to the jobs tables and `contention_slowdown_mean` / `_max` to the results, the
rigid loop's columns.
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

from artist.elastic.rules import ElasticRules, rules_from_fields
from artist import shipped
from artist.errors import InputError
from artist.jsonkey import canonical_json
from artist.network.stack import CommSpec
from artist.simulator import SimulatorConfig
from artist.sweep.axes import NO_CALIBRATION, PolicyChoice, TopologyChoice, WorkloadChoice
from artist.sweep.identity import run_id_of, run_identity, sha256_file
from artist.sweep.runs import Run
from artist.yamlio import Fields

ELASTIC_TOP_LEVEL = {"name", "loop", "topology", "racks", "policies", "workloads", "seeds", "comm", "models",
                     "elastic", "notes", "report", "reduced"}


@dataclass(frozen=True)
class ElasticRunConfig:
    """What an elastic run needs besides the topology and jobs, loaded by the driver (workers read no file)."""
    apps: Mapping  # application -> (MeasuredApplication, ElasticSpec)
    gpu_type: str  # of a one-type topology ("" for a cluster)
    round_seconds: float
    cluster: object = None  # the ElasticCluster of a cluster file (artist/elastic/cluster.py), else None
    contention: str = "isolated"  # or "shared" (artist/elastic/contention.py)
    rules: object = None  # artist/elastic/rules.py ElasticRules (None: ArtISt's own models)
    modelled: Mapping | None = None  # GPU types of the cluster whose compute is modelled: how (elastic/modelled.py)

    @property
    def gpus(self) -> int | None:
        """All the cluster's GPUs (None for a one-type topology: the run's topology says)."""
        return self.cluster.gpus if self.cluster is not None else None


def _sha256_dir(directory: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    for p in sorted(directory.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(directory)).encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def load_elastic_spec(f: Fields, path: Path, backend_override: str | None):
    """The SweepSpec of a `loop: elastic` spec (checked and expanded; InputError on anything wrong)."""
    from artist.elastic.applications import POLLUX_DIR, SIA_DIR, measured_memory_gib, pollux_applications
    from artist.elastic.cluster import Pool
    from artist.elastic.modelled import measured_type, with_modelled_types
    from artist.sweep import spec as rigid

    f.unknown_keys(ELASTIC_TOP_LEVEL)
    base = path.resolve().parent
    name = f.string("name", path.stem)
    models, models_sha = rigid._models(f, base)
    topologies, clusters = _topologies(f, base)
    racks = rigid._racks(f)
    if racks is not None and any(clusters.values()):
        raise f.error("racks", "a cluster file keeps its pools' racks (racks applies to one-type topologies)")
    seeds = [rigid._integer(f, "seeds", i, v, minimum=0, maximum=2**32 - 1)
             for i, v in enumerate(rigid._listed(f, "seeds", [0]))]
    if len(set(seeds)) != len(seeds):
        raise f.error("seeds", f"a seed is listed twice: {seeds}")
    backends, algorithms, channels, comm_options = rigid._comm(f, backend_override)
    rigid._check_comm_options(f, topologies[0].topology, backends, algorithms, channels, comm_options)

    ef = f.sub("elastic") if f.has("elastic") else Fields({}, f.source, "elastic.")
    ef.unknown_keys({"applications", "round_seconds", "contention", "rules"})
    if ef.has("applications"):
        apps_dir = rigid._resolve(base, ef.string("applications"))
    else:  # Pollux's own tables where every GPU is a T4, Sia's (T4 and the other measured types) elsewhere
        t4_only = all(clusters[t.path] is None and {g.lower() for g in t.topology.rack_gpu_types} == {"t4"}
                      for t in topologies)
        apps_dir = POLLUX_DIR if t4_only else SIA_DIR
    identity_extra = {"loop": "elastic", "applications_sha256": _sha256_dir(apps_dir)}
    if (apps_dir / "gpu_types.yaml").is_file():  # Sia's per-type tables on top of the Pollux applications
        from artist.elastic.applications import heterogeneous_applications

        apps = heterogeneous_applications(sia_dir=str(apps_dir))
        identity_extra["pollux_applications_sha256"] = _sha256_dir(POLLUX_DIR)
    elif (apps_dir / "applications.yaml").is_file():
        apps = pollux_applications(str(apps_dir))
    else:
        raise ef.error("applications", f"no applications.yaml (or Sia's gpu_types.yaml) in {apps_dir}")
    round_seconds = ef.number("round_seconds", 60.0, minimum=1.0, maximum=3600.0)
    identity_extra["round_seconds"] = round_seconds
    contention = rigid._contention(ef, "isolated")
    if contention == "shared":  # the elastic loop's shared contention is the phase model's
        rigid._check_phase_algorithms(f, "elastic.contention", algorithms)
    if contention != "isolated":  # enters only when shared, so that isolated runs keep their ids
        identity_extra["contention"] = contention
    rules = rules_from_fields(ef)
    if not rules.is_default:  # enters only when not ArtISt's own, so that other runs keep their ids
        identity_extra["rules"] = rules.identity()
    configs = {}
    for t in topologies:
        cluster = clusters[t.path]
        if cluster is None:  # one pool of the topology's own GPU type: its measured tables, else modelled
            types = tuple(dict.fromkeys(t.topology.rack_gpu_types))  # one: mixed racks are a cluster's pools
            gpu_type = measured_type(apps, types[0])
            modelled = None
            if gpu_type is None:
                try:
                    run_apps, modelled = with_modelled_types(apps, [Pool(types[0], t.topology)],
                                                             measured_memory_gib(apps_dir))
                except ValueError as exc:
                    raise ef.error("applications", f"topology {t.path}: {exc} ({SIA_DIR_NOTE})") from None
                _refuse_measured_steps(ef, rules, modelled, t.path)
                gpu_type = types[0]
            configs[t.path] = ElasticRunConfig(run_apps if modelled else apps, gpu_type, round_seconds,
                                               contention=contention, rules=rules, modelled=modelled)
            continue
        try:  # a type nobody measured (Crius' A40, A10, V100): modelled from a measured one, and said so
            cluster_apps, modelled = with_modelled_types(apps, cluster.pools, measured_memory_gib(apps_dir))
        except ValueError as exc:
            raise ef.error("applications", f"cluster {t.path}: {exc}") from None
        _refuse_measured_steps(ef, rules, modelled, t.path)
        configs[t.path] = ElasticRunConfig(cluster_apps, "", round_seconds, cluster, contention, rules, modelled)
    from artist.workload.traces.pollux import APPLICATIONS

    missing = sorted(set(apps) - set(APPLICATIONS)) + sorted(APPLICATIONS[a][0] for a in apps
                                                              if a in APPLICATIONS and APPLICATIONS[a][0] not in models)
    if missing:
        raise f.error("models", f"no model profile for {', '.join(missing)} (the gradients of the synchronisation)")

    policies = _policies(f, base, configs[topologies[0].path], topologies[0].topology, apps)
    workloads, job_rows = _workloads(f, base, apps, models)
    for p in policies:
        if not _tuned(p) and any(not callable(rows) and rows[1] is None for rows in job_rows):
            raise f.error("policies", f"{p.label}: tuned_jobs: false needs a `realistic` file for every workload")
    spec = rigid.SweepSpec(name, f.source, topologies, racks, policies, workloads, seeds, backends, algorithms,
                           channels, [NO_CALIBRATION], SimulatorConfig(), models, models_sha, comm_options)
    spec.runs = _expand(spec, job_rows, configs, identity_extra)
    spec.notes = []
    return spec


SIA_DIR_NOTE = "workloads/sia holds measured A100 tables to model other datasheet GPUs from"


def _refuse_measured_steps(ef: Fields, rules, modelled: Mapping, where: str) -> None:
    """rules step_time: measured reads whole steps from measured tables: refused where compute is modelled."""
    estimated = sorted(t for t, how in modelled.items() if how["compute_factor"] != 1.0)
    if estimated and rules.step_time == "measured":
        raise ef.error("rules.step_time", f"measured reads whole steps from measured tables; {where} has none "
                                          f"for {', '.join(estimated)} (their compute is modelled): use "
                                          "step_time: network there")


def _topologies(f: Fields, base: Path) -> tuple[list[TopologyChoice], dict]:
    """The topology axis: one-type topology files and cluster files (a mapping with `pools`; a topology whose
    racks mix GPU types is read as one, a pool per type: artist/elastic/cluster.py); for a cluster
    the TopologyChoice holds its first pool's topology (the comm options are checked on it) and `clusters`
    maps its path to the ElasticCluster (None for a topology file)."""
    from artist.elastic.cluster import load_cluster
    from artist.sweep import spec as rigid
    from artist.topology import Topology
    from artist.yamlio import load_yaml_mapping

    out, clusters = [], {}
    for i, text in enumerate(rigid._listed(f, "topology")):
        key = f"topology[{i}]" if isinstance(f.raw("topology"), list) else "topology"
        if not isinstance(text, str) or not text:
            raise InputError(f.source, f"field '{key}'", f"expected a topology or cluster file path, got {text!r}")
        p = shipped.find_topology(text, base=base)
        if not p.is_file():
            raise InputError(f.source, f"field '{key}'", rigid._no_such("topology file", p, text,
                                                                         shipped.TOPOLOGIES_DIR))
        topology = None if "pools" in load_yaml_mapping(p) else Topology.from_yaml(p)
        if topology is None or len(set(topology.rack_gpu_types)) > 1:  # a topology of mixed racks: its pools
            cluster = load_cluster(p)
            out.append(TopologyChoice(text, dataclasses.replace(cluster.pools[0].topology, name=cluster.name),
                                      sha256_file(p)))
            clusters[text] = cluster
        else:
            out.append(TopologyChoice(text, topology, sha256_file(p)))
            clusters[text] = None
    rigid._unique(f, "topology", [t.topology.name for t in out], "topology name")
    return out, clusters


def _cluster_view(config: ElasticRunConfig, topology):
    """The ElasticCluster a policy is built on: the cluster file's, or the one-type topology as one pool."""
    from artist.elastic.cluster import ElasticCluster, Pool

    if config.cluster is not None:
        return config.cluster
    return ElasticCluster.of(topology.name, [Pool(config.gpu_type, topology)])


def _tuned(policy: PolicyChoice) -> bool:
    from artist.policies.pollux.registry import uses_tuned_jobs

    return uses_tuned_jobs(policy.name, policy.params)


def _policies(f: Fields, base: Path, config: ElasticRunConfig, topology, apps: Mapping) -> list[PolicyChoice]:
    """The policy axis, each built once on the first topology (no jobs) so that a bad value fails here."""
    from artist.policies.plugins import load_plugin
    from artist.policies.pollux.registry import PolicyContext, elastic_entry, make_elastic_policy
    from artist.sweep import spec as rigid

    out = []
    for pf in rigid._entries(f, "policies", "name", {"name", "params", "label", "plugin"},
                             "elastic policy names or {name, params, label, plugin} mappings"):
        name = pf.string("name")
        plugin = ""
        imported = True
        if pf.has("plugin"):  # a user's policy in one file (docs): run every round as the rigid policies are
            plugin = str(rigid._resolve(base, pf.string("plugin")))
            if not Path(plugin).is_file():
                raise pf.error("plugin", f"no such policy plugin file: {plugin}")
            imported = load_plugin(plugin) is not None  # not on a dry run: its name is taken as written
        try:
            if imported:
                elastic_entry(name, plugins=bool(plugin))  # a plugin's policy only where its file is named
        except KeyError as exc:
            raise pf.error("name", exc.args[0]) from None
        params = pf.raw("params", {})
        if not isinstance(params, dict):
            raise pf.error("params", f"expected a mapping of parameter names to values, got {params!r}")
        try:
            params_json = canonical_json(params)
            view = _cluster_view(config, topology)
            if imported:
                make_elastic_policy(name, params, view, 0, PolicyContext(dict(apps), [], lambda c: None))
        except KeyError as exc:
            raise pf.error("params", exc.args[0]) from None
        except (TypeError, ValueError) as exc:
            raise pf.error("params", f"rejected by policy {name!r}: {exc}") from None
        label = pf.string("label", name if not params else f"{name}({params_json[1:-1]})")
        out.append(PolicyChoice(label, name, params, params_json, plugin))
    rigid._unique(f, "policies", [p.label for p in out], "policy")
    return out


def _read_jobs(path: Path, apps: Mapping, where: Fields, key: str):
    from artist.elastic.jobs import ElasticJobSpec
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


class _GeneratedJobs:
    """The jobs of a generator (batch:..., poisson:...) or a published trace (FORMAT:path=...) for one seed,
    as the elastic loop runs them: each job's model names its application (APPLICATIONS, the measured
    Pollux applications and their profiles: resnet18 -> cifar10, resnet50 -> imagenet, bert_large -> bert,
    and the stand-ins vgg11 -> yolov3, alexnet -> deepspeech2, mobilenet_v3_large -> ncf), its GPU count is
    the generator's, and its batch M0 x GPUs: the "realistic" configuration of Pollux section 5.2 (the
    artifact's workloads-realistic files, workloads/pollux/SOURCE.md). A job's length is its application's
    measured training run, not the generator's iterations. Both columns (tuned and realistic) are these."""

    def __init__(self, text: str, apps: Mapping, models: Mapping, first: int | None, where: Fields):
        from artist.workload.traces.pollux import APPLICATIONS

        self.text, self.apps, self.first, self.where = text, apps, first, where
        self.app_of = {APPLICATIONS[a][0]: a for a in apps if a in APPLICATIONS}
        # generators draw from these models only (their default `models=`): the applications' profiles
        self.models = {m: models[m] for m in sorted(self.app_of) if m in models}
        self._seen: dict[int, tuple] = {}

    def __call__(self, seed: int) -> tuple:
        found = self._seen.get(seed)
        if found is None:
            jobs = tuple(self._job(job) for job in self._generated(seed))
            if not jobs:
                raise self.where.error("spec", f"{self.text}: no jobs")
            found = self._seen[seed] = (jobs, jobs)
        return found

    def _generated(self, seed: int):
        from artist.workload.spec import jobs_from_spec

        try:
            jobs = jobs_from_spec(self.text, self.models, seed)
        except InputError as exc:
            raise self.where.error("spec", str(exc)) from None
        return jobs[:self.first] if self.first else jobs

    def _job(self, job):
        from artist.elastic.jobs import ElasticJobSpec
        from artist.elastic.spec import split_batch

        app = self.app_of.get(job.model)
        if app is None:
            raise self.where.error("spec", f"{self.text}: job {job.job_id}'s model {job.model!r} has no measured "
                                           f"application (the elastic loop's jobs run one of: "
                                           f"{', '.join(f'{m} ({a})' for m, a in sorted(self.app_of.items()))})")
        elastic = self.apps[app][1]
        batch = elastic.initial_batch * job.gpus
        if batch > elastic.max_batch:
            raise self.where.error("spec", f"{self.text}: job {job.job_id} ({app} on {job.gpus} GPUs) would train at "
                                           f"M0 x GPUs = {batch}, beyond {app}'s largest measured batch "
                                           f"{elastic.max_batch}: ask for fewer GPUs (gpus=)")
        for gpu_type in sorted(elastic.local_batch):
            if split_batch(batch, job.gpus, elastic.limit(gpu_type), elastic.initial_batch) is None:
                raise self.where.error("spec", f"{self.text}: job {job.job_id} ({app} on {job.gpus} GPUs, batch "
                                               f"M0 x GPUs = {batch}) fits no local batch of a {gpu_type}")
        return ElasticJobSpec(job.job_id, float(job.arrival), app, gpus=job.gpus, batch=batch)


def _job_trace_csv(path: Path) -> Path | None:
    """The path if it is a CSV of rigid jobs (no Pollux/Sia `application` column), else None."""
    if not path.is_file():
        return None
    from artist.errors import read_input_file

    header = read_input_file(path)[0].partition("\n")[0]
    return None if "application" in [h.strip() for h in header.split(",")] else path


def _workloads(f: Fields, base: Path, apps: Mapping, models: Mapping):
    from artist.sweep import spec as rigid
    from artist.workload.spec import GENERATORS
    from artist.workload.traces.spec import TRACE_KINDS

    out, rows = [], []
    for wf in rigid._entries(f, "workloads", "spec", {"spec", "realistic", "label", "first"},
                             "Pollux workload CSVs, generators, FORMAT:path= traces or {spec, realistic, label, "
                             "first} mappings"):
        text = wf.string("spec")
        kind = text.partition(":")[0]
        job_trace = _job_trace_csv(rigid._resolve(base, text)) if kind not in GENERATORS and kind not in TRACE_KINDS \
            else None
        if kind in GENERATORS or kind in TRACE_KINDS or job_trace is not None:
            if wf.has("realistic"):
                raise wf.error("realistic", "a generated or published workload has one configuration (M0 x GPUs)")
            if job_trace is not None:  # a trace of rigid jobs (canonical or Helios CSV): run as generated ones
                choice = WorkloadChoice(wf.string("label", job_trace.stem), text, str(job_trace),
                                        {"trace_sha256": sha256_file(job_trace)})
            else:
                choice = (rigid.generator_workload(wf, text, base) if kind in GENERATORS
                          else rigid._trace_workload(wf, text, base))
            first = wf.integer("first", minimum=1) if wf.has("first") else None
            if first:
                choice.identity["first"] = first
            generated = _GeneratedJobs(choice.resolved, apps, models, first, wf)
            generated(0)  # a bad generator or model fails here, with its field
            out.append(choice)
            rows.append(generated)
            continue
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
        if wf.has("first"):  # the first N jobs of the file (a reduced sweep): part of the run id
            first = wf.integer("first", minimum=1)
            tuned, realistic = tuned[:first], (realistic[:first] if realistic is not None else None)
            identity["first"] = first
        out.append(WorkloadChoice(wf.string("label", tuned_path.stem), wf.string("spec"), str(tuned_path), identity))
        rows.append((tuned, realistic))
    rigid._unique(f, "workloads", [w.label for w in out], "workload")
    return out, rows


def _jobs_for(policy: PolicyChoice, rows) -> tuple:
    from artist.policies.pollux.registry import elastic_entry

    tuned, realistic = rows
    jobs = tuned if _tuned(policy) else realistic
    config = elastic_entry(policy.name).job_config
    if config == "both":
        return jobs
    return tuple(dataclasses.replace(j, gpus=0, batch=j.batch if config == "batch" else 0) for j in jobs)


def _expand(spec, job_rows, configs: dict, identity_extra: dict) -> list[Run]:
    runs: list[Run] = []
    sim = spec.simulator
    for t in spec.topologies:
        config: ElasticRunConfig = configs[t.path]
        for racks in ([None] if config.cluster is not None else (spec.racks or [t.topology.racks])):
            if config.cluster is not None:  # a cluster keeps its pools' racks; the column counts them all
                topology, racks = t.topology, sum(p.topology.racks for p in config.cluster.pools)
                gpus = config.cluster.gpus
            else:
                try:
                    topology = t.topology.with_racks(racks)
                except ValueError as exc:
                    raise InputError(spec.source, "field 'racks'", f"{t.topology.name}: {exc}") from None
                gpus = topology.gpus
            for policy in spec.policies:
                for wi, workload in enumerate(spec.workloads):
                    for seed in spec.seeds:
                        rows = job_rows[wi](seed) if callable(job_rows[wi]) else job_rows[wi]  # generated: per seed
                        jobs = _jobs_for(policy, rows)
                        too_big = next((j for j in jobs if j.gpus > gpus), None)
                        if too_big is not None:
                            raise InputError(spec.source, f"field 'workloads[{wi}]'",
                                             f"job {too_big.job_id} asks for {too_big.gpus} GPUs, {gpus} exist")
                        for backend, algorithm, channels in itertools.product(spec.backends, spec.algorithms,
                                                                              spec.channels):
                            options = spec.comm_options[backend]
                            identity = run_identity(t, racks, spec.models_sha256, policy, workload, seed, backend,
                                                    algorithm, channels, options, NO_CALIBRATION, sim)
                            identity["elastic"] = identity_extra if not config.modelled else {
                                **identity_extra, "modelled_compute": config.modelled}  # (only then: other ids kept)
                            axes = {"topology": t.topology.name, "racks": racks, "policy": policy.label,
                                    "workload": workload.label, "seed": seed, "backend": backend,
                                    "algorithm": algorithm, "channels": channels, "calibration": ""}
                            runs.append(Run(len(runs), run_id_of(identity), identity, axes, topology, jobs, policy,
                                            workload, CommSpec(backend, algorithm, channels, options), NO_CALIBRATION,
                                            sim, elastic=config))
    return runs


def simulate_elastic(run: Run, models: Mapping, fabrics: Mapping):
    """(result, timer, round seconds) of the run; `fabrics`: the network model of the synchronisation per
    GPU type (one entry on a one-type topology). The exact event loop runs it (artist/elastic/exact.py)."""
    from artist.elastic.cluster import PooledStepTimer
    from artist.elastic.contention import SharedContention
    from artist.elastic.exact import simulate_elastic
    from artist.elastic.steptime import NetworkStepTimer
    from artist.policies.pollux.registry import PolicyContext, make_elastic_policy
    from artist.workload.traces.pollux import APPLICATIONS

    config: ElasticRunConfig = run.elastic
    rules: ElasticRules = config.rules or ElasticRules()
    topology = run.topology
    apps = held_to_one_gpu(config.apps, rules, run.policy.name)
    measured = {k: a for k, (a, _) in apps.items()}
    profiles = {k: models[APPLICATIONS[k][0]] for k in apps}
    timer = None  # one timer for every cluster view, or one per view (a cluster's pools)
    if rules.step_time == "measured":  # the artifacts' step times: the measured tables alone
        timer = measured_step_timer(measured)
    elif config.cluster is None:
        timer = NetworkStepTimer(topology, fabrics[config.gpu_type], measured, profiles)

    def timer_for(cluster):
        return timer if timer is not None else PooledStepTimer(cluster, measured, profiles, fabrics)

    view = _cluster_view(config, topology)
    if run.policy.plugin:  # a fresh worker process: the user's file registers the policy here too
        from artist.policies.plugins import load_plugin

        load_plugin(run.policy.plugin)
    context = PolicyContext(dict(apps), list(run.jobs), timer_for, profiles, dict(fabrics),
                            dict(rules.goodput_slowdown))
    policy, seen = make_elastic_policy(run.policy.name, run.policy.params, view, seed=int(run.axes["seed"]),
                                       context=context)
    round_seconds = float(getattr(policy, "round_seconds", config.round_seconds))  # Gavel: its 360 s leases
    # shared contention on the cluster the policy sees (its nodes are the loop's nodes), each pool's fabric
    contention = (SharedContention(seen, fabrics, measured, profiles) if config.contention == "shared" else None)
    loop_timer = timer_for(seen)
    return simulate_elastic(seen, run.jobs, apps, loop_timer, policy, round_seconds, contention=contention,
                            name=run.policy.label, first_start_delay=rules.first_start_delay,
                            slowdowns=rules.goodput_slowdown, retune_every_round=rules.retune_every_round), \
        loop_timer, round_seconds


def held_to_one_gpu(apps: Mapping, rules: ElasticRules, policy: str) -> Mapping:
    """The applications with max_gpus 1 where the rules hold them to one GPU under this policy."""
    out = dict(apps)
    for name, (app, spec) in apps.items():
        if rules.max_gpus(name, policy) == 1:
            out[name] = (app, dataclasses.replace(spec, max_gpus=1))
    return out


def measured_step_timer(measured: Mapping):
    """MeasuredStepTimer over each application's directory: per GPU type its placements table (Pollux's
    placements.csv and scalability.csv for its type; Sia's placements-<type>.csv per gpu_types.yaml)."""
    from artist.elastic.measured_steptime import MeasuredStepTimer, ThroughputTables

    tables = {}
    for name, app in measured.items():
        for gpu_type, table in app.compute.items():
            if table.table is None:  # modelled (elastic/modelled.py): no measured step; the spec refuses it
                continue
            placements = table.table  # placements[-<suffix>].csv, its scalability[-<suffix>].csv beside it
            scalability = placements.with_name(placements.name.replace("placements", "scalability", 1))
            tables[(name, gpu_type)] = ThroughputTables(placements, scalability if scalability.is_file() else None)
    return MeasuredStepTimer(tables)


class HeterogeneousIsolated:
    """IsolatedRates over a cluster of several types, shaped so that metrics.job_table's jct / seconds(share)
    is Sia's heterogeneous rho: sum_g (N_g / N) x jct / iso_g(share x N_g / N) (artist/elastic/metrics.py)."""

    def __init__(self, apps, timer, cluster):
        from artist.elastic.metrics import IsolatedRates

        self.weights = {}
        for pool in cluster.pools:
            gpus = pool.topology.gpus
            self.weights[pool.gpu_type] = (gpus / cluster.gpus,
                                           IsolatedRates(apps, timer, pool.gpu_type, pool.topology.gpus_per_machine))

    def seconds(self, app_name: str, share: float) -> float:
        inverse = sum(w / rates.seconds(app_name, share * w) for w, rates in self.weights.values())
        return 1.0 / inverse


def tables_of(run: Run, result, timer, round_seconds: float
              ) -> tuple[pd.DataFrame, dict, pd.DataFrame, dict[str, pd.DataFrame]]:
    """(jobs, summary, utilisation, extra tables) of a finished elastic run (artist/elastic/metrics.py)."""
    from artist.elastic import metrics

    config: ElasticRunConfig = run.elastic
    if config.cluster is None:
        topology = run.topology
        isolated = metrics.IsolatedRates(config.apps, timer, config.gpu_type, topology.gpus_per_machine)
        total = topology.gpus
    else:
        isolated = HeterogeneousIsolated(config.apps, timer, config.cluster)
        total = config.cluster.gpus
    jobs = metrics.job_table(result, isolated, total, round_seconds)
    series = metrics.job_timeseries(result, round_seconds)
    cluster = metrics.cluster_timeseries(result, series, total, round_seconds)
    row = metrics.summary(result, jobs, cluster, total, round_seconds)
    utilisation = cluster[["time_s", "allocated_gpus", "utilisation_fraction"]].copy()
    policy = pd.DataFrame({"round": np.arange(1, len(result.policy_seconds) + 1),
                           "policy_seconds": result.policy_seconds})
    return jobs, row, utilisation, {"timeseries": series, "cluster": cluster, "policy_rounds": policy}


def _answers(timer, result):
    """Which path answered the run's network questions: its step timer's (the loop's and its metrics') and,
    in shared mode, its co-simulated components'."""
    from artist.network.provenance import AnswerCounts

    counts = AnswerCounts()
    counts.merge(timer.answers)
    if result.contention_answers is not None:
        counts.merge(result.contention_answers)
    return counts


def execute_elastic(run: Run, models: Mapping, cache_path: str | None, use_cache: bool):
    """sweep/worker.py's execute for an elastic run."""
    import traceback

    from artist.network.stack import cached_layer
    from artist.sweep.worker import RunOutcome, comm_for

    started = time.perf_counter()
    hits = misses = 0
    try:
        config: ElasticRunConfig = run.elastic
        if config.cluster is None:
            fabrics = {config.gpu_type: comm_for(run, cache_path, use_cache)}
        else:  # each pool's synchronisation on its own topology, by the run's network backend
            fabrics = {p.gpu_type: comm_for(dataclasses.replace(run, topology=p.topology), cache_path, use_cache)
                       for p in config.cluster.pools}
        layers = (cached_layer(fabric) for fabric in fabrics.values())
        cached = list({id(c): c for c in layers if c is not None}.values())  # pools may share one cache
        before = [(c.session.hits, c.session.misses) for c in cached]
        try:
            result, timer, round_seconds = simulate_elastic(run, models, fabrics)
            jobs, row, utilisation, extra = tables_of(run, result, timer, round_seconds)
            answers = _answers(timer, result)  # which path answered (network/provenance.py)
            row.update(answers.columns())
        finally:
            for c, (h, m) in zip(cached, before):
                hits += c.session.hits - h
                misses += c.session.misses - m
                c.flush()
        seconds = np.array(result.policy_seconds)
        info = {"policy_seconds_median": float(np.median(seconds)) if seconds.size else 0.0,
                "policy_seconds_p95": float(np.percentile(seconds, 95)) if seconds.size else 0.0,
                "policy_seconds_max": float(seconds.max()) if seconds.size else 0.0}
        if result.contention == "shared":  # how many components of 2+ the run met and co-simulated (its cost)
            info["contention_components_met"], info["contention_components_timed"] = result.components
        info.update(answers.cost())
        return RunOutcome(run.run_id, jobs, row, utilisation, hits, misses, time.perf_counter() - started,
                          socket.gethostname(), os.getpid(), tables=extra, info=info, answers=answers)
    except Exception:  # noqa: BLE001 - reported by the driver with the run's parameters, never dropped
        return RunOutcome(run.run_id, None, None, None, hits, misses, time.perf_counter() - started,
                          socket.gethostname(), os.getpid(), error=traceback.format_exc())
