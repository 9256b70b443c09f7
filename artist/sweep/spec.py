"""Sweep specs: a YAML file of axes whose cross product is a list of simulation runs.

    name: quick                                  # optional; default: the file's stem
    topology: ../topologies/dally-3tier.yaml     # one path or a list (axis)
    racks: [2, 4]                                # optional (axis); default: the topology's own
    policies:                                    # axis; a name or {name, params, label}
      - fifo
      - {name: tiresias, params: {...}, label: tiresias-2q}
    workloads:                                   # axis; a generator or trace path, or {spec, label}
      - batch:n=500
      - {spec: ../workloads/traces/small.csv, label: small}
      - philly:path=../traces/cluster_job_log,busiest_hours=8,rate=20/h   # a published trace (path resolved here)
    seeds: [0, 1, 2]                             # optional (axis); default [0]
    comm:                                        # optional; or just a backend name
      backend: ns3                               # ns3 | analytical, or a list (axis)
      algorithm: ring                            # or a list (axis)
      channels: 1                                # or a list (axis)
      options: {ns3: {transport: tcp}}           # optional; per backend, the backend's own options (CommSpec)
    calibration: null                            # optional; a profile path, or a list with null = none (axis)
    simulator: {round_interval_s: 300, restore_seconds: 30}
    models: ../workloads/models                  # optional; default: the shipped profiles

Input paths are relative to the spec file's directory; a topology, calibration profile or trace
given as a bare name that is no file there is the shipped one of that name (`topology: dally-3tier`,
`calibration: h100-ns3`, `small`), as on the command line. Everything is checked,
and every input loaded, before a single run starts: a bad spec is an
InputError naming the spec file and the field.

The axes' values are sweep/axes.py's types; the runs, their cross product, are
expanded by sweep/runs.py, each with its identity (sweep/identity.py).
"""

from __future__ import annotations

import importlib
import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from artist import shipped
from artist.errors import InputError, UnknownFieldError
from artist.jsonkey import canonical_json
from artist.limits import MAX_ARRIVAL_S, MAX_CHANNELS, MAX_GPUS, MAX_RESTORE_S, MIN_ROUND_INTERVAL_S
from artist.network.collectives import ALGORITHM_CHOICES, NCCL_CHOICE, algorithm_refusal
from artist.network.stack import BACKENDS, CommSpec
from artist.report.spec import ReportSpec, check_against_policies, check_against_workloads, parse_report
from artist.perf.model import CONTENTION_MODELS, CONTENTION_MODES
from artist.simulator import SimulatorConfig
from artist.sweep.axes import NO_CALIBRATION, CalibrationChoice, PolicyChoice, TopologyChoice, WorkloadChoice
from artist.sweep.identity import models_sha256, sha256_file
from artist.sweep.runs import Run, expand
from artist.topology import Topology
from artist.workload import DEFAULT_MODELS_DIR, ModelProfile, load_models
from artist.workload.spec import GENERATORS
from artist.workload.traces.spec import TRACE_KINDS, trace_identity_files, with_path
from artist.yamlio import Fields, load_yaml_mapping

TOP_LEVEL_FIELDS = {"name", "topology", "racks", "policies", "workloads", "seeds", "comm", "calibration",
                    "simulator", "models", "notes", "report", "reduced", "loop"}
# what a spec's `reduced:` version may replace (the report and the name stay the spec's own)
REDUCIBLE_FIELDS = TOP_LEVEL_FIELDS - {"name", "notes", "report", "reduced", "loop"}
# artist/simulator.py, the elastic jobs' rounds (sweep/elastic.py), Crius' 5-minute rounds (sweep/crius.py)
LOOPS = ("rigid", "elastic", "crius")


