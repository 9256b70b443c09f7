"""The result store of a sweep: OUT/runs/<run id>/ per run, and the tidy table OUT/results.{csv,parquet}.

A run directory is written whole into OUT/runs/.tmp-<id>-<host>-<pid>-<random>/
and renamed into place, so a run directory that exists is complete; a sweep
killed mid-write leaves only a temporary directory, which the next sweep
deletes and redoes. A run directory missing any of its files, or whose
params.json names another run, is not taken as done either: it is deleted and
redone.

Per run:
  params.json          the run's identity (the hash input) and its axis values
  summary.json         the summary metrics (exact floats)
  jobs.csv/.parquet    one row per job (artist.metrics.job_table)
  utilisation.csv/.parquet
  run.json             how it went: wall seconds, host, cache hits and misses (not in the results table)
and OUT/sweep-log.jsonl: one line per sweep invocation (runs done, cache hits and misses, wall seconds).

One sweep at a time per output directory: the driver holds an flock on
OUT/.lock (released by the OS if the driver dies).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

import pandas as pd

from artist.errors import InputError
from artist.jsonkey import canonical_json
from artist.sweep.axes import AXIS_COLUMNS
from artist.sweep.runs import Run

RUN_FILES = ("params.json", "summary.json", "jobs.csv", "jobs.parquet", "utilisation.csv", "utilisation.parquet",
             "run.json")
TMP_PREFIX = ".tmp-"
RESULTS_NAME = "results"
LOG_NAME = "sweep-log.jsonl"
FAILED_DIR = "failed"  # OUT/failed/<run id>.txt: the traceback of a run that failed (until it succeeds)
# Columns after the axes: what the axes stand for, in full.
DETAIL_COLUMNS = ("gpus", "policy_name", "policy_params", "workload_spec", "calibration_file")


class ResultStore:
    def __init__(self, out_dir: str | Path):
        self.out = Path(out_dir)
        self.runs_dir = self.out / "runs"
        self._lock_fh = None

    # ---- lifecycle ------------------------------------------------------------
    def open(self) -> None:
        """Create the directories, take the lock, delete what killed sweeps left half-written."""
        try:
            self.runs_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(str(self.out), None, f"cannot create the output directory ({exc.strerror})") from None
        self._lock_fh = open(self.out / ".lock", "w")
        try:
            fcntl.flock(self._lock_fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock_fh.close()
            self._lock_fh = None
            raise InputError(str(self.out), None, "another sweep is writing into this directory; "
                                                  "wait for it or choose another --out") from None
        for tmp in self.runs_dir.glob(TMP_PREFIX + "*"):
            shutil.rmtree(tmp, ignore_errors=True)

    def close(self) -> None:
        if self._lock_fh is not None:
            fcntl.flock(self._lock_fh, fcntl.LOCK_UN)
            self._lock_fh.close()
            self._lock_fh = None

    def __enter__(self):
        self.open()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # ---- runs -----------------------------------------------------------------
    def run_dir(self, run_id: str) -> Path:
        return self.runs_dir / run_id

    def is_done(self, run: Run) -> bool:
        d = self.run_dir(run.run_id)
        if not all((d / name).is_file() for name in RUN_FILES):
            return False
        try:
            params = json.loads((d / "params.json").read_text())
            # a record torn by a power loss (a 0-byte or cut summary) is run again, not read as done
            summary = json.loads((d / "summary.json").read_text())
        except (OSError, ValueError):
            return False
        return (isinstance(params, dict) and isinstance(summary, dict) and params.get("run_id") == run.run_id
                and canonical_json(params.get("identity")) == canonical_json(run.identity))

    def write_run(self, run: Run, outcome) -> Path:
        """Write one finished run atomically (temp directory, then rename)."""
        final = self.run_dir(run.run_id)
        tmp = self.runs_dir / f"{TMP_PREFIX}{run.run_id}-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        try:
            _write_json(tmp / "params.json", params_of(run))
            _write_json(tmp / "summary.json", outcome.summary, sort_keys=False)  # keep metrics.summary's column order
            for name, df in (("jobs", outcome.jobs), ("utilisation", outcome.utilisation),
                             *getattr(outcome, "tables", {}).items()):
                df.to_csv(tmp / f"{name}.csv", index=False, float_format="%.9g", lineterminator="\n")
                df.to_parquet(tmp / f"{name}.parquet", index=False)
            _write_json(tmp / "run.json", {
                "wall_seconds": outcome.wall_seconds, "host": outcome.host, "pid": outcome.pid,
                "cache_hits": outcome.cache_hits, "cache_misses": outcome.cache_misses, **getattr(outcome, "info", {}),
                "finished_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            })
            _fsync_files(tmp)  # on disk before the rename makes the run count as done
            if final.exists():  # incomplete or foreign leftovers: is_done() said no
                shutil.rmtree(final)
            os.rename(tmp, final)
            _fsync_dir(self.runs_dir)
            (self.out / FAILED_DIR / f"{run.run_id}.txt").unlink(missing_ok=True)  # an earlier failure of it
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return final

    def write_failure(self, run: Run, error: str) -> Path:
        """A failed run's traceback, kept in OUT/failed/<run id>.txt (the sweep prints its last line); removed
        when the run later succeeds."""
        directory = self.out / FAILED_DIR
        directory.mkdir(exist_ok=True)
        path = directory / f"{run.run_id}.txt"
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(f"{run.describe()}\n\n{error}")
        tmp.replace(path)
        return path

    def load_summary(self, run_id: str) -> dict:
        return json.loads((self.run_dir(run_id) / "summary.json").read_text())

    def load_jobs(self, run_id: str) -> pd.DataFrame:
        return pd.read_parquet(self.run_dir(run_id) / "jobs.parquet")

    def log_entries(self) -> list[dict]:
        """The log's entries, one per sweep invocation, oldest first."""
        path = self.out / LOG_NAME
        entries = []
        for line in (path.read_text(errors="replace").splitlines() if path.is_file() else []):
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line of a killed process: the other lines still say how it went
            if isinstance(entry, dict):
                entries.append(entry)
        return entries

    def sweeps_logged(self) -> set[str]:
        """The names of the sweeps whose invocations the log records (logs before names were kept: none)."""
        return {e["name"] for e in self.log_entries() if isinstance(e.get("name"), str)}

    def append_log(self, entry: dict) -> None:
        """One JSON line per sweep invocation (how it went; never part of the results table)."""
        stamped = {"finished_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), **entry}
        with open(self.out / LOG_NAME, "a") as fh:
            fh.write(json.dumps(stamped) + "\n")

    # ---- the tidy table -------------------------------------------------------
    def results_table(self, runs: Sequence[Run]) -> pd.DataFrame:
        """One row per run, in expansion order (nested by the axes in spec order); every axis a column."""
        rows = []
        for run in sorted(runs, key=lambda r: r.index):
            rows.append({"run_id": run.run_id, **run.axes, **details_of(run), **self.load_summary(run.run_id)})
        return pd.DataFrame(rows)

    def write_results(self, runs: Sequence[Run]) -> tuple[Path, Path]:
        table = self.results_table(runs)
        csv_path, parquet_path = self.out / f"{RESULTS_NAME}.csv", self.out / f"{RESULTS_NAME}.parquet"
        tmp = csv_path.with_name(csv_path.name + ".tmp")
        table.to_csv(tmp, index=False, lineterminator="\n")  # floats in full (shortest round-trip) precision
        tmp.replace(csv_path)
        tmp = parquet_path.with_name(parquet_path.name + ".tmp")
        table.to_parquet(tmp, index=False)
        tmp.replace(parquet_path)
        return csv_path, parquet_path


def details_of(run: Run) -> dict:
    gpus = getattr(run.elastic, "gpus", None)  # an elastic or Crius run on several pools: all their GPUs
    return {"gpus": gpus if gpus is not None else run.topology.gpus, "policy_name": run.policy.name,
            "policy_params": run.policy.params_json,
            "workload_spec": run.workload.spec,
            "calibration_file": run.calibration.path}


def params_of(run: Run) -> dict:
    return {"run_id": run.run_id, "identity": run.identity, "axes": run.axes, **details_of(run)}


def _write_json(path: Path, value, sort_keys: bool = True) -> None:
    path.write_text(json.dumps(value, sort_keys=sort_keys, indent=1) + "\n")


def read_results(out_dir: str | Path) -> pd.DataFrame:
    """The tidy table of a finished sweep (parquet, else CSV), checked for what every reader of it needs: the
    axis columns, at least one run, and numbers where the metrics are (InputError otherwise)."""
    out = Path(out_dir)
    for name in (f"{RESULTS_NAME}.parquet", f"{RESULTS_NAME}.csv"):
        p = out / name
        if p.is_file():
            try:
                table = pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p, keep_default_na=False,
                                                                                         na_values=[""])
            except Exception as exc:  # noqa: BLE001 - pyarrow and pandas raise many kinds for a damaged file
                raise InputError(str(p), None, f"cannot read the results table ({type(exc).__name__}: "
                                               f"{str(exc).splitlines()[0] if str(exc) else 'damaged'}); re-run "
                                               f"the sweep to rewrite it (finished runs are kept)") from None
            _check_results(p, table)
            return table
    raise InputError(str(out), None, f"no {RESULTS_NAME}.parquet or {RESULTS_NAME}.csv: not a finished sweep directory")


# the metrics every run's row has (metrics.summary): a reader may plot or compare them
METRIC_COLUMNS = ("jobs", "finished", "makespan_s", "jct_mean_s", "jct_median_s", "jct_p95_s", "jct_p99_s")


def _check_results(path: Path, table: pd.DataFrame) -> None:
    missing = missing_axes(table)
    if missing:
        raise InputError(str(path), None, f"the results table lacks column(s) {', '.join(missing)}")
    if table.empty:
        raise InputError(str(path), None, "the results table has no runs")
    for column in METRIC_COLUMNS:
        if column in table.columns and not pd.api.types.is_numeric_dtype(table[column]):
            raise InputError(str(path), f"column '{column}'", "expected numbers (a table edited by hand?)")


def missing_axes(table: pd.DataFrame) -> list[str]:
    return [c for c in ("run_id", *AXIS_COLUMNS) if c not in table.columns]


def _fsync_files(directory: Path) -> None:
    """Flush every file of a run's directory to disk (a rename alone may reach the disk before the data)."""
    for path in directory.iterdir():
        with open(path, "rb") as fh:
            os.fsync(fh.fileno())
    _fsync_dir(directory)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
