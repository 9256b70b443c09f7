"""A report as blocks (headings, text, tables, images), written as markdown and as one HTML file with
the figures embedded (self-contained: it can be mailed or attached to a paper's artifact)."""

from __future__ import annotations

import base64
import html
import math
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from artist.report.evaluate import (GENERIC_METRICS, Sweep, Verdict, figure_mean, generic_means, judged_values,
                                    network_configs, primary_config, verdicts)
from artist.report.figures import claim_figure
from artist.report.provenance import calibration_lines, stamp_line


@dataclass(frozen=True)
class Heading:
    level: int
    text: str


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Table:
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Image:
    path: Path  # relative to the report directory
    caption: str


def number(value: float | None) -> str:
    """Four significant digits; tests read the tables back with the same precision."""
    return "-" if value is None or pd.isna(value) else f"{value:.4g}"


def fixed(value: float | None, digits: int = 4) -> str:
    """`digits` significant digits in fixed notation (no exponent), the same for every cell of a table."""
    if value is None or pd.isna(value):
        return "-"
    value = float(f"{value:.{digits}g}")  # rounded first: 0.99996 is 1.000, not 0.9999 or 1.0000
    if value == 0:
        return "0"
    decimals = min(9, max(0, digits - 1 - int(math.floor(math.log10(abs(value))))))
    return f"{value:.{decimals}f}"


def paper_figure(value: tuple[float, ...] | None) -> str:
    """A paper's figure: one number, or a range low-high."""
    return "-" if not value else " - ".join(number(v) for v in value)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "sweep"


def _unit(claim) -> str:
    if claim.normalise_to:
        return f" [x {claim.normalise_to}]"
    return f" [{claim.unit}]" if claim.unit else ""


def _at_label(claim, at) -> str:
    return "" if at is None else f" @ {claim.per or claim.over}={at}"


def _paper_section(sweeps: list[Sweep], out: Path) -> list:
    spec = sweeps[0].spec
    table = pd.concat([s.table for s in sweeps], ignore_index=True)
    configs = network_configs(table, {s.name: s.spec.stand_ins for s in sweeps})
    primary, matched = primary_config(configs, spec.primary)
    judged = verdicts(table, spec, configs)
    blocks: list = [Heading(2, spec.paper),
                    Text(f"Results: {', '.join(str(s.directory) for s in sweeps)} ({len(table)} runs). "
                         f"The paper's figures: {spec.source}. Primary network: {primary.label}"
                         + ("." if matched else f" (the spec's primary {spec.primary} is not among these results)."))]
    blocks += [Text(f"{s.name}: " + stamp_line(s.directory, s.table["run_id"])) for s in sweeps]
    blocks.append(Heading(3, "Claims, per network configuration"))
    blocks.append(Table(("claim",) + tuple(c.label for c in configs),
                        tuple((f"{c.text} [{c.id}]",) + tuple(v.status for v in judged if v.claim is c)
                              for c in spec.claims)))
    for claim in spec.claims:
        if not claim.paper:
            continue
        v = next(v for v in judged if v.claim is claim and v.config == primary)
        ats = v.at_values or (None,)
        unit = _unit(claim)
        blocks.append(Heading(3, f"Headline: {claim.text}"))
        blocks.append(Text(f"Paper: {claim.paper_source}. ArtISt: mean of `{claim.metric}` over seeds"
                           + (f" x {claim.scale:g}" if claim.scale != 1 else "")
                           + (f", relative to {claim.normalise_to}" if claim.normalise_to else "")
                           + f", network {primary.label}."))
        blocks.append(Table(("policy", f"paper{unit}") + tuple(f"ArtISt{unit}{_at_label(claim, a)}" for a in ats),
                            tuple((p, paper_figure(claim.paper.get(p)))
                                  + tuple(number(v.means.get((p, a))) for a in ats) for p in claim.policies)))
    if spec.figures:
        blocks.append(Heading(3, "The paper's other figures"))
        blocks.append(Text(f"Means over seeds, network {primary.label}; shown beside the paper's, not judged."))
        blocks.append(Table(("figure", "policy", "metric", "paper", "ArtISt", "paper's source"),
                            tuple((fig.text, fig.policy, f"`{fig.metric}`" + (f" [{fig.unit}]" if fig.unit else ""),
                                   paper_figure(fig.paper), number(figure_mean(table, fig, spec.where, primary)),
                                   fig.paper_source) for fig in spec.figures)))
    blocks += _means_tables(table, "All policies (means over seeds)", configs)
    blocks.append(Heading(3, "Network ablation"))
    run_ids: dict[str, set[str]] = {}
    for s in sweeps:
        for label, ids in s.calibration_ids.items():
            run_ids.setdefault(label, set()).update(ids)
    blocks += [Text(line) for line in calibration_lines(table, run_ids)]
    for claim in spec.claims:
        mine = [v for v in judged if v.claim is claim]
        ats = judged_values(mine)
        unit = _unit(claim)
        blocks.append(Heading(4, f"{claim.id}: `{claim.metric}`{unit}"))
        blocks.append(Table(("network",) + tuple(f"{p}{_at_label(claim, a)}" for a in ats for p in claim.policies)
                            + ("verdict",),
                            tuple((v.config.label,) + tuple(number(v.means.get((p, a))) for a in ats
                                                            for p in claim.policies)
                                  + (v.status + (f" ({v.detail})" if v.detail else ""),) for v in mine)))
        figure = Path("figures") / f"{_slug(spec.paper)}-{_slug(claim.id)}.png"
        claim_figure(mine, out / figure)
        blocks.append(Image(figure, claim.text))
    return blocks