@dataclass
class SweepSpec:
    name: str
    source: str  # the spec file
    topologies: list[TopologyChoice]
    racks: list[int] | None  # None: each topology's own
    policies: list[PolicyChoice]
    workloads: list[WorkloadChoice]
    seeds: list[int]
    backends: list[str]
    algorithms: list[str]
    channels: list[int]
    calibrations: list[CalibrationChoice]
    simulator: SimulatorConfig
    models: dict[str, ModelProfile]
    models_sha256: str
    comm_options: dict[str, dict] = field(default_factory=dict)  # backend -> its CommSpec options
    runs: list[Run] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # said before running (e.g. extrapolated calibration)
    report: ReportSpec | None = None  # the `report:` section: the paper's claims (artist/report/spec.py)



# --------------------------------------------------------------------------- helpers


def _listed(f: Fields, key: str, default=...) -> list:
    """A field that may hold one value or a list of values (an axis)."""
    value = f.raw(key, default)
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if not values:
        raise f.error(key, "empty list: give at least one value")
    return values


def _resolve(base: Path, text: str) -> Path:
    p = Path(text).expanduser()
    return p if p.is_absolute() else base / p


def _no_such(what: str, path: Path, text: str, directory: Path, suffix: str = ".yaml") -> str:
    """The one-line message of a missing input file; for a bare name, the shipped names too."""
    if Path(text).parent != Path("."):
        return f"no such {what}: {path}"
    return f"no such {what}: {path}, and not a shipped one (shipped: {', '.join(shipped.names(directory, suffix))})"


def _unique(f: Fields, key: str, labels: Sequence[str], what: str) -> None:
    seen = set()
    for i, label in enumerate(labels):
        if label in seen:
            raise InputError(f.source, f"field '{key}[{i}]'", f"{what} {label!r} listed twice (give it another label)")
        seen.add(label)


# --------------------------------------------------------------------------- parsing


def _reduced_version(f: Fields, name: str, allowed: set[str]) -> Fields:
    """The spec with its `reduced:` fields in place of the top-level ones: the same claims on a sweep
    small enough for CI (seconds). Messages about them name the reduced version."""
    if not f.has("reduced"):
        raise f.error("reduced", "this spec has no reduced version (a `reduced:` mapping of fields to replace)")
    rf = f.sub("reduced")
    rf.unknown_keys(allowed)
    data = {k: v for k, v in f.data.items() if k != "reduced"}
    return Fields({**data, **rf.data, "name": f"{name}-reduced"}, f"{f.source} (reduced version)")


def _policy_names(f: Fields) -> list[str]:
    """The policy names a spec lists (its reduced version's too), as written; entries the loaders will
    refuse are skipped here and refused there."""
    names = []
    for source in (f.data, f.data.get("reduced") if isinstance(f.data.get("reduced"), dict) else {}):
        entries = source.get("policies", [])
        for entry in entries if isinstance(entries, list) else [entries]:
            name = entry.get("name") if isinstance(entry, dict) else entry
            if isinstance(name, str) and not (isinstance(entry, dict) and "plugin" in entry):
                names.append(name)
    return names


def kind_of_jobs(f: Fields) -> tuple[str, str]:
    """(loop, why): the kind of jobs a spec's runs schedule, which picks its loader. `loop:` says it
    outright (why is then ""); otherwise the workloads and policies tell: a workload of Crius' jobs
    (`crius:jobs=N,...`) means Crius' jobs, an `elastic:` section or a policy that schedules no rigid jobs
    (pollux, sia, gavel, crius, ...) elastic jobs, anything else rigid jobs. One event loop runs all three
    (artist/simulator.py); the kinds differ in what a job is (docs: explanation/design.md). A field of the
    older dialect of Crius' sweeps (cluster, jobs, ...) is one line saying where it went."""
    from artist.sweep.crius import OLD_FIELDS, is_crius_workload

    for key, instead in OLD_FIELDS.items():
        if f.has(key):
            raise f.error(key, f"not a sweep field (older specs of Crius' jobs had it); Crius' sweeps now say "
                               f"{instead}")
    if f.has("loop"):
        return f.string("loop"), ""
    entries = []
    for source in (f.data, f.data.get("reduced") if isinstance(f.data.get("reduced"), dict) else {}):
        raw = source.get("workloads", [])
        entries.extend(raw if isinstance(raw, list) else [raw])
    crius = next((e for e in entries if is_crius_workload(e)), None)
    if crius is not None:
        text = crius.get("spec") if isinstance(crius, dict) else crius
        return "crius", f"workload {text!r} is Crius' jobs"
    if f.has("elastic"):
        return "elastic", "its `elastic:` section makes the jobs elastic"
    from artist.policies.registry import policy_names

    # only a name the rigid registry lacks needs the whole listing (which imports every kind's registry,
    # Pollux' genetic search included: ~0.3 s a spec)
    rigid = set(policy_names())
    others = [name for name in _policy_names(f) if name not in rigid]
    if others:
        from artist.policies.suite import ELASTIC, all_policies

        kinds = {p.name: p.loops for p in all_policies()}
        for name in others:
            if ELASTIC in kinds.get(name, ()):
                return "elastic", f"policy {name!r} schedules no rigid jobs"
    return "rigid", ""


