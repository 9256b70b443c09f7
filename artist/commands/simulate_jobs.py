"""`artist simulate` for the policies of elastic jobs (Pollux, Sia, Gavel, Optimus+Oracle, Crius, FCFS,
ElasticFlow-LS) and of Crius' jobs (those three and Crius' Gandiva and Gavel, on a Crius cluster): one run of
their sweep dialect (artist/sweep/elastic.py, artist/sweep/crius.py) in the same event loop, its results row
printed and its tables written.

Elastic jobs (and rigid jobs under the rigid policies on a cluster file of several GPU types: the
workload's GPU count at batch M0 x GPUs): each job of --workload (a trace CSV, a published trace or a
generator) runs the measured application its model stands for at batch M0 x GPUs (artist/sweep/elastic.py
_GeneratedJobs); a Pollux workload CSV runs as written. The cluster is --topology: a one-type topology
of T4s times the jobs' compute with Pollux's measured T4 tables (workloads/pollux); any other topology (its
own GPU type) and a cluster file of several GPU types (topologies/clusters/) with Sia's tables of each type
(workloads/sia), modelled from the measured A100 tables on a type nobody measured (H100, or a Crius
cluster's A40, A10, V100: artist/elastic/modelled.py).

Crius' jobs: --topology names a Crius cluster (crius-testbed, crius-1280), or any topology or cluster file
whose GPU types have datasheet figures when --workload is Crius' own; --workload is Crius' generator,
crius:jobs=N,arrivals_per_hour=R (the default trace stands for crius:jobs=60,arrivals_per_hour=20), or a
Philly cluster_job_log (philly:path=FILE) whose arrivals and durations Crius' jobs take.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import pandas as pd
import yaml

from artist import shipped
from artist.errors import InputError
from artist.yamlio import load_yaml_mapping

CRIUS_DEFAULT = {"jobs": 60, "arrivals_per_hour": 20.0}  # ours: a small Crius workload, ~3 h of arrivals


def crius_workload(workload: str | None) -> bool:
    """Whether --workload names Crius' jobs (its generator or a Philly log for their arrivals)."""
    return bool(workload) and (workload.startswith("crius:") or workload.startswith("philly:path="))


def dialect_of(policy: str, topology: str, workload: str | None = None) -> str | None:
    """"elastic" or "crius" for a policy `artist simulate` runs through one of those dialects; None for a rigid
    one on a topology (or an unknown name). A name of both (gavel) goes by the topology: a Crius cluster ->
    crius, as does Crius' workload (crius:..., philly:path=...) under Crius' policies on any topology or
    cluster file. A rigid policy on a cluster file of several GPU types runs its rigid jobs as elastic specs do
    (artist/policies/rigid_in_elastic.py); so does every other policy on a Crius cluster (its cluster file:
    the elastic applications, compute modelled where unmeasured, artist/elastic/modelled.py)."""
    from artist.policies.crius.cluster import CLUSTERS
    from artist.policies.crius.registry import POLICIES as CRIUS
    from artist.policies.pollux.registry import ELASTIC_POLICIES

    from artist.policies.registry import policy_names

    crius, elastic = policy in CRIUS, policy in ELASTIC_POLICIES
    if topology in CLUSTERS:  # Crius' jobs under Crius' policies; the others' jobs on its cluster file
        return "crius" if crius else "elastic"
    if crius and crius_workload(workload):  # Crius' LLM jobs on any topology or cluster file
        return "crius"
    if crius and not elastic:
        return "crius"
    if elastic and (policy not in policy_names() or _is_cluster_file(topology)):
        return "elastic"  # a rigid policy on a cluster of several GPU types: rigid jobs of measured applications
    return None


def _topology_file(topology: str) -> Path | None:
    """The topology or cluster file --topology names (a path, or a shipped one's name: shipped.topology_path
    finds cluster files by name too, Crius' included); None if none."""
    try:
        return shipped.topology_path(topology)
    except InputError:
        return None


