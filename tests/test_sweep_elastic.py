"""`loop: elastic` sweeps: a spec runs Pollux and the baselines through run_sweep, writes the usual
results and the elastic time series, byte-identical for a seed; bad specs are one-line InputErrors."""

import filecmp
from pathlib import Path

import pandas as pd
import pytest

from artist.errors import InputError
from artist.sweep.run import run_sweep
from artist.sweep.spec import load_sweep_spec

ROOT = Path(__file__).resolve().parents[1]
TUNED = "name,time,application,num_replicas,batch_size\ncifar10-0,53,cifar10,6,2048\ncifar10-1,154,cifar10,6,2048\n" \
        "ncf-6,1585,ncf,1,32768\n"
REALISTIC = "name,time,application,num_replicas,batch_size\ncifar10-0,53,cifar10,1,128\ncifar10-1,154,cifar10,1,128\n" \
            "ncf-6,1585,ncf,1,256\n"
POLICIES = """policies:
  - {name: pollux, params: {pop_size: 6, generations: 3}, label: Pollux}
  - {name: optimus-oracle, label: Optimus+Oracle+TunedJobs}
  - {name: tiresias-pollux, params: {tuned_jobs: false}, label: Tiresias}
"""


def _spec(tmp_path, body=None, realistic=True):
    (tmp_path / "tuned.csv").write_text(TUNED)
    (tmp_path / "real.csv").write_text(REALISTIC)
    workload = "{spec: tuned.csv, realistic: real.csv, label: w}" if realistic else "{spec: tuned.csv, label: w}"
    text = (f"name: e\nloop: elastic\ntopology: {ROOT / 'topologies/pollux-t4.yaml'}\n"
            f"{POLICIES if body is None else body}workloads:\n  - {workload}\n")
    path = tmp_path / "e.yaml"
    path.write_text(text)
    return path


def test_elastic_sweep_runs_and_is_byte_identical(tmp_path):
    spec = load_sweep_spec(_spec(tmp_path))
    assert [r.axes["policy"] for r in spec.runs] == ["Pollux", "Optimus+Oracle+TunedJobs", "Tiresias"]
    # what each policy takes of a row: Pollux nothing, Optimus the TunedJobs batch, Tiresias (realistic) both
    assert {(j.gpus, j.batch) for j in spec.runs[0].jobs} == {(0, 0)}
    assert [(j.gpus, j.batch) for j in spec.runs[1].jobs] == [(0, 2048), (0, 2048), (0, 32768)]
    assert [(j.gpus, j.batch) for j in spec.runs[2].jobs] == [(1, 128), (1, 128), (1, 256)]
    outs = []
    for name in ("a", "b"):
        report = run_sweep(spec, tmp_path / name, n_jobs=1, use_cache=False, progress=False, plots=False)
        assert not report.failed, report.failed
        outs.append(tmp_path / name)
    table = pd.read_csv(outs[0] / "results.csv")
    assert list(table["policy"]) == ["Pollux", "Optimus+Oracle+TunedJobs", "Tiresias"]
    for col in ("jct_mean_s", "jct_p99_s", "makespan_s", "restarts_per_job", "ftf_rho_max", "ftf_unfair_fraction"):
        assert table[col].notna().all(), col
    assert (table["jobs"] == 3).all()
    # a rigid baseline never restarts; the same jobs finish later on the realistic configuration
    assert table.loc[2, "restarts_per_job"] == 0
    assert filecmp.cmp(outs[0] / "results.csv", outs[1] / "results.csv", shallow=False)
    for run in spec.runs:
        for name in ("summary.json", "jobs.csv", "timeseries.csv", "cluster.csv", "utilisation.csv"):
            a, b = outs[0] / "runs" / run.run_id / name, outs[1] / "runs" / run.run_id / name
            assert filecmp.cmp(a, b, shallow=False), (run.axes["policy"], name)
        run_dir = outs[0] / "runs" / run.run_id
        series = pd.read_csv(run_dir / "timeseries.csv")
        cluster = pd.read_csv(run_dir / "cluster.csv")
        jobs = pd.read_csv(run_dir / "jobs.csv")
        # conservation: GPUs per round summed over jobs = the cluster's allocated GPUs at that round
        per_round = series.groupby("time_s")["gpus"].sum()
        assert (cluster.set_index("time_s").loc[per_round.index, "allocated_gpus"] == per_round).all()
        assert (cluster["allocated_gpus"] <= 64).all()
        # a job's held GPU-seconds never exceed GPUs x round length over the rounds it held them
        held = series.groupby("job_id")["gpus"].sum() * 60
        assert (jobs.set_index("job_id")["gpu_seconds"] <= held.loc[jobs["job_id"]].to_numpy() + 1e-6).all()
        assert ((series["statistical_efficiency"] > 0) & (series["statistical_efficiency"] <= 1 + 1e-12)).all()
        assert (pd.read_csv(run_dir / "policy_rounds.csv")["policy_seconds"] >= 0).all()


