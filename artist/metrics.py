"""Per-job records and summary tables of a simulation (pandas)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from artist.errors import InputError
from artist.simulator import SimulationResult

JOB_COLUMNS = [
    "job_id", "model", "gpus", "iterations", "arrival_s", "first_start_s", "finish_s", "jct_s", "queueing_delay_s",
    "waiting_seconds", "running_seconds", "ideal_seconds", "slowdown", "comm_seconds_per_iteration",
    "collective_seconds_per_iteration", "preemptions", "migrations", "placements", "final_tier", "placement_history",
]
# Added in "shared" contention mode only (isolated tables keep their columns, byte for byte).
CONTENTION_COLUMNS = ["contention_slowdown", "rate_changes", "met_contention"]


def job_table(result: SimulationResult) -> pd.DataFrame:
    rows = []
    for s in result.jobs:
        finished = s.finish is not None
        jct = s.finish - s.arrival if finished else np.nan
        ideal = s.ideal_seconds()
        rows.append({
            "job_id": s.job_id,
            "model": s.model.name,
            "gpus": s.gpus,
            "iterations": s.job.iterations,
            "arrival_s": s.arrival,
            "first_start_s": s.first_start if s.first_start is not None else np.nan,
            "finish_s": s.finish if finished else np.nan,
            "jct_s": jct,
            # Time from arrival to first start (the usual queueing delay) ...
            "queueing_delay_s": (s.first_start - s.arrival) if s.first_start is not None else np.nan,
            # ... and all time spent waiting, after preemptions too.
            "waiting_seconds": s.waited_seconds,
            "running_seconds": s.ran_seconds,
            "ideal_seconds": ideal,
            "slowdown": jct / ideal if finished else np.nan,
            "comm_seconds_per_iteration": s.exposed_comm_total / s.job.iterations if finished else np.nan,
            "collective_seconds_per_iteration": s.collective_total / s.job.iterations if finished else np.nan,
            "preemptions": s.preemptions,
            "migrations": s.migrations,
            "placements": len(s.history),
            "final_tier": s.history[-1].tier if s.history else "",
            "placement_history": ";".join(f"{r.time:.6f}:{r.tier}:{r.shape}" for r in s.history),
            # time of its iterations with co-runners / alone, and how often co-runners changed its rate
            "contention_slowdown": s.contention_slowdown,
            "rate_changes": s.rate_changes,
            "met_contention": s.met_contention,  # ran at some time in a contention component of >= 2 jobs
        })
    shared = getattr(result, "contention", "isolated") == "shared"
    return pd.DataFrame(rows, columns=JOB_COLUMNS + (CONTENTION_COLUMNS if shared else []))


def utilisation_table(result: SimulationResult) -> pd.DataFrame:
    """GPUs allocated over time, as steps: `allocated` holds from `time` to the next row."""
    df = pd.DataFrame(result.utilisation, columns=["time_s", "allocated_gpus"])
    df["utilisation_fraction"] = df["allocated_gpus"] / result.topology.gpus
    return df


def spine_table(result: SimulationResult) -> pd.DataFrame:
    """Spine utilisation over time (shared contention mode): from `time_s` to the next row, the busiest
    spine link's utilisation (step-averaged), the mean over the spine links in use, and the busiest link."""
    return pd.DataFrame(getattr(result, "spine_utilisation", []),
                        columns=["time_s", "spine_max_utilisation", "spine_mean_utilisation", "busiest_link"])


def mean_utilisation(result: SimulationResult) -> float:
    if result.makespan <= 0:
        return 0.0
    times = [t for t, _ in result.utilisation] + [result.makespan]
    busy = sum(a * (times[i + 1] - times[i]) for i, (_, a) in enumerate(result.utilisation))
    return busy / (result.topology.gpus * result.makespan)