HOUR = 3600.0
# what the network changed, per run (artist/sweep/plots.py network_columns: the same figures as the plot)
NETWORK_METRICS = (("comm_share_pct", "exposed communication / GPU time held (%)"),
                   ("across_racks_pct", "finished jobs ever placed across racks (%)"),
                   ("jct_vs_no_network", "mean JCT / the same run without network"))


def _means_tables(table: pd.DataFrame, title: str, configs=None) -> list:
    """Every policy's mean JCT and makespan per network configuration (all policies, not only a claim's), in
    hours, four significant digits."""
    blocks: list = []
    for metric in GENERIC_METRICS:
        if metric not in table.columns:
            continue
        means = generic_means(table, metric, configs).T  # a row per policy (@ racks, workload), a column per network
        blocks.append(Heading(3, f"{title}: `{metric}` (hours)"))
        blocks.append(Table(("policy",) + tuple(means.columns),
                            tuple((label,) + tuple(fixed(v / HOUR) for v in row) for label, row in means.iterrows())))
    return blocks


def _network_tables(sweep: Sweep) -> list:
    """Does the network matter here: per policy and network configuration, the means over seeds of what the
    network changed (NETWORK_METRICS); the ratio to no network only where the sweep ran the `none` backend."""
    from artist.sweep.plots import network_columns
    from artist.sweep.store import ResultStore

    table = network_columns(sweep.table, ResultStore(sweep.directory))
    blocks: list = []
    for metric, what in NETWORK_METRICS:
        if not table[metric].notna().any():
            continue
        means = generic_means(table, metric).T
        means = means.loc[:, means.notna().any()]  # (the none backend's own column of the ratio)
        blocks.append(Heading(4, what))
        blocks.append(Table(("policy",) + tuple(means.columns),
                            tuple((label,) + tuple(fixed(v, 3) for v in row) for label, row in means.iterrows())))
    return ([Heading(3, "Does the network matter here?")] + blocks) if blocks else []


def _generic_section(sweep: Sweep) -> list:
    return ([Heading(2, f"Sweep {sweep.name} (no report spec: no claims)"),
             Text(f"Results: {sweep.directory} ({len(sweep.table)} runs)."),
             Text(stamp_line(sweep.directory, sweep.table["run_id"]))]
            + _means_tables(sweep.table, "Means over seeds") + _network_tables(sweep))


def build_report(sweeps: list[Sweep], out: Path) -> list:
    """Sweeps with the same report.paper are one section (e.g. a paper's sweep and its contention
    ablation run as a second sweep); sweeps without a report spec get a generic section."""
    blocks: list = [Heading(1, "ArtISt report")]
    papers: dict[str, list[Sweep]] = {}
    for s in sweeps:
        if s.spec is not None:
            papers.setdefault(s.spec.paper, []).append(s)
    done: set[str] = set()
    for s in sweeps:
        if s.spec is None:
            blocks += _generic_section(s)
        elif s.spec.paper not in done:
            done.add(s.spec.paper)
            blocks += _paper_section(papers[s.spec.paper], out)
    return blocks


def to_markdown(blocks: list) -> str:
    lines: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            lines += ["#" * b.level + " " + b.text, ""]
        elif isinstance(b, Text):
            lines += [b.text, ""]
        elif isinstance(b, Table):
            def cells(row):
                return "| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |"
            lines += [cells(b.headers), "|" + "---|" * len(b.headers)] + [cells(r) for r in b.rows] + [""]
        elif isinstance(b, Image):
            lines += [f"![{b.caption}]({b.path.as_posix()})", ""]
    return "\n".join(lines)


def to_html(blocks: list, out: Path) -> str:
    def code(text: str) -> str:  # the markdown's `x` as <code>
        return re.sub(r"`([^`]*)`", r"<code>\1</code>", html.escape(text))

    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>ArtISt report</title>",
             "<style>body{font-family:sans-serif;max-width:70em;margin:auto}table{border-collapse:collapse}"
             "td,th{border:1px solid #999;padding:2px 6px;text-align:right}td:first-child{text-align:left}</style>",
             "</head><body>"]
    for b in blocks:
        if isinstance(b, Heading):
            parts.append(f"<h{b.level}>{code(b.text)}</h{b.level}>")
        elif isinstance(b, Text):
            parts.append(f"<p>{code(b.text)}</p>")
        elif isinstance(b, Table):
            parts.append("<table><tr>" + "".join(f"<th>{code(h)}</th>" for h in b.headers) + "</tr>"
                         + "".join("<tr>" + "".join(f"<td>{code(str(c))}</td>" for c in r) + "</tr>" for r in b.rows)
                         + "</table>")
        elif isinstance(b, Image):
            data = base64.b64encode((out / b.path).read_bytes()).decode()
            parts.append(f"<figure><img src='data:image/png;base64,{data}' alt='{html.escape(b.caption)}'>"
                         f"<figcaption>{html.escape(b.caption)}</figcaption></figure>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(sweeps: list[Sweep], out: str | Path, *, as_html: bool = False) -> list[Path]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    blocks = build_report(sweeps, out)
    written = [out / "report.md"]
    written[0].write_text(to_markdown(blocks))
    if as_html:
        written.append(out / "report.html")
        written[1].write_text(to_html(blocks, out))
    return written


__all__ = ["Verdict", "write_report", "build_report", "to_markdown", "to_html", "number"]
