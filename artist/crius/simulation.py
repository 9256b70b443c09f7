"""A heterogeneous cluster of Crius jobs under Crius or a baseline, decided in 5-minute rounds, run by the
exact event loop (artist/simulator.py with artist/crius/exact.py and allocators.py).

    result = simulate(pools, jobs, "crius", depth=3)          # or "fcfs", "gandiva-crius", "elasticflow-ls", "gavel"
    result.summary()

Cadence (Crius sec. 7 / Fig. 16: 5-minute rounds, decisions on arrival and departure): at every round
boundary, if a job became schedulable or finished during the round, the policy decides once for all of
them (events batched per round, digest 3.3 [I]); within a round every job progresses exactly at its
true rate, finishing mid-round if it does, and its GPUs are free for the next decision.

Costs a job pays (the paper gives no figures for them: our choices, stated):
- profiling before its first decision: Crius' InitCells profile 2 plans per Cell of PROFILE_SECONDS each,
  one GPU per type in parallel, so the job waits (Cells per type) x 2 x 30 s; the baselines' DP profile of
  their counts, 30 s each (the authors' simulator uses 60 s per Cell and 30 s per DP configuration);
- a (re)start on a new allocation: CHECKPOINT_SECONDS (checkpoint-resume) unless it is the first start,
  plus, the first time the job runs on that (type, count), the plan search: Crius' half-space tuning
  (tuning.py), the baselines' full search; both at 30 s per trial.
The step time is the ground truth (truth.py) of the plan run, on the GPUs the job holds.

Reported cluster throughput uses one yardstick for every policy: each job's true samples/s divided by its
true samples/s on its own request (type, N_G) with the full-search plan on a packed placement.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from artist.crius.exact import CHECKPOINT_SECONDS, profile_seconds  # noqa: F401 - the loop's costs, named here too
from artist.crius.truth import GroundTruth
from artist.network.stack import CommSpec, fabric_for
from artist.policies.crius.catalogue import Catalogue
from artist.policies.crius.jobs import JobRun
from artist.policies.crius.registry import POLICIES, make_policy  # noqa: F401 - POLICIES: the loop's names
from artist.policies.crius.scheduler import SEARCH_DEPTH

ROUND_SECONDS = 300.0  # Crius' scheduling interval (sec. 7; the authors' SCHEDULING_INTERVAL = 300)
@dataclass
class Result:
    policy: str
    jobs: list[JobRun]
    makespan: float
    throughput: list[tuple[float, float]]  # per round: (time, sum of normalised true throughput)
    decision_seconds: list[tuple[float, int]]  # per decision: (wall seconds, jobs it placed or moved)
    # per Crius start: (Cell estimate, truth of the Cell's plan on the GPUs given, packed?) where packed =
    # on the fewest machines the count allows (the estimator's CommTable assumes packed groups)
    accuracy: list[tuple[float, float, bool]] = field(default_factory=list)
    # Crius only, per start: (true step of its tuned plan, true step of the full-search plan), same GPUs
    tuning: list[tuple[float, float]] = field(default_factory=list)
    profile_gpu_seconds: float = 0.0
    tuning_seconds: float = 0.0
    gpus: int = 0  # the cluster's GPUs
    gpu_seconds: float = 0.0  # GPU-seconds held by running jobs (restart waits included)
    comm_seconds: dict = field(default_factory=dict)  # job -> its iterations' exposed communication, seconds
    answers: object = None  # AnswerCounts of the ground truth's network questions (network/provenance.py)

    def summary(self) -> dict:
        done = [j for j in self.jobs if j.finish is not None]
        jct = [(j.finish - j.spec.arrival) / 3600 for j in done]
        queue = [(j.start - j.spec.arrival) / 3600 for j in self.jobs if j.start is not None]
        thr = [v for _, v in self.throughput]
        acc = [1 - abs(e - t) / t for e, t, _ in self.accuracy]
        acc_packed = [1 - abs(e - t) / t for e, t, packed in self.accuracy if packed]
        tune = [1 - (c - o) / o for c, o in self.tuning]
        placed = sum(n for _, n in self.decision_seconds)
        return {
            "policy": self.policy, "jobs": len(self.jobs), "finished": len(done),
            "avg_jct_h": statistics.fmean(jct) if jct else math.nan,
            "median_jct_h": statistics.median(jct) if jct else math.nan, "max_jct_h": max(jct, default=math.nan),
            "avg_queue_h": statistics.fmean(queue) if queue else math.nan,
            "avg_throughput": statistics.fmean(thr) if thr else 0.0, "peak_throughput": max(thr, default=0.0),
            "restarts_per_job": statistics.fmean(j.restarts for j in self.jobs) if self.jobs else 0.0,
            "makespan_h": self.makespan / 3600,
            "estimation_accuracy_avg": statistics.fmean(acc) if acc else math.nan,
            "estimation_accuracy_min": min(acc, default=math.nan),
            "estimation_accuracy_packed_avg": statistics.fmean(acc_packed) if acc_packed else math.nan,
            "estimation_accuracy_packed_min": min(acc_packed, default=math.nan),
            "packed_starts": len(acc_packed) / len(acc) if acc else math.nan,
            "tuning_accuracy_avg": statistics.fmean(tune) if tune else math.nan,
            "decision_s_per_job": sum(s for s, _ in self.decision_seconds) / max(placed, 1),
            "profile_gpu_h": self.profile_gpu_seconds / 3600, "tuning_h": self.tuning_seconds / 3600,
        }


def crius_fabrics(pools, comm: CommSpec = CommSpec()) -> dict:
    """Each pool's network model, as every ArtISt command builds it (default: analytical, ring,
    uncalibrated): what the policies' CommTables are profiled on and the ground truth is timed on."""
    return {t: fabric_for(comm, p.topology) for t, p in pools.items()}


def simulate(pools, jobs, policy: str, depth: int = SEARCH_DEPTH, catalogue: Catalogue | None = None,
             truth: GroundTruth | None = None, round_seconds: float = ROUND_SECONDS) -> Result:
    """One Crius run in the exact event loop (artist/simulator.py): Crius' jobs (artist/crius/exact.py)
    under `policy` deciding every `round_seconds` (artist/crius/allocators.py)."""
    from artist.crius.allocators import CriusRoundPolicy
    from artist.crius.exact import CriusWorkload
    from artist.simulator import SimulatorConfig
    from artist.simulator import simulate as run_loop

    catalogue = catalogue or Catalogue(pools, crius_fabrics(pools))
    truth = truth or GroundTruth(catalogue.fabrics)  # the loop's, never the policy's
    capacity = {t: p.gpus for t, p in pools.items()}
    chosen = make_policy(policy, catalogue, capacity, depth)
    workload = CriusWorkload(pools, jobs, catalogue, truth, chosen.tuned, round_seconds)
    adapter = CriusRoundPolicy(chosen, workload, round_seconds)
    topology = workload.layout.topology
    # no performance model: Crius' jobs are timed by the ground truth
    run_loop(topology, [], {}, adapter, None,
             SimulatorConfig(round_interval_s=round_seconds, restore_seconds=0.0), managed=workload)
    records = workload.records
    return Result(chosen.name, workload.runs, max(j.finish for j in workload.runs), records.throughput,
                  adapter.decision_seconds, records.accuracy, records.tuning, records.profile_gpu_seconds,
                  records.tuning_seconds, sum(capacity.values()), records.gpu_seconds, records.comm_seconds,
                  truth.answers)
