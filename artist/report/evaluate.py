"""From a sweep's results to a report's content: network configurations, claim verdicts, tables.

Everything here is computed from the results table (means over seeds) or copied from the report
spec's paper figures; render.py only formats what this module returns.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from artist.errors import InputError
from artist.report.spec import Claim, Figure, ReportSpec
from artist.sweep.store import read_results

# The columns that say which network answered a run: the ablation's dimensions.
NETWORK_COLUMNS = ("topology", "backend", "algorithm", "channels", "calibration", "contention")
# Which sweep a row came from: a paper's sweep and its ablation sweeps may run one network configuration each
# with other settings (a smaller GA, fewer jobs), so a configuration is also keyed by its sweep (never averaged
# across sweeps); labels name the sweep only where two sweeps ran the same network configuration.
SWEEP_COLUMN = "sweep"
REPORT_SPEC_NAME = "report-spec.json"
GENERIC_METRICS = ("jct_mean_s", "makespan_s")
HELD, NOT_HELD, NA = "held", "not held", "n/a"


@dataclass(frozen=True)
class Sweep:
    """One finished sweep directory: its table (with a contention column) and its report spec, if any."""

    name: str
    directory: Path
    table: pd.DataFrame
    spec: ReportSpec | None
    calibration_ids: dict[str, set[str]] = field(default_factory=dict)  # label -> profile ids the runs recorded


def write_report_spec(directory: str | Path, spec: ReportSpec) -> Path:
    """The sweep's report section beside its results (sorted keys: same spec, same bytes)."""
    path = Path(directory) / REPORT_SPEC_NAME
    path.write_text(json.dumps(spec.to_json(), indent=1, sort_keys=True) + "\n")
    return path


def _identity(directory: Path, run_id: str) -> dict:
    """The identity a run's params.json records ({} if unreadable)."""
    p = directory / "runs" / str(run_id) / "params.json"
    try:
        identity = json.loads(p.read_text())["identity"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return identity if isinstance(identity, dict) else {}


def _contention(directory: Path, run_id: str) -> str:
    """simulator.contention of a run, from its recorded identity (absent: isolated)."""
    return str((_identity(directory, run_id).get("simulator") or {}).get("contention", "isolated"))


def _calibration_ids(directory: Path, table: pd.DataFrame) -> dict[str, set[str]]:
    """Calibration label -> the profile ids its runs recorded (one run read per label and sweep)."""
    out: dict[str, set[str]] = {}
    for label, run_id in table.groupby("calibration", sort=False)["run_id"].first().items():
        if label != "none":
            found = _identity(directory, run_id).get("calibration")
            out[str(label)] = {str(found)} if found else set()
    return out


def load_sweep(directory: str | Path) -> Sweep:
    directory = Path(directory)
    table = read_results(directory).copy()
    if "contention" not in table.columns:
        table["contention"] = [_contention(directory, r) for r in table["run_id"]]
    table["calibration"] = table["calibration"].fillna("none").replace("", "none")
    table[SWEEP_COLUMN] = directory.name
    spec_path = directory / REPORT_SPEC_NAME
    spec = None
    if spec_path.is_file():
        try:
            data = json.loads(spec_path.read_text())
        except ValueError as exc:
            raise InputError(str(spec_path), None, f"invalid JSON ({exc})") from None
        spec = ReportSpec.from_json(data, str(spec_path))
    return Sweep(directory.name, directory, table, spec, _calibration_ids(directory, table))


def find_sweeps(directory: str | Path) -> list[Sweep]:
    """A sweep directory, or a directory whose sub-directories are sweeps (in name order)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise InputError(str(directory), None, "no such directory")
    if any((directory / f"results.{ext}").is_file() for ext in ("parquet", "csv")):
        return [load_sweep(directory)]
    subs = sorted(d for d in directory.iterdir()
                  if d.is_dir() and any((d / f"results.{ext}").is_file() for ext in ("parquet", "csv")))
    if not subs:
        raise InputError(str(directory), None, "neither a finished sweep directory nor a directory of them")
    return [load_sweep(d) for d in subs]


@dataclass(frozen=True)
class NetworkConfig:
    key: tuple[tuple[str, Any], ...]  # (column, value) over NETWORK_COLUMNS present, and the sweep
    label: str  # only the columns that vary between the configurations
    stand_ins: tuple[tuple[str, str], ...] = ()  # its sweep's workload label -> the claims' (ReportSpec.stand_ins)

    def judged_as(self, where: dict[str, Any]) -> dict[str, Any]:
        """A claim's filter as this configuration's sweep answers it (its stand-in workloads)."""
        mine = {theirs: own for own, theirs in self.stand_ins}
        return {c: (mine.get(str(v), v) if c == "workload" else v) for c, v in where.items()}

    def rows(self, table: pd.DataFrame) -> pd.DataFrame:
        mask = pd.Series(True, index=table.index)
        for column, value in self.key:
            mask &= table[column] == value
        return table[mask]


def network_configs(table: pd.DataFrame, stand_ins: dict[str, dict[str, str]] | None = None) -> list[NetworkConfig]:
    """The distinct network configurations in the table's order (the spec's axis order), per sweep: one
    run by two sweeps is two configurations, labelled `... [sweep NAME]`. stand_ins: sweep name -> its
    report's stand-in workloads, named in the label (`[batch-100 for batch-500]`)."""
    columns = [c for c in NETWORK_COLUMNS if c in table.columns]
    varying = [c for c in columns if table[c].nunique(dropna=False) > 1]
    shown = varying or ["topology", "backend"]
    keyed = columns + ([SWEEP_COLUMN] if SWEEP_COLUMN in table.columns else [])
    keys = [tuple(zip(keyed, values)) for values in table[keyed].drop_duplicates().itertuples(index=False, name=None)]
    runs_of = Counter(key[:len(columns)] for key in keys)  # network configuration -> sweeps that ran it
    out = []
    for key in keys:
        label = ", ".join(f"{c}={v}" for c, v in key[:len(columns)] if c in shown)
        if runs_of[key[:len(columns)]] > 1:
            label += f" [sweep {dict(key)[SWEEP_COLUMN]}]"
        mine = tuple(sorted((stand_ins or {}).get(dict(key).get(SWEEP_COLUMN), {}).items()))
        if mine:
            label += " [" + ", ".join(f"{own} for {theirs}" for own, theirs in mine) + "]"
        out.append(NetworkConfig(key, label, mine))
    return out


