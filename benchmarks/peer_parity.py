"""Parity with the papers' own simulators: ArtISt under the artifact's rules, then its own models one at a time.

    PYTHONPATH=. python benchmarks/peer_parity.py [--artifact pollux|sia] [--policies tiresias,optimus]
        [--backend ns3] [--jobs N] [--pop 100 --gen 100] [-j 2] [--tiny]

--tiny: seconds, for the test that keeps the script working (Pollux's Tiresias+TunedJobs, the first 12 jobs,
the artifact preset and ArtISt's default only, analytical network).

The reference is the artifact's simulator run unmodified on its own workloads (per job: submission,
completion, GPU-seconds, restarts), shipped as data with how it was run: workloads/pollux/parity/ and
workloads/sia/parity/ (SOURCE.md there). ArtISt runs the same jobs through `artist sweep` (the user's
path), under:

  1. artifact:        elastic.rules = the artifact's preset (artist/elastic/rules.py): measured step times,
                      the restart delay at first starts, the Pollux artifact's NCF pin, the Sia artifact's
                      goodput slowdowns;
  2. + network:       step times from measured compute + ArtISt's network model (--backend) of the placement;
  3. + free start:    the first start costs no restart delay;
  4. ArtISt default:  ArtISt's own rules throughout (no pin, no slowdown), and its own configuration of a
                      policy the artifact ran otherwise (Gavel: steps 1-3 run it as the Sia artifact does,
                      Policy.artifact_spec).

Each step switches one of ArtISt's models on, so the table says what each changes. Printed per policy,
workload and step: average and p99 JCT (numpy's percentile), makespan, GPU-hours (held; for the Sia
artifact by whole rounds, its own accounting) and restarts per job, the average JCT against the artifact's,
and the per-job Spearman rank correlation of JCTs (scipy) against the artifact's; where shipped, the same two
figures for the artifact's own runs on the workload with every submission moved by less than 10 s (its noise
floor: how much of a per-job rank difference a change of no physical meaning makes). Figures are printed;
nothing is asserted (tests/test_peer_parity.py asserts the Pollux preset's parity on Tiresias+TunedJobs).
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Policy:
    key: str          # --policies name
    spec: str         # the sweep spec's policy entry (ArtISt's configuration of the policy)
    label: str        # its label in the results
    reference: str    # the artifact's per-job file ({workload} filled in)
    round_s: float = 60.0  # its round (the Sia artifact bills GPU-hours by whole rounds)
    artifact_spec: str = ""  # the policy configured as the artifact runs it, for every step but ArtISt's default
    # the artifact's own runs on the same workload with every submission moved by < 10 s ({seed} filled in):
    # how far its per-job ranks move under a change of no physical meaning (its noise floor)
    jittered: tuple = ()

    def entry(self, own: bool) -> str:
        return self.spec if own or not self.artifact_spec else self.artifact_spec


@dataclass(frozen=True)
class Artifact:
    title: str
    topology: str
    applications: str
    preset: str
    workloads: tuple      # (label, workload CSV under the repository)
    policies: dict        # key -> Policy
    reference_dir: str
    steps: tuple          # (label, elastic.rules): ArtISt's own models switched on one at a time
    whole_rounds: bool    # GPU-hours billed by whole rounds, as the artifact reports them


ARTIFACTS = {
    "pollux": Artifact(
        "Pollux artifact's simulator, workload 6, 16 x 4 T4", "topologies/pollux-t4.yaml", "workloads/pollux",
        "pollux-artifact", (("workload-6", "workloads/pollux/workloads/workload-6.csv"),),
        {"tiresias": Policy("tiresias", "{name: tiresias-pollux, params: {tuned_jobs: true}, "
                                        "label: Tiresias+TunedJobs}", "Tiresias+TunedJobs", "tiresias-tunedjobs.csv"),
         "optimus": Policy("optimus", "{name: optimus-oracle, params: {tuned_jobs: true}, "
                                      "label: Optimus+Oracle+TunedJobs}",
                           "Optimus+Oracle+TunedJobs", "optimus-oracle-tunedjobs.csv"),
         "pollux": Policy("pollux", "{name: pollux, params: {p: -1, pop_size: POP, generations: GEN}, label: Pollux}",
                          "Pollux", "pollux.csv")},
        "workloads/pollux/parity",
        (("artifact", "pollux-artifact"),
         ("+ network", "{preset: pollux-artifact, step_time: network}"),
         ("+ free start", "{preset: pollux-artifact, step_time: network, first_start_delay: false}"),
         ("ArtISt default", "artist")),
        whole_rounds=False),
    "sia": Artifact(
        "Sia artifact's simulator, 6 x 4 T4 + 3 x 8 RTX + 2 x 8 A100", "topologies/clusters/sia-hetero-64.yaml",
        "workloads/sia", "sia-artifact",
        (("philly-1", "workloads/sia/workloads/philly/workload-1.csv"),
         ("helios-1", "workloads/sia/workloads/saturn/workload-1.csv")),
        {"sia": Policy("sia", "{name: sia, params: {p: -0.5, lam: 1.1}, label: Sia}", "Sia", "{workload}.sia.csv",
                       jittered=("{workload}.sia.jitter-0.csv", "{workload}.sia.jitter-1.csv")),
         # the artifact's Gavel: the raw sum of iterations per second (each divided by the job's slowdown), its
         # own lease accounting and worker assignment, an interior-point solver (cvxpy + ECOS there)
         "gavel": Policy("gavel", "{name: gavel, params: {tuned_jobs: true}, label: Gavel+TunedJobs}",
                         "Gavel+TunedJobs", "{workload}.gavel-tunedjobs.csv", round_s=360.0,
                         artifact_spec="{name: gavel, params: {tuned_jobs: true, normalise: false, throughput: "
                                       "iterations, leases: sia-artifact, solver: interior}, label: Gavel+TunedJobs}")},
        "workloads/sia/parity",
        (("artifact", "sia-artifact"),
         ("+ network", "{preset: sia-artifact, step_time: network}"),
         ("+ free start", "{preset: sia-artifact, step_time: network, first_start_delay: false}"),
         ("ArtISt default", "artist")),
        whole_rounds=True),
}


def reference(path: Path, first: int | None, whole_rounds: bool) -> dict[str, dict]:
    """The artifact's per-job results: name -> {jct_s, gpu_seconds, restarts, completion_time_s}."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    if first is not None:  # the first N jobs by submission, as the sweep's `first:` takes them
        rows = rows[:first]
    gpu = "gpu_seconds_whole_rounds" if whole_rounds else "gpu_seconds"
    return {r["name"]: {"jct_s": float(r["jct_s"]), "gpu_seconds": float(r[gpu]), "restarts": float(r["restarts"]),
                        "completion_time_s": float(r["completion_time_s"])} for r in rows}


