"""The LLM zoo's placement sensitivity: one hybrid plan per model, timed on named layouts or placement shapes.

`artist latency-table --model gpt3-13b --plan dp=4,tp=8,pp=2 [--layout L ...] [--shape S ...]` builds
rows (model, plan, placement) -> step seconds and the exposed communication per kind, read off the
critical path of the 1F1B step graph (perf/hybrid.py). Placements are the named layouts of
parallel/layouts.py (packed, TP across machines, PP / DP across racks) or placement shapes whose
GPUs are taken in Megatron rank order. `step_vs_packed` is the step over the same plan's packed
step (the first placement's step when packed is not in the table).

Columns:
  model, plan (dp=..,tp=..,pp=..,ep=..,microbatches=..), placement (layout name or canonical
  shape), tier, gpus, backend, step_seconds, compute_seconds (busiest stage, one GPU),
  exposed_tp_seconds, exposed_pp_seconds, exposed_dp_seconds, exposed_ep_seconds,
  bubble_fraction, memory_gib_per_gpu, step_vs_packed.
"""

from __future__ import annotations

import csv
import io
from typing import Sequence

from artist.errors import InputError
from artist.network.base import FabricModel
from artist.parallel.layouts import LAYOUT_NAMES, LAYOUT_TITLES, layout_gpus
from artist.parallel.plan import ParallelPlan
from artist.perf.hybrid import estimate_plan
from artist.perf.memory import PlanDoesNotFit
from artist.placement import Placement, Shape, placement_from_shape, shape_to_text
from artist.topology import Topology
from artist.workload.transformer import TransformerConfig

COLUMNS = ("model", "plan", "placement", "tier", "gpus", "backend", "step_seconds", "compute_seconds",
           "exposed_tp_seconds", "exposed_pp_seconds", "exposed_dp_seconds", "exposed_ep_seconds",
           "bubble_fraction", "memory_gib_per_gpu", "step_vs_packed")


def placements_for(topology: Topology, plan: ParallelPlan, layouts: Sequence[str],
                   shapes: Sequence[Shape]) -> list[tuple[str, tuple[int, ...]]]:
    """(label, GPUs in rank order) for every layout and shape; InputError naming the one that does not fit."""
    out = []
    for name in layouts:
        try:
            out.append((name, layout_gpus(topology, plan, name)))
        except ValueError as exc:
            raise InputError("command line", f"--layout {name}", str(exc)) from None
    for shape in shapes:
        text = shape_to_text(tuple(tuple(r) for r in shape))
        try:
            placement = placement_from_shape(topology, shape)
        except ValueError as exc:
            raise InputError("command line", f"--shape {text}", f"does not fit the topology: {exc}") from None
        if placement.size != plan.gpus:
            raise InputError("command line", f"--shape {text}",
                             f"{placement.size} GPUs; plan {plan.text()} needs dp x tp x pp = {plan.gpus}")
        out.append((shape_to_text(placement.canonical_shape), tuple(placement.gpus)))
    return out


def hybrid_rows(fabric: FabricModel, topology: Topology, model: TransformerConfig, plan: ParallelPlan,
                placements: Sequence[tuple[str, tuple[int, ...]]], micro_batch_size: int = 1) -> list[dict]:
    rows, packed = [], None
    for label, gpus in placements:
        try:
            est = estimate_plan(fabric, topology, model, plan, gpus, micro_batch_size)
        except PlanDoesNotFit as exc:
            raise InputError("command line", f"--plan {plan.text()}", f"{model.name}: {exc}") from None
        x = est.exposed_seconds
        rows.append({
            "model": model.name, "plan": plan.text(), "placement": label,
            "tier": Placement(topology, gpus).tier, "gpus": plan.gpus, "backend": est.comm.backend,
            "step_seconds": est.step_seconds, "compute_seconds": est.compute_seconds,
            "exposed_tp_seconds": x["tp"], "exposed_pp_seconds": x["pp"], "exposed_dp_seconds": x["dp"],
            "exposed_ep_seconds": x["ep"], "bubble_fraction": est.bubble_fraction,
            "memory_gib_per_gpu": est.memory_gib,
        })
        if label == "packed":
            packed = est.step_seconds
    base = packed if packed is not None else rows[0]["step_seconds"]
    for row in rows:
        row["step_vs_packed"] = row["step_seconds"] / base
    return rows


def rows_to_csv(rows: Sequence[dict]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for row in rows:
        w.writerow([repr(v) if isinstance(v, float) else v for v in (row[c] for c in COLUMNS)])
    return buf.getvalue()


def rows_to_markdown(rows: Sequence[dict]) -> str:
    """One line per (model, plan), one cell per placement: step s (x packed) (exposed TP / PP / DP / EP s)."""
    labels = list(dict.fromkeys(r["placement"] for r in rows))
    lines = ["| model | plan (micro-batch 1) | GPUs | " + " | ".join(LAYOUT_TITLES.get(x, x) for x in labels) + " |",
             "|---|---|---|" + "---|" * len(labels)]
    by_key: dict[tuple[str, str], dict[str, dict]] = {}
    for r in rows:
        by_key.setdefault((r["model"], r["plan"]), {})[r["placement"]] = r
    for (model, plan), cells in by_key.items():
        texts = []
        for label in labels:
            r = cells.get(label)
            if r is None:
                texts.append("")
                continue
            ratio = "" if label == "packed" else f" (x{r['step_vs_packed']:.3f})"
            texts.append(f"{r['step_seconds']:.3f}{ratio} ({r['exposed_tp_seconds']:.3f} / "
                         f"{r['exposed_pp_seconds']:.4f} / {r['exposed_dp_seconds']:.3f} / "
                         f"{r['exposed_ep_seconds']:.3f})")
        gpus = next(iter(cells.values()))["gpus"]
        lines.append(f"| {model} | {plan} | {gpus} | " + " | ".join(texts) + " |")
    return "\n".join(lines) + "\n"


__all__ = ["COLUMNS", "LAYOUT_NAMES", "placements_for", "hybrid_rows", "rows_to_csv", "rows_to_markdown"]
