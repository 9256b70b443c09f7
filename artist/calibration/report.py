"""Text tables, busbw plots and the markdown calibration report of measured vs simulated collective times."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from artist.calibration.fit import HELD_OUT, MIB, OUTSIDE, Point, error_summary, median_abs
from artist.calibration.correction import KIND_NCCL_TEST, KINDS
from artist.calibration.nccl_tests import BUS_FACTORS


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100.0 * x:+.1f}%"


def _abs_pct(x: float | None) -> str:
    return "-" if x is None else f"{100.0 * x:.1f}%"


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def points_table(points: Sequence[Point]) -> str:
    """Per log, per size: measured, simulated before and after calibration, relative errors."""
    header = (f"{'log':<40} {'collective':<14} {'size':>9} {'set':<8} {'measured us':>12} {'before us':>12} "
              f"{'err':>8} {'after us':>12} {'err':>8}")
    lines = [header, "-" * len(header)]
    for p in points:
        after = "-" if p.corrected_s is None else f"{p.corrected_s * 1e6:12.1f}"
        lines.append(f"{p.log[:40]:<40} {p.kind:<14} {_size(p.size_bytes):>9} {p.role:<8} {p.measured_s * 1e6:12.1f} "
                     f"{p.simulated_s * 1e6:12.1f} {_pct(p.error_before):>8} {after:>12} {_pct(p.error_after):>8}")
    return "\n".join(lines)


def logs_of(points: Sequence[Point]) -> list[str]:
    seen: dict[str, None] = {}
    for p in points:
        seen.setdefault(p.log, None)
    return list(seen)


def series_of(points: Sequence[Point]) -> list[tuple[str, str]]:
    """(log, kind) pairs in log order, kinds in correction.KINDS order."""
    have = {(p.log, p.kind) for p in points}
    return [(log, kind) for log in logs_of(points) for kind in KINDS if (log, kind) in have]


def summary_rows(points: Sequence[Point], min_bytes: int = MIB) -> list[dict]:
    rows = []
    for log, kind in series_of(points):
        mine = [p for p in points if p.log == log and p.kind == kind]
        s = error_summary(mine, min_bytes)
        rows.append({"log": log, "collective": kind, "tier": mine[0].tier, "shape": mine[0].shape, **s})
    return rows


def summary_table(points: Sequence[Point], min_bytes: int = MIB) -> str:
    """Per log: median |relative error| before and after, on held-out sizes >= min_bytes and on all sizes."""
    header = (f"{'log':<40} {'collective':<14} {'tier':<8} {'shape':<10} {'fitted range':<19} {'held-out':>8} "
              f"{'before':>8} {'after':>8} {'all':>5} {'before':>8} {'after':>8} {'outside':>7} {'after':>8}")
    lines = [f"median |relative error| (held-out: sizes >= {_size(min_bytes)} in the fitted range, not used by the "
             f"fit; outside: simulated sizes below the fitted range)", header, "-" * len(header)]
    for r in summary_rows(points, min_bytes):
        fitted = r["fit_range_bytes"]
        rng = "-" if fitted is None else f"{_size(fitted[0])}-{_size(fitted[1])}"
        lines.append(f"{r['log'][:40]:<40} {r['collective']:<14} {r['tier']:<8} {r['shape']:<10} {rng:<19} "
                     f"{r['held_out_points']:>8} "
                     f"{_abs_pct(r['held_out_median_error_before']):>8} "
                     f"{_abs_pct(r['held_out_median_error_after']):>8} "
                     f"{r['points']:>5} {_abs_pct(r['all_median_error_before']):>8} "
                     f"{_abs_pct(r['all_median_error_after']):>8} "
                     f"{r['outside_points']:>7} {_abs_pct(r['outside_median_error_after']):>8}")
        lines.extend(_regime_lines([p for p in points if p.log == r["log"] and p.kind == r["collective"]],
                                   min_bytes))
    return "\n".join(lines)


def _regime_lines(points: Sequence[Point], min_bytes: int) -> list[str]:
    """One line per NCCL size regime of the log's points (as split for the fit), when there are several."""
    starts = sorted({p.regime_from for p in points if p.role != OUTSIDE})
    if len(starts) < 2:
        return []
    out = []
    for start in starts:
        mine = [p for p in points if p.role != OUTSIDE and p.regime_from == start]
        held = [p for p in mine if p.role == HELD_OUT and p.size_bytes >= min_bytes]
        rng = f"{_size(min(p.size_bytes for p in mine))}-{_size(max(p.size_bytes for p in mine))}"
        out.append(f"{'  regime':<40} {'':<14} {'':<8} {'':<10} {rng:<19} {len(held):>8} "
                   f"{_abs_pct(median_abs(p.error_before for p in held)):>8} "
                   f"{_abs_pct(median_abs(p.error_after for p in held)):>8}")
    return out


def busbw_gbs(point: Point, seconds: float) -> float:
    """nccl-tests' bus bandwidth of the point's collective at these seconds (sendrecv: factor 1)."""
    factor = BUS_FACTORS.get(KIND_NCCL_TEST[point.kind], lambda n: 1.0)(point.ranks)
    return factor * point.size_bytes / seconds / 1e9