def _is_cluster_file(topology: str) -> bool:
    """Whether --topology names a cluster file (pools of several GPU types), not a topology file."""
    path = _topology_file(topology)
    try:
        return path is not None and "pools" in load_yaml_mapping(path)  # (bounded reads, regular files only)
    except InputError:  # not a readable YAML mapping: the topology loader says why, in one line
        return False


def _comm(args) -> dict:
    return {"backend": args.backend, "algorithm": args.algorithm, "channels": args.channels}


def _elastic_spec(args, params: dict) -> dict:
    path = _topology_file(args.topology) or shipped.topology_path(args.topology)  # the latter: its one-line error
    # no `applications`: the spec's default, Pollux's tables where every GPU is a T4, Sia's elsewhere
    spec = {"name": f"simulate-{args.policy}", "loop": "elastic", "topology": str(path.resolve()),
            "policies": [{"name": args.policy, "params": params, "label": args.policy}],
            "workloads": [{"spec": _workload_text(args.workload), "label": "workload"}],
            "seeds": [args.seed], "comm": _comm(args)}
    if args.racks is not None:
        spec["racks"] = [args.racks]
    return spec


# the fields of the spec simulate writes that come from --topology or --workload (the rest: --policy)
_OPTION_OF_FIELD = {"topology": "--topology", "racks": "--racks", "elastic.applications": "--topology",
                    "workloads": "--workload"}


def _option_of(where: str | None, policy: str) -> tuple[str, str | None]:
    """(the command-line option a field of simulate's own spec came from, the field where the option holds
    several: "field 'arrivals_per_hour'" -> (--workload, arrivals_per_hour)); else (--policy P, None)."""
    field = (where or "").removeprefix("field ").strip("'")
    for name, option in _OPTION_OF_FIELD.items():
        if field == name or field.startswith(name + "[") or field.startswith(name + "."):
            return option, (None if name in ("topology", "racks", "workloads") else field)
    return f"--policy {policy}", None


def _workload_text(text: str) -> str:
    path = Path(text)
    return str(path.resolve()) if path.is_file() else text


def _crius_spec(args, params: dict) -> dict:
    from artist.policies.crius.cluster import CLUSTERS
    from artist.sweep.crius import CRIUS_WORKLOAD

    path = None if args.topology in CLUSTERS else _topology_file(args.topology)
    cluster = args.topology if path is None else str(path.resolve())
    unknown = sorted(set(params) - ({"depth"} if args.policy == "crius" else set()))
    if unknown:
        takes = "depth only" if args.policy == "crius" else "no parameters"
        raise InputError("command line", "--policy-param", f"{args.policy} in Crius' runs takes {takes}, "
                                                           f"not {', '.join(unknown)}")
    policy = {"name": args.policy, "params": dict(params)} if params else args.policy
    text = args.workload
    default = f"{CRIUS_WORKLOAD}jobs={CRIUS_DEFAULT['jobs']},arrivals_per_hour={CRIUS_DEFAULT['arrivals_per_hour']:g}"
    if text == str(shipped.DEFAULT_TRACE):
        print(f"note: Crius' jobs come from its own generator: {default}", file=sys.stderr)
        workload = default
    elif text.startswith(CRIUS_WORKLOAD):
        given = dict(item.partition("=")[::2] for item in filter(None, text[len(CRIUS_WORKLOAD):].split(",")))
        workload = CRIUS_WORKLOAD + ",".join(f"{k}={v}" for k, v in {**CRIUS_DEFAULT, **given}.items())
    elif text.startswith("philly:path="):
        log = str(Path(text.partition("=")[2]).resolve())
        workload = f"{CRIUS_WORKLOAD}jobs={CRIUS_DEFAULT['jobs']},philly_log={log}"
    else:
        raise InputError("command line", "--workload", f"Crius' jobs come from crius:jobs=N,arrivals_per_hour=R or a "
                                                       f"Philly log philly:path=FILE, not {text!r}")
    return {"name": f"simulate-{args.policy}", "topology": cluster, "workloads": [workload], "seeds": [args.seed],
            "policies": [policy], "comm": args.backend}


