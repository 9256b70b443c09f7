"""From nccl-tests logs to points, to a fitted profile, or to a check of an existing profile."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Sequence

from artist.calibration.correction import KINDS
from artist.calibration.fit import (AUTO, FIT, HELD_OUT, MIB, OUTSIDE, SINGLE, TIERS, Point, apply_corrections,
                                    error_summary, fit_tiers, median_abs, regime_summary, simulate_test, test_kind)
from artist.calibration.nccl_tests import NcclLog, parse_nccl_tests
from artist.calibration.profile import NIC_TIER_FALLBACK, CalibrationProfile
from artist.calibration.regimes import KINK_RATIO, MIN_REGIME_SIZES, find_kinks
from artist.errors import InputError
from artist.topology import Topology

# Which fitted kind of a tier an unmeasured kind of that tier reuses, first found first: all-reduce
# crosses the tier's links in both ring passes, the others in one pass or one step.
KIND_PREFERENCE = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "send_recv")


class WorseThanUncalibrated(InputError):
    """A fitted profile makes a hold-out log worse than the uncalibrated backend (refused without --force)."""


@dataclass
class LogPoints:
    log: NcclLog
    points: list[Point] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # tests not used, with the reason
    kinks: dict = field(default_factory=dict)  # test line -> regimes.Kink list over the simulated sizes
    excluded: dict = field(default_factory=dict)  # test line -> plausibility.ImpossibleRow list (--allow-impossible)


def collect_points(model, topology: Topology, paths: Sequence[str | Path],
                   layout: Sequence[int] | None = None, min_bytes: int = 1,
                   max_bytes: int | None = None, fit_from: int | None = None, regimes: str = AUTO,
                   allow_wrong: bool = False, allow_impossible: bool = False) -> list[LogPoints]:
    """allow_wrong: use rows whose '#wrong' is > 0 (each reported as an issue of kind 'wrong')
    instead of refusing the log (nccl_tests.check_test). allow_impossible: leave physically impossible
    rows out (recorded in LogPoints.excluded) instead of refusing the log (plausibility.py)."""
    out = []
    for path in paths:
        log = parse_nccl_tests(path, allow_wrong=allow_wrong)
        lp = LogPoints(log)
        for test in log.tests:
            if test_kind(test) is None:
                lp.skipped.append(f"line {test.first_line}: {test.collective or 'unnamed'} test "
                                  f"(no backend simulates it)")
                continue
            excluded: list = []
            points = simulate_test(model, topology, log, test, layout, min_bytes, max_bytes, fit_from, regimes,
                                   allow_impossible, excluded)
            if excluded:
                lp.excluded[test.first_line] = excluded
            inside = [p for p in points if p.role != OUTSIDE]
            lp.kinks[test.first_line] = find_kinks([p.size_bytes for p in inside], [p.measured_s for p in inside],
                                                   [p.line for p in inside])
            lp.points.extend(points)
        if not lp.points:
            raise InputError(log.source, None, "no rows of a collective the backends simulate to calibrate against "
                                               f"(tests: {', '.join(t.collective or 'unnamed' for t in log.tests)})")
        out.append(lp)
    return out


def kind_sources(corrections: dict[str, dict]) -> dict[str, dict[str, str]]:
    """Per calibrated tier, the fitted kind each unmeasured kind reuses (KIND_PREFERENCE order)."""
    out = {}
    for tier, fitted in corrections.items():
        source = next(k for k in KIND_PREFERENCE if k in fitted)
        out[tier] = {k: source for k in KINDS if k not in fitted}
    return out


def terms_constrained(points: Sequence[Point]) -> dict:
    """Which terms of a tier's and kind's correction the data constrain, and by which logs."""
    fit = [p for p in points if p.role == FIT]
    logs = sorted({p.log for p in fit})
    hops = sorted({p.hops for p in fit})
    sizes = {p.size_bytes for p in fit}
    if len(sizes) < 2:
        return {"bandwidth_factor": logs, "latency_s": "not fitted: one size cannot separate it from bandwidth"}
    out = {"bandwidth_factor": logs, "latency_s": list(logs)}  # two lists: YAML would write one as an alias
    if len(hops) > 1:
        out["hop_latency_s"] = f"{', '.join(logs)} (hop counts {hops})"
    else:
        out["hop_latency_s"] = (f"not fitted: the logs have one hop count ({hops[0] if hops else 0}), which cannot "
                                f"tell a per-hop latency from a fixed one; the backend's own per-hop latency is kept")
    return out


def error_rows(points: Sequence[Point], min_bytes: int = MIB, roles: tuple = (FIT, HELD_OUT, OUTSIDE)) -> list[dict]:
    """Per (log, collective): the sizes >= min_bytes among the given roles and the median |error|
    uncalibrated and calibrated and the largest calibrated one, in percent (the --check --json rows)."""
    out = []
    keys = sorted({(p.log, p.kind) for p in points}, key=lambda k: (k[0], KINDS.index(k[1])))
    for log, kind in keys:
        mine = [p for p in points if p.log == log and p.kind == kind and p.role in roles
                and p.size_bytes >= min_bytes]
        if not mine:
            continue
        after = [abs(p.error_after) for p in mine if p.error_after is not None]
        out.append({"log": log, "collective": kind, "tier": mine[0].tier, "shape": mine[0].shape,
                    "sizes": len(mine), "held_out_sizes": sum(p.role == HELD_OUT for p in mine),
                    "median_err_uncalibrated_pct": _pct(median_abs(p.error_before for p in mine)),
                    "median_err_calibrated_pct": _pct(median_abs(p.error_after for p in mine)),
                    "max_err_calibrated_pct": _pct(max(after)) if after else None})
    return out


def worse_rows(rows: Sequence[dict]) -> list[dict]:
    """Rows whose calibrated median |error| is above the uncalibrated one."""
    return [r for r in rows if r["median_err_calibrated_pct"] is not None
            and r["median_err_calibrated_pct"] > r["median_err_uncalibrated_pct"]]


def fit_profile(name: str, topology: Topology, backend_identity: dict, logs: Sequence[LogPoints],
                min_bytes: int = MIB, notes: Sequence[str] = (), fit_from: int | None = None,
                regimes: str = AUTO, command: str | None = None, holdout: Sequence[LogPoints] = (),
                force: bool = False) -> tuple[CalibrationProfile, list[Point]]:
    """Fit a profile on logs, check it on the hold-out logs (every size held out): a profile that
    makes a hold-out log's collective worse than uncalibrated (median |error| over sizes >=
    min_bytes) is refused (WorseThanUncalibrated) unless force, which records a warning in it.
    Returns the profile and every point (fitted logs' and hold-out logs'), corrected."""
    points = [p for lp in logs for p in lp.points]
    corrections = fit_tiers(points)
    if not corrections:
        raise ValueError("no fit points")
    sources = kind_sources(corrections)
    inherited = {t: NIC_TIER_FALLBACK[t] for t in TIERS
                 if t not in corrections and NIC_TIER_FALLBACK.get(t) in corrections}
    shell = CalibrationProfile(name=name, topology_name=topology.name, link_parameters=topology.link_parameters(),
                               backend=backend_identity, corrections=corrections, kind_sources=sources,
                               inherited=inherited)
    points = apply_corrections(points, shell.correction)
    held_points = apply_corrections([replace(p, role=HELD_OUT if p.role != OUTSIDE else OUTSIDE)
                                     for lp in holdout for p in lp.points], shell.correction)
    tier_stats: dict[str, dict] = {}
    for tier in TIERS:
        if tier in corrections:
            kinds = {}
            for kind in KINDS:
                mine = [p for p in points if p.tier == tier and p.kind == kind]
                if kind in corrections[tier]:
                    held = [p for p in mine if p.role == HELD_OUT and p.size_bytes >= min_bytes]
                    kinds[kind] = {
                        "fitted_on": sorted({p.log for p in mine}),
                        "terms_constrained": terms_constrained(mine),
                        "fit_points": sum(p.role == FIT for p in mine),
                        "held_out_points": len(held),
                        "fit_median_abs_error": _round(median_abs(p.error_after for p in mine if p.role == FIT)),
                        "held_out_median_abs_error": _round(median_abs(p.error_after for p in held)),
                        "regimes": [_regime_stats(corrections[tier][kind], k, mine, min_bytes)
                                    for k in range(len(corrections[tier][kind].regimes))]}
                else:
                    kinds[kind] = {"note": f"no log of this tier measured {kind}; the tier's network terms are "
                                           f"carried from its {sources[tier][kind]} fit"}
            tier_stats[tier] = {"kinds": kinds}
        elif tier in inherited:
            tier_stats[tier] = {"note": f"no log spans the {tier} tier; reuses the {inherited[tier]} tier's "
                                        f"corrections (both cross the same NICs)"}
        else:
            tier_stats[tier] = {"note": f"no log spans the {tier} tier: its collectives stay uncalibrated"}
    log_entries, log_errors = [], {}
    for lp, role in [(lp, "fit") for lp in logs] + [(lp, "holdout") for lp in holdout]:
        fname = Path(lp.log.source).name
        mine = [p for p in (points if role == "fit" else held_points) if p.log == fname]
        tests = sorted({(p.test_line, p.kind, p.shape, p.tier, p.ranks) for p in lp.points})
        log_entries.append({"file": fname, "path": lp.log.source, "sha256": lp.log.sha256, "role": role,
                            "tests": [_test_entry(lp, line, k, s, t, r, role) for line, k, s, t, r in tests]})
        if role == "fit":
            log_errors[fname] = {}
            for kind in KINDS:
                of_kind = [p for p in mine if p.kind == kind]
                if not of_kind:
                    continue
                entry = {k: _round(v) for k, v in error_summary(of_kind, min_bytes).items()}
                regs = shell.correction(of_kind[0].tier, kind)
                entry["regimes"] = [{k: _round(v) for k, v in r.items()}
                                    for r in regime_summary(of_kind, regs, min_bytes)]
                log_errors[fname][kind] = entry
    held_rows = error_rows(held_points, min_bytes)
    warnings = []
    worse = worse_rows(held_rows)
    if worse:
        what = "; ".join(f"{r['log']} {r['collective']}: {r['median_err_calibrated_pct']:.2f} % calibrated vs "
                         f"{r['median_err_uncalibrated_pct']:.2f} % uncalibrated" for r in worse)
        if not force:
            raise WorseThanUncalibrated(
                worse[0]["log"], None, f"the fitted profile is worse than uncalibrated on hold-out data ({what}; "
                                       f"median |error| over sizes >= {min_bytes} B): refused (write it anyway with "
                                       f"--force, which records this warning in the profile)")
        warnings.append(f"written with --force although worse than uncalibrated on hold-out data: {what}")
    profile = CalibrationProfile(
        name=name, topology_name=topology.name, link_parameters=topology.link_parameters(), backend=backend_identity,
        corrections=corrections, kind_sources=sources, inherited=inherited, topology_path=topology.path,
        logs=tuple(log_entries),
        fit={"tiers": tier_stats, "logs": log_errors, "holdout": {"min_bytes": min_bytes, "rows": held_rows}
             if holdout else {}},
        notes=(f"errors are median |relative time error|; held-out = sizes >= {min_bytes} B inside the fitted range "
               f"that the fit did not use (sizes alternate between fit and held-out in each log's fitted range); "
               f"hold-out logs (role: holdout) are not used by the fit at all",
               _range_note(fit_from, regimes), *(() if command is None else (f"fitted with: {command}",)), *notes),
        warnings=tuple(warnings))
    return profile, points + held_points


def _pct(x: float | None) -> float | None:
    return None if x is None else round(100.0 * x, 4)


def _regime_stats(regimes, k: int, points: Sequence[Point], min_bytes: int) -> dict:
    mine = [p for p in points if p.role != OUTSIDE and regimes.index_for(p.size_bytes) == k]
    held = [p for p in mine if p.role == HELD_OUT and p.size_bytes >= min_bytes]
    return {
        "fitted_sizes_bytes": [min(p.size_bytes for p in mine), max(p.size_bytes for p in mine)] if mine else None,
        "fit_points": sum(p.role == FIT for p in mine),
        "held_out_points": len(held),
        "fit_median_abs_error": _round(median_abs(p.error_after for p in mine if p.role == FIT)),
        "held_out_median_abs_error": _round(median_abs(p.error_after for p in held)),
    }


def _range_note(fit_from, regimes) -> str:
    where = ("every simulated size" if fit_from is None
             else f"sizes >= {int(fit_from)} B (given); smaller simulated sizes are 'outside', never fitted")
    if regimes == SINGLE:
        return (f"fitted range per log: {where}; one correction per tier and collective over the whole range; sizes "
                f"below it keep only its bandwidth factor")
    return (f"fitted range per log: {where}, split into NCCL size regimes with one correction each: a regime boundary "
            f"is where the measured incremental bandwidth dS/dt changes by more than {KINK_RATIO}x or the time stops "
            f"growing; stretches of fewer than {MIN_REGIME_SIZES} sizes join the neighbouring regime whose affine line "
            f"is nearer their times (artist.calibration.regimes); decided on measured times before the fit/held-out "
            f"split; sizes alternate between fit and held-out inside each regime. A size uses the regime containing "
            f"it; sizes beyond the last measured size the last; sizes below the first regime keep only the first "
            f"regime's bandwidth factor (their protocol's fixed cost is not in the logs)")


def _test_entry(lp: LogPoints, line: int, kind: str, shape: str, tier: str, ranks: int, role: str) -> dict:
    mine = [p for p in lp.points if p.test_line == line]
    fitted = [p.size_bytes for p in mine if p.role != OUTSIDE]
    entry = {"line": line, "collective": kind, "shape": shape, "tier": tier, "ranks": ranks, "role": role,
             "simulated_sizes_bytes": [min(p.size_bytes for p in mine), max(p.size_bytes for p in mine)],
             "fitted_range_bytes": [min(fitted), max(fitted)] if fitted and role == "fit" else None}
    starts = sorted({p.regime_from for p in mine if p.role != OUTSIDE})
    if starts and role == "fit":
        entry["regime_starts_bytes"] = starts
    excluded = lp.excluded.get(line, [])
    if excluded:  # --allow-impossible: rows the fit never saw, and why
        entry["excluded_rows"] = [{"line": r.line, "size_bytes": r.size_bytes, "reason": r.reason} for r in excluded]
    kinks = lp.kinks.get(line, [])
    if kinks:
        entry["regime_changes"] = [{"size_bytes": k.size_bytes, "line": k.line, "reason": k.reason} for k in kinks]
    return entry


def check_points(profile: CalibrationProfile, logs: Sequence[LogPoints],
                 fitted: Sequence[LogPoints] = ()) -> list[Point]:
    """Apply an existing profile to logs: a log the profile was fitted on (`fitted`, fitted_logs) is in-sample,
    its points role FIT, not held out; every other log's points are held out."""
    fitted_ids = {id(lp) for lp in fitted}
    points = [replace(p, role=OUTSIDE if p.role == OUTSIDE else FIT if id(lp) in fitted_ids else HELD_OUT)
              for lp in logs for p in lp.points]
    return apply_corrections(points, profile.correction)


def fitted_logs(profile: CalibrationProfile, logs: Sequence[LogPoints]) -> list[LogPoints]:
    """The logs among `logs` that the profile was fitted on: the same bytes (sha256) as a log it records with
    role fit."""
    fit = {log.get("sha256") for log in profile.logs if log.get("role") == "fit"}
    return [lp for lp in logs if lp.log.sha256 in fit]


def _round(x):
    """Six significant digits keep the YAML readable; counts stay integers."""
    return float(f"{x:.6g}") if isinstance(x, float) else x
