"""Every policy of the suite (`artist list policies`) runs a generated workload and a trace to the end, in a
sweep spec and in `artist simulate`, on every shipped cluster: a regression guard of the listing's claims
(docs/pages/decisions/0001-one-loop.md)."""

from pathlib import Path

import pandas as pd
import pytest

from artist.cli import main
from artist.policies.suite import CRIUS, ELASTIC, EXACT, all_policies

ROOT = Path(__file__).resolve().parent.parent
GENERATOR = "poisson:n=5,interarrival=120,gpus=1|2|4,models=resnet18|bert_large|alexnet"
TRACE = ROOT / "workloads" / "traces" / "helios_sample.csv"  # a Helios-format trace (10 jobs, 1-8 GPUs)
PHILLY = ROOT / "tests" / "data" / "traces" / "philly_cluster_job_log.json"  # Crius' jobs take its arrivals

# the smallest settings that still exercise each policy (Pollux's genetic search shortened)
PARAMS = {(ELASTIC, "pollux"): "{pop_size: 6, generations: 3}", (ELASTIC, "gavel"): "{tuned_jobs: true}"}


def _builtin():
    from artist.policies.registry import builtin_policy_names

    exact = set(builtin_policy_names())
    return [(p.name, loop) for p in all_policies() for loop in p.loops if loop != EXACT or p.name in exact]


def _spec(loop: str, name: str, workload: str) -> str:
    params = PARAMS.get((loop, name))
    policy = f"{{name: {name}, params: {params}, label: p}}" if params else f"{{name: {name}, label: p}}"
    if loop == EXACT:
        text = "batch:n=6,gpus=1|2|4|8,min_iter=200,max_iter=2000" if workload == "generator" else str(TRACE)
        return (f"name: every\ntopology: {ROOT / 'topologies/dally-3tier.yaml'}\nracks: [1]\npolicies: [{policy}]\n"
                f"workloads:\n  - {{spec: '{text}', label: w}}\nseeds: [0]\ncomm: analytical\n")
    if loop == ELASTIC:
        text = GENERATOR if workload == "generator" else str(TRACE)
        return (f"name: every\nloop: elastic\ntopology: {ROOT / 'topologies/pollux-t4.yaml'}\npolicies: [{policy}]\n"
                f"workloads:\n  - {{spec: '{text}', label: w}}\nseeds: [0]\ncomm: analytical\n")
    assert loop == CRIUS
    text = f"crius:jobs=4,philly_log={PHILLY}" if workload == "trace" else "crius:jobs=4,arrivals_per_hour=20"
    policy = f"{{name: {name}, params: {{depth: 1}}}}" if name == "crius" else name
    return (f"name: every\ntopology: crius-testbed\nworkloads: ['{text}']\nseeds: [1]\npolicies: [{policy}]\n")


@pytest.mark.parametrize("workload", ["generator", "trace"])
@pytest.mark.parametrize("name, loop", _builtin())
def test_a_sweep_runs_the_policy_on_a_generated_workload_and_a_trace_to_the_end(tmp_path, monkeypatch, name, loop,
                                                                                 workload):
    (tmp_path / "every.yaml").write_text(_spec(loop, name, workload))
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "every.yaml", "-j", "1", "--quiet", "--no-plots", "--no-cache"]) == 0
    results = pd.read_csv(tmp_path / "results/every/results.csv")
    assert len(results) == 1 and results.jobs.iloc[0] > 0 and (results.finished == results.jobs).all()
    # one metrics module: every kind of job's row has every loop's columns (artist/metrics.py jobs_summary),
    # measured, not left empty, and which path answered its network questions
    common = ["jct_mean_s", "jct_p95_s", "queueing_mean_s", "queueing_p99_s", "comm_latency_mean_s",
              "gpu_utilisation_fraction", "restarts_total", "restarts_per_job", "answers_analytical"]
    row = results.iloc[0]
    assert all(pd.notna(row[c]) for c in common), row[[c for c in common if c in row]]
    assert 0 < row["gpu_utilisation_fraction"] <= 1 and row["comm_latency_mean_s"] >= 0


def test_the_suite_is_every_papers_policy_and_baseline():
    assert {name for name, _ in _builtin()} == {
        "fifo", "gandiva", "tiresias", "dally", "dally-manual", "dally-nowait", "dally-fullyconsolidated",  # Dally
        "pollux", "optimus-oracle", "tiresias-pollux", "sia", "gavel",  # Pollux and Sia and their baselines
        "crius", "fcfs", "elasticflow-ls", "gandiva-crius"}  # Crius and its baselines (gavel above)
    assert {loop for _, loop in _builtin()} == {EXACT, ELASTIC, CRIUS}
    # every policy runs the elastic loop's jobs, so every cluster file and trace the elastic loop reads
    assert {name for name, loop in _builtin() if loop == ELASTIC} == {name for name, _ in _builtin()}


def _simulate_args(name: str) -> list[str]:
    from artist.commands.simulate_jobs import dialect_of

    args = ["simulate", "--policy", name, "--quiet", "--no-cache"]
    dialect = dialect_of(name, "dally-3tier")
    if dialect == "crius":
        return args + ["--topology", "crius-testbed", "--workload", "crius:jobs=4,arrivals_per_hour=20"] + (
            ["--policy-param", "depth=1"] if name == "crius" else [])
    if name == "pollux":
        args += ["--policy-param", "pop_size=6", "--policy-param", "generations=3"]
    if name == "gavel":
        args += ["--policy-param", "tuned_jobs=true"]
    return args + ["--racks", "1", "--workload", GENERATOR]


