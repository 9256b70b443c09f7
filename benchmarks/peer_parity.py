"""Parity with the papers' own simulators: ArtISt under the artifact's rules, then its own models one at a time.

    PYTHONPATH=. python benchmarks/peer_parity.py [--artifact pollux] [--policies tiresias,optimus]
        [--backend ns3] [--jobs N] [--pop 100 --gen 100] [-j 2] [--tiny]

--tiny: seconds, for the test that keeps the script working (Tiresias+TunedJobs, the first 12 jobs, the
artifact preset and ArtISt's default only, analytical network).

The reference is the artifact's simulator run unmodified on its own workload (per job: submission,
completion, GPU-seconds, restarts), shipped as data with how it was run: workloads/pollux/parity/
(SOURCE.md there). ArtISt runs the same jobs through `artist sweep` (the user's path), under:

  1. artifact:        elastic.rules = the artifact's preset (artist/elastic/rules.py): measured step times,
                      the restart delay at first starts, the artifact's per-application pins;
  2. + network:       step times from measured compute + ArtISt's network model (--backend) of the placement;
  3. + free start:    the first start costs no restart delay;
  4. ArtISt default:  no artifact pins (ArtISt's own rules throughout).

Each step switches one of ArtISt's models on, so the table says what each changes. Printed per policy
and step: average and p99 JCT, makespan, GPU-hours and restarts per job, the average JCT against the
artifact's, and the per-job Spearman rank correlation of JCTs (scipy) against the artifact's. Figures are
printed; nothing is asserted (tests/test_peer_parity.py asserts the preset's parity on Tiresias+TunedJobs).
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
    spec: str         # the sweep spec's policy entry
    label: str        # its label in the results
    reference: str    # the artifact's per-job file


POLLUX = {
    "tiresias": Policy("tiresias", "{name: tiresias-pollux, params: {tuned_jobs: true}, label: Tiresias+TunedJobs}",
                       "Tiresias+TunedJobs", "tiresias-tunedjobs.csv"),
    "optimus": Policy("optimus", "{name: optimus-oracle, params: {tuned_jobs: true}, label: Optimus+Oracle+TunedJobs}",
                      "Optimus+Oracle+TunedJobs", "optimus-oracle-tunedjobs.csv"),
    "pollux": Policy("pollux", "{name: pollux, params: {p: -1, pop_size: POP, generations: GEN}, label: Pollux}",
                     "Pollux", "pollux.csv"),
}
STEPS = (  # (label, elastic.rules): ArtISt's own models switched on one at a time
    ("artifact", "pollux-artifact"),
    ("+ network", "{preset: pollux-artifact, step_time: network}"),
    ("+ free start", "{preset: pollux-artifact, step_time: network, first_start_delay: false}"),
    ("ArtISt default", "artist"),
)


def reference(path: Path, first: int | None) -> dict[str, dict]:
    """The artifact's per-job results: name -> {jct_s, gpu_seconds, restarts, completion_time_s}."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    if first is not None:  # the first N jobs by submission, as the sweep's `first:` takes them
        rows = rows[:first]
    return {r["name"]: {k: float(r[k]) for k in ("jct_s", "gpu_seconds", "restarts", "completion_time_s")}
            for r in rows}


def spec_text(policies, rules: str, backend: str, jobs: int | None, pop: int, gen: int) -> str:
    entries = "\n".join(f"  - {p.spec.replace('POP', str(pop)).replace('GEN', str(gen))}" for p in policies)
    first = f", first: {jobs}" if jobs else ""
    return (f"name: parity\nloop: elastic\ntopology: {REPO / 'topologies' / 'pollux-t4.yaml'}\n"
            f"elastic: {{applications: {REPO / 'workloads' / 'pollux'}, round_seconds: 60, rules: {rules}}}\n"
            f"policies:\n{entries}\n"
            f"workloads:\n  - {{spec: {REPO / 'workloads' / 'pollux' / 'workloads' / 'workload-6.csv'}, "
            f"label: workload-6{first}}}\n"
            f"seeds: [0]\ncomm: {{backend: {backend}}}\n")


def run_step(policies, rules: str, backend: str, jobs, pop, gen, workers: int, scratch: Path, name: str):
    """{policy label: {job: row of its jobs.csv}} of one `artist sweep` of the policies under these rules."""
    spec = scratch / f"{name}.yaml"
    spec.write_text(spec_text(policies, rules, backend, jobs, pop, gen))
    out = scratch / f"{name}-out"
    done = subprocess.run([sys.executable, "-m", "artist.cli", "sweep", str(spec), "--out", str(out), "-j",
                           str(workers), "--quiet"], cwd=scratch, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"peer_parity: the sweep of step {name!r} failed: {done.stderr.strip()[-2000:]}")
    found = {}
    for run in sorted((out / "runs").iterdir()):
        label = json.loads((run / "params.json").read_text())["axes"]["policy"]
        with open(run / "jobs.csv", newline="") as fh:
            found[label] = {r["job_id"]: r for r in csv.DictReader(fh)}
    return found


