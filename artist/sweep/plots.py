"""The figures of a sweep (matplotlib, PNG + PDF) from OUT/results.parquet and the per-run job tables.

    makespan           makespan vs racks, one line per policy
    jct                mean and p99 job completion time vs racks
    comm_latency       mean exposed communication time per iteration vs racks
    queueing_delay     mean and p99 queueing delay (arrival to first start) vs racks
    jct_cdf            JCT CDF per rack count, one line per policy
    contention         (simulator.contention: shared only) mean per-job contention slowdown and the
                       spine's peak utilisation vs racks
    network            does the network matter here: exposed communication as a share of the time jobs
                       held GPUs, jobs placed across racks, and (where the sweep's backend axis has
                       `none` beside a network backend) mean JCT over the same run without network

Lines are means over seeds; with several seeds a band shows their min and max.
When axes other than racks, policy and seed take several values (workload,
topology, backend, algorithm, channels, calibration), every combination gets
its own column of panels; panels of one metric share their y scale, so
columns compare at a glance. Figures are drawn with the object-oriented API (no
pyplot state), and PDFs carry no creation date, so a re-plot of the same
table gives the same files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from artist.sweep.store import ResultStore, read_results

FACET_AXES = ("topology", "workload", "backend", "algorithm", "channels", "calibration")
HOUR = 3600.0
_PDF_META = {"CreationDate": None, "Producer": None, "Creator": None}
_PNG_META = {"Software": None}


def facets(table: pd.DataFrame) -> list[tuple[tuple, str]]:
    """(key over the varying facet axes, title) in table order."""
    varying = [a for a in FACET_AXES if table[a].nunique(dropna=False) > 1]
    if not varying:
        return [((), "")]
    out, seen = [], set()
    for row in table[varying].itertuples(index=False):
        key = tuple(row)
        if key not in seen:
            seen.add(key)
            out.append((key, ", ".join(f"{a}={v}" if a != "workload" else str(v)
                                       for a, v in zip(varying, key) if v != "")))
    return out


def _facet_rows(table: pd.DataFrame, key: tuple) -> pd.DataFrame:
    varying = [a for a in FACET_AXES if table[a].nunique(dropna=False) > 1]
    mask = np.ones(len(table), dtype=bool)
    for a, v in zip(varying, key):
        mask &= (table[a] == v).to_numpy()
    return table[mask]


def series(table: pd.DataFrame, metric: str) -> dict[str, pd.DataFrame]:
    """Per policy (in table order): racks, mean / min / max of the metric over seeds, and the seed count."""
    out = {}
    for policy in pd.unique(table["policy"]):
        rows = table[table["policy"] == policy]
        g = rows.groupby("racks", sort=True)[metric]
        out[policy] = pd.DataFrame({"racks": g.mean().index.to_numpy(), "mean": g.mean().to_numpy(),
                                    "min": g.min().to_numpy(), "max": g.max().to_numpy(),
                                    "seeds": g.count().to_numpy()})
    return out


_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
_LINESTYLES = ("-", "--", ":", "-.")


def _styles(table: pd.DataFrame) -> dict[str, dict]:
    """Colour, marker and dash per policy: policies that coincide stay distinguishable."""
    return {p: {"color": f"C{i % 10}", "marker": _MARKERS[i % len(_MARKERS)],
                "linestyle": _LINESTYLES[i % len(_LINESTYLES)]}
            for i, p in enumerate(pd.unique(table["policy"]))}


def _racks_axis(ax, racks) -> None:
    racks = sorted(set(int(r) for r in racks))
    if len(racks) > 1 and racks[0] > 0 and racks[-1] / racks[0] >= 4:
        ax.set_xscale("log", base=2)
    ax.set_xticks(racks)
    ax.set_xticklabels([str(r) for r in racks])
    ax.minorticks_off()
    ax.set_xlabel("racks")


def _save(fig: Figure, out_dir: Path, name: str) -> list[Path]:
    paths = []
    for ext, meta in (("png", _PNG_META), ("pdf", _PDF_META)):
        path = out_dir / f"{name}.{ext}"
        tmp = path.with_name(f".{name}.tmp.{ext}")
        fig.savefig(tmp, dpi=120, metadata=meta)
        tmp.replace(path)
        paths.append(path)
    return paths


def _grid(rows: int, cols: int, title: str, sharey: bool | str = False) -> tuple[Figure, np.ndarray]:
    fig = Figure(figsize=(4.2 * cols + 0.6, 3.2 * rows + 0.8), layout="constrained")
    axes = np.atleast_2d(fig.subplots(rows, cols, squeeze=False, sharey=sharey))
    fig.suptitle(title)
    return fig, axes


def _line_panel(ax, rows: pd.DataFrame, metric: str, scale: float, styles: dict, ylabel: str) -> None:
    for policy, s in series(rows, metric).items():
        x, y = s["racks"].to_numpy(), s["mean"].to_numpy() / scale
        ax.plot(x, y, label=policy, markerfacecolor="none", **styles[policy])
        if (s["seeds"] > 1).any():
            ax.fill_between(x, s["min"] / scale, s["max"] / scale, color=styles[policy]["color"], alpha=0.15,
                            linewidth=0)
    _racks_axis(ax, rows["racks"])
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)


def metric_figure(table: pd.DataFrame, panels: list[tuple[str, float, str]], title: str) -> Figure:
    """One row per metric, one column per facet (workload, backend, ... combination)."""
    fs = facets(table)
    styles = _styles(table)
    fig, axes = _grid(len(panels), len(fs), title, sharey="row")  # one scale per metric across facets
    for col, (key, facet_title) in enumerate(fs):
        rows = _facet_rows(table, key)
        for row, (metric, scale, ylabel) in enumerate(panels):
            ax = axes[row, col]
            _line_panel(ax, rows, metric, scale, styles, ylabel)
            if facet_title and row == 0:
                ax.set_title(facet_title, fontsize=9)
    axes[0, 0].legend(fontsize=8, loc="best")
    return fig


def jct_cdf_figure(table: pd.DataFrame, store: ResultStore) -> Figure:
    fs = facets(table)
    racks = sorted(int(r) for r in pd.unique(table["racks"]))
    styles = _styles(table)
    fig, axes = _grid(len(fs), len(racks), "JCT CDF per rack count (all jobs of all seeds)")
    lo, hi = np.inf, 0.0
    for r_i, (key, facet_title) in enumerate(fs):
        rows = _facet_rows(table, key)
        for c_i, r in enumerate(racks):
            ax = axes[r_i, c_i]
            for policy in pd.unique(rows["policy"]):
                ids = rows[(rows["racks"] == r) & (rows["policy"] == policy)]["run_id"]
                jct = (np.concatenate([store.load_jobs(i)["jct_s"].dropna().to_numpy() for i in ids])
                       if len(ids) else np.array([]))
                if not len(jct):
                    continue
                x = np.sort(jct) / HOUR
                lo, hi = min(lo, x[0]), max(hi, x[-1])
                st = styles[policy]
                ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", color=st["color"],
                        linestyle=st["linestyle"], label=policy)
            ax.set_xscale("log")
            ax.set_ylim(0, 1.02)
            ax.set_xlabel("JCT (hours, log scale)")
            ax.set_ylabel("fraction of jobs")
            ax.grid(True, alpha=0.3)
            ax.set_title(f"{r} rack{'s' if r != 1 else ''}" + (f"\n{facet_title}" if facet_title else ""), fontsize=9)
    if hi > 0:  # one JCT scale for every panel, so rack counts compare at a glance
        for ax in axes.flat:
            ax.set_xlim(lo / 1.2, hi * 1.2)
    axes[0, 0].legend(fontsize=8, loc="upper left")
    return fig


PAIRING = ("topology", "racks", "policy", "workload", "seed")  # a network run and its run without network


def network_columns(table: pd.DataFrame, store: ResultStore) -> pd.DataFrame:
    """The table with what says whether the network matters, per run (NaN where a run's jobs do not tell):
    comm_share_pct: exposed communication of finished jobs / their time holding GPUs (restores included);
    across_racks_pct: finished jobs that ever held GPUs in more than one rack (placement_history);
    jct_vs_no_network: mean JCT / the mean JCT of the same run (PAIRING) on the `none` backend."""
    share, across = [], []
    for run_id in table["run_id"]:
        jobs = store.load_jobs(run_id)
        done = jobs.dropna(subset=["jct_s"]) if "jct_s" in jobs else jobs.iloc[:0]
        comm = done.get("comm_seconds_per_iteration")
        held = done.get("running_seconds")
        if comm is None or held is None or comm.isna().all() or not held.sum() > 0:
            share.append(np.nan)
        else:
            share.append(100.0 * float((comm * done["iterations"]).sum()) / float(held.sum()))
        history = done.get("placement_history")
        across.append(np.nan if history is None or not len(done)
                      else 100.0 * float(history.astype(str).str.contains(":network:", regex=False).mean()))
    out = table.assign(comm_share_pct=share, across_racks_pct=across)
    out["jct_vs_no_network"] = np.nan
    if "none" in set(table["backend"]) and len(set(table["backend"])) > 1:
        none = table[table["backend"] == "none"].groupby(list(PAIRING))["jct_mean_s"].mean()
        keys = pd.MultiIndex.from_frame(table[list(PAIRING)])
        base = none.reindex(keys).to_numpy()
        ratio = table["jct_mean_s"].to_numpy() / base
        out["jct_vs_no_network"] = np.where(table["backend"].to_numpy() != "none", ratio, np.nan)
    return out


def network_figure(table: pd.DataFrame, store: ResultStore) -> Figure | None:
    """The `network` figure (module docstring); None when no run's jobs tell (no such columns)."""
    table = network_columns(table, store)
    panels = [("comm_share_pct", 1.0, "exposed comm / GPU time held (%)"),
              ("across_racks_pct", 1.0, "jobs placed across racks (%)")]
    panels = [panel for panel in panels if table[panel[0]].notna().any()]
    with_network = table[table["backend"] != "none"]
    if with_network["jct_vs_no_network"].notna().any():
        panels.append(("jct_vs_no_network", 1.0, "mean JCT / same run without network"))
    if not panels or with_network.empty:
        return None
    return metric_figure(with_network, panels, "Does the network matter here? (vs racks)")


def plot_sweep(out_dir: str | Path) -> list[Path]:
    """Draw every figure into OUT/plots/; returns the files written."""
    out = Path(out_dir)
    table = read_results(out)  # (checked: the axes, a run, numbers)
    plots = out / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    store = ResultStore(out)
    metric_figures = {
        "makespan": ([("makespan_s", HOUR, "makespan (hours)")], "Makespan vs racks"),
        "jct": ([("jct_mean_s", HOUR, "mean JCT (hours)"), ("jct_p99_s", HOUR, "p99 JCT (hours)")],
                "Job completion time vs racks"),
        "comm_latency": ([("comm_latency_mean_s", 1e-3, "exposed comm per iteration (ms)")],
                         "Mean communication latency per iteration vs racks"),
        "queueing_delay": ([("queueing_mean_s", HOUR, "mean queueing delay (hours)"),
                            ("queueing_p99_s", HOUR, "p99 queueing delay (hours)")],
                           "Queueing delay (arrival to first start) vs racks"),
        # sweeps with simulator.contention: shared
        "contention": ([("contention_slowdown_mean", 1.0, "mean contention slowdown (shared / alone)"),
                        ("spine_utilisation_peak", 0.01, "peak spine link utilisation (%)")],
                       "Cross-job contention vs racks"),
    }
    figures = {}
    for name, (panels, title) in metric_figures.items():
        # a loop that does not record a metric (Crius' has no per-iteration communication) has no panel of it
        panels = [panel for panel in panels if panel[0] in table.columns]
        if panels:
            figures[name] = metric_figure(table, panels, title)
    network = network_figure(table, store)
    if network is not None:
        figures["network"] = network
    figures["jct_cdf"] = jct_cdf_figure(table, store)
    written = []
    for name, fig in figures.items():
        written += _save(fig, plots, name)
    return written
