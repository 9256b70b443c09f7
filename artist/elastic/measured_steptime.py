"""Step times from the artifacts' measured tables alone, interpolated as their simulators do.

    MeasuredStepTimer(tables).seconds(app, gpu_type, per_node, local_batch, accum_steps)
        -> (iteration seconds, one pass's compute seconds)

ArtISt's own step time (steptime.py) takes compute from the measured tables and synchronisation from its
network model. The Pollux and Sia artifacts' simulators instead read the whole step from the measured
tables; `rules: {step_time: measured}` (rules.py) reproduces that, for parity with them. The rule, as
their simulators apply it (petuum/adaptdl osdi21-artifact simulator/applications.py get_throughput; the
Sia artifact's per-type tables the same way), re-implemented here from that description:

- the placement is the GPUs the job holds per node, nodes without GPUs left out, in node order, turned
  to its lexicographically smallest rotation and read as digits ("13": 1 GPU on one node, 3 on the next);
- a placement the placements table holds, at a local batch within that placement's rows: its step and
  sync seconds, linear in the local batch between those rows;
- any other: linear interpolation in (nodes, GPUs, local batch), nodes capped at 16, over the placements
  table's means per (nodes, GPUs, local batch) and the scalability table's rows (Delaunay, scipy's
  LinearNDInterpolator). A measured placement at a local batch beyond its own rows is read this way too:
  there the Pollux artifact stops (interp1d raises) and the Sia artifact answers -1 s for step and sync,
  which makes the job's progress run backwards for the round; neither can be followed;
- an iteration with s accumulation passes: step + s x (step - sync); one pass's compute: step - sync.

A point outside what the tables span is refused (the artifacts assert the same), naming the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from artist.elastic.measured import read_columns

COLUMNS = ("step_time", "sync_time")
MAX_NODES = 16  # the Pollux artifact caps nodes at its testbed's 16 before interpolating (get_throughput)


@dataclass(frozen=True)
class ThroughputTables:
    """One application's measured tables on one GPU type: placements CSV and, optionally, scalability CSV."""
    placements: Path
    scalability: Path | None = None


def _rows(path: Path, columns: tuple[str, ...]) -> list[tuple[float, ...]]:
    """The table's rows as tuples of the named columns (measured.read_columns: checks and bounds)."""
    table = read_columns(path, columns)
    return list(zip(*(table[c].tolist() for c in columns)))


def placement_key(per_node: Sequence[int]) -> int:
    """The artifacts' placement id: GPUs per node (zeros left out) at their smallest rotation, as digits."""
    counts = tuple(int(c) for c in per_node if c > 0)
    if not counts:
        raise ValueError("an iteration needs at least one GPU")
    if any(c > 9 for c in counts):
        raise ValueError(f"{list(counts)}: a node of more than 9 GPUs has no placement id in the artifacts' tables")
    smallest = min(counts[i:] + counts[:i] for i in range(len(counts)))
    return int("".join(map(str, smallest)))


class _Table:
    """Step and sync seconds of one (application, GPU type) by the rule of the module docstring."""

    def __init__(self, tables: ThroughputTables):
        from scipy.interpolate import LinearNDInterpolator, interp1d

        self.source = str(tables.placements)
        rows = _rows(tables.placements, ("placement", "local_bsz") + COLUMNS)
        by_placement: dict[int, list] = {}
        for placement, local, step, sync in rows:
            by_placement.setdefault(int(placement), []).append((local, step, sync))
        self.exact = {}
        for placement, points in by_placement.items():
            x = np.array([p[0] for p in points])
            y = np.array([[p[1], p[2]] for p in points])
            if len(np.unique(x)) >= 2:
                order = np.argsort(x, kind="stable")
                self.exact[placement] = interp1d(x[order], y[order], axis=0, assume_sorted=True)
            else:  # one measured local batch: that point only
                self.exact[placement] = _Point(float(x[0]), y[0])
        # means per (nodes, GPUs, local batch) of the placements table, then the scalability rows
        means: dict[tuple, list] = {}
        for placement, local, step, sync in rows:
            digits = str(int(placement))
            means.setdefault((len(digits), sum(map(int, digits)), local), []).append((step, sync))
        points = [(*k, float(np.mean([v[0] for v in vs])), float(np.mean([v[1] for v in vs])))
                  for k, vs in sorted(means.items())]
        if tables.scalability is not None:
            self.source += f" and {tables.scalability}"
            points += _rows(tables.scalability, ("num_nodes", "num_replicas", "local_bsz") + COLUMNS)
        xyz = np.array([p[:3] for p in points], dtype=float)
        self.spread = LinearNDInterpolator(xyz, np.array([p[3:] for p in points], dtype=float))

    def step_sync(self, per_node: Sequence[int], local_batch: float) -> tuple[float, float]:
        key = placement_key(per_node)
        exact = self.exact.get(key)
        if exact is not None and exact.x[0] <= local_batch <= exact.x[-1]:
            step, sync = (float(v) for v in exact(local_batch))
        else:
            digits = str(key)
            step, sync = (float(v) for v in self.spread([min(len(digits), MAX_NODES), sum(map(int, digits)),
                                                         local_batch])[0])
        if not (np.isfinite(step) and np.isfinite(sync)):
            raise ValueError(f"{self.source}: placement {key} at local batch {local_batch} is outside what the "
                             f"measured tables span")
        return step, sync


class _Point:
    """A placement measured at one local batch: that point's seconds (x: its one local batch)."""

    def __init__(self, x: float, y: np.ndarray):
        self.x, self.y = np.array([x]), y

    def __call__(self, local_batch: float) -> np.ndarray:
        return self.y


class MeasuredStepTimer:
    """StepTimer (artist/elastic/jobs.py) of the measured tables alone (module docstring); tables per
    (application, GPU type). Nothing here is a network model: answers record no network path."""

    def __init__(self, tables: Mapping[tuple[str, str], ThroughputTables]):
        from artist.network.provenance import AnswerCounts

        self.tables = dict(tables)
        self._tables: dict = {}
        self._memo: dict = {}
        self.answers = AnswerCounts()  # it asks no network model: stays empty (network/provenance.py)

    def _table(self, app: str, gpu_type: str) -> _Table:
        table = self._tables.get((app, gpu_type))
        if table is None:
            if (app, gpu_type) not in self.tables:
                raise ValueError(f"no measured step times of {app} on {gpu_type}")
            table = self._tables[(app, gpu_type)] = _Table(self.tables[(app, gpu_type)])
        return table

    def step_sync(self, app: str, gpu_type: str, per_node: Sequence[int], local_batch: int) -> tuple[float, float]:
        """(step seconds, sync seconds) of one synchronising pass."""
        key = (app, gpu_type, placement_key(per_node), local_batch)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = self._table(app, gpu_type).step_sync(per_node, local_batch)
        return found

    def seconds(self, app: str, gpu_type: str, per_node: Sequence[int], local_batch: int, accum_steps: int
                ) -> tuple[float, float]:
        step, sync = self.step_sync(app, gpu_type, per_node, local_batch)
        compute = step - sync
        return step + accum_steps * compute, compute