def spec_text(artifact: Artifact, policies, rules: str, backend: str, jobs: int | None, pop: int, gen: int,
              own: bool = True) -> str:
    entries = "\n".join(f"  - {p.entry(own).replace('POP', str(pop)).replace('GEN', str(gen))}" for p in policies)
    first = f", first: {jobs}" if jobs else ""
    workloads = "\n".join(f"  - {{spec: {REPO / path}, label: {label}{first}}}" for label, path in artifact.workloads)
    return (f"name: parity\nloop: elastic\ntopology: {REPO / artifact.topology}\n"
            f"elastic: {{applications: {REPO / artifact.applications}, round_seconds: 60, rules: {rules}}}\n"
            f"policies:\n{entries}\nworkloads:\n{workloads}\nseeds: [0]\ncomm: {{backend: {backend}}}\n")


def run_step(artifact: Artifact, policies, rules: str, backend: str, jobs, pop, gen, workers: int, scratch: Path,
             name: str, own: bool = True):
    """{(policy label, workload label): {job: row of its jobs.csv, with whole-round GPU-seconds}} of one
    `artist sweep` of the policies under these rules."""
    spec = scratch / f"{name}.yaml"
    spec.write_text(spec_text(artifact, policies, rules, backend, jobs, pop, gen, own))
    out = scratch / f"{name}-out"
    done = subprocess.run([sys.executable, "-m", "artist.cli", "sweep", str(spec), "--out", str(out), "-j",
                           str(workers), "--quiet"], cwd=scratch, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"peer_parity: the sweep of step {name!r} failed: {done.stderr.strip()[-2000:]}")
    rounds = {p.label: p.round_s for p in policies}
    found = {}
    for run in sorted((out / "runs").iterdir()):
        axes = json.loads((run / "params.json").read_text())["axes"]
        with open(run / "jobs.csv", newline="") as fh:
            jobs_of = {r["job_id"]: dict(r) for r in csv.DictReader(fh)}
        with open(run / "timeseries.csv", newline="") as fh:  # per job and round held: its GPUs
            for r in csv.DictReader(fh):
                job = jobs_of.get(r["job_id"])
                if job is not None:
                    job["gpu_seconds_whole_rounds"] = (job.get("gpu_seconds_whole_rounds", 0.0)
                                                       + float(r["gpus"]) * rounds[axes["policy"]])
        found[(axes["policy"], axes["workload"])] = jobs_of
    return found