def primary_config(configs: list[NetworkConfig], wanted: dict[str, Any]) -> tuple[NetworkConfig, bool]:
    """The first configuration matching the spec's `primary` filter, and True; else (a reduced sweep run
    on a cheaper backend, say) the first configuration and False, which the report says."""
    for config in configs:
        values = dict(config.key)
        if all(str(values.get(k)) == str(v) for k, v in wanted.items()):
            return config, True
    return configs[0], False


def _filtered(table: pd.DataFrame, *filters: dict[str, Any]) -> pd.DataFrame:
    for f in filters:
        for column, value in f.items():
            if column not in table.columns:
                raise InputError("report", f"field 'where.{column}'", f"results have no column {column!r}")
            table = table[table[column].astype(str) == str(value)]
    return table


@dataclass(frozen=True)
class Verdict:
    claim: Claim
    config: NetworkConfig
    status: str  # held / not held / n/a
    detail: str  # the first comparison that failed, or why n/a
    means: dict[tuple[str, Any], float] = field(default_factory=dict)  # (policy, at) -> mean x scale
    at_values: tuple = ()  # the judged values of per/over (() when neither)


def claim_means(table: pd.DataFrame, claim: Claim, where: dict[str, Any], config: NetworkConfig
                ) -> tuple[dict[tuple[str, Any], float], tuple]:
    """Mean of the claim's metric over seeds (and other unpinned axes) per (policy, at), x scale."""
    rows = _filtered(config.rows(table), config.judged_as(where), config.judged_as(claim.where))
    wanted = claim.policies + tuple(claim.paper) + ((claim.normalise_to,) if claim.normalise_to else ())
    rows = rows[rows["policy"].isin(wanted)]
    at = claim.per or claim.over
    if rows.empty or claim.metric not in rows.columns:
        return {}, ()
    if at is None:
        grouped = rows.groupby("policy", sort=False)[claim.metric].mean()
        means, ats = {(p, None): float(v) * claim.scale for p, v in grouped.items()}, ()
    else:
        grouped = rows.groupby(["policy", at], sort=False)[claim.metric].mean()
        means = {(p, a): float(v) * claim.scale for (p, a), v in grouped.items()}
        ats = tuple(sorted(rows[at].unique().tolist()))
    if claim.normalise_to:  # relative to one policy at the same judged value (none there: no value)
        means = {(p, a): v / means[(claim.normalise_to, a)] for (p, a), v in means.items()
                 if means.get((claim.normalise_to, a))}
    return means, ats