# the rigid loop's options (dest -> option), which the elastic and Crius loops do not read
RIGID_ONLY = {"calibration": "--calibration", "contention": "--contention", "contention_model": "--contention-model",
              "round_interval": "--round-interval", "restore_seconds": "--restore-seconds", "models": "--models"}


def rigid_options_given(args) -> list[str]:
    """The rigid loop's options args sets to other than their defaults (the dests of RIGID_ONLY)."""
    from artist.commands._args import command_parser

    parser = command_parser("simulate")
    return [dest for dest in RIGID_ONLY if getattr(args, dest, None) != parser.get_default(dest)]


def refuse_rigid_options(args, dialect: str, names: Mapping[str, str] = RIGID_ONLY, also: Sequence[str] = ()) -> None:
    """A run under an elastic or Crius policy would pass these over in silence, and look calibrated (or shared,
    ...) when it is not: one line naming them instead (names: how to call each dest, the options here, the API's
    keywords there; also: more of them given another way)."""
    given = [names[d] for d in rigid_options_given(args)]
    given += [name for name in also if name not in given]
    if given:
        raise InputError("command line", "--policy", f"{args.policy} runs the {dialect} loop, which does not take "
                                                     f"{', '.join(given)} (options of the rigid loop)")


def run(args, params: dict, dialect: str) -> int:
    """One run of the dialect's spec; its results row printed, its tables in --out."""
    refuse_rigid_options(args, dialect)
    with dialect_run(args, params, dialect) as (row, run_dir):
        where = "Crius' jobs" if dialect == "crius" else "elastic jobs"
        print(f"policy {args.policy} ({where}, decided in rounds in the event loop), {int(row['jobs'])} jobs, "
              f"backend {args.backend}")
        with pd.option_context("display.width", 200, "display.max_columns", 50, "display.max_rows", 200):
            print(row.to_frame("value").to_string())
        if args.out:
            out = Path(args.out)
            out.mkdir(parents=True, exist_ok=True)
            for table in sorted(run_dir.iterdir()):
                shutil.copy2(table, out / table.name)
            print(f"tables written to {out}: {', '.join(sorted(p.name for p in run_dir.iterdir()))}")
    return 0


@contextmanager
def dialect_run(args, params: dict, dialect: str) -> Iterator[tuple[pd.Series, Path]]:
    """One run of the dialect's spec (args: `artist simulate`'s options), in a temporary directory: yields its
    results row (from `jobs` on: the run's identity columns are the command line's) and the run's directory of
    tables (jobs, utilisation, ...), both valid inside the with block only."""
    from artist.sweep.run import run_sweep
    from artist.sweep.spec import load_sweep_spec

    spec_text = _crius_spec(args, params) if dialect == "crius" else _elastic_spec(args, params)
    with tempfile.TemporaryDirectory(prefix="artist-simulate-") as tmp:
        spec_path = Path(tmp) / f"{spec_text['name']}.yaml"
        spec_path.write_text(yaml.safe_dump(spec_text, sort_keys=False))
        try:
            spec = load_sweep_spec(spec_path)
        except InputError as exc:  # the spec is ours: name the command line's option, not the temporary file
            option, field = _option_of(exc.where, args.policy)
            raise InputError("command line", option, f"{field}: {exc.problem}" if field else exc.problem) from None
        report = run_sweep(spec, Path(tmp) / "out", n_jobs=1, use_cache=not getattr(args, "no_cache", False),
                           cache_dir=getattr(args, "cache_dir", None), progress=not args.quiet, plots=False)
        if report.failed:
            run_, error = report.failed[0]
            raise InputError("command line", "--policy", f"{args.policy}: {error.strip().splitlines()[-1]}")
        row = pd.read_csv(report.results_csv).iloc[0]
        yield row[list(row.index).index("jobs"):], next((Path(tmp) / "out" / "runs").iterdir())