@pytest.mark.parametrize("body, field", [
    ("loop: rigidish\n", "loop"),
    ("policies: [smallest-first]\n", "policies[0].name"),   # a rigid-loop plugin's name, not an elastic policy
    ("policies: [{name: smallest-first, plugin: no_such_file.py}]\n", "policies[0].plugin"),
    ("policies: [{name: pollux, params: {generations: 0}}]\n", "policies[0].params"),
    # a population of 1e8 passed and grew past 6.8 GB; a quoted 'false' switched the avoidance on
    ("policies: [{name: pollux, params: {pop_size: 100000000}}]\n", "pop_size must be a whole number in [2, 10000]"),
    ("policies: [{name: pollux, params: {interference_avoidance: 'false'}}]\n", "must be true or false"),
    ("policies: [{name: pollux, params: {p: .nan}}]\n", "policies[0].params"),
    ("policies: [{name: tiresias, params: {tuned_jobs: maybe}}]\n", "policies[0].params"),
    ("policies: [pollux]\ncalibration: null\n", "calibration"),
])
def test_bad_elastic_specs_name_the_field(tmp_path, body, field):
    if body.startswith("loop:"):
        path = _spec(tmp_path, body=POLICIES)
        path.write_text(path.read_text().replace("loop: elastic\n", body))
    else:
        path = _spec(tmp_path, body=body)
    with pytest.raises(InputError) as exc:
        load_sweep_spec(path)
    assert field in str(exc.value) and str(path) in str(exc.value)


def test_untuned_baseline_needs_the_realistic_file(tmp_path):
    path = _spec(tmp_path, body="policies: [{name: optimus-oracle, params: {tuned_jobs: false}}]\n", realistic=False)
    with pytest.raises(InputError, match="realistic"):
        load_sweep_spec(path)


def test_realistic_file_must_hold_the_same_jobs(tmp_path):
    path = _spec(tmp_path)
    (tmp_path / "real.csv").write_text(REALISTIC.replace("cifar10-1,154", "cifar10-1,155"))
    with pytest.raises(InputError, match="same jobs"):
        load_sweep_spec(path)


CLUSTER = ROOT / "topologies/clusters/sia-hetero-64.yaml"
SIA_JOBS = "name,time,application,num_replicas,batch_size\ncifar10-0,53,cifar10,2,256\ncifar10-1,154,cifar10,4,512\n" \
           "ncf-2,600,ncf,1,256\n"


def _cluster_spec(tmp_path, policies="[sia, {name: gavel, label: Gavel+TunedJobs}]", extra=""):
    (tmp_path / "jobs.csv").write_text(SIA_JOBS)
    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\nloop: elastic\ntopology: {CLUSTER}\n"
                    f"elastic: {{applications: {ROOT / 'workloads/sia'}}}\n"
                    f"policies: {policies}\nworkloads: [{{spec: jobs.csv, label: w}}]\n{extra}")
    return path


def test_cluster_sweep_gives_the_jobs_of_a_direct_hetero_run(tmp_path):
    """`loop: elastic` on a multi-type cluster file runs the policies of the one registry and gives each job
    the completion time the direct run of artist/elastic/hetero_runs.py (benchmarks/sia_sweep.py) gives."""
    from artist.elastic.cluster import load_cluster
    from artist.elastic.hetero_runs import POLICIES as HETERO, read_jobs, run

    spec = load_sweep_spec(_cluster_spec(tmp_path))
    assert spec.name == "s"
    report = run_sweep(spec, tmp_path / "out", n_jobs=1, use_cache=False, progress=False, plots=False)
    assert not report.failed, report.failed
    again = run_sweep(spec, tmp_path / "again", n_jobs=1, use_cache=False, progress=False, plots=False)
    assert not again.failed and filecmp.cmp(tmp_path / "out" / "results.csv", tmp_path / "again" / "results.csv",
                                            shallow=False)
    table = pd.read_csv(tmp_path / "out" / "results.csv")
    assert list(table["policy"]) == ["sia", "Gavel+TunedJobs"] and (table["gpus"] == 64).all()
    assert (table["finished"] == 3).all() and table["ftf_rho_mean"].notna().all()
    cluster = load_cluster(CLUSTER)
    for r in spec.runs:
        jobs = pd.read_parquet(tmp_path / "out" / "runs" / r.run_id / "jobs.parquet").set_index("job_id")
        direct, _ = run(cluster, r.policy.name, read_jobs(tmp_path / "jobs.csv", HETERO[r.policy.name].job_config))
        for j in direct.jobs:
            assert jobs.loc[j.spec.job_id, "jct_s"] == j.finish - j.spec.arrival


