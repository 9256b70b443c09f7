"""Text tables and busbw plots of measured vs simulated all-reduce times."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from artist.calibration.fit import HELD_OUT, MIB, OUTSIDE, Point, error_summary, median_abs
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
    header = (f"{'log':<40} {'size':>9} {'set':<8} {'measured us':>12} {'before us':>12} {'err':>8} {'after us':>12} "
              f"{'err':>8}")
    lines = [header, "-" * len(header)]
    for p in points:
        after = "-" if p.corrected_s is None else f"{p.corrected_s * 1e6:12.1f}"
        lines.append(f"{p.log[:40]:<40} {_size(p.size_bytes):>9} {p.role:<8} {p.measured_s * 1e6:12.1f} "
                     f"{p.simulated_s * 1e6:12.1f} {_pct(p.error_before):>8} {after:>12} {_pct(p.error_after):>8}")
    return "\n".join(lines)


def logs_of(points: Sequence[Point]) -> list[str]:
    seen: dict[str, None] = {}
    for p in points:
        seen.setdefault(p.log, None)
    return list(seen)


def summary_rows(points: Sequence[Point], min_bytes: int = MIB) -> list[dict]:
    rows = []
    for log in logs_of(points):
        mine = [p for p in points if p.log == log]
        s = error_summary(mine, min_bytes)
        rows.append({"log": log, "tier": mine[0].tier, "shape": mine[0].shape, **s})
    return rows


def summary_table(points: Sequence[Point], min_bytes: int = MIB) -> str:
    """Per log: median |relative error| before and after, on held-out sizes >= min_bytes and on all sizes."""
    header = (f"{'log':<40} {'tier':<8} {'shape':<10} {'fitted range':<19} {'held-out':>8} {'before':>8} {'after':>8} "
              f"{'all':>5} {'before':>8} {'after':>8} {'outside':>7} {'after':>8}")
    lines = [f"median |relative error| (held-out: sizes >= {_size(min_bytes)} in the fitted range, not used by the "
             f"fit; outside: simulated sizes below the fitted range)", header, "-" * len(header)]
    for r in summary_rows(points, min_bytes):
        fitted = r["fit_range_bytes"]
        rng = "-" if fitted is None else f"{_size(fitted[0])}-{_size(fitted[1])}"
        lines.append(f"{r['log'][:40]:<40} {r['tier']:<8} {r['shape']:<10} {rng:<19} {r['held_out_points']:>8} "
                     f"{_abs_pct(r['held_out_median_error_before']):>8} "
                     f"{_abs_pct(r['held_out_median_error_after']):>8} "
                     f"{r['points']:>5} {_abs_pct(r['all_median_error_before']):>8} "
                     f"{_abs_pct(r['all_median_error_after']):>8} "
                     f"{r['outside_points']:>7} {_abs_pct(r['outside_median_error_after']):>8}")
        lines.extend(_regime_lines([p for p in points if p.log == r["log"]], min_bytes))
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
        out.append(f"{'  regime':<40} {'':<8} {'':<10} {rng:<19} {len(held):>8} "
                   f"{_abs_pct(median_abs(p.error_before for p in held)):>8} "
                   f"{_abs_pct(median_abs(p.error_after for p in held)):>8}")
    return out


def busbw_gbs(point: Point, seconds: float) -> float:
    return BUS_FACTORS["all_reduce"](point.ranks) * point.size_bytes / seconds / 1e9


def plot_busbw(points: Sequence[Point], path: str | Path) -> Path:
    """One panel per log: measured busbw and the backend's before / after calibration, against size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    logs = logs_of(points)
    fig, axes = plt.subplots(len(logs), 1, figsize=(7, 3.2 * len(logs)), squeeze=False)
    for ax, log in zip(axes[:, 0], logs):
        mine = sorted((p for p in points if p.log == log), key=lambda p: p.size_bytes)
        sizes = [p.size_bytes for p in mine]
        ax.plot(sizes, [busbw_gbs(p, p.measured_s) for p in mine], "ko-", label="measured (nccl-tests)")
        ax.plot(sizes, [busbw_gbs(p, p.simulated_s) for p in mine], "s--", color="tab:red",
                label="simulated, uncalibrated")
        if all(p.corrected_s is not None for p in mine):
            ax.plot(sizes, [busbw_gbs(p, p.corrected_s) for p in mine], "^-", color="tab:blue",
                    label="simulated, calibrated")
        held = [p for p in mine if p.role == "held-out"]
        ax.plot([p.size_bytes for p in held], [busbw_gbs(p, p.measured_s) for p in held], "o", mfc="none",
                mec="tab:green", ms=10, label="held out of the fit")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("size (bytes)")
        ax.set_ylabel("all_reduce busbw (GB/s)")
        ax.set_title(f"{log} ({mine[0].shape}, {mine[0].tier} tier)", fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Fixed metadata so that the same inputs write byte-identical files.
    fig.savefig(path, metadata={"Software": None} if path.suffix == ".png" else None)
    plt.close(fig)
    return path
