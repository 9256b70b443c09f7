"""What an elastic run measured, as tables: per job, per job and round, per round for the cluster, and
finish-time fairness (Pollux section 5.2-5.3, Fig. 5 and 7; Sia section 6).

- job_table: arrival, first start, finish, JCT, queueing delay, restarts, GPU-seconds, the fair share
  and isolated JCT, and rho.
- job_timeseries: per job and 60 s round it held GPUs: GPUs, total batch, statistical efficiency (at the
  round's start) and goodput (M0-equivalent samples per second over the round: the progress the job
  made x M0 / round length; a restarting round counts as 0).
- cluster_timeseries: per round: jobs in the system, jobs running, GPUs allocated, the mean statistical
  efficiency over running jobs (Pollux Fig. 5 bottom) and the GPU-weighted mean.
- summary: the sweep's results row (JCT mean / median / p95 / p99, makespan, queueing, utilisation,
  restarts per job, rho mean / p99 / max and the unfair fraction rho > 1); with shared contention
  (artist/elastic/contention.py) the jobs' contention_slowdown and its mean / max, as the rigid loop.

Finish-time fairness (Themis, Mahajan et al. NSDI'20; Pollux section 5.3): rho_j = JCT_shared /
JCT_isolated, where JCT_isolated is the job's completion time alone on an equal partition of the
cluster. Pollux says only "isolated and equally-partitioned"; we take Sia's reading of the share (digest
section 3: N_g / N_avg GPUs with N_avg the average contention): N_avg is the mean number of jobs in the
system (arrived, not finished) over the rounds of the job's life, and the share is N_gpus / N_avg GPUs.
The isolated job runs the best configuration its ground truth allows on that share, epoch by epoch (the
measured compute + ArtISt's network for each consolidated placement, the replayed efficiency, every total
batch the job may use); no restarts. Between whole GPU counts its speed is interpolated linearly (a
fractional share is time-sharing of one more GPU), below one GPU it is that fraction of one GPU. The same
isolated JCT serves every policy, so rho compares policies on one scale [I]. The heterogeneous form
(Sia; digest section 3) rho = sum_g (N_g / N_total) rho_g is heterogeneous_rho; with one GPU type it is
rho itself.
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np
import pandas as pd

from artist.metrics import jobs_summary, percentile
from artist.elastic.spec import candidate_batches, clamp_local_batch, split_batch

HOUR = 3600.0


def heterogeneous_rho(rho_by_type: Mapping[str, float], gpus_by_type: Mapping[str, int]) -> float:
    """Sia's heterogeneous finish-time fairness: sum over GPU types g of (N_g / N_total) x rho_g."""
    missing = sorted(set(rho_by_type) - set(gpus_by_type))
    if missing:
        raise ValueError(f"no GPU count for type(s) {', '.join(missing)}")
    total = sum(gpus_by_type[g] for g in rho_by_type)
    if total <= 0:
        raise ValueError("the GPU types of rho_by_type hold no GPUs")
    return float(sum(gpus_by_type[g] / total * rho for g, rho in rho_by_type.items()))


class IsolatedRates:
    """Ground-truth progress rate (M0-equivalent steps per second) of an application alone on k GPUs in
    each epoch, at its best total batch, memoised per (application, k)."""

    def __init__(self, apps, timer, gpu_type: str, gpus_per_node: int):
        self.apps, self.timer, self.gpu_type, self.gpus_per_node = apps, timer, gpu_type, gpus_per_node
        self._memo: dict[tuple[str, int], np.ndarray] = {}

    def per_epoch(self, app_name: str, k: int) -> np.ndarray:
        key = (app_name, k)
        if key not in self._memo:
            app, spec = self.apps[app_name]
            limit = spec.limit(self.gpu_type)
            replay = app.replay
            per_node = [self.gpus_per_node] * (k // self.gpus_per_node) + ([k % self.gpus_per_node]
                                                                           if k % self.gpus_per_node else [])
            best = np.zeros(replay.epochs)
            for batch in candidate_batches(k, spec, limit):
                split = split_batch(batch, k, limit, spec.initial_batch)
                if split is None:
                    continue
                m, s = split
                m = clamp_local_batch(m, s, k, spec, limit)
                iter_s, _ = self.timer.seconds(app_name, self.gpu_type, per_node, m, s)
                used = float(np.clip(k * m * (s + 1), replay.batches[0], replay.batches[-1]))
                rate = replay.gains(used) / iter_s
                best = np.maximum(best, rate)
            self._memo[key] = best
        return self._memo[key]

    def seconds(self, app_name: str, share: float) -> float:
        """Completion time from scratch alone on `share` GPUs (share > 0, possibly fractional)."""
        if not share > 0:
            raise ValueError(f"a fair share must be positive, got {share}")
        app, spec = self.apps[app_name]
        replay = app.replay
        usable = max(1, min(math.floor(share), spec.max_gpus))
        # the best over k' <= k GPUs: more GPUs than a job can use never slow it down alone
        rates = [self.per_epoch(app_name, k) for k in range(1, usable + 2 if share > usable else usable + 1)]
        rates = np.maximum.accumulate(np.stack(rates), axis=0)
        if share < 1:
            rate = rates[0] * share
        elif share > usable and usable < spec.max_gpus:
            rate = rates[usable - 1] + (share - usable) * (rates[usable] - rates[usable - 1])
        else:
            rate = rates[usable - 1]
        widths = np.diff(np.concatenate([[0.0], replay.epoch_end_progress]))
        return float(np.sum(widths / rate))