def _plot_series(ax, mine: Sequence[Point]) -> None:
    sizes = [p.size_bytes for p in mine]
    ax.plot(sizes, [busbw_gbs(p, p.measured_s) for p in mine], "ko-", label="measured (nccl-tests)")
    ax.plot(sizes, [busbw_gbs(p, p.simulated_s) for p in mine], "s--", color="tab:red",
            label="simulated, uncalibrated")
    if all(p.corrected_s is not None for p in mine):
        ax.plot(sizes, [busbw_gbs(p, p.corrected_s) for p in mine], "^-", color="tab:blue",
                label="simulated, calibrated")
    held = [p for p in mine if p.role == HELD_OUT]
    ax.plot([p.size_bytes for p in held], [busbw_gbs(p, p.measured_s) for p in held], "o", mfc="none",
            mec="tab:green", ms=10, label="held out of the fit")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("size (bytes)")
    ax.set_ylabel(f"{mine[0].kind} busbw (GB/s)")
    ax.set_title(f"{mine[0].log} {mine[0].kind} ({mine[0].shape}, {mine[0].tier} tier)", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)


def _save(fig, path: str | Path) -> Path:
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Fixed metadata so that the same inputs write byte-identical files.
    fig.savefig(path, metadata={"Software": None} if path.suffix == ".png" else None)
    plt.close(fig)
    return path


def plot_busbw(points: Sequence[Point], path: str | Path) -> Path:
    """One panel per (log, collective): measured busbw and the backend's before / after calibration."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = series_of(points)
    fig, axes = plt.subplots(len(series), 1, figsize=(7, 3.2 * len(series)), squeeze=False)
    for ax, (log, kind) in zip(axes[:, 0], series):
        _plot_series(ax, sorted((p for p in points if p.log == log and p.kind == kind), key=lambda p: p.size_bytes))
    fig.tight_layout()
    return _save(fig, path)


def write_report(points: Sequence[Point], directory: str | Path, profile=None, min_bytes: int = MIB) -> Path:
    """A self-contained calibration report: DIR/report.md (per log and collective, the median and
    largest |error| uncalibrated vs calibrated, per size the measured and simulated times and
    busbw) and one busbw-vs-size PNG per log and collective, for a paper's appendix."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from artist.calibration.build import error_rows

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    lines = ["# Calibration report", ""]
    if profile is not None:
        lines += [f"Profile `{profile.name}` (id `{profile.id}`), topology `{profile.topology_name}`, backend "
                  f"`{profile.backend.get('backend')}` ({profile.backend.get('algorithm', 'ring')}, "
                  f"{profile.backend.get('channels', 1)} channels).", "",
                  f"Correction: {_md(profile.to_mapping()['correction'])}", ""]
        for w in profile.warnings:
            lines += [f"**Warning:** {_md(w)}", ""]
        lacks = profile.uncalibrated()
        if lacks:
            lines += ["Uncalibrated (no log spans the tier): " + ", ".join(f"{t} {k}" for t, k in lacks) + ".", ""]
    lines += [f"## Median and largest |relative time error|, sizes >= {_size(min_bytes)}", "",
              "Roles: `fit` logs were fitted (their errors mix fitted and held-out sizes), `holdout` logs were not "
              "used by the fit at all.", "",
              "| log | collective | tier | shape | sizes | uncalibrated median | calibrated median | calibrated max |",
              "|---|---|---|---|---|---|---|---|"]
    for r in error_rows(points, min_bytes):
        lines.append(f"| {r['log']} | {r['collective']} | {r['tier']} | `{r['shape']}` | {r['sizes']} | "
                     f"{_num(r['median_err_uncalibrated_pct'])} % | {_num(r['median_err_calibrated_pct'])} % | "
                     f"{_num(r['max_err_calibrated_pct'])} % |")
    lines.append("")
    for log, kind in series_of(points):
        mine = sorted((p for p in points if p.log == log and p.kind == kind), key=lambda p: p.size_bytes)
        fig, ax = plt.subplots(figsize=(7, 3.4))
        _plot_series(ax, mine)
        fig.tight_layout()
        png = _save(fig, directory / f"{Path(log).stem}-{kind}.png")
        lines += [f"## {log}: {kind} ({mine[0].shape}, {mine[0].tier} tier)", "", f"![busbw]({png.name})", "",
                  "| size | set | measured us | uncalibrated us | error | calibrated us | error | busbw GB/s |",
                  "|---|---|---|---|---|---|---|---|"]
        for p in mine:
            after = "-" if p.corrected_s is None else f"{p.corrected_s * 1e6:.1f}"
            lines.append(f"| {_size(p.size_bytes)} | {p.role} | {p.measured_s * 1e6:.1f} | {p.simulated_s * 1e6:.1f} "
                         f"| {_pct(p.error_before)} | {after} | {_pct(p.error_after)} | "
                         f"{busbw_gbs(p, p.measured_s):.2f} |")
        lines.append("")
    path = directory / "report.md"
    path.write_text("\n".join(lines))
    return path


def _num(x) -> str:
    return "-" if x is None else f"{x:.2f}"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("*", "\\*")
