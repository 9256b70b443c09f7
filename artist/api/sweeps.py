"""A sweep: every run of a spec's cross product of axes, one row of metrics per run."""

from __future__ import annotations

import numbers
import tempfile
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from artist.api._options import command_args
from artist.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

DICT_SOURCE = "<spec dict>"  # how messages name a spec given as a dict (it has no file)
DICT_NAME = "sweep"  # a dict spec's name when it gives none (a file's default is its stem)


class SweepFailed(RuntimeError):
    """Some runs of a sweep failed: no results table was written.

    Attributes:
        failed: (run, traceback) of every failed run; run.describe() says its axis values.
        out: The directory holding the finished runs (None when the sweep ran in a temporary directory).
    """

    def __init__(self, failed: list, out: Path | None):
        self.failed, self.out = failed, out
        run, error = failed[0]
        last = error.strip().splitlines()[-1] if error else "?"
        kept = f"; the finished ones are stored under {out / 'runs'}" if out is not None else ""
        super().__init__(f"{len(failed)} run(s) failed{kept}. First: {run.run_id} {run.describe()}: {last}")


def run_sweep(spec: Mapping[str, Any] | str | Path, *, reduced: bool = False, out: str | Path | None = None,
              jobs: int = 1, backend: str | None = None, calibration: str | Path | None = None,
              executor: str = "local", address: str | None = None, cache: bool = True,
              cache_dir: str | Path | None = None, plots: bool = False, progress: bool = False) -> pd.DataFrame:
    """Run every run of a sweep spec not done yet and return the results table, as ``artist sweep`` does.

    Args:
        spec: A sweep spec: a YAML file, the name of a shipped one (``quick``: sweeps/quick.yaml), or the spec
            itself as a dict of the same fields (topology, racks, policies, workloads, seeds, comm, calibration,
            simulator, models, reduced, loop, ...; sweeps/quick.yaml explains each). A dict is checked exactly as
            the file would be; the paths in it are relative to the working directory (a file's are relative to
            the file), and its name defaults to ``sweep``.
        reduced: Run the spec's ``reduced:`` version (seconds; what CI runs), named NAME-reduced.
        out: Directory for the runs and the tables (results.csv and .parquet, runs/<run id>/, plots/ with
            ``plots``); runs already in it are not run again. None: a temporary directory, deleted afterwards.
        jobs: Runs at once: worker processes, or -1 for all cores.
        backend: Replace the spec's network backend axis (``analytical``, ``flow``, ``ns3``, ``none``).
        calibration: Replace the spec's calibration axis with one profile (path or shipped name), or ``"none"``.
        executor: Where the runs execute: ``local`` processes, or an existing ``dask`` or ``ray`` cluster.
        address: The cluster's address with a dask or ray executor.
        cache: Read and write the latency cache.
        cache_dir: The latency cache's directory, instead of the default.
        plots: Also draw the sweep's plots into ``out``/plots.
        progress: A progress bar on standard error.

    Returns:
        One row per run in the spec's order: run_id, a column per axis (topology, racks, policy, workload, seed,
        backend, ...), what the axes stand for in full, then the run's metrics (jobs, finished, makespan_s,
        jct_mean_s, jct_p95_s, queueing_mean_s, gpu_utilisation_fraction, ...): the table results.csv holds.

    Raises:
        InputError: A bad spec or option, with the one-line message the CLI prints (a dict spec is named
            ``<spec dict>``).
        SweepFailed: A run failed; the finished ones are kept in ``out``.

    Examples:
        >>> table = artist.run_sweep({"topology": "dally-3tier", "racks": [1, 2],
        ...                           "policies": ["fifo", "tiresias"], "workloads": ["batch:n=20"],
        ...                           "comm": "analytical"})
        >>> table[["racks", "policy", "jct_mean_s"]]
    """
    from artist.commands.sweep import execute, load_spec
    from artist.sweep.store import read_results

    data = None
    if isinstance(spec, Mapping):
        data = _yaml_data(spec)
        data.setdefault("name", DICT_NAME)
    args = command_args("sweep", spec=DICT_SOURCE if data is not None else spec, reduced=reduced, jobs=jobs,
                        backend=backend, calibration=calibration, executor=executor, address=address,
                        no_cache=not cache, cache_dir=cache_dir, no_plots=not plots, quiet=not progress)
    loaded = load_spec(args, data)
    keep = out is not None
    with nullcontext(str(out)) if keep else tempfile.TemporaryDirectory(prefix="artist-sweep-") as directory:
        report = execute(args, loaded, Path(directory))
        if report.failed:
            raise SweepFailed(report.failed, Path(directory) if keep else None)
        return read_results(directory)


def _yaml_data(spec: Mapping[str, Any]) -> dict:
    """The dict as the YAML file of the same content would read (paths as text, tuples as lists), so that it is
    checked like one; InputError for a value no YAML file could hold."""
    import yaml

    from artist.yamlio import parse_yaml

    try:
        return parse_yaml(yaml.safe_dump(_plain(spec), sort_keys=False))
    except yaml.YAMLError as exc:
        raise InputError(DICT_SOURCE, None, f"not YAML data: {' '.join(str(exc).split())}") from None


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)  # (numpy integers: YAML knows Python's)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    return value