def row(jobs: dict[str, dict], ref: dict[str, dict], whole_rounds: bool) -> dict:
    names = [n for n in ref if n in jobs]
    jct = np.array([float(jobs[n]["jct_s"]) for n in names])
    ref_jct = np.array([ref[n]["jct_s"] for n in names])
    finish = max(float(jobs[n]["finish_s"]) for n in names)
    gpu = "gpu_seconds_whole_rounds" if whole_rounds else "gpu_seconds"
    return {"jobs": len(names), "avg_h": jct.mean() / 3600, "p99_h": np.percentile(jct, 99) / 3600,
            "makespan_h": finish / 3600,
            "gpu_h_per_job": np.mean([float(jobs[n].get(gpu, 0.0)) for n in names]) / 3600,
            "restarts": np.mean([float(jobs[n]["restarts"]) for n in names]),
            "avg_vs_artifact": jct.mean() / ref_jct.mean(), "spearman": float(spearmanr(ref_jct, jct).correlation)}


def jittered_row(path: Path, ref: dict[str, dict]) -> dict:
    """The artifact's run on jittered arrivals against its run on the workload as published: average JCT
    ratio and per-job rank correlation (the other columns are not recorded for these runs)."""
    with open(path, newline="") as fh:
        jct = {r["name"]: float(r["jct_s"]) for r in csv.DictReader(fh)}
    names = [n for n in ref if n in jct]
    mine, theirs = np.array([jct[n] for n in names]), np.array([ref[n]["jct_s"] for n in names])
    return {"jobs": len(names), "avg_h": mine.mean() / 3600, "p99_h": np.percentile(mine, 99) / 3600,
            "avg_vs_artifact": mine.mean() / theirs.mean(), "spearman": float(spearmanr(theirs, mine).correlation)}