@pytest.mark.parametrize("name", sorted({name for name, _ in _builtin()}))  # not what other tests register
def test_artist_simulate_runs_every_policy_of_the_listing(tmp_path, capsys, name):
    assert main(_simulate_args(name) + ["--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert f"policy {name}" in printed and (tmp_path / "jobs.csv").is_file()
    jobs = pd.read_csv(tmp_path / "jobs.csv")
    assert len(jobs) > 0 and jobs.filter(like="finish").notna().all().all()


@pytest.mark.parametrize("name", ["crius", "fcfs", "elasticflow-ls", "gandiva-crius", "gavel"])
def test_artist_simulate_runs_crius_policies_on_crius_cluster(tmp_path, capsys, name):
    args = ["simulate", "--policy", name, "--quiet", "--no-cache", "--topology", "crius-testbed", "--workload",
            "crius:jobs=4,arrivals_per_hour=20", "--out", str(tmp_path)]
    args += ["--policy-param", "depth=1"] if name == "crius" else []
    assert main(args) == 0
    jobs = pd.read_csv(tmp_path / "jobs.csv")
    assert len(jobs) == 4 and jobs.filter(like="finish").notna().all().all()


def test_crius_jobs_run_on_the_dally_cluster(tmp_path, capsys):
    """Crius' LLM jobs on any topology whose GPU type has datasheet figures (here Dally's A100 cluster)."""
    assert main(["simulate", "--policy", "crius", "--topology", "dally-3tier", "--quiet", "--no-cache", "--workload",
                 "crius:jobs=4,arrivals_per_hour=20", "--policy-param", "depth=1", "--out", str(tmp_path)]) == 0
    assert "Crius' jobs" in capsys.readouterr().out
    jobs = pd.read_csv(tmp_path / "jobs.csv")
    assert len(jobs) == 4 and jobs.filter(like="finish").notna().all().all()


@pytest.mark.parametrize("policy, workload", [("sia", GENERATOR), ("crius", "crius:jobs=4,arrivals_per_hour=20")])
def test_a_topology_of_mixed_racks_is_a_pool_per_gpu_type(tmp_path, policy, workload):
    """hetero-a100-v100 (racks alternate A100 and V100) under policies of pools: one pool of each type."""
    args = ["simulate", "--policy", policy, "--topology", "hetero-a100-v100", "--quiet", "--no-cache", "--workload",
            workload, "--out", str(tmp_path)] + (["--policy-param", "depth=1"] if policy == "crius" else [])
    assert main(args) == 0
    jobs = pd.read_csv(tmp_path / "jobs.csv")
    assert len(jobs) in (4, 5) and jobs.filter(like="finish").notna().all().all()


def test_a_shipped_cluster_file_is_a_topology_by_its_name(tmp_path):
    from artist import shipped

    assert shipped.topology_path("dally-hetero") == shipped.CLUSTERS_DIR / "dally-hetero.yaml"
    assert main(["simulate", "--policy", "fifo", "--topology", "dally-hetero", "--quiet", "--no-cache",
                 "--workload", GENERATOR, "--out", str(tmp_path)]) == 0
    assert len(pd.read_csv(tmp_path / "jobs.csv")) == 5


@pytest.mark.parametrize("name", ["fifo", "sia"])
def test_other_policies_run_on_a_crius_cluster_by_its_name(tmp_path, capsys, name):
    """Crius' clusters (A40, A10) are cluster files every policy sees: the elastic applications' compute on
    those types is modelled from the measured A100 tables (artist/elastic/modelled.py)."""
    assert main(["simulate", "--policy", name, "--topology", "crius-testbed", "--quiet", "--no-cache",
                 "--workload", GENERATOR, "--out", str(tmp_path)]) == 0
    jobs = pd.read_csv(tmp_path / "jobs.csv")
    assert len(jobs) == 5 and jobs.filter(like="finish").notna().all().all()


CLUSTER_FILES = sorted((ROOT / "topologies" / "clusters").glob("*.yaml"))


@pytest.mark.parametrize("name", sorted({name for name, _ in _builtin()}))  # not what other tests register
@pytest.mark.parametrize("cluster", CLUSTER_FILES, ids=lambda p: p.stem)
def test_artist_simulate_runs_every_policy_on_every_shipped_cluster_file(tmp_path, capsys, name, cluster):
    args = [a for a in _simulate_args(name) if a not in ("--racks", "1")]
    assert main(args + ["--topology", str(cluster), "--out", str(tmp_path)]) == 0
    jobs = pd.read_csv(tmp_path / "jobs.csv")
    assert len(jobs) == 5 and jobs.filter(like="finish").notna().all().all()


@pytest.mark.parametrize("workload, where", [
    ("crius:jobs=4,rate=2", "crius: takes jobs, arrivals_per_hour, philly_log"),
    ("poisson:n=4", "Crius' jobs come from"),
    ("crius:jobs=4,arrivals_per_hour=-1", "arrivals_per_hour must be a number"),
    ("crius:jobs=x", "jobs must be a whole number")])
def test_a_bad_crius_workload_is_one_clear_line(capsys, workload, where):
    assert main(["simulate", "--policy", "crius", "--topology", "crius-testbed", "--workload", workload,
                 "--quiet"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--workload" in err[0] and where in err[0]


def test_crius_jobs_on_gpus_without_datasheet_figures_name_the_topology(capsys):
    assert main(["simulate", "--policy", "crius", "--topology", "pollux-t4", "--workload",
                 "crius:jobs=4,arrivals_per_hour=20", "--quiet"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--topology" in err[0] and "pollux-t4.yaml: pool T4" in err[0]
