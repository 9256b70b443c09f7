"""Calibration against measured NCCL: fit a profile to nccl-tests logs, or check one on other logs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Sequence, Union

from artist.api._options import command_args

if TYPE_CHECKING:
    import pandas as pd

    from artist.calibration.profile import CalibrationProfile

Logs = Union[str, Path, Sequence[Union[str, Path]]]


def calibrate(logs: Logs, topology: str | Path, *, backend: str = "analytical", algorithm: str = "ring",
              channels: int = 1, name: str | None = None, holdout: Logs = (), min_bytes: int = 1 << 20,
              max_bytes: int | None = None, fit_from: int | str = "all", regimes: str = "auto",
              layout: str | Sequence[int] | None = None, allow_wrong: bool = False, allow_impossible: bool = False,
              force: bool = False, notes: Sequence[str] = (), cache: bool = True,
              cache_dir: str | Path | None = None) -> CalibrationProfile:
    """Fit a calibration profile to nccl-tests logs, as ``artist calibrate --logs ... --out PROFILE.yaml`` does.

    The backend simulates every size and rank layout of the logs' collectives; a per-tier, per-collective correction
    (bandwidth factor, fixed latency, and a per-hop latency only from logs of two node counts) is fitted to the
    measured times, one per NCCL size regime. calibration/README.md explains the model and its limits.

    Args:
        logs: nccl-tests output files (all_reduce, all_gather, reduce_scatter, alltoall, sendrecv).
        topology: The topology of the machines the logs ran on: a YAML file or a shipped name.
        backend: The network backend to correct: ``analytical``, ``flow`` or ``ns3``.
        algorithm: All-reduce algorithm the backend runs.
        channels: Parallel rings (NCCL channels) the backend runs.
        name: The profile's name; default: the topology's file name and the backend (``gcp-a3mega-analytical``).
        holdout: Logs the fit does not use: every size is checked, and a profile worse than uncalibrated on any of
            their collectives is refused unless ``force``.
        min_bytes: Ignore sizes below this (default 1 MiB: smaller sizes run NCCL protocols the backends do not
            model).
        max_bytes: Ignore sizes above this.
        fit_from: ``"all"``, or the smallest size to fit, in bytes (smaller ones are simulated, never fitted).
        regimes: ``auto``: one correction per NCCL size regime; ``single``: one per tier over all sizes.
        layout: GPUs per node for logs without a 'Using devices' block: ``"2x8"``, ``"8,8"`` or ``[8, 8]``.
        allow_wrong: Use rows nccl-tests marked wrong (#wrong > 0) instead of refusing the log.
        allow_impossible: Leave rows no hardware of the topology can have measured out of the fit (each recorded in
            the profile) instead of refusing the log.
        force: Keep a profile worse than uncalibrated on a hold-out log (the warning is recorded in it).
        notes: Free text stored in the profile's notes.
        cache: Read and write the latency cache (it keeps the backend's raw answers: a re-fit simulates nothing).
        cache_dir: The latency cache's directory, instead of the default.

    Returns:
        The profile (not written: ``profile.save("NAME.yaml")`` writes the YAML the CLI writes). Its ``fit``
        mapping holds the fit's errors per tier, collective and log; check() tabulates them. What reading the logs
        found (NCCL regime changes, noisy rows) is printed on standard error, as the CLI prints it.

    Raises:
        InputError: A bad log, option or topology, with the one-line message the CLI prints.

    Examples:
        >>> profile = artist.calibrate("calibration/data/gcp_a3mega_2node_16xH100_tcpxo.txt",
        ...                            topology="calibration/topologies/gcp-a3mega.yaml",
        ...                            algorithm="hierarchical", channels=8)
        >>> profile.correction("rack", "all_reduce")
    """
    from artist.commands.calibrate import calibration_options, fit, say_log_notes

    args = command_args("calibrate", logs=_paths(logs), topology=str(topology), backend=backend,
                        algorithm=algorithm, channels=channels, holdout=_paths(holdout), min_bytes=min_bytes,
                        max_bytes=max_bytes, fit_from=fit_from, regimes=regimes, layout=_layout_text(layout),
                        allow_wrong=allow_wrong, allow_impossible=allow_impossible, force=force, note=list(notes),
                        no_cache=not cache, cache_dir=cache_dir, name=name or f"{Path(str(topology)).stem}-{backend}")
    models: list = []
    try:
        done = fit(args, models, calibration_options(args))
    finally:
        _close(models)
    say_log_notes(done.logs, sys.stderr)
    for warning in done.profile.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return done.profile


def check(profile: CalibrationProfile | str | Path, logs: Logs, *, topology: str | Path | None = None,
          min_bytes: int = 1 << 20, max_bytes: int | None = None, fit_from: int | str = "all",
          regimes: str = "auto", layout: str | Sequence[int] | None = None, allow_wrong: bool = False,
          allow_impossible: bool = False, cache: bool = True, cache_dir: str | Path | None = None) -> pd.DataFrame:
    """Evaluate a calibration profile on nccl-tests logs, as ``artist calibrate --check PROFILE --json`` does.

    Args:
        profile: A profile from calibrate(), or a profile YAML file or the name of a shipped one
            (``artist list profiles``).
        logs: nccl-tests output files. Logs the profile was fitted on are checked in-sample (``in_sample``).
        topology: The logs' topology; default: the one the profile records.
        min_bytes: Ignore sizes below this (default 1 MiB, as when fitting).
        max_bytes: Ignore sizes above this.
        fit_from: ``"all"``, or a size in bytes below which sizes are reported as outside the fitted range.
        regimes: ``auto`` or ``single``: how the logs' NCCL regimes are found, as when fitting.
        layout: GPUs per node for logs without a 'Using devices' block (``"2x8"``, ``"8,8"``, ``[8, 8]``).
        allow_wrong: Use rows nccl-tests marked wrong instead of refusing the log.
        allow_impossible: Leave rows no hardware of the topology can have measured out instead of refusing the log.
        cache: Read and write the latency cache.
        cache_dir: The latency cache's directory, instead of the default.

    Returns:
        One row per (log, collective) over sizes >= 1 MiB: log, collective, tier, shape, sizes, held_out_sizes,
        median_err_uncalibrated_pct and median_err_calibrated_pct (median |relative time error|, percent),
        max_err_calibrated_pct, and in_sample (the profile was fitted on this log).

    Raises:
        InputError: A bad log, profile or option, with the one-line message the CLI prints.
    """
    import pandas as pd

    from artist.calibration.build import error_rows
    from artist.calibration.profile import CalibrationProfile
    from artist.commands._common import calibration_path
    from artist.commands.calibrate import calibration_options, check as check_profile, say_log_notes

    loaded = profile if isinstance(profile, CalibrationProfile) else None
    # (a shipped profile's name, as --calibration takes it)
    source = profile.name if loaded is not None else calibration_path(str(profile))
    args = command_args("calibrate", logs=_paths(logs), check=source,
                        topology=None if topology is None else str(topology), min_bytes=min_bytes,
                        max_bytes=max_bytes, fit_from=fit_from, regimes=regimes, layout=_layout_text(layout),
                        allow_wrong=allow_wrong, allow_impossible=allow_impossible, no_cache=not cache,
                        cache_dir=cache_dir)
    models: list = []
    try:
        done = check_profile(args, models, calibration_options(args), loaded)
    finally:
        _close(models)
    say_log_notes(done.logs, sys.stderr)
    in_sample = {Path(lp.log.source).name for lp in done.fitted}
    rows = [{**row, "in_sample": row["log"] in in_sample} for row in error_rows(done.points)]
    return pd.DataFrame(rows)


def load_profile(name_or_path: str | Path) -> CalibrationProfile:
    """A calibration profile: a profile YAML file, or the name of a shipped one (``artist list profiles``).

    Args:
        name_or_path: The file, or a shipped profile's name such as ``h100-analytical``, as ``--calibration``
            takes it.

    Returns:
        The profile; ``profile.correction(tier, collective)`` gives its corrections, ``profile.fit`` its fit's
        errors.

    Raises:
        InputError: No such file or shipped name, or a file that is not a valid profile.
    """
    from artist.calibration.profile import load_profile as load
    from artist.commands._common import calibration_path

    return load(calibration_path(str(name_or_path)))


def _paths(logs: Logs) -> list[str]:
    return [str(logs)] if isinstance(logs, (str, Path)) else [str(p) for p in logs]


def _layout_text(layout: str | Sequence[int] | None) -> str | None:
    """--layout's text: '2x8' and '8,8' as given, a list of GPUs per node as '8,8'."""
    if layout is None or isinstance(layout, str):
        return layout
    return ",".join(str(n) for n in layout)


def _close(models: list) -> None:
    """Close the backends' caches (writing their hit counters), as the CLI does however it ends."""
    for model in models:
        if hasattr(model, "close"):
            model.close()