def reference_row(ref: dict[str, dict]) -> dict:
    jct = np.array([r["jct_s"] for r in ref.values()])
    return {"jobs": len(ref), "avg_h": jct.mean() / 3600, "p99_h": np.percentile(jct, 99) / 3600,
            "makespan_h": max(r["completion_time_s"] for r in ref.values()) / 3600,
            "gpu_h_per_job": np.mean([r["gpu_seconds"] for r in ref.values()]) / 3600,
            "restarts": np.mean([r["restarts"] for r in ref.values()]), "avg_vs_artifact": 1.0, "spearman": 1.0}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--artifact", default="pollux", choices=sorted(ARTIFACTS))
    ap.add_argument("--policies", default=None, help="comma-separated (default: all but Pollux's costly GA): "
                    + "; ".join(f"{k}: {', '.join(a.policies)}" for k, a in ARTIFACTS.items()))
    ap.add_argument("--backend", default="ns3", help="the network model of steps 2-4 (the shipped sweeps': ns3)")
    ap.add_argument("--jobs", type=int, default=None,
                    help="ArtISt runs the first N jobs only; the reference is the same jobs' results in the "
                         "artifact's whole run (so later jobs' absence is part of the difference)")
    ap.add_argument("--pop", type=int, default=100, help="Pollux's GA population (the artifact's 100)")
    ap.add_argument("--gen", type=int, default=100, help="Pollux's GA generations (the artifact's 100)")
    ap.add_argument("-j", "--workers", type=int, default=1)
    ap.add_argument("--tiny", action="store_true", help="seconds, for the test that keeps the script working")
    args = ap.parse_args(argv)
    artifact = ARTIFACTS[args.artifact]
    steps = artifact.steps
    if args.policies is None:
        args.policies = ",".join(k for k in artifact.policies if k != "pollux")
    if args.tiny:
        artifact = ARTIFACTS["pollux"]
        args.policies, args.jobs, args.backend = "tiresias", 12, "analytical"
        steps = (artifact.steps[0], artifact.steps[-1])
    unknown = [p for p in args.policies.split(",") if p not in artifact.policies]
    if unknown:
        ap.error(f"unknown policies {unknown} for {args.artifact}; known: {', '.join(artifact.policies)}")
    policies = [artifact.policies[p] for p in args.policies.split(",")]
    keys = [(p.label, w) for p in policies for w, _ in artifact.workloads]
    refs = {(p.label, w): reference(REPO / artifact.reference_dir / p.reference.format(workload=w), args.jobs,
                                    artifact.whole_rounds) for p in policies for w, _ in artifact.workloads}
    table = {k: [("artifact's simulator", reference_row(refs[k]))] for k in keys}
    if not args.jobs:  # the jittered runs are whole workloads
        for p in policies:
            for w, _ in artifact.workloads:
                for k, name in enumerate(p.jittered):
                    path = REPO / artifact.reference_dir / name.format(workload=w)
                    if path.is_file():
                        table[(p.label, w)].append((f"artifact's simulator, arrivals moved < 10 s (seed {k})",
                                                    jittered_row(path, refs[(p.label, w)])))
    with tempfile.TemporaryDirectory() as tmp:
        for k, (label, rules) in enumerate(steps):
            found = run_step(artifact, policies, rules, args.backend if k else "analytical", args.jobs, args.pop,
                             args.gen, args.workers, Path(tmp), f"step{k}", own=k == len(steps) - 1)
            for key in keys:
                table[key].append((f"ArtISt: {label}", row(found[key], refs[key], artifact.whole_rounds)))
    billing = "by whole rounds, as the artifact reports them" if artifact.whole_rounds else "held"
    print(f"{artifact.title}{f' (first {args.jobs} jobs)' if args.jobs else ''}; network of steps 2-4: "
          f"{args.backend}; GPU-hours {billing}")
    print("| policy | workload | simulator | avg JCT (h) | p99 JCT (h) | makespan (h) | GPU-h per job "
          "| restarts per job | avg JCT / artifact's | Spearman |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    def cell(r: dict, key: str, digits: int) -> str:
        return f"{r[key]:.{digits}f}" if key in r else "-"

    for (label, workload), rows in table.items():
        for name, r in rows:
            print(f"| {label} | {workload} | {name} | {cell(r, 'avg_h', 3)} | {cell(r, 'p99_h', 2)} | "
                  f"{cell(r, 'makespan_h', 2)} | {cell(r, 'gpu_h_per_job', 2)} | {cell(r, 'restarts', 2)} | "
                  f"{r['avg_vs_artifact']:.3f} | {r['spearman']:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