def load_sweep_spec(path: str | Path, *, backend_override: str | None = None,
                    calibration_override: str | None = None, reduced: bool = False,
                    data: Mapping[str, Any] | None = None) -> SweepSpec:
    """Read, check and expand a sweep spec. Raises InputError before any work on anything wrong.

    backend_override replaces the comm backend axis (`artist sweep --backend`); a calibration
    profile of the spec fitted for another backend is then swapped for the profile beside it
    fitted for the new one (same topology links, algorithm and channels), with a note.
    calibration_override replaces the calibration axis: a profile path, or "none". reduced: the spec's
    `reduced:` version (named NAME-reduced). data: the spec's mapping, already parsed (the Python API's
    dict spec), read instead of the file; `path` then only stands for it: messages name it, its directory
    resolves relative paths and its stem is the default name."""
    path = Path(path)
    source = str(path)
    f = Fields(load_yaml_mapping(path) if data is None else data, source)
    base = path.resolve().parent
    _check_name(f, path)
    loop, why = kind_of_jobs(f)
    if loop not in LOOPS:
        raise f.error("loop", f"unknown loop {loop!r}; known: {', '.join(LOOPS)}")
    try:
        return _load_kind(f, path, loop, base, backend_override, calibration_override, reduced)
    except UnknownFieldError as exc:
        if not why:
            raise
        # the kind was read off the spec: say which kind, and why, beside what it allows
        problem = f"not a field of a sweep of {loop} jobs ({why}); allowed: {', '.join(exc.allowed)}"
        raise InputError(exc.source, exc.where, problem) from None