def row(jobs: dict[str, dict], ref: dict[str, dict]) -> dict:
    names = [n for n in ref if n in jobs]
    jct = np.array([float(jobs[n]["jct_s"]) for n in names])
    ref_jct = np.array([ref[n]["jct_s"] for n in names])
    finish = max(float(jobs[n]["finish_s"]) for n in names)
    return {"jobs": len(names), "avg_h": jct.mean() / 3600, "p99_h": np.percentile(jct, 99) / 3600,
            "makespan_h": finish / 3600,
            "gpu_h_per_job": np.mean([float(jobs[n]["gpu_seconds"]) for n in names]) / 3600,
            "restarts": np.mean([float(jobs[n]["restarts"]) for n in names]),
            "avg_vs_artifact": jct.mean() / ref_jct.mean(), "spearman": float(spearmanr(ref_jct, jct).correlation)}


def reference_row(ref: dict[str, dict]) -> dict:
    jct = np.array([r["jct_s"] for r in ref.values()])
    return {"jobs": len(ref), "avg_h": jct.mean() / 3600, "p99_h": np.percentile(jct, 99) / 3600,
            "makespan_h": max(r["completion_time_s"] for r in ref.values()) / 3600,
            "gpu_h_per_job": np.mean([r["gpu_seconds"] for r in ref.values()]) / 3600,
            "restarts": np.mean([r["restarts"] for r in ref.values()]), "avg_vs_artifact": 1.0, "spearman": 1.0}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--artifact", default="pollux", choices=("pollux",))
    ap.add_argument("--policies", default="tiresias,optimus", help=f"comma-separated: {', '.join(POLLUX)}")
    ap.add_argument("--backend", default="ns3", help="the network model of steps 2-4 (the shipped sweep's: ns3)")
    ap.add_argument("--jobs", type=int, default=None,
                    help="ArtISt runs the first N jobs only; the reference is the same jobs' results in the "
                         "artifact's whole run (so later jobs' absence is part of the difference)")
    ap.add_argument("--pop", type=int, default=100, help="Pollux's GA population (the artifact's 100)")
    ap.add_argument("--gen", type=int, default=100, help="Pollux's GA generations (the artifact's 100)")
    ap.add_argument("-j", "--workers", type=int, default=1)
    ap.add_argument("--tiny", action="store_true", help="seconds, for the test that keeps the script working")
    args = ap.parse_args(argv)
    steps = STEPS
    if args.tiny:
        args.policies, args.jobs, args.backend = "tiresias", 12, "analytical"
        steps = (STEPS[0], STEPS[-1])
    unknown = [p for p in args.policies.split(",") if p not in POLLUX]
    if unknown:
        ap.error(f"unknown policies {unknown}; known: {', '.join(POLLUX)}")
    policies = [POLLUX[p] for p in args.policies.split(",")]
    refs = {p.label: reference(REPO / "workloads" / "pollux" / "parity" / p.reference, args.jobs) for p in policies}
    table = {p.label: [("artifact's simulator", reference_row(refs[p.label]))] for p in policies}
    with tempfile.TemporaryDirectory() as tmp:
        for k, (label, rules) in enumerate(steps):
            found = run_step(policies, rules, args.backend if k else "analytical", args.jobs, args.pop, args.gen,
                             args.workers, Path(tmp), f"step{k}")
            for p in policies:
                table[p.label].append((f"ArtISt: {label}", row(found[p.label], refs[p.label])))
    print(f"Pollux artifact's workload 6 on 16 x 4 T4{f' (first {args.jobs} jobs)' if args.jobs else ''}; "
          f"network of steps 2-4: {args.backend}")
    print("| policy | simulator | avg JCT (h) | p99 JCT (h) | makespan (h) | GPU-h per job | restarts per job "
          "| avg JCT / artifact's | Spearman |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, rows in table.items():
        for name, r in rows:
            print(f"| {label} | {name} | {r['avg_h']:.3f} | {r['p99_h']:.2f} | {r['makespan_h']:.2f} | "
                  f"{r['gpu_h_per_job']:.2f} | {r['restarts']:.2f} | {r['avg_vs_artifact']:.3f} | "
                  f"{r['spearman']:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