def _contention(result, round_seconds: float) -> tuple[np.ndarray, np.ndarray]:
    """(round start times, jobs in the system at each) from arrivals and finishes."""
    arrivals = np.array([j.spec.arrival for j in result.jobs])
    finishes = np.array([j.finish for j in result.jobs])
    times = np.arange(0.0, result.makespan + round_seconds, round_seconds)
    in_system = ((arrivals[None, :] <= times[:, None]) & (finishes[None, :] > times[:, None])).sum(axis=1)
    return times, in_system


def job_table(result, isolated: IsolatedRates, total_gpus: int, round_seconds: float) -> pd.DataFrame:
    times, in_system = _contention(result, round_seconds)
    rows = []
    for j in result.jobs:
        life = (times >= j.spec.arrival) & (times < j.finish)  # the rounds the job was in the system
        n_avg = float(in_system[life].mean()) if life.any() else 1.0
        share = total_gpus / max(n_avg, 1.0)
        iso = isolated.seconds(j.spec.app, share)
        jct = j.finish - j.spec.arrival
        first = j.gpu_rounds[0][0] if j.gpu_rounds else math.nan
        rows.append({
            "job_id": j.spec.job_id, "application": j.spec.app, "arrival_s": j.spec.arrival,
            "first_start_s": first, "finish_s": j.finish, "jct_s": jct,
            "queueing_delay_s": max(first - j.spec.arrival, 0.0) if j.gpu_rounds else math.nan,
            "restarts": j.progress.restarts, "gpu_seconds": j.attained,
            "gpus_requested": j.spec.gpus, "batch_requested": j.spec.batch,
            "mean_gpus_held": float(np.mean([r[1] for r in j.gpu_rounds])) if j.gpu_rounds else 0.0,
            "comm_seconds_per_iteration": j.comm_seconds_per_iteration,
            "contention_mean": n_avg, "fair_share_gpus": share, "isolated_jct_s": iso, "ftf_rho": jct / iso,
            # shared contention only (isolated tables keep their columns): the rigid loop's column name
            **({"contention_slowdown": j.contention_slowdown} if getattr(result, "contention", "") == "shared" else {}),
        })
    return pd.DataFrame(rows)


def job_timeseries(result, round_seconds: float) -> pd.DataFrame:
    rows = []
    for j in result.jobs:
        m0 = j.app.replay.initial_batch
        for (t, gpus, batch, eff), progress in zip(j.gpu_rounds, j.round_progress):
            rows.append({"time_s": t, "job_id": j.spec.job_id, "gpus": gpus, "batch": batch,
                         "statistical_efficiency": eff, "goodput_m0_samples_per_s": progress * m0 / round_seconds})
    df = pd.DataFrame(rows, columns=["time_s", "job_id", "gpus", "batch", "statistical_efficiency",
                                     "goodput_m0_samples_per_s"])
    return df.sort_values(["time_s", "job_id"], kind="stable").reset_index(drop=True)


def cluster_timeseries(result, series: pd.DataFrame, total_gpus: int, round_seconds: float) -> pd.DataFrame:
    times, in_system = _contention(result, round_seconds)
    by_time = series.groupby("time_s")
    running = by_time["job_id"].count()
    gpus = by_time["gpus"].sum()
    eff = by_time["statistical_efficiency"].mean()
    weighted = (series["gpus"] * series["statistical_efficiency"]).groupby(series["time_s"]).sum() / gpus
    out = pd.DataFrame({"time_s": times, "jobs_in_system": in_system})
    out["jobs_running"] = out["time_s"].map(running).fillna(0).astype(int)
    out["allocated_gpus"] = out["time_s"].map(gpus).fillna(0).astype(int)
    out["utilisation_fraction"] = out["allocated_gpus"] / total_gpus
    out["efficiency_mean"] = out["time_s"].map(eff)
    out["efficiency_gpu_weighted"] = out["time_s"].map(weighted)
    return out


def summary(result, jobs: pd.DataFrame, cluster: pd.DataFrame, total_gpus: int, round_seconds: float) -> dict:
    rho = jobs["ftf_rho"]
    # GPU-seconds held per round, the last round cut at the makespan
    span = np.clip(result.makespan - cluster["time_s"].to_numpy(), 0.0, round_seconds)
    held = cluster["allocated_gpus"].to_numpy() * span
    weighted = cluster["efficiency_gpu_weighted"].to_numpy()
    has = ~np.isnan(weighted) & (held > 0)
    utilisation = float(held.sum() / (total_gpus * result.makespan)) if result.makespan else 0.0
    common = jobs_summary(jobs, result.makespan, utilisation)  # every loop's columns (artist/metrics.py)
    return {
        "jobs": common.pop("jobs"), "finished": common.pop("finished"), "rounds": int(result.rounds), **common,
        "efficiency_gpu_weighted_mean": float(np.average(weighted[has], weights=held[has])) if has.any() else math.nan,
        "ftf_rho_mean": float(rho.mean()), "ftf_rho_p99": percentile(rho, 99), "ftf_rho_max": float(rho.max()),
        "ftf_unfair_fraction": float((rho > 1).mean()),
        # shared contention only: the rigid loop's summary columns (artist/metrics.py)
        **({"contention_slowdown_mean": float(jobs["contention_slowdown"].mean()),
            "contention_slowdown_max": float(jobs["contention_slowdown"].max())}
           if "contention_slowdown" in jobs else {}),
    }