def _load_kind(f: Fields, path: Path, loop: str, base: Path, backend_override, calibration_override,
               reduced: bool) -> SweepSpec:
    source = f.source
    if loop == "elastic":
        from artist.sweep.elastic import ELASTIC_TOP_LEVEL, load_elastic_spec

        if calibration_override is not None:
            raise InputError("command line", "--calibration", "an elastic sweep (loop: elastic) takes no calibration")
        if reduced:  # (load_elastic_spec checks the top-level keys)
            f = _reduced_version(f, f.string("name", path.stem), ELASTIC_TOP_LEVEL - {"name", "notes", "report",
                                                                                      "reduced", "loop"})
        spec = load_elastic_spec(f, path, backend_override)
        _attach_report(spec, f, base)
        return spec
    if loop == "crius":
        from artist.sweep.crius import CRIUS_TOP_LEVEL, load_crius_spec

        if calibration_override is not None:
            raise InputError("command line", "--calibration",
                             "a sweep of Crius' jobs runs Crius' own network model (no calibration)")
        if reduced:  # (load_crius_spec checks the top-level keys)
            f = _reduced_version(f, f.string("name", path.stem), CRIUS_TOP_LEVEL - {"name", "notes", "report",
                                                                                  "reduced", "loop"})
        if backend_override is not None:  # Crius' `comm` axis (analytical or none)
            f = Fields({**f.data, "comm": backend_override}, source)
        spec = load_crius_spec(f, path)
        _attach_report(spec, f, base)
        return spec
    f.unknown_keys(TOP_LEVEL_FIELDS)
    if reduced:
        f = _reduced_version(f, f.string("name", path.stem), REDUCIBLE_FIELDS)

    name = f.string("name", path.stem)
    models, models_sha = _models(f, base)
    topologies = _topologies(f, base)
    racks = _racks(f)
    policies = _policies(f, base)
    seeds = [_integer(f, "seeds", i, v, minimum=0, maximum=2**32 - 1) for i, v in enumerate(_listed(f, "seeds", [0]))]
    if len(set(seeds)) != len(seeds):
        raise f.error("seeds", f"a seed is listed twice: {seeds}")
    backends, algorithms, channels, comm_options = _comm(f, backend_override)
    _check_comm_options(f, topologies[0].topology, backends, algorithms, channels, comm_options)
    if calibration_override is not None:
        none = calibration_override.lower() in ("none", "null", "")
        raw = None if none else str(Path(calibration_override).resolve())
        f = Fields({**f.data, "calibration": raw}, source)
    notes: list[str] = []
    calibrations = _calibrations(f, base, topologies, backends, algorithms, channels,
                                 swap_notes=notes if backend_override is not None and calibration_override is None
                                 else None)
    simulator = _simulator(f)
    if simulator.contention == "shared" and simulator.contention_model == "phase":
        _check_phase_algorithms(f, "simulator.contention_model", algorithms)
    workloads = _workloads(f, base)
    for t in topologies:
        t.topology.check_reference_gpu({m.reference_gpu for m in models.values()})

    spec = SweepSpec(name, source, topologies, racks, policies, workloads, seeds, backends, algorithms, channels,
                     calibrations, simulator, models, models_sha, comm_options)
    spec.runs = expand(spec)
    spec.notes = notes + calibration_coverage_notes(spec)
    _attach_report(spec, f, base)
    return spec


def _attach_report(spec: SweepSpec, f: Fields, base: Path) -> None:
    """The `report:` section, checked now, not after hours of runs."""
    if f.has("report"):
        spec.report = parse_report(f.sub("report"), base)
        check_against_policies(spec.report, [p.label for p in spec.policies], f.source)
        check_against_workloads(spec.report, [w.label for w in spec.workloads], f.source)


def calibration_coverage_notes(spec: SweepSpec) -> list[str]:
    """Per calibration profile, whether the gradient buckets of the models the runs train lie
    inside the sizes it was fitted on (a sweep's latencies outside them are extrapolated)."""
    used = sorted({job.model for run in spec.runs for job in run.jobs if not job.plan})  # profiles, not the zoo
    sizes = [nbytes for name in used for nbytes, _ in spec.models[name].buckets]
    notes = []
    for choice in spec.calibrations:
        note = (choice.profile.coverage_note(sizes, "gradient buckets of the sweep's models")
                if choice.profile and sizes else None)
        if note:
            notes.append(note)
    tiers = {choice.profile.tier_note(run.topology) for choice in spec.calibrations if choice.profile
             for run in spec.runs if run.calibration.profile is choice.profile}
    return notes + sorted(note for note in tiers if note)


