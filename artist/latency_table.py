"""Latency tables: (model, placement shape) -> seconds on one topology, and their regression checks.

Columns:
  model, shape (canonical, e.g. [[4,4],[8]]), tier (machine / rack / network),
  gpus, backend, calibrated, collective_seconds (sum of the buckets'
  all-reduces), exposed_seconds (what is left after overlap with the backward
  pass), compute_seconds (one iteration on the placement's slowest GPU),
  comm_pct_of_compute = 100 * exposed_seconds / compute_seconds (how much
  longer an iteration is than its compute alone).

The standard set follows Table I of the Dally paper (Sharma et al., "GPU
Cluster Scheduling for Network-Sensitive Deep Learning", arXiv:2401.16492):
8 GPUs on one machine, on machines of one rack, and across racks. We choose
the spread forms so that each step changes one thing: [[8]] (NVLink only),
[[1,1,1,1,1,1,1,1]] (one GPU per machine, every ring hop over a NIC),
[[1,1,1,1],[1,1,1,1]] (the same machines split over two racks: the ring
crosses the spine). Then 16, 32 and 64 GPUs as full machines in one rack and
split evenly over two racks. The set needs 8 GPUs per machine, 8 machines per
rack and 2 racks (the paper's cluster, topologies/dally-3tier.yaml).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import pandas as pd

from artist.errors import InputError, read_input_file
from artist.perf.model import as_perf_model
from artist.network.code import code_digest
from artist.network.stack import CommSpec, cached_layer, fabric_for
from artist.placement import Shape, parse_shape, placement_from_shape, shape_to_text
from artist.topology import Topology
from artist.workload import ModelProfile

COLUMNS = ("model", "shape", "tier", "gpus", "backend", "calibrated", "collective_seconds", "exposed_seconds",
           "compute_seconds", "comm_pct_of_compute")
KEY_COLUMNS = ("model", "shape", "backend", "calibrated")  # what identifies a row
EXACT_COLUMNS = ("tier", "gpus")  # follow from the shape; must match exactly
NUMERIC_COLUMNS = ("collective_seconds", "exposed_seconds", "compute_seconds", "comm_pct_of_compute")

STANDARD_SHAPES: tuple[tuple[str, Shape], ...] = (
    ("8 GPUs on one machine", ((8,),)),
    ("8 GPUs, one per machine, one rack", ((1,) * 8,)),
    ("8 GPUs, one per machine, two racks", ((1,) * 4, (1,) * 4)),
    ("16 GPUs, two full machines, one rack", ((8,) * 2,)),
    ("16 GPUs, one full machine in each of two racks", ((8,), (8,))),
    ("32 GPUs, four full machines, one rack", ((8,) * 4,)),
    ("32 GPUs, two full machines in each of two racks", ((8,) * 2, (8,) * 2)),
    ("64 GPUs, eight full machines, one rack", ((8,) * 8,)),
    ("64 GPUs, four full machines in each of two racks", ((8,) * 4, (8,) * 4)),
)


def standard_shapes() -> list[Shape]:
    return [shape for _, shape in STANDARD_SHAPES]


# --------------------------------------------------------------------------- building


def table_row(comm, model: ModelProfile, shape: Shape, topology: Topology) -> tuple[dict, bool]:
    """One row of the table and whether the answer came from the cache."""
    placement = placement_from_shape(topology, shape)
    step = as_perf_model(comm, topology).estimate(model, placement)  # one DDP step alone
    row = {
        "model": model.name,
        "shape": shape_to_text(placement.canonical_shape),
        "tier": placement.tier,
        "gpus": placement.size,
        "backend": step.comm.backend,
        "calibrated": bool(step.comm.calibrated),
        "collective_seconds": float(step.comm_seconds),
        "exposed_seconds": float(step.exposed_comm_seconds),
        "compute_seconds": float(step.compute_seconds),
        "comm_pct_of_compute": 100.0 * float(step.exposed_comm_seconds) / step.compute_seconds,
    }
    return row, bool(step.comm.cache_hit)


def _row_task(spec: CommSpec, topology: Topology, model: ModelProfile, shape: Shape) -> tuple[dict, bool]:
    from artist import lifeline

    lifeline.arm()  # a joblib worker exits when the command that started it dies; no-op with --jobs 1
    comm = fabric_for(spec, topology)
    out = table_row(comm, model, shape, topology)
    cached = cached_layer(comm)
    if cached is not None:
        cached.flush()  # joblib workers may never run atexit handlers: push the cache counters now
    return out


@dataclass
class TableRun:
    table: pd.DataFrame
    hits: int  # rows answered from the cache (0 without a cache)
    simulations: int  # rows the backend had to compute
    cache_path: str | None = None
    code: str = ""  # digest of the code that computes the answers (artist/network/code.py; in every cache key)


def check_shapes(topology: Topology, shapes: Iterable[Sequence[Sequence[int]]]) -> list[Shape]:
    """Lay every shape out once before any work starts; reject ones that do not fit or repeat."""
    out: list[Shape] = []
    seen: dict[Shape, str] = {}
    for shape in shapes:
        text = shape_to_text(tuple(tuple(r) for r in shape))
        try:
            canonical = placement_from_shape(topology, shape).canonical_shape
        except ValueError as exc:
            raise InputError(topology.path or topology.name, f"shape {text}",
                             f"does not fit the topology: {exc}") from None
        if canonical in seen:
            raise InputError(topology.path or topology.name, f"shape {text}",
                             f"same canonical shape {shape_to_text(canonical)} as {seen[canonical]}; listed twice")
        seen[canonical] = text
        out.append(canonical)
    return out


def _check_spec(spec: CommSpec, topology: Topology):
    """The model the spec builds; fails on a bad backend option or calibration profile before any work starts."""
    try:
        built = spec.build(topology)
        if spec.calibration is not None:
            built.profile.check_topology(topology)
        return built
    except ValueError as exc:
        if isinstance(exc, InputError):
            raise
        source = spec.calibration if spec.calibration is not None else f"backend {spec.backend!r}"
        raise InputError(source, None, str(exc)) from None


def build_latency_table(topology: Topology, models: Sequence[ModelProfile], shapes: Iterable[Sequence[Sequence[int]]],
                        spec: CommSpec = CommSpec(), *, n_jobs: int = 1, progress: bool = False) -> TableRun:
    """Rows in the order models x shapes as given; parallel over rows with joblib when n_jobs != 1."""
    from tqdm import tqdm

    shapes = check_shapes(topology, shapes)
    names = [m.name for m in models]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise InputError("models", None, f"model(s) listed twice: {', '.join(duplicated)}")
    spec = spec.resolved()
    built = _check_spec(spec, topology)
    cached = cached_layer(built)  # the cache keys name the code of the model under the cache (network/code.py)
    code = code_digest(cached.inner if cached is not None else built)
    tasks = [(model, shape) for model in models for shape in shapes]
    bar = tqdm(total=len(tasks), desc="latency table", unit="row", disable=not progress, leave=False)
    results: list[tuple[dict, bool]] = []
    if n_jobs == 1:
        for model, shape in tasks:
            results.append(_row_task(spec, topology, model, shape))
            bar.update(1)
    else:
        from joblib import Parallel, delayed

        runner = Parallel(n_jobs=n_jobs, return_as="generator")
        for item in runner(delayed(_row_task)(spec, topology, model, shape) for model, shape in tasks):
            results.append(item)
            bar.update(1)
    bar.close()
    table = pd.DataFrame([row for row, _ in results], columns=list(COLUMNS))
    hits = sum(hit for _, hit in results)
    return TableRun(table, hits, len(results) - hits, spec.cache, code)


# --------------------------------------------------------------------------- CSV


def _format(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)  # shortest text that reads back to the same double
    return str(value)


def table_to_csv(table: pd.DataFrame) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for row in table[list(COLUMNS)].itertuples(index=False):
        w.writerow([_format(v.item() if hasattr(v, "item") else v) for v in row])
    return buf.getvalue()


def write_table_csv(table: pd.DataFrame, path: str | Path) -> None:
    Path(path).write_text(table_to_csv(table))


_BOOLS = {"true": True, "false": False, "1": True, "0": False}


def read_table_csv(path: str | Path) -> pd.DataFrame:
    """A latency table CSV, checked cell by cell; errors name the file, line and column."""
    path = Path(path)
    text, _ = read_input_file(path)
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None:
        raise InputError(str(path), "line 1", f"empty file, expected the header {','.join(COLUMNS)}")
    header = [h.strip() for h in header]
    missing = [c for c in COLUMNS if c not in header]
    unknown = [c for c in header if c not in COLUMNS]
    if missing or unknown:
        problems = ([f"missing column(s) {', '.join(missing)}"] if missing else []) + \
                   ([f"unknown column(s) {', '.join(unknown)}"] if unknown else [])
        raise InputError(str(path), "line 1", "; ".join(problems) + f"; expected {','.join(COLUMNS)}")
    rows, lines, seen = [], [], {}
    for raw in reader:
        lineno = reader.line_num
        if not raw or all(not c.strip() for c in raw):
            continue
        if len(raw) != len(header):
            raise InputError(str(path), f"line {lineno}", f"has {len(raw)} cells, header has {len(header)}")
        cells = {h: c.strip() for h, c in zip(header, raw)}
        row = {}
        for column in COLUMNS:
            where = f"line {lineno}, column '{column}'"
            value = cells[column]
            if column in NUMERIC_COLUMNS:
                try:
                    number = float(value)
                except ValueError:
                    raise InputError(str(path), where, f"not a number: {value!r}") from None
                if not math.isfinite(number):
                    raise InputError(str(path), where, f"not a finite number: {value!r}")
                row[column] = number
            elif column == "gpus":
                if not value.isdigit() or int(value) < 1:
                    raise InputError(str(path), where, f"expected a positive integer, got {value!r}")
                row[column] = int(value)
            elif column == "calibrated":
                if value.lower() not in _BOOLS:
                    raise InputError(str(path), where, f"expected true or false, got {value!r}")
                row[column] = _BOOLS[value.lower()]
            elif column == "shape":
                try:
                    row[column] = shape_to_text(parse_shape(value))
                except ValueError as exc:
                    raise InputError(str(path), where, str(exc)) from None
            else:
                if not value:
                    raise InputError(str(path), where, "empty")
                row[column] = value
        key = tuple(row[c] for c in KEY_COLUMNS)
        if key in seen:
            raise InputError(str(path), f"line {lineno}", f"row {_describe(key)} already given on line {seen[key]}")
        seen[key] = lineno
        rows.append(row)
        lines.append(lineno)
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    table.attrs["lines"] = lines
    table.attrs["source"] = str(path)
    return table


# --------------------------------------------------------------------------- regression checks


def _describe(key: tuple) -> str:
    return " ".join(f"{c}={'true' if v is True else 'false' if v is False else v}" for c, v in zip(KEY_COLUMNS, key))


@dataclass(frozen=True)
class Deviation:
    key: tuple
    column: str
    measured: object
    golden: object
    relative_error: float | None  # None for exact columns


@dataclass
class TableComparison:
    rtol: float
    atol: float
    deviations: list[Deviation]
    missing: list[tuple]  # in the golden table, not measured
    extra: list[tuple]  # measured, not in the golden table
    compared_rows: int

    @property
    def ok(self) -> bool:
        return not (self.deviations or self.missing or self.extra)

    def report_lines(self) -> list[str]:
        lines = []
        for d in self.deviations:
            if d.relative_error is None:
                lines.append(f"MISMATCH {_describe(d.key)}: {d.column} measured {d.measured} golden {d.golden}")
            else:
                rel = "inf" if math.isinf(d.relative_error) else f"{100 * d.relative_error:.3f}%"
                lines.append(f"OUT OF TOLERANCE {_describe(d.key)}: {d.column} measured {d.measured!r} "
                             f"golden {d.golden!r} relative error {rel} "
                             f"(rtol {100 * self.rtol:g}%, atol {self.atol:g})")
        lines += [f"MISSING {_describe(k)}: in the golden table, not measured" for k in self.missing]
        lines += [f"EXTRA {_describe(k)}: measured, not in the golden table" for k in self.extra]
        return lines

    def summary(self) -> str:
        state = "OK" if self.ok else "FAILED"
        return (f"latency-table check {state}: {self.compared_rows} rows compared, {len(self.deviations)} out of "
                f"tolerance or mismatched, {len(self.missing)} missing, {len(self.extra)} extra (rtol {self.rtol:g})")


def relative_error(measured: float, golden: float) -> float:
    if measured == golden:
        return 0.0
    return abs(measured - golden) / abs(golden) if golden != 0 else math.inf


def compare_tables(measured: pd.DataFrame, golden: pd.DataFrame, rtol: float = 0.02,
                   atol: float = 0.0) -> TableComparison:
    """Numeric columns pass when |measured - golden| <= atol + rtol * |golden|; tier and gpus must match."""
    if rtol < 0 or atol < 0:
        raise ValueError(f"rtol and atol must be >= 0, got rtol={rtol}, atol={atol}")

    def index(table: pd.DataFrame) -> dict[tuple, dict]:
        out = {}
        for row in table[list(COLUMNS)].to_dict("records"):
            row["calibrated"] = bool(row["calibrated"])
            out[tuple(row[c] for c in KEY_COLUMNS)] = row
        return out

    m, g = index(measured), index(golden)
    deviations = []
    for key, grow in g.items():
        mrow = m.get(key)
        if mrow is None:
            continue
        for column in EXACT_COLUMNS:
            if str(mrow[column]) != str(grow[column]):
                deviations.append(Deviation(key, column, mrow[column], grow[column], None))
        for column in NUMERIC_COLUMNS:
            mv, gv = float(mrow[column]), float(grow[column])
            if not abs(mv - gv) <= atol + rtol * abs(gv):
                deviations.append(Deviation(key, column, mv, gv, relative_error(mv, gv)))
    missing = [k for k in g if k not in m]
    extra = [k for k in m if k not in g]
    return TableComparison(rtol, atol, deviations, missing, extra, sum(1 for k in g if k in m))