@pytest.mark.parametrize("policies, extra, field", [
    ("[sia]", "racks: 2\n", "racks"),
    ("[{name: gavel, params: {tuned_jobs: false}}]", "", "policies[0].params"),
])
def test_bad_cluster_specs_name_the_field(tmp_path, policies, extra, field):
    path = _cluster_spec(tmp_path, policies, extra)
    with pytest.raises(InputError) as exc:
        load_sweep_spec(path)
    assert field in str(exc.value) and str(path) in str(exc.value)


def test_one_type_tables_are_refused_on_a_cluster(tmp_path):
    path = _cluster_spec(tmp_path)
    path.write_text(path.read_text().replace(str(ROOT / "workloads/sia"), str(ROOT / "workloads/pollux")))
    with pytest.raises(InputError, match="no measured compute for GPU type"):
        load_sweep_spec(path)


def test_heterogeneous_rho_on_one_pool_is_the_one_type_rho():
    """Sia's rho = sum_g (N_g / N) rho_g: with a single pool the weight is 1 and the isolated time is the
    one-type loop's (artist/elastic/metrics.py IsolatedRates)."""
    from artist.elastic.applications import pollux_applications
    from artist.elastic.cluster import load_cluster
    from artist.elastic.metrics import IsolatedRates
    from artist.elastic.steptime import NetworkStepTimer
    from artist.network.analytical import AnalyticalModel
    from artist.sweep.elastic import HeterogeneousIsolated
    from artist.workload import load_models
    from artist.workload.traces.pollux import APPLICATIONS

    cluster = load_cluster(ROOT / "topologies/pollux-t4.yaml", "t4")
    topology = cluster.pools[0].topology
    apps, models = pollux_applications(), load_models()
    timer = NetworkStepTimer(topology, AnalyticalModel(topology), {k: a for k, (a, _) in apps.items()},
                             {k: models[APPLICATIONS[k][0]] for k in apps})
    one = IsolatedRates(apps, timer, "t4", topology.gpus_per_machine)
    pooled = HeterogeneousIsolated(apps, timer, cluster)
    for share in (0.5, 3.0, 12.5):
        assert pooled.seconds("cifar10", share) == pytest.approx(one.seconds("cifar10", share), rel=1e-12)


def _generated_spec(tmp_path, workload: str, policies: str = "policies: [pollux, fifo]\n", seeds: str = "[0, 1]"):
    path = tmp_path / "g.yaml"
    path.write_text(f"name: g\nloop: elastic\ntopology: {ROOT / 'topologies/pollux-t4.yaml'}\n{policies}"
                    f"workloads:\n  - {workload}\nseeds: {seeds}\n")
    return path


def test_a_generator_workload_runs_the_measured_applications_at_m0_x_gpus(tmp_path):
    """A generator in an elastic spec: every job runs the application its model stands for, on the
    generator's GPU count at batch M0 x GPUs (Pollux's "realistic" configuration), drawn per seed."""
    from artist.elastic.applications import pollux_applications
    from artist.workload.traces.pollux import APPLICATIONS

    spec = load_sweep_spec(_generated_spec(tmp_path, '{spec: "poisson:n=20,interarrival=300,gpus=1|2|4", label: gen}'))
    apps = pollux_applications()
    by_seed = {}
    for run in spec.runs:
        for job in run.jobs:
            assert job.app in apps
            if run.policy.name == "fifo":  # a rigid policy runs the jobs as generated
                assert job.gpus in (1, 2, 4) and job.batch == apps[job.app][1].initial_batch * job.gpus
        by_seed.setdefault(run.axes["seed"], set()).add(tuple((j.job_id, j.arrival, j.app) for j in run.jobs))
    assert all(len(v) == 1 for v in by_seed.values())  # both policies of a seed run the same jobs
    assert by_seed[0] != by_seed[1]  # the seed draws them
    assert {j.app for run in spec.runs for j in run.jobs} <= set(APPLICATIONS)
    pollux = next(r for r in spec.runs if r.policy.name == "pollux")
    assert all(j.gpus == 0 and j.batch == 0 for j in pollux.jobs)  # Pollux picks both (job_config none)


@pytest.mark.parametrize("workload, message", [
    ('{spec: "poisson:n=5,interarrival=60,models=vgg16"}', "unknown model 'vgg16'"),
    ('{spec: "llm:n=2,interarrival=60"}', "no measured application"),
    ('{spec: "batch:n=3", realistic: real.csv}', "one configuration"),
    ('{spec: "poisson:n=40,interarrival=60,gpus=64"}', "largest measured batch"),
])
def test_a_bad_generated_workload_is_one_line_naming_the_field(tmp_path, workload, message):
    path = _generated_spec(tmp_path, workload)
    with pytest.raises(InputError) as exc:
        load_sweep_spec(path)
    text = str(exc.value)
    assert "\n" not in text and str(path) in text and "workloads[0]" in text and message in text
