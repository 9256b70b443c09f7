"""From nccl-tests logs to points, to a fitted profile, or to a check of an existing profile."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Sequence

from artist.calibration.fit import (AUTO, FIT, HELD_OUT, MIB, OUTSIDE, SINGLE, TIERS, Point, apply_corrections,
                                    error_summary, fit_tiers, median_abs, regime_summary, simulate_test)
from artist.calibration.nccl_tests import NcclLog, parse_nccl_tests
from artist.calibration.profile import CalibrationProfile
from artist.calibration.regimes import KINK_RATIO, MIN_REGIME_SIZES, find_kinks
from artist.errors import InputError
from artist.topology import Topology

# Which fitted tier an unfitted tier borrows from, nearest first: the rack and network tiers
# both cross NICs, so they share corrections before falling back to NVLink's.
FALLBACK = {"machine": ("rack", "network"), "rack": ("network", "machine"), "network": ("rack", "machine")}


@dataclass
class LogPoints:
    log: NcclLog
    points: list[Point] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # tests not used, with the reason
    kinks: dict = field(default_factory=dict)  # test line -> regimes.Kink list over the simulated sizes


def collect_points(model, topology: Topology, paths: Sequence[str | Path],
                   layout: Sequence[int] | None = None, min_bytes: int = 1,
                   max_bytes: int | None = None, fit_from: int | None = None, regimes: str = AUTO,
                   allow_wrong: bool = False) -> list[LogPoints]:
    """allow_wrong: use rows whose '#wrong' is > 0 (each reported as an issue of kind 'wrong')
    instead of refusing the log (nccl_tests.check_test)."""
    out = []
    for path in paths:
        log = parse_nccl_tests(path, allow_wrong=allow_wrong)
        lp = LogPoints(log)
        for test in log.tests:
            if test.collective != "all_reduce":
                lp.skipped.append(f"line {test.first_line}: {test.collective or 'unnamed'} test "
                                  f"(only all_reduce is simulated)")
                continue
            points = simulate_test(model, topology, log, test, layout, min_bytes, max_bytes, fit_from, regimes)
            inside = [p for p in points if p.role != OUTSIDE]
            lp.kinks[test.first_line] = find_kinks([p.size_bytes for p in inside], [p.measured_s for p in inside],
                                                   [p.line for p in inside])
            lp.points.extend(points)
        if not lp.points:
            raise InputError(log.source, None, "no all_reduce rows to calibrate against "
                                               f"(tests: {', '.join(t.collective or 'unnamed' for t in log.tests)})")
        out.append(lp)
    return out


def fit_profile(name: str, topology: Topology, backend_identity: dict, logs: Sequence[LogPoints],
                min_bytes: int = MIB, notes: Sequence[str] = (), fit_from: int | None = None,
                regimes: str = AUTO, command: str | None = None) -> tuple[CalibrationProfile, list[Point]]:
    points = [p for lp in logs for p in lp.points]
    corrections = fit_tiers(points)
    if not corrections:
        raise ValueError("no fit points")
    points = apply_corrections(points, corrections)
    inherited = {}
    tier_stats: dict[str, dict] = {}
    for tier in TIERS:
        mine = [p for p in points if p.tier == tier]
        if tier in corrections:
            held = [p for p in mine if p.role == HELD_OUT and p.size_bytes >= min_bytes]
            tier_stats[tier] = {
                "fitted_on": sorted({p.log for p in mine}),
                "fit_points": sum(p.role == FIT for p in mine),
                "held_out_points": len(held),
                "fit_median_abs_error": _round(median_abs(p.error_after for p in mine if p.role == FIT)),
                "held_out_median_abs_error": _round(median_abs(p.error_after for p in held)),
                "regimes": [_regime_stats(corrections[tier], k, mine, min_bytes)
                            for k in range(len(corrections[tier].regimes))],
            }
        else:
            source = next(t for t in FALLBACK[tier] if t in corrections)
            inherited[tier] = source
            tier_stats[tier] = {"note": f"no log spans the {tier} tier; reuses the {source} tier's correction"}
    log_entries, log_errors = [], {}
    for lp in logs:
        fname = Path(lp.log.source).name
        tests = sorted({(p.test_line, p.shape, p.tier, p.ranks) for p in lp.points})
        log_entries.append({"file": fname, "path": lp.log.source, "sha256": lp.log.sha256,
                            "all_reduce_tests": [_test_entry(lp, line, s, t, r) for line, s, t, r in tests]})
        mine = [p for p in points if p.log == fname]
        log_errors[fname] = {k: _round(v) for k, v in error_summary(mine, min_bytes).items()}
        by_tier = [regime_summary([p for p in mine if p.tier == t], corrections[t], min_bytes)
                   for t in TIERS if t in corrections and any(p.tier == t for p in mine)]
        log_errors[fname]["regimes"] = [{k: _round(v) for k, v in r.items()} for rs in by_tier for r in rs]
    profile = CalibrationProfile(
        name=name, topology_name=topology.name, link_parameters=topology.link_parameters(), backend=backend_identity,
        corrections=corrections, inherited=inherited, topology_path=topology.path, logs=tuple(log_entries),
        fit={"tiers": tier_stats, "logs": log_errors},
        notes=(f"errors are median |relative time error|; held-out = sizes >= {min_bytes} B inside the fitted range "
               f"that the fit did not use (sizes alternate between fit and held-out in each log's fitted range)",
               _range_note(fit_from, regimes), *(() if command is None else (f"fitted with: {command}",)), *notes))
    return profile, points


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
        return f"fitted range per log: {where}; one correction per tier over the whole range"
    return (f"fitted range per log: {where}, split into NCCL size regimes with one correction each: a regime boundary "
            f"is where the measured incremental bandwidth dS/dt changes by more than {KINK_RATIO}x or the time stops "
            f"growing; stretches of fewer than {MIN_REGIME_SIZES} sizes join the neighbouring regime whose affine line "
            f"is nearer their times (artist.calibration.regimes); decided on measured times before the fit/held-out "
            f"split; sizes alternate between fit and held-out inside each regime. A size uses the regime containing "
            f"it; sizes below the first regime use the first, sizes beyond the last measured size the last")


def _test_entry(lp: LogPoints, line: int, shape: str, tier: str, ranks: int) -> dict:
    mine = [p for p in lp.points if p.test_line == line]
    fitted = [p.size_bytes for p in mine if p.role != OUTSIDE]
    entry = {"line": line, "shape": shape, "tier": tier, "ranks": ranks,
             "simulated_sizes_bytes": [min(p.size_bytes for p in mine), max(p.size_bytes for p in mine)],
             "fitted_range_bytes": [min(fitted), max(fitted)] if fitted else None}
    starts = sorted({p.regime_from for p in mine if p.role != OUTSIDE})
    if starts:
        entry["regime_starts_bytes"] = starts
    kinks = lp.kinks.get(line, [])
    if kinks:
        entry["regime_changes"] = [{"size_bytes": k.size_bytes, "line": k.line, "reason": k.reason} for k in kinks]
    return entry


def check_points(profile: CalibrationProfile, logs: Sequence[LogPoints]) -> list[Point]:
    """Apply an existing profile to new logs: no point is fitted, all are held out."""
    points = [replace(p, role=HELD_OUT if p.role != OUTSIDE else OUTSIDE) for lp in logs for p in lp.points]
    return apply_corrections(points, {t: profile.correction(t) for t in TIERS})


def _round(x):
    """Six significant digits keep the YAML readable; counts stay integers."""
    return float(f"{x:.6g}") if isinstance(x, float) else x