def percentile(values, q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else float("nan")


def jobs_summary(jobs: pd.DataFrame, makespan: float, gpu_utilisation: float) -> dict:
    """The columns every run's results row has, from its jobs table, with one definition for rigid, elastic
    and Crius' jobs: counts, JCT and queueing statistics (a job's jct_s is NaN until it finishes, its
    queueing_delay_s until it first starts: queueing counts every job that started), the exposed
    communication per iteration averaged over finished jobs (comm_latency_mean_s; NaN where the loop does not
    split it), the makespan and the GPU utilisation (GPU-seconds held over GPUs x makespan, as the loop
    measures it), and restarts: every time a job resumes on GPUs after it was stopped or moved."""
    done = jobs.dropna(subset=["jct_s"])
    jct, queue = done["jct_s"].to_numpy(), jobs["queueing_delay_s"].dropna().to_numpy()
    comm = done["comm_seconds_per_iteration"] if "comm_seconds_per_iteration" in done else pd.Series(dtype=float)
    restarts = jobs["restarts"] if "restarts" in jobs else jobs["preemptions"] + jobs["migrations"]
    return {
        "jobs": int(len(jobs)),
        "finished": int(len(done)),
        "makespan_s": float(makespan),
        "jct_mean_s": float(jct.mean()) if len(jct) else float("nan"),
        "jct_median_s": percentile(jct, 50),
        "jct_p95_s": percentile(jct, 95),
        "jct_p99_s": percentile(jct, 99),
        "queueing_mean_s": float(queue.mean()) if len(queue) else float("nan"),
        "queueing_p95_s": percentile(queue, 95),
        "queueing_p99_s": percentile(queue, 99),
        "comm_latency_mean_s": float(comm.mean()) if len(done) else float("nan"),
        "gpu_utilisation_fraction": float(gpu_utilisation),
        "restarts_total": int(restarts.sum()),
        "restarts_per_job": float(restarts.mean()) if len(jobs) else float("nan"),
    }


def summary(result: SimulationResult, jobs: pd.DataFrame | None = None) -> dict:
    jobs = job_table(result) if jobs is None else jobs
    done = jobs.dropna(subset=["jct_s"])
    out = {
        "policy": result.policy,
        **jobs_summary(jobs, result.makespan, mean_utilisation(result)),
        "preemptions": int(jobs["preemptions"].sum()),
        "migrations": int(jobs["migrations"].sum()),
    }
    if "contention_slowdown" in jobs:
        slowdown = done["contention_slowdown"].to_numpy()
        out["contention_slowdown_mean"] = float(slowdown.mean()) if len(done) else float("nan")
        out["contention_slowdown_max"] = float(slowdown.max()) if len(done) else float("nan")
        spine = [row[1] for row in getattr(result, "spine_utilisation", [])]
        out["spine_utilisation_peak"] = max(spine, default=0.0)
        out.update(contention_summary(result, jobs, slowdown))
    answers = getattr(result, "answers", None)
    if answers is not None:  # which path answered the run's network questions (network/provenance.py)
        out.update(answers.columns())
    return out


def contention_summary(result: SimulationResult, jobs: pd.DataFrame, slowdown) -> dict:
    """Shared mode: the share of jobs that ever ran in a contention component of >= 2 jobs, the median
    and p99 of the finished jobs' contention slowdowns (JobState.contention_slowdown: their iterations'
    time at the shared rates over the same iterations alone), and the spine's busiest-link and mean-link
    utilisation averaged over time from 0 to the makespan (spine_table's steps)."""
    met = jobs["met_contention"].to_numpy(dtype=bool) if "met_contention" in jobs else np.zeros(len(jobs), bool)
    rows = getattr(result, "spine_utilisation", [])
    busiest = mean = 0.0
    if rows and result.makespan > 0:
        ends = [t for t, *_ in rows[1:]] + [result.makespan]
        spans = [max(0.0, end - row[0]) for row, end in zip(rows, ends)]
        busiest = sum(w * row[1] for w, row in zip(spans, rows)) / result.makespan
        mean = sum(w * row[2] for w, row in zip(spans, rows)) / result.makespan
    return {
        "met_contention_fraction": float(met.mean()) if len(met) else float("nan"),
        "contention_slowdown_p50": float(np.percentile(slowdown, 50)) if len(slowdown) else float("nan"),
        "contention_slowdown_p99": float(np.percentile(slowdown, 99)) if len(slowdown) else float("nan"),
        "spine_busiest_utilisation_mean": busiest,
        "spine_mean_utilisation_mean": mean,
    }


def summary_table(result: SimulationResult) -> pd.DataFrame:
    return pd.DataFrame([summary(result)])


def result_tables(result: SimulationResult) -> dict[str, pd.DataFrame]:
    """The tables of a run by name: jobs, summary (one row), utilisation, and spine in shared contention mode."""
    jobs = job_table(result)
    tables = {"jobs": jobs, "summary": pd.DataFrame([summary(result, jobs)]), "utilisation": utilisation_table(result)}
    if getattr(result, "contention", "isolated") == "shared":
        tables["spine"] = spine_table(result)
    return tables


def write_tables(result: SimulationResult, out_dir: str | Path,
                 formats: tuple[str, ...] = ("csv", "parquet")) -> dict[str, Path]:
    """Write jobs, summary and utilisation tables; returns the paths written."""
    return write_frames(result_tables(result), out_dir, formats)


def write_frames(tables: dict[str, pd.DataFrame], out_dir: str | Path,
                 formats: tuple[str, ...] = ("csv", "parquet")) -> dict[str, Path]:
    """Write each table as NAME.csv / NAME.parquet in out_dir (created), each file atomically; returns the paths
    written by file name."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, df in tables.items():
        for fmt in formats:
            if fmt not in ("csv", "parquet"):
                raise ValueError(f"unknown table format {fmt!r}")
            path = out_dir / f"{name}.{fmt}"
            tmp = path.with_suffix(path.suffix + ".tmp")
            try:
                if fmt == "csv":
                    df.to_csv(tmp, index=False, float_format="%.9g")
                else:
                    df.to_parquet(tmp, index=False)
                tmp.replace(path)  # atomic: a reader never sees half a table
            except OSError as exc:  # a full disk or a directory made read-only: no half table left behind
                tmp.unlink(missing_ok=True)
                done = f"; written before it: {', '.join(written)}" if written else ""
                raise InputError(str(path), None, f"cannot write ({exc.strerror or exc}){done}") from None
            written[f"{name}.{fmt}"] = path
    return written
