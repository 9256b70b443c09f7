"""The Python API (artist/__init__.py, artist/api/) against independent expectations: the CLI's own output for the
same arguments, hand-computed alpha-beta times, shipped files, and its promises (cheap import, determinism, the
CLI's one-line errors)."""

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

import artist
from artist.cli import main
from artist.latency_table import read_table_csv

from conftest import MACHINE_LINK_US, MACHINE_SWITCH_US, NVSWITCH_GBPS, REPO, small_topology_mapping

# 12 rigid jobs of 1-8 GPUs arriving a minute apart: contended on one rack of dally-3tier (64 GPUs), seconds to run
WORKLOAD = "poisson:n=12,interarrival=60,gpus=1|2|4|8,min_iter=200,max_iter=2000"
# the smallest elastic run of tests/test_every_policy.py
ELASTIC_WORKLOAD = "poisson:n=4,interarrival=120,gpus=1|2|4,models=resnet18|bert_large|alexnet"
GCP_LOG = "calibration/data/gcp_a3mega_2node_16xH100_tcpxo.txt"
GCP_TOPOLOGY = "calibration/topologies/gcp-a3mega.yaml"


# ---------------------------------------------------------------- the package


def test_import_artist_loads_neither_pandas_nor_ns3_nor_the_api():
    code = ("import artist, sys; heavy = [m for m in ('pandas', 'ns', 'ns3', 'matplotlib', 'numpy', 'artist.api') "
            "if m in sys.modules]; assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_every_public_name_resolves_and_shadows_no_module():
    assert artist.__all__ == sorted(artist._EXPORTS)
    for name in artist.__all__:
        assert getattr(artist, name) is not None
        # artist.sweep and artist.latency_table are modules: a function of that name would be replaced by the
        # module whenever it is imported (hence run_sweep and compute_latency_table)
        assert not (REPO / "artist" / f"{name}.py").exists() and not (REPO / "artist" / name).is_dir(), name
    with pytest.raises(AttributeError):
        artist.no_such_name


def test_simulate_defaults_are_the_cli_defaults():
    from artist.api._options import command_parser

    parser = command_parser("simulate")
    defaults = {p.name: p.default for p in inspect.signature(artist.simulate).parameters.values()}
    same = {"policy": "policy", "racks": "racks", "seed": "seed", "backend": "backend", "algorithm": "algorithm",
            "channels": "channels", "calibration": "calibration", "contention": "contention",
            "contention_model": "contention_model", "round_interval_s": "round_interval",
            "restore_seconds": "restore_seconds", "plugin": "plugin", "cache_dir": "cache_dir"}
    for ours, theirs in same.items():
        assert defaults[ours] == parser.get_default(theirs), ours
    assert str(artist.load_topology(defaults["topology"]).path) == parser.get_default("topology")
    from artist.api.inputs import workload_text

    assert workload_text(defaults["workload"]) == parser.get_default("workload")


# ---------------------------------------------------------------- simulate


def _cli(*args: str) -> None:
    assert main([*args, "--quiet"] if args[0] == "simulate" else list(args)) == 0


def test_simulate_writes_the_tables_the_cli_writes(tmp_path):
    _cli("simulate", "--workload", WORKLOAD, "--racks", "1", "--policy", "tiresias", "--seed", "3",
         "--out", str(tmp_path / "cli"))
    result = artist.simulate("dally-3tier", WORKLOAD, racks=1, policy="tiresias", seed=3)
    written = result.to_csv(tmp_path / "api")
    assert sorted(written) == ["jobs.csv", "summary.csv", "utilisation.csv"]
    for name in written:
        assert (tmp_path / "api" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    assert len(result.jobs) == 12 and result.jobs["finish_s"].notna().all()
    printed = pd.read_csv(tmp_path / "cli" / "summary.csv", keep_default_na=False).iloc[0].to_dict()
    assert list(result.summary) == list(printed)
    for key, value in printed.items():  # (the CSV keeps 9 significant digits)
        assert result.summary[key] == (pytest.approx(value, rel=1e-8) if isinstance(value, float) else value), key
    assert result.summary["jct_mean_s"] == pytest.approx(result.jobs["jct_s"].mean(), rel=1e-12)


def test_an_elastic_policy_runs_in_the_loop_the_cli_dispatches_it_to(tmp_path):
    _cli("simulate", "--workload", ELASTIC_WORKLOAD, "--racks", "1", "--policy", "fcfs", "--out",
         str(tmp_path / "cli"))
    result = artist.simulate("dally-3tier", ELASTIC_WORKLOAD, racks=1, policy="fcfs")
    assert result.loop == "elastic" and result.simulation is None
    result.to_csv(tmp_path / "api")
    for name in ("jobs.csv", "utilisation.csv", "cluster.csv", "timeseries.csv"):
        assert (tmp_path / "api" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    summary = json.loads((tmp_path / "cli" / "summary.json").read_text())
    assert result.summary == {"policy": "fcfs", **summary}
    # the elastic loop has no contention model: an error, not a run that looks shared and is not
    with pytest.raises(artist.InputError, match="fcfs runs the elastic loop, which does not take contention"):
        artist.simulate("dally-3tier", ELASTIC_WORKLOAD, racks=1, policy="fcfs", contention="shared")


def _hand_computed_inputs(tmp_path: Path) -> tuple[Path, Path, Path]:
    """tests/test_simulator.py's one-job case as files: conftest's 2 x 2 x 8-GPU topology, a model of one 100 MB
    gradient bucket (25 M fp32 elements, all-reduced after the whole backward pass) and 0.2 s of compute, and a
    trace of one 8-GPU job of 1000 iterations arriving at t = 5 s."""
    topology = tmp_path / "topo.yaml"
    topology.write_text(yaml.safe_dump(small_topology_mapping(gpus_per_machine=8)))
    models = tmp_path / "models"
    models.mkdir()
    (models / "big.yaml").write_text(yaml.safe_dump({
        "name": "big", "tensors": [["w", 25_000_000]], "bucket_cap_bytes": 100_000_000,
        "compute": {"reference_gpu": "A100", "seconds_per_iteration": 0.2, "source": "test figure"}}))
    trace = tmp_path / "one.csv"
    trace.write_text("job_id,arrival,model,gpus,iterations\nj,5,big,8,1000\n")
    return topology, models, trace


def _ring_seconds(nbytes: float) -> float:
    """An 8-GPU ring all-reduce on one machine, by hand (tests/test_simulator.py, tests/alpha_beta.py): NCCL's
    8.4 us start-up, then 2 x 7 steps of a 3.4 us NVLink hop latency plus the links' and switch's latency and
    S/8 bytes at 300 GB/s."""
    nv = NVSWITCH_GBPS * 1e9 / 8
    return 8.4e-6 + 14 * (3.4e-6 + (2 * MACHINE_LINK_US + MACHINE_SWITCH_US) * 1e-6 + nbytes / 8 / nv)


def test_one_job_runs_its_iterations_at_compute_plus_the_alpha_beta_all_reduce(tmp_path):
    topology, models, trace = _hand_computed_inputs(tmp_path)
    result = artist.simulate(topology, trace, models=models)
    (job,) = result.jobs.itertuples()
    assert job.first_start_s == 5.0
    assert job.jct_s == pytest.approx(1000 * (0.2 + _ring_seconds(100e6)), rel=1e-12)
    # the same with everything loaded first
    loaded = artist.load_topology(topology)
    profiles = artist.load_models(models)
    jobs = artist.load_workload(trace, topology=loaded, models=profiles)
    again = artist.simulate(loaded, jobs, models=profiles)
    pd.testing.assert_frame_equal(again.jobs, result.jobs)


def test_comm_times_one_collective_by_the_alpha_beta_model(tmp_path):
    topology, _, _ = _hand_computed_inputs(tmp_path)
    answer = artist.comm(topology, collective="all_reduce", nbytes=100_000_000, gpus=range(8))
    assert answer["seconds"] == pytest.approx(_ring_seconds(100e6), rel=1e-12)
    assert answer["tier"] == "machine" and answer["shape"] == "[[8]]"


def test_the_same_seed_gives_the_same_tables_and_another_seed_other_jobs():
    first = artist.simulate(workload=WORKLOAD, racks=1, seed=5)
    second = artist.simulate(workload=WORKLOAD, racks=1, seed=5)
    pd.testing.assert_frame_equal(first.jobs, second.jobs)
    assert first.summary == second.summary
    other = artist.simulate(workload=WORKLOAD, racks=1, seed=6)
    assert not other.jobs[["arrival_s", "gpus"]].equals(first.jobs[["arrival_s", "gpus"]])


def test_a_shipped_name_and_its_path_are_the_same_topology_and_trace():
    by_name, by_path = artist.load_topology("dgx-h100", racks=1), artist.load_topology(
        REPO / "topologies" / "dgx-h100.yaml", racks=1)
    assert (by_name.name, by_name.gpus, by_name.link_parameters()) == (by_path.name, by_path.gpus,
                                                                          by_path.link_parameters())
    assert artist.load_workload("small") == artist.load_workload(REPO / "workloads" / "traces" / "small.csv")


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("cli, api", [
    (["--policy", "nope"], dict(policy="nope")),
    (["--workload", "no-such.csv"], dict(workload="no-such.csv")),
    (["--racks", "1", "--workload", "batch:n=2,gpus=128"], dict(racks=1, workload="batch:n=2,gpus=128")),
    (["--policy", "tiresias", "--policy-param", "nope=1"], dict(policy="tiresias", policy_params={"nope": 1})),
])
def test_bad_input_is_the_input_error_the_cli_prints(capsys, cli, api):
    assert main(["simulate", "--quiet", *cli]) == 2
    printed = capsys.readouterr().err.strip()
    with pytest.raises(artist.InputError) as raised:
        artist.simulate(**api)
    assert printed == f"artist: error: {raised.value}"


def test_a_bad_option_value_is_refused_with_the_options_own_bounds(capsys):
    assert main(["simulate", "--racks", "0"]) == 2
    problem = capsys.readouterr().err.strip().rpartition(": ")[2]
    with pytest.raises(artist.InputError, match="--racks") as raised:
        artist.simulate(racks=0)
    assert raised.value.problem.endswith(problem)
    with pytest.raises(artist.InputError, match="invalid choice: 'nope'"):
        artist.simulate(backend="nope")


# ---------------------------------------------------------------- run_sweep


def test_a_dict_spec_gives_the_table_of_the_same_spec_as_a_file(tmp_path, monkeypatch):
    (tmp_path / "specs").mkdir()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "topo.yaml").write_text((REPO / "topologies" / "dally-3tier.yaml").read_text())
    spec = {"name": "api", "topology": "topo.yaml", "racks": [1, 2], "policies": ["fifo", "tiresias"],
            "workloads": [{"spec": WORKLOAD, "label": "w"}], "comm": "analytical"}
    from_dict = artist.run_sweep(spec)  # paths relative to the working directory
    (tmp_path / "specs" / "api.yaml").write_text(yaml.safe_dump({**spec, "topology": "../topo.yaml"}))
    from_file = artist.run_sweep(tmp_path / "specs" / "api.yaml", out=tmp_path / "out")  # relative to the file
    pd.testing.assert_frame_equal(from_dict.drop(columns="topology"), from_file.drop(columns="topology"))
    assert (tmp_path / "out" / "results.csv").is_file()
    assert list(from_dict[["racks", "policy"]].itertuples(index=False, name=None)) == [
        (1, "fifo"), (1, "tiresias"), (2, "fifo"), (2, "tiresias")]
    # a run of the sweep is the simulation of the same arguments
    one = artist.simulate(tmp_path / "topo.yaml", WORKLOAD, racks=2, policy="tiresias")
    assert from_dict.iloc[3]["jct_mean_s"] == pytest.approx(one.summary["jct_mean_s"], rel=1e-12)
    with pytest.raises(artist.InputError, match=r"^<spec dict>: field 'policies\[0\]"):
        artist.run_sweep({**spec, "policies": ["nope"]})


def test_a_failed_run_raises_sweep_failed_and_keeps_the_finished_ones(tmp_path):
    from artist.policies.fifo import Fifo
    from artist.policies.registry import policy_names, register

    if "api-test-broken" not in policy_names():  # (jobs=1 runs in this process, where the policy is registered)
        @register("api-test-broken")
        class _Broken(Fifo):
            def schedule(self, view):
                raise RuntimeError("deliberately broken policy")

    spec = {"topology": "dally-3tier", "racks": [1], "policies": ["fifo", "api-test-broken"],
            "workloads": ["batch:n=3,gpus=1|2,min_iter=100,max_iter=200"], "comm": "analytical"}
    with pytest.raises(artist.SweepFailed, match="deliberately broken policy") as raised:
        artist.run_sweep(spec, out=tmp_path / "out")
    assert [run.axes["policy"] for run, _ in raised.value.failed] == ["api-test-broken"]
    assert len(list((tmp_path / "out" / "runs").iterdir())) == 1 and not (tmp_path / "out" / "results.csv").exists()


# ---------------------------------------------------------------- calibrate, check


def test_calibrate_writes_the_profile_the_cli_writes_and_check_reports_its_errors(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(REPO)  # the profile records the paths as given
    options = ["--algorithm", "hierarchical", "--channels", "8"]
    assert main(["calibrate", "--topology", GCP_TOPOLOGY, "--logs", GCP_LOG, *options, "--quiet",
                 "--out", str(tmp_path / "gcp.yaml")]) == 0
    profile = artist.calibrate(GCP_LOG, GCP_TOPOLOGY, algorithm="hierarchical", channels=8, name="gcp")
    profile.save(tmp_path / "api.yaml")
    assert (tmp_path / "api.yaml").read_text() == (tmp_path / "gcp.yaml").read_text()
    # the shipped profile was fitted so (calibration/profiles/gcp-a3mega-analytical.yaml's 'fitted with' note)
    assert profile.id == artist.load_profile("calibration/profiles/gcp-a3mega-analytical.yaml").id
    capsys.readouterr()
    assert main(["calibrate", "--check", str(tmp_path / "gcp.yaml"), "--logs", GCP_LOG, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    table = artist.check(profile, GCP_LOG)
    assert table.drop(columns="in_sample").to_dict("records") == rows
    assert table["in_sample"].all()
    assert (table["median_err_calibrated_pct"] < table["median_err_uncalibrated_pct"]).all()


# ---------------------------------------------------------------- latency tables, comm, plans


def test_a_latency_table_is_the_cli_table_and_passes_its_own_regression_check(tmp_path):
    shapes = ["[[8]]", "[[1,1,1,1],[1,1,1,1]]"]
    _cli("latency-table", "--model", "resnet50", "--model", "vgg11", *[a for s in shapes for a in ("--shape", s)],
         "--out", str(tmp_path / "golden.csv"))
    table = artist.compute_latency_table(model_names=["resnet50", "vgg11"], shapes=[[[8]], [[1] * 4, [1] * 4]])
    pd.testing.assert_frame_equal(table, read_table_csv(tmp_path / "golden.csv"))
    artist.assert_latency_table(table, tmp_path / "golden.csv")
    slower = table.assign(collective_seconds=table.collective_seconds * 1.05)
    with pytest.raises(AssertionError, match="collective_seconds"):
        artist.assert_latency_table(slower, tmp_path / "golden.csv")


def test_comm_answers_what_the_cli_prints_as_json(capsys):
    assert main(["comm", "--model", "resnet50", "--shape", "[[8],[8]]", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    answer = artist.comm(model="resnet50", shape=[[8], [8]])
    varying = ("wall_seconds", "from_cache")  # (a second run is answered from the cache)
    assert {k: v for k, v in answer.items() if k not in varying} == {
        k: v for k, v in printed.items() if k not in varying}


def test_plans_ranks_what_the_cli_ranks(capsys):
    assert main(["plans", "--model", "gpt3-13b", "--gpus", "8", "--topology", "dgx-h100", "--global-batch",
                 "16"]) == 0
    lines = capsys.readouterr().out.splitlines()
    table = artist.plans("gpt3-13b", 8, "dgx-h100", global_batch=16)
    fit = table[table.refused.isna()]
    printed = [line.split()[1] for line in lines[2:] if line.split()[0].isdigit()]
    assert list(fit.plan[:len(printed)]) == printed and list(fit["rank"]) == list(range(1, len(fit) + 1))
    assert fit.step_s.is_monotonic_increasing
    refused = [line.split()[1].rstrip(":") for line in lines if line.startswith("refused")]
    assert list(table[table.refused.notna()].plan) == refused