def judge(claim: Claim, means: dict, at_values: tuple) -> tuple[str, str]:
    ats = at_values or (None,)
    if claim.metric and not means:
        return NA, f"no results for {claim.metric}"
    if claim.trend is None:
        for a in ats:
            for lo, hi in zip(claim.policies, claim.policies[1:]):
                if (lo, a) not in means or (hi, a) not in means:
                    missing = lo if (lo, a) not in means else hi
                    return NA, f"no results for {missing}" + ("" if a is None else f" at {a}")
                if not means[(lo, a)] < means[(hi, a)]:
                    where = "" if a is None else f"{claim.per}={a}: "
                    return NOT_HELD, f"{where}{lo} {means[(lo, a)]:.4g} >= {hi} {means[(hi, a)]:.4g}"
        return HELD, ""
    if len(at_values) < 2:
        return NA, f"a trend needs two values of {claim.over}"
    for p in claim.policies:
        series = [means.get((p, a)) for a in at_values]
        if any(v is None for v in series):
            return NA, f"no results for {p} at every {claim.over}"
        for (a0, v0), (a1, v1) in zip(zip(at_values, series), zip(at_values[1:], series[1:])):
            if not (v1 > v0 if claim.trend == "increasing" else v1 < v0):
                return NOT_HELD, f"{p}: {claim.over}={a0} {v0:.4g} -> {a1} {v1:.4g}"
    return HELD, ""


def judged_values(verdicts_of_one_claim: list[Verdict]) -> tuple:
    """Every judged value of per/over that any configuration has (sweeps of one paper may run other rack
    counts), sorted; (None,) when the claim has neither."""
    values = sorted({a for v in verdicts_of_one_claim for a in v.at_values}, key=lambda a: (str(type(a)), a))
    return tuple(values) or (None,)


def verdicts(table: pd.DataFrame, spec: ReportSpec, configs: list[NetworkConfig]) -> list[Verdict]:
    out = []
    for claim in spec.claims:
        for config in configs:
            means, ats = claim_means(table, claim, spec.where, config)
            status, detail = judge(claim, means, ats)
            out.append(Verdict(claim, config, status, detail, means, ats))
    return out


def figure_mean(table: pd.DataFrame, figure: Figure, where: dict[str, Any], config: NetworkConfig) -> float | None:
    """The mean over seeds (and other unpinned axes) of a paper figure's metric for its policy in one network
    configuration, x scale; None where the results have none (a missing column, policy or only NaN)."""
    rows = _filtered(config.rows(table), config.judged_as(where), config.judged_as(figure.where))
    if figure.metric not in rows.columns:
        return None
    values = rows.loc[rows["policy"] == figure.policy, figure.metric].dropna()
    return None if values.empty else float(values.mean()) * figure.scale


def generic_means(table: pd.DataFrame, metric: str, configs: list[NetworkConfig] | None = None) -> pd.DataFrame:
    """The metric's mean over seeds per network configuration (rows) and policy (columns; `policy @
    racks=R, workload=W` for the non-network axes that vary), in the table's order."""
    inner = [c for c in ("racks", "workload") if c in table.columns and table[c].nunique() > 1]
    rows = {}
    for config in configs or network_configs(table):
        sub = config.rows(table)
        grouped = sub.groupby(["policy", *inner], sort=False)[metric].mean()
        rows[config.label] = {(k if not inner else
                               f"{k[0]} @ " + ", ".join(f"{c}={v}" for c, v in zip(inner, k[1:]))): float(v)
                              for k, v in grouped.items()}
    return pd.DataFrame(rows).T