def _integer(f: Fields, key: str, i: int | None, value, minimum: int, maximum: int | None = None) -> int:
    where = f"field '{key}'" if i is None else f"field '{key}[{i}]'"
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f.source, where, f"expected an integer, got {value!r}")
    if value < minimum:
        raise InputError(f.source, where, f"must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise InputError(f.source, where, f"must be <= {maximum}, got {value}")
    return value


def _models(f: Fields, base: Path) -> tuple[dict[str, ModelProfile], str]:
    directory = _resolve(base, f.string("models")) if f.has("models") else DEFAULT_MODELS_DIR
    if not directory.is_dir():
        raise f.error("models", f"no such directory: {directory}")
    return load_models(directory), models_sha256(directory)


def _topologies(f: Fields, base: Path) -> list[TopologyChoice]:
    out = []
    values = _listed(f, "topology")
    for i, text in enumerate(values):
        key = f"topology[{i}]" if isinstance(f.raw("topology"), list) else "topology"
        if not isinstance(text, str) or not text:
            raise InputError(f.source, f"field '{key}'", f"expected a topology file path, got {text!r}")
        p = shipped.find(text, shipped.TOPOLOGIES_DIR, base=base)
        if not p.is_file():
            raise InputError(f.source, f"field '{key}'", _no_such("topology file", p, text, shipped.TOPOLOGIES_DIR))
        out.append(TopologyChoice(text, Topology.from_yaml(p), sha256_file(p)))
    names = [t.topology.name for t in out]
    _unique(f, "topology", names, "topology name")
    return out


def _racks(f: Fields) -> list[int] | None:
    if not f.has("racks"):
        return None
    racks = [_integer(f, "racks", i, v, minimum=1, maximum=MAX_GPUS) for i, v in enumerate(_listed(f, "racks"))]
    if len(set(racks)) != len(racks):
        raise f.error("racks", f"a rack count is listed twice: {racks}")
    return racks


def _entries(f: Fields, key: str, shorthand: str, allowed: set[str], what: str) -> Iterator[Fields]:
    """The entries of a non-empty list field, each a mapping with the allowed keys; a bare string
    is shorthand for {shorthand: string}. Errors name the entry (e.g. policies[2].name)."""
    values = f.raw(key)
    if not isinstance(values, list) or not values:
        raise f.error(key, f"expected a non-empty list of {what}")
    for i, entry in enumerate(values):
        ef = Fields({shorthand: entry} if isinstance(entry, str) else entry, f.source, f"{key}[{i}].")
        ef.unknown_keys(allowed)
        yield ef


def _policies(f: Fields, base: Path) -> list[PolicyChoice]:
    from artist.policies.plugins import load_plugin
    from artist.policies.registry import make_policy_checked, policy_names

    out = []
    for pf in _entries(f, "policies", "name", {"name", "params", "label", "plugin"},
                       "policy names or {name, params, label, plugin} mappings"):
        name = pf.string("name")
        plugin = ""
        imported = True
        if pf.has("plugin"):  # a user's policy in one file: importing it registers the policy
            plugin = str(_resolve(base, pf.string("plugin")))
            if not Path(plugin).is_file():
                raise pf.error("plugin", f"no such policy plugin file: {plugin}")
            imported = load_plugin(plugin) is not None  # not on a dry run: its name is taken as written
        known = policy_names()
        if imported and name not in known:
            raise pf.error("name", f"unknown policy {name!r}; known policies: {', '.join(known)}")
        params = pf.raw("params", {})
        if not isinstance(params, dict):
            raise pf.error("params", f"expected a mapping of parameter names to values, got {params!r}")
        try:
            params_json = canonical_json(params)
        except (TypeError, ValueError) as exc:
            raise pf.error("params", f"values must be numbers, strings, booleans, lists or mappings ({exc})") from None
        if imported:  # the policy checks its own parameters, here rather than in a worker
            make_policy_checked(name, params, f.source, f"field '{pf.prefix}params'")
        label = pf.string("label", name if not params else f"{name}({params_json[1:-1]})")
        out.append(PolicyChoice(label, name, params, params_json, plugin))
    _unique(f, "policies", [p.label for p in out], "policy")
    return out


def _workloads(f: Fields, base: Path) -> list[WorkloadChoice]:
    out = []
    for wf in _entries(f, "workloads", "spec", {"spec", "label"}, "generators (batch:n=500) or trace paths"):
        text = wf.string("spec")
        kind = text.partition(":")[0]
        if kind in GENERATORS:
            out.append(generator_workload(wf, text, base))
            continue
        if kind in TRACE_KINDS:
            out.append(_trace_workload(wf, text, base))
            continue
        p = shipped.find(text, shipped.TRACES_DIR, ".csv", base)
        if not p.is_file():
            raise wf.error("spec", f"no such trace file {p}, and not a generator "
                                   f"({', '.join(g + ':...' for g in GENERATORS)})")
        out.append(WorkloadChoice(wf.string("label", p.stem), text, str(p), {"trace_sha256": sha256_file(p)}))
    _unique(f, "workloads", [w.label for w in out], "workload")
    return out


def generator_workload(wf: Fields, text: str, base: Path) -> WorkloadChoice:
    """A generator text. A replay generator's traces (trace=FILE|FILE) are resolved against the spec's
    directory, and its identity holds their contents in order beside the text as written (not their paths)."""
    kind, _, params = text.partition(":")
    identity: dict = {"generator": text}
    if kind != "replay":
        return WorkloadChoice(wf.string("label", text), text, text, identity)
    items = []
    for item in params.split(","):
        key, eq, value = item.partition("=")
        if key.strip() == "trace" and eq:
            paths = [_resolve(base, v.strip()) for v in value.split("|") if v.strip()]
            for p in paths:
                if not p.is_file():
                    raise wf.error("spec", f"replay: no such trace {p}")
            identity["trace_sha256"] = [[p.name, sha256_file(p)] for p in paths]
            item = "trace=" + "|".join(str(p) for p in paths)
        items.append(item)
    return WorkloadChoice(wf.string("label", text), text, f"{kind}:{','.join(items)}", identity)


def _trace_workload(wf: Fields, text: str, base: Path) -> WorkloadChoice:
    """A `FORMAT:path=...` workload: the path resolved against the spec's directory; the identity holds the
    options and the trace files' contents, not the path (artist.sweep.identity)."""
    kind, _, params = text.partition(":")
    items = [item for item in params.split(",") if item.strip()]
    path_items = [item for item in items if item.strip().startswith("path=")]
    if len(path_items) != 1 or not path_items[0].partition("=")[2].strip():
        raise wf.error("spec", f"{kind}: give the trace as path=FILE once ({kind}:path=...,key=value)")
    p = _resolve(base, path_items[0].partition("=")[2].strip())
    if not p.exists():
        raise wf.error("spec", f"no such trace {p}")
    options = ",".join(sorted(item.strip() for item in items if item not in path_items))
    identity = {"trace_format": kind, "trace_options": options,
                "trace_sha256": {f.name: sha256_file(f) for f in trace_identity_files(p)}}
    return WorkloadChoice(wf.string("label", f"{kind}-{p.stem}"), text, with_path(text, p), identity)


def _comm(f: Fields, backend_override: str | None) -> tuple[list[str], list[str], list[int], dict[str, dict]]:
    raw = f.raw("comm", {"backend": "analytical"})
    if isinstance(raw, str):
        raw = {"backend": raw}
    cf = Fields(raw, f.source, "comm.")
    cf.unknown_keys({"backend", "algorithm", "channels", "options"})
    backends = _listed(cf, "backend", "analytical")
    if backend_override is not None:
        backends = [backend_override]
    for i, b in enumerate(backends):
        if b not in BACKENDS:
            where = "--backend (command line)" if backend_override else f"comm.backend[{i}]"
            raise InputError(f.source, f"field '{where}'", f"unknown backend {b!r}; known: {', '.join(BACKENDS)}")
        if b == "ns3":
            _check_ns3_available(f)
    algorithms = _listed(cf, "algorithm", "ring")
    for i, a in enumerate(algorithms):
        if a not in ALGORITHM_CHOICES:
            raise InputError(f.source, f"field 'comm.algorithm[{i}]'",
                             f"unknown algorithm {a!r}; known: {', '.join(ALGORITHM_CHOICES)}")
        refusal = next(filter(None, (algorithm_refusal(b, a) for b in backends)), None)
        if refusal:
            raise InputError(f.source, f"field 'comm.algorithm[{i}]'", refusal)
    channels = [_integer(cf, "comm.channels", i, c, minimum=1, maximum=MAX_CHANNELS)
                for i, c in enumerate(_listed(cf, "channels", 1))]
    if NCCL_CHOICE in algorithms and channels != [1]:
        raise cf.error("channels", f"algorithm {NCCL_CHOICE} takes the channels NCCL's own search sets: a sweep "
                                   f"with it leaves channels at 1, got {channels}")
    for key, values in (("backend", backends), ("algorithm", algorithms), ("channels", channels)):
        if len(set(values)) != len(values):
            raise cf.error(key, f"a value is listed twice: {values}")
    options = cf.raw("options", {})
    if not isinstance(options, dict) or not all(isinstance(v, dict) for v in options.values()):
        raise cf.error("options", "expected a mapping of backend name to its options, e.g. {ns3: {transport: tcp}}")
    for name in options:
        if name not in BACKENDS:
            raise InputError(f.source, f"field 'comm.options.{name}'", f"unknown backend; known: {', '.join(BACKENDS)}")
        try:
            canonical_json(options[name])
        except (TypeError, ValueError) as exc:
            raise InputError(f.source, f"field 'comm.options.{name}'",
                             f"values must be plain YAML scalars ({exc})") from None
    return list(backends), list(algorithms), channels, {b: dict(options.get(b, {})) for b in backends}


SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")  # results/<name>: one directory, never a path


def _check_name(f: Fields, path: Path) -> None:
    """The sweep's name is its output directory under results/: one plain directory name, so that no spec
    writes outside results/ ('../../x') or into a path it does not name."""
    name = f.string("name", path.stem)
    if not SAFE_NAME.fullmatch(name) or ".." in name:
        raise f.error("name", f"expected letters, digits, '.', '_' or '-' (it names the directory results/<name>), "
                              f"got {name!r}")


def _check_comm_options(f: Fields, topology: Topology, backends, algorithms, channels, options) -> None:
    """Build each backend once with its options (cheap: the ns-3 model starts its worker only when asked)."""
    for backend in backends:
        if not options[backend]:
            continue
        try:
            CommSpec(backend, algorithms[0], channels[0], options[backend]).build(topology)
        except (TypeError, ValueError) as exc:
            raise InputError(f.source, f"field 'comm.options.{backend}'",
                             f"rejected by the {backend} backend: {exc}") from None


def _check_ns3_available(f: Fields) -> None:
    try:
        importlib.import_module("artist.network.ns3")
    except ImportError as exc:
        raise InputError(f.source, "field 'comm.backend'",
                         f"the ns3 backend is not available in this installation ({exc}); use 'analytical'") from None


def _calibrations(f: Fields, base: Path, topologies, backends, algorithms, channels,
                  swap_notes: list[str] | None = None) -> list[CalibrationChoice]:
    values = _listed(f, "calibration", None)
    if values == [None]:
        return [NO_CALIBRATION]
    try:
        from artist.calibration import load_profile
    except ImportError as exc:
        raise InputError(f.source, "field 'calibration'",
                         f"calibration profiles are not available in this installation ({exc}); "
                         f"remove the field") from None
    out = []
    for i, text in enumerate(values):
        key = f"calibration[{i}]"
        if text is None:
            out.append(NO_CALIBRATION)
            continue
        if not isinstance(text, str) or not text:
            raise InputError(f.source, f"field '{key}'", f"expected a calibration profile path or null, got {text!r}")
        p = shipped.find(text, shipped.PROFILES_DIR, base=base)
        if not p.is_file():
            raise InputError(f.source, f"field '{key}'", _no_such("calibration profile", p, text,
                                                                  shipped.PROFILES_DIR))
        profile = load_profile(p)
        for t in topologies:
            try:
                profile.check_topology(t.topology)
            except ValueError as exc:
                raise InputError(f.source, f"field '{key}'", str(exc)) from None
        settings = list(itertools.product(backends, algorithms, channels))
        problems = [_calibration_mismatch(profile, topologies[0].topology, *s) for s in settings]
        if any(problems) and swap_notes is not None:
            sibling = _sibling_profile(p, profile, settings, load_profile)
            if sibling is not None:
                from artist.calibration.profile import backend_settings

                swap_notes.append(f"calibration: {p.name} was fitted for {backend_settings(profile.backend)}; using "
                                  f"{sibling.name}.yaml beside it, fitted on the same topology for "
                                  f"{backend_settings(sibling.backend)}")
                profile, text = sibling, str(Path(sibling.path))
                problems = [_calibration_mismatch(profile, topologies[0].topology, *s) for s in settings]
        problem = next((x for x in problems if x), None)
        if problem:
            hint = "; pass --calibration PROFILE or --calibration none" if swap_notes is not None else ""
            raise InputError(f.source, f"field '{key}'", problem + hint)
        out.append(CalibrationChoice(profile.name, text, profile))
    _unique(f, "calibration", [c.label or "none" for c in out], "calibration profile")
    return out


def _sibling_profile(path: Path, profile, settings, load_profile):
    """The one profile in the same directory fitted on the same links for every wanted setting
    (backend, algorithm, channels), or None."""
    from artist.calibration.profile import backend_settings

    found = []
    for other in sorted(path.parent.glob("*.yaml")):
        if other.resolve() == path.resolve():
            continue
        try:
            candidate = load_profile(other)
        except (InputError, ValueError):
            continue  # not a profile, or an old format: never picked silently
        if candidate.link_parameters != profile.link_parameters:
            continue
        if all(backend_settings(candidate.backend) == backend_settings({"backend": b, "algorithm": a, "channels": c})
               for b, a, c in settings):
            found.append(candidate)
    return found[0] if len(found) == 1 else None


def _calibration_mismatch(profile, topology, backend, algorithm, channels) -> str | None:
    """Why the profile cannot be applied to this backend, or None."""
    from artist.calibration.profile import backend_settings

    wanted = {"backend": backend, "algorithm": algorithm, "channels": channels}
    if backend_settings(profile.backend) != backend_settings(wanted):
        return (f"calibration profile {profile.name!r} was fitted for {backend_settings(profile.backend)}, not "
                f"{backend_settings(wanted)}")
    if backend == "analytical":  # cheap to build: let the calibration layer check the whole identity
        try:
            CommSpec(backend, algorithm, channels).build(topology, profile)
        except ValueError as exc:
            return str(exc)
        return None
    # The ns-3 model is not built here (a worker imports ns-3); compare the settings we know.
    wanted = {"backend": backend, "algorithm": algorithm, "channels": channels}
    clash = {k: v for k, v in wanted.items() if k in profile.backend and profile.backend[k] != v}
    if clash:
        return (f"calibration profile {profile.name!r} was fitted for backend {profile.backend}, "
                f"not for {wanted}; fit a profile with these settings (artist calibrate)")
    return None


def _simulator(f: Fields) -> SimulatorConfig:
    if not f.has("simulator"):
        return SimulatorConfig()
    sf = f.sub("simulator")
    sf.unknown_keys({"round_interval_s", "restore_seconds", "contention", "contention_model"})
    default = SimulatorConfig()
    interval = default.round_interval_s
    if "round_interval_s" in sf.data:
        raw = sf.data["round_interval_s"]
        interval = None if raw in (None, 0) else sf.number("round_interval_s", minimum=MIN_ROUND_INTERVAL_S,
                                                           maximum=MAX_ARRIVAL_S)
    restore = sf.number("restore_seconds", default.restore_seconds, minimum=0.0, maximum=MAX_RESTORE_S)
    model = sf.string("contention_model", default.contention_model)
    if model not in CONTENTION_MODELS:
        raise sf.error("contention_model", f"unknown contention model {model!r}; known: {', '.join(CONTENTION_MODELS)}")
    return SimulatorConfig(round_interval_s=interval, restore_seconds=restore,
                           contention=_contention(sf, default.contention), contention_model=model)


def _check_phase_algorithms(f: Fields, where: str, algorithms: Sequence[str]) -> None:
    """Shared contention by the phase model: only on the all-reduce algorithms it is measured on."""
    from artist.network.phase.model import phase_refusal

    refusal = next(filter(None, (phase_refusal(a) for a in algorithms)), None)
    if refusal:
        raise InputError(f.source, f"field '{where}'", refusal)


def _contention(f: Fields, default: str) -> str:
    """A `contention` field (the rigid loop's `simulator:`, the elastic loop's `elastic:`): one of CONTENTION_MODES."""
    contention = f.string("contention", default)
    if contention not in CONTENTION_MODES:
        raise f.error("contention", f"unknown contention mode {contention!r}; known: {', '.join(CONTENTION_MODES)}")
    return contention
