"""One simulation: a policy schedules a workload's jobs on a topology, a network backend times their steps."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from artist.api._options import command_args
from artist.api.inputs import Models, models_of, workload_text

if TYPE_CHECKING:
    import pandas as pd

    from artist.simulator import SimulationResult
    from artist.topology import Topology
    from artist.workload import Job


@dataclass(frozen=True)
class Result:
    """What a simulation produced: the tables ``artist simulate --out DIR`` writes, in memory.

    Attributes:
        jobs: One row per job, the columns of jobs.csv (rigid loop: job_id, model, gpus, arrival_s,
            first_start_s, finish_s, jct_s, queueing_delay_s, ...; the elastic loops add their own, such as
            restarts and ftf_rho).
        summary: The run's metrics, the one row of summary.csv: policy, jobs, finished, makespan_s, jct_mean_s,
            jct_p95_s, queueing_mean_s, gpu_utilisation_fraction, ...
        tables: Every table by name: jobs, summary (that row as a frame), utilisation (allocated GPUs over time),
            and what the run adds (spine in shared contention mode; cluster, timeseries, policy_rounds in the
            elastic loop).
        loop: Which event loop ran the policy: ``rigid`` (artist/simulator.py), ``elastic`` (Pollux, Sia, Gavel,
            ...) or ``crius``.
        simulation: The rigid loop's full result (every job's state and placement history); None for the other
            loops.
    """

    jobs: pd.DataFrame
    summary: dict[str, Any]
    tables: Mapping[str, pd.DataFrame]
    loop: str = "rigid"
    simulation: SimulationResult | None = field(default=None, repr=False)

    @property
    def utilisation(self) -> pd.DataFrame:
        """GPUs allocated over time, as steps: ``allocated_gpus`` holds from ``time_s`` to the next row."""
        return self.tables["utilisation"]

    def to_csv(self, directory: str | Path) -> dict[str, Path]:
        """Write every table as ``NAME.csv`` into directory (created), as the CLI's ``--out`` writes them.

        Args:
            directory: Where to write jobs.csv, summary.csv, utilisation.csv and the run's other tables.

        Returns:
            File name -> path written.
        """
        from artist.commands._common import writable_dir
        from artist.metrics import write_frames

        return write_frames(dict(self.tables), writable_dir(directory, "directory"), formats=("csv",))


def simulate(topology: str | Path | Topology = "dally-3tier", workload: str | Path | Sequence[Job] = "small", *,
             policy: str = "fifo", policy_params: Mapping[str, Any] | None = None, racks: int | None = None,
             seed: int = 0, models: Models = None, backend: str = "analytical", algorithm: str = "ring",
             channels: int = 1, calibration: str | Path | None = None, contention: str = "isolated",
             contention_model: str = "phase", round_interval_s: float | None = 300.0, restore_seconds: float = 30.0,
             plugin: str | Path | None = None, cache: bool = True, cache_dir: str | Path | None = None,
             progress: bool = False) -> Result:
    """Run one scheduling policy over one workload on one topology, as ``artist simulate`` does.

    Rigid policies (fifo, tiresias, gandiva, dally, ...) run in the event loop of artist/simulator.py; the
    policies of elastic jobs (pollux, sia, gavel, optimus-oracle, crius, fcfs, elasticflow-ls) and Crius'
    policies on a Crius cluster run in their own loops, exactly as the CLI dispatches them (``artist list
    policies``). The elastic loops take the topology, workload, racks, seed, network backend and cache options;
    the rigid loop's options (calibration, contention, rounds, restore cost, models) are an InputError there.

    Args:
        topology: A topology YAML file or shipped name, or a Topology from load_topology. A cluster file of
            several GPU types (topologies/clusters) or a Crius cluster (crius-testbed) is given by name or path.
        workload: A workload text or trace (see load_workload), or jobs already loaded.
        policy: A policy name (``artist list policies``).
        policy_params: The policy's parameters (``--policy-param KEY=VALUE``), e.g. ``{"pop_size": 6}``.
        racks: Replace the topology's rack count.
        seed: The workload generator's seed.
        models: Model profiles: a directory, a mapping of name to profile, or None for the shipped ones.
        backend: Network backend: ``analytical`` (alpha-beta), ``flow`` (fluid max-min), ``ns3`` (packet level)
            or ``none`` (free communication).
        algorithm: All-reduce algorithm (``ring``, ``hierarchical``, ``tree``, or ``nccl``: analytical only).
        channels: Parallel rings (NCCL channels).
        calibration: A calibration profile (path or shipped name) applied to the backend's answers.
        contention: ``isolated`` (every job at its step time alone) or ``shared`` (jobs on common links re-rated
            together at every start and stop).
        contention_model: How ``shared`` times jobs on common links: ``phase`` (fast) or ``cosim`` (the
            backend's co-simulation, flow or ns3).
        round_interval_s: Periodic scheduling round in seconds; None or 0: rounds only on events.
        restore_seconds: Checkpoint-restore cost paid when a preempted job resumes or a job migrates.
        plugin: A Python file whose ``@register`` calls add policies.
        cache: Read and write the latency cache (``$ARTIST_CACHE_DIR``, else ~/.cache/artist).
        cache_dir: The latency cache's directory, instead of the default.
        progress: A progress bar on standard error.

    Returns:
        The run's tables (Result.jobs, Result.summary, ...).

    Raises:
        InputError: A bad option, file or workload, with the one-line message the CLI prints.

    Examples:
        >>> result = artist.simulate("dally-3tier", "poisson:n=30,interarrival=120", policy="tiresias", racks=1)
        >>> result.summary["jct_mean_s"]
    """
    from artist.commands import simulate_jobs

    topology_object = None if isinstance(topology, (str, Path)) else topology
    jobs = None if isinstance(workload, (str, Path)) else list(workload)
    args = command_args(
        "simulate", topology=str(topology) if topology_object is None else topology_object.path,
        racks=racks, workload="jobs" if jobs is not None else workload_text(workload),
        models=str(models) if isinstance(models, (str, Path)) else None, policy=policy, seed=seed, backend=backend,
        algorithm=algorithm, channels=channels, calibration=calibration, contention=contention,
        contention_model=contention_model, round_interval=round_interval_s or 0.0, restore_seconds=restore_seconds,
        plugin=plugin, no_cache=not cache, cache_dir=cache_dir, quiet=not progress, progress=progress)
    params = dict(policy_params or {})
    if args.plugin:
        from artist.policies.plugins import load_plugin

        load_plugin(args.plugin)
    dialect = simulate_jobs.dialect_of(args.policy, args.topology, args.workload)
    if dialect is not None:
        _check_rigid_options_unused(args, dialect, models)
        return _simulate_in_dialect(args, params, dialect, topology_object, jobs)

    from artist.commands._common import with_racks
    from artist.commands.simulate import simulate_rigid
    from artist.metrics import result_tables, summary

    if topology_object is not None:
        topology_object = with_racks(topology_object, args.racks)
    profiles = models_of(models) if isinstance(models, Mapping) else None
    run = simulate_rigid(args, params, topology=topology_object, jobs=jobs, models=profiles)
    tables = result_tables(run.result)
    # the row again as Python values (the summary frame holds numpy scalars)
    return Result(tables["jobs"], summary(run.result, tables["jobs"]), tables, "rigid", run.result)


# the rigid loop's options (dest -> API keyword; simulate_jobs.RIGID_ONLY names them as options)
RIGID_KEYWORDS = {"calibration": "calibration", "contention": "contention", "contention_model": "contention_model",
                  "round_interval": "round_interval_s", "restore_seconds": "restore_seconds", "models": "models"}


def _check_rigid_options_unused(args, dialect: str, models: Models) -> None:
    """The CLI's one-line refusal (simulate_jobs.refuse_rigid_options), in the API's keywords."""
    from artist.commands import simulate_jobs

    simulate_jobs.refuse_rigid_options(args, dialect, RIGID_KEYWORDS, ("models",) if models is not None else ())


def _simulate_in_dialect(args, params: dict, dialect: str, topology: Topology | None,
                         jobs: list[Job] | None) -> Result:
    """An elastic or Crius policy's run (artist/commands/simulate_jobs.py), its tables read back."""
    import pandas as pd

    from artist.commands.simulate_jobs import dialect_run
    from artist.errors import InputError

    with tempfile.TemporaryDirectory(prefix="artist-api-") as tmp:
        if jobs is not None:  # the loops read a workload text: the jobs as a canonical trace
            from artist.workload import write_jobs_csv

            if not jobs:
                raise InputError("workload", None, "no jobs")
            args.workload = str(Path(tmp) / "jobs.csv")
            write_jobs_csv(jobs, args.workload)
        if topology is not None:
            if not topology.path:
                raise InputError(topology.name, None, f"policy {args.policy!r} runs its own loop, which reads the "
                                                      f"topology from its file: give the topology's path or name")
            args.racks = topology.racks if args.racks is None else args.racks
        with dialect_run(args, params, dialect) as (_, run_dir):
            summary = {"policy": args.policy, **json.loads((run_dir / "summary.json").read_text())}
            tables = {"jobs": pd.read_parquet(run_dir / "jobs.parquet"), "summary": pd.DataFrame([summary])}
            tables.update((p.stem, pd.read_parquet(p)) for p in sorted(run_dir.glob("*.parquet"))
                          if p.stem not in tables)
    return Result(tables["jobs"], summary, tables, dialect)
