"""Every bad input of the issue "every command hardened": one line naming the file and line or
field, a non-zero exit, no traceback, no hang. In-process through artist.cli.main where the check
happens before any work; in a real process (with a timeout) where the process boundary matters."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from artist.cli import main
from conftest import REPO

ARTIST = [sys.executable, "-m", "artist.cli"]


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ARTIST_CACHE_DIR", str(tmp_path / "cache"))


def one_line_error(capsys, argv, code=2) -> str:
    """Run the CLI in-process; the error must be exactly one stderr line, no traceback."""
    assert main(argv) == code
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("note:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def write(tmp_path, name, text) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


# --------------------------------------------------------------------------- simulate's options


@pytest.mark.parametrize("args, expected", [
    (["--racks", "0"], "argument --racks: must be >= 1, got 0"),
    (["--channels", "0"], "argument --channels: must be >= 1, got 0"),
    (["--channels", "65"], "argument --channels: must be <= 64, got 65"),
    (["--algorithm", "butterfly"], "argument --algorithm: invalid choice: 'butterfly'"),
    (["--restore-seconds", "-1"], "argument --restore-seconds: must be >= 0, got -1"),
    (["--restore-seconds", "nan"], "argument --restore-seconds: must be a finite number"),
    (["--round-interval", "-5"], "argument --round-interval: must be >= 1, got -5"),
    (["--round-interval", "0.001"], "argument --round-interval: must be >= 1"),
    (["--racks", "1e12"], "argument --racks: expected an integer, got '1e12'"),
    (["--workload", "batch:n=-3"], "batch:n=-3: parameter 'n': must be in [1, 1000000], got -3"),
    (["--workload", "batch:n=10000000"], "parameter 'n': must be in [1, 1000000]"),
    (["--workload", "poisson:n=3,interarrival=0"], "parameter 'interarrival': must be > 0"),
    (["--workload", "poisson:n=1000000,interarrival=100000"], "parameter 'interarrival': the last of 1000000 arrivals"),
    (["--workload", "batch:n=3,gpus=0"], "parameter 'gpus': GPU counts must be in [1, 1048576], got 0"),
    (["--workload", "batch:n=3,min_iter=10,max_iter=5"], "parameter 'min_iter': min_iter 10 > max_iter 5"),
    (["--workload", "batch:n=3,max_iter=1000000000000000000000000000000"],
     "parameter 'max_iter': must be in [1, 1000000000]"),
    (["--workload", "batch:n=3,n=4"], "parameter 'n': given twice"),
    (["--workload", "batch:n=3,gpus=1|2,gpu_weights=1.0e+308|1.0e+308"], "parameter 'gpu_weights': weights must be"),
    (["--workload", "batch:n=5,gpus=256"], "job b0: asks for 256 GPUs, but dally-3tier with 2 rack(s) has 128"),
    (["--policy", "tiresias", "--policy-param", "thresholds=abc"], "--policy-param: rejected by policy 'tiresias'"),
    (["--policy", "tiresias", "--policy-param", "skew_threshold=.nan"], "must be a finite number"),
    (["--policy", "fifo", "--policy-param", "speed=3"], "policy 'fifo' has no parameter 'speed'"),
    (["--policy", "gandiva", "--policy-param", "migrate=maybe"], "migrate must be true or false, got 'maybe'"),
    (["--policy", "gandiva", "--policy-param", "migrate='false'"], "migrate must be true or false, got 'false'"),
    (["--policy", "nope"], "--policy: unknown policy 'nope'"),
    (["--policy-param", "x"], "--policy-param: expects KEY=VALUE, got 'x'"),
    (["--topology", "nope"], "--topology: no such file 'nope', and not a shipped topology"),
])
def test_simulate_refuses_bad_options_in_one_line(capsys, args, expected):
    line = one_line_error(capsys, ["simulate", *args])
    assert expected in line


def test_simulate_refuses_a_directory_as_workload(capsys, tmp_path):
    assert f"{tmp_path}: is a directory" in one_line_error(capsys, ["simulate", "--workload", str(tmp_path)])


def test_an_unwritable_out_fails_before_the_simulation(capsys, monkeypatch, tmp_path):
    import artist.commands.simulate as cmd

    monkeypatch.setattr(cmd, "simulate", lambda *a, **k: pytest.fail("simulated before checking --out"))
    blocker = tmp_path / "file"
    blocker.write_text("a file where the output directory should go")
    line = one_line_error(capsys, ["simulate", "--workload", "batch:n=3", "--out", str(blocker / "out")])
    assert "--out: cannot write to" in line


def test_calibration_for_another_backend_or_topology_is_one_line(capsys):
    line = one_line_error(capsys, ["simulate", "--calibration", "h100-ns3", "--topology", "h100-dgx", "--channels", "8",
                                   "--workload", "batch:n=3"])
    assert "h100-ns3.yaml: field 'backend': fitted for ns3/ring/8ch, not analytical/ring/8ch" in line
    line = one_line_error(capsys, ["simulate", "--calibration", "h100-analytical", "--workload", "batch:n=3"])
    assert "field 'topology'" in line and "fitted on topology 'h100-dgx'" in line


def test_simulate_calibrated_reproduces_one_run_of_the_calibrated_sweep(capsys, tmp_path):
    """--calibration applies the profile: the calibrated comm latency differs from the raw one, and
    equals what the sweep's own run of the same point reports."""
    from artist.sweep.run import run_sweep
    from artist.sweep.spec import load_sweep_spec

    spec = write(tmp_path, "s.yaml", f"""\
        topology: {REPO}/topologies/h100-dgx.yaml
        racks: [1]
        policies: [fifo]
        workloads: ["batch:n=6,gpus=8|16,models=resnet50,max_iter=2000"]
        comm: {{backend: analytical, channels: 8}}
        calibration: [null, {REPO}/calibration/profiles/h100-analytical.yaml]
        """)
    report = run_sweep(load_sweep_spec(spec), tmp_path / "sweep", n_jobs=1, progress=False, plots=False)
    import pandas as pd

    table = pd.read_csv(report.results_csv)
    raw, calibrated = table.sort_values("calibration", na_position="first")["comm_latency_mean_s"]
    assert raw != calibrated
    args = ["simulate", "--topology", "h100-dgx", "--racks", "1", "--channels", "8", "--workload",
            "batch:n=6,gpus=8|16,models=resnet50,max_iter=2000", "--round-interval", "300",
            "--out", str(tmp_path / "one")]
    assert main(args + ["--calibration", "h100-analytical"]) == 0
    one = pd.read_csv(tmp_path / "one" / "summary.csv")
    assert one["comm_latency_mean_s"].iloc[0] == pytest.approx(calibrated, rel=1e-9)


# --------------------------------------------------------------------------- inputs that used to hang


def run_cli(args, timeout=60, cwd=None, **kw) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(ARTIST + args, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env, **kw)


def assert_one_line(proc, *expected):
    assert proc.returncode not in (0, None), proc
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for text in expected:
        assert text in lines[0], lines[0]


@pytest.mark.parametrize("row, expected", [
    ("j1,1e300,resnet50,8,100", "line 2, column 'arrival': must be <= 1e+09"),
    ("j1,0,resnet50,8,1e30", "line 2, column 'iterations': must be <= 1e+09"),
    ("j1,0,resnet50,1e9,100", "line 2, column 'gpus': must be <="),
])
def test_trace_values_that_would_hang_are_refused_in_seconds(tmp_path, row, expected):
    trace = write(tmp_path, "t.csv", f"job_id,arrival,model,gpus,iterations\n{row}\n")
    started = time.perf_counter()
    proc = run_cli(["simulate", "--workload", str(trace)], timeout=60)
    assert_one_line(proc, f"{trace}: {expected}")
    assert time.perf_counter() - started < 30


def test_a_cluster_too_large_to_hold_is_refused(tmp_path):
    text = (REPO / "topologies" / "dally-3tier.yaml").read_text().replace("machines_per_rack: 8",
                                                                           "machines_per_rack: 1000000000000")
    topo = write(tmp_path, "big.yaml", text)
    proc = run_cli(["simulate", "--topology", str(topo), "--workload", "batch:n=3"], timeout=60)
    assert_one_line(proc, f"{topo}: field 'machines_per_rack': must be <= 1048576")
    text = text.replace("machines_per_rack: 1000000000000", "machines_per_rack: 100000")
    topo = write(tmp_path, "big.yaml", text)
    proc = run_cli(["simulate", "--topology", str(topo), "--workload", "batch:n=3"], timeout=60)
    assert_one_line(proc, "field 'racks': 2 x 100000 x 8 = 1600000 GPUs; at most 1048576")


def test_an_arrival_far_out_skips_the_idle_rounds(tmp_path):
    """Arrival 9e8 s with 1 s rounds: 9e8 idle rounds before; now one jump. The job starts at its
    arrival and runs compute only (one GPU): finish = arrival + iterations x compute seconds."""
    trace = write(tmp_path, "t.csv", "job_id,arrival,model,gpus,iterations\nj1,900000000,resnet50,1,1000\n")
    proc = run_cli(["simulate", "--workload", str(trace), "--round-interval", "1", "--out", str(tmp_path / "o")],
                   timeout=120)
    assert proc.returncode == 0, proc.stderr
    import pandas as pd
    import yaml

    compute = yaml.safe_load((REPO / "workloads" / "models" / "resnet50.yaml").read_text())["compute"]
    jobs = pd.read_parquet(tmp_path / "o" / "jobs.parquet")  # full precision (the CSV keeps 9 digits)
    assert jobs["first_start_s"].iloc[0] == 9e8
    assert jobs["finish_s"].iloc[0] == pytest.approx(9e8 + 1000 * compute["seconds_per_iteration"], rel=1e-12)


# --------------------------------------------------------------------------- files


def test_trace_with_a_bom_is_read_and_latin1_is_named_by_line(capsys, tmp_path):
    from artist.workload import read_jobs_csv

    good = tmp_path / "bom.csv"
    good.write_bytes(b"\xef\xbb\xbfjob_id,arrival,model,gpus,iterations\nj1,0,resnet50,8,100\n")
    assert [j.job_id for j in read_jobs_csv(good)] == ["j1"]
    bad = tmp_path / "latin1.csv"
    bad.write_bytes("job_id,arrival,model,gpus,iterations\nj1,0,resnet50,8,100\nj\xe9,0,resnet50,8,100\n".encode("latin-1"))
    line = one_line_error(capsys, ["simulate", "--workload", str(bad)])
    assert f"{bad}: line 3: not UTF-8 text" in line


@pytest.mark.parametrize("text, expected", [
    # Python's int() and float() read digit separators: "1_6" would run as 16 GPUs
    ("job_id,arrival,model,gpus,iterations\nj1,0,resnet50,1_6,100\n", "line 2, column 'gpus': not a number: '1_6'"),
    ("job_id,arrival,model,gpus,iterations\nj1,1_0.5,resnet50,8,100\n", "column 'arrival': not a number: '1_0.5'"),
    # a row dict keeps the last of two cells of one name: the first would be dropped silently
    ("job_id,arrival,model,gpus,iterations,gpus\nj1,0,resnet50,16,100,8\n",
     "line 1: column(s) named twice in the header: gpus"),
])
def test_trace_cells_that_python_would_misread_are_refused_by_line(capsys, tmp_path, text, expected):
    trace = tmp_path / "t.csv"
    trace.write_text(text)
    assert expected in one_line_error(capsys, ["simulate", "--workload", str(trace)])


@pytest.mark.parametrize("workload, expected", [
    ("batch:n=1_0", "parameter 'n': not an integer: '1_0'"),
    ("batch:n=3,gpus=1_6|4", "parameter 'gpus': expected integers separated by '|', got '1_6|4'"),
    ("poisson:n=3,interarrival=1_0", "parameter 'interarrival': not a number: '1_0'"),
])
def test_generator_numbers_with_digit_separators_are_refused(capsys, workload, expected):
    assert expected in one_line_error(capsys, ["simulate", "--workload", workload])


def test_duplicate_yaml_keys_are_an_error_naming_both_lines(capsys, tmp_path):
    spec = write(tmp_path, "s.yaml", f"""\
        topology: {REPO}/topologies/dally-3tier.yaml
        policies: [fifo]
        workloads: [batch:n=3]
        policies: [dally]
        """)
    line = one_line_error(capsys, ["sweep", str(spec), "--dry-run"])
    assert (f"{spec}: line 4, column 1: invalid YAML: key 'policies' appears twice in one mapping "
            f"(first on line 2)") in line


def test_an_undeclared_gpu_type_that_is_not_the_reference_is_refused(capsys, tmp_path):
    text = (REPO / "topologies" / "dally-3tier.yaml").read_text().replace("gpu_type: A100", "gpu_type: V100")
    topo = write(tmp_path, "v100.yaml", text)
    line = one_line_error(capsys, ["simulate", "--topology", str(topo), "--workload", "batch:n=3"])
    assert f"{topo}: field 'gpu_type': GPU type 'V100' has no declared speed" in line
    assert "A100-SXM4-80GB" in line
    line = one_line_error(capsys, ["comm", "--topology", str(topo), "--model", "resnet50", "--shape", "[[8]]"])
    assert "GPU type 'V100' has no declared speed" in line


def test_default_paths_work_outside_the_repository(tmp_path):
    proc = run_cli(["simulate", "--workload", "batch:n=4,gpus=1|8,max_iter=2000", "--racks", "1"], cwd=tmp_path,
                   timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "topology dally-3tier (1 racks, 64 GPUs), 4 jobs" in proc.stdout


# --------------------------------------------------------------------------- sweep flags


def test_sweep_backend_means_the_network_and_the_executor_moved(capsys):
    line = one_line_error(capsys, ["sweep", str(REPO / "sweeps" / "quick.yaml"), "--backend", "dask", "--dry-run"])
    assert "'dask' is an executor" in line and "--executor dask" in line


def test_sweep_on_another_backend_takes_the_sibling_calibration_profile(capsys):
    """quick.yaml is calibrated by h100-ns3.yaml; --backend analytical runs it with the analytical
    profile fitted on the same topology (it ships beside it)."""
    assert main(["sweep", str(REPO / "sweeps" / "quick.yaml"), "--backend", "analytical", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert "using h100-analytical.yaml beside it" in err
    runs = [line for line in out.splitlines() if "comm=" in line]
    assert len(runs) == 6 and all("comm=analytical/ring/8ch calibration=h100-analytical" in r for r in runs)
    assert main(["sweep", str(REPO / "sweeps" / "quick.yaml"), "--backend", "analytical", "--calibration", "none",
                 "--dry-run"]) == 0
    assert "calibration=" not in capsys.readouterr().out


def test_sweep_refuses_a_bad_worker_count(capsys):
    assert "argument -j/--jobs: must be >= 1, got 0" in one_line_error(
        capsys, ["sweep", str(REPO / "sweeps" / "quick.yaml"), "-j", "0", "--dry-run"])


def test_sweep_with_a_damaged_cache_fails_before_any_run(capsys, tmp_path):
    spec = write(tmp_path, "s.yaml", f"""\
        topology: {REPO}/topologies/dally-3tier.yaml
        policies: [fifo]
        workloads: [batch:n=3]
        """)
    cache = tmp_path / "damaged"
    cache.mkdir()
    (cache / "latency-cache.sqlite").write_bytes(os.urandom(8192))
    line = one_line_error(capsys, ["sweep", str(spec), "--cache-dir", str(cache), "--out", str(tmp_path / "o"),
                                   "--quiet"])
    assert "latency-cache.sqlite" in line and f"artist cache --cache-dir {cache} clear` to start afresh" in line
    assert not (tmp_path / "o" / "runs").exists() or not any((tmp_path / "o" / "runs").iterdir())


# --------------------------------------------------------------------------- failures during the work


class _Crashing:
    """A backend whose ns-3 worker dies on the first question (a step or one collective)."""

    name = "ns3"

    def __init__(self, topology):
        self.topology = topology

    def identity(self):
        return {"backend": "ns3"}

    def _crash(self):
        from artist.network.ns3.runner import Ns3SimulationError

        raise Ns3SimulationError("[[8]]", "ns-3 worker crashed (exit code -9)")

    def time(self, graphs):
        self._crash()

    def collective_seconds(self, group, nbytes, kind="all_reduce"):
        self._crash()


@pytest.mark.parametrize("argv", [
    ["simulate", "--workload", "batch:n=3,gpus=8"],
    ["latency-table", "--shape", "[[8]]", "--model", "resnet50"],
    ["comm", "--shape", "[[8]]", "--model", "resnet50"],
    ["comm", "--collective", "all_reduce", "--bytes", "64MiB", "--gpus", "0-7"],
])
def test_a_killed_ns3_worker_is_one_line_in_every_command(capsys, monkeypatch, argv):
    from artist.network.stack import CommSpec

    monkeypatch.setattr(CommSpec, "build", lambda self, topology, profile=None: _Crashing(topology))
    line = one_line_error(capsys, argv, code=3)
    assert line == "artist: error: ns-3 simulation of placement [[8]] failed: ns-3 worker crashed (exit code -9)"


def test_ctrl_c_in_simulate_says_nothing_was_written_and_the_cache_kept_its_answers(capsys, monkeypatch):
    import artist.commands.simulate as cmd

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cmd, "simulate", interrupted)
    line = one_line_error(capsys, ["simulate", "--workload", "batch:n=3"], code=130)
    assert line.startswith("artist: interrupted: no tables written; the network answers computed so far are in ")


def _as_from_a_terminal():
    """In the child before exec: SIGINT handled and unblocked, as a shell starts a foreground command. A child
    inherits ignored signals and the signal mask, and in full-suite runs (never alone) the sweep ignored the
    signal: something earlier in the suite's process leaves SIGINT ignored or blocked (not found)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_ctrl_c_in_a_sweep_keeps_finished_runs_and_says_how_to_resume(tmp_path):
    """A real SIGINT to the sweep's process group (what Ctrl-C sends) once the first run is stored."""
    spec = write(tmp_path, "s.yaml", f"""\
        topology: {REPO}/topologies/dally-3tier.yaml
        policies: [fifo, tiresias, dally]
        workloads: ["batch:n=400"]
        seeds: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
        """)
    out = tmp_path / "out"
    # 36 runs and an empty latency cache of its own, so that the sweep is far from done when the first
    # run is stored
    env = dict(os.environ, PYTHONPATH=str(REPO), ARTIST_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.Popen(ARTIST + ["sweep", str(spec), "-j", "2", "--quiet", "--no-plots", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
                            preexec_fn=_as_from_a_terminal)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            stored = [d for d in (out / "runs").glob("*") if re.fullmatch("[0-9a-f]{16}", d.name)]
            if stored:  # a run directory appears under its id only when complete (renamed into place)
                break
            time.sleep(0.2)
        assert proc.poll() is None, "the sweep finished before it could be interrupted; give it more work"
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "runs are saved under" in lines[0] and "run the same command again to resume" in lines[0]
    saved = int(lines[0].split("interrupted: ")[1].split(" of ")[0])
    assert 1 <= saved < 36


def test_comm_answers_from_the_latency_cache_the_second_time(capsys, tmp_path):
    argv = ["comm", "--model", "resnet50", "--shape", "[[4,4],[8]]", "--cache-dir", str(tmp_path / "c")]
    assert main(argv) == 0
    first = capsys.readouterr().out
    assert main(argv) == 0
    second = capsys.readouterr().out
    assert "answered from cache  no" in first and "answered from cache  yes" in second
    # The same numbers either way: a cache never changes an answer.
    def pick(text):
        return [line for line in text.splitlines() if line.startswith(("raw seconds", "exposed seconds"))]

    assert pick(first) == pick(second)
    assert main(argv[:-2] + ["--no-cache"]) == 0
    assert "answered from cache  cache off" in capsys.readouterr().out


def test_version_and_list(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("artist ")
    assert main(["list", "policies"]) == 0
    assert {"fifo", "tiresias", "dally", "gandiva"} <= set(capsys.readouterr().out.split())
    assert main(["list", "topologies"]) == 0
    listed = capsys.readouterr().out
    assert "dgx-h100" in listed  # and the cluster files, usable by name as --topology:
    assert "crius-testbed          cluster of 2 pools: A40 16 x 2, A10 16 x 2 (64 GPUs)" in listed
    assert main(["list", "profiles"]) == 0
    assert "h100-ns3                   backend ns3/ring/8ch on topology h100-dgx" in capsys.readouterr().out


def test_list_models_names_every_model_a_job_can_name(capsys):
    # both kinds: the shipped data-parallel profiles (one per file) and the LLM zoo (--plan, the llm generator)
    from artist.workload.zoo import ZOO

    assert main(["list", "models"]) == 0
    names = {line.split()[0] for line in capsys.readouterr().out.splitlines() if line.startswith("  ")}
    profiles = {p.stem for p in (REPO / "workloads" / "models").glob("*.yaml")}
    assert names == profiles | set(ZOO)
    assert {"resnet50", "gpt3-13b", "llama2-70b", "moe-27b"} <= names


def test_list_sweeps_names_every_shipped_spec_with_its_headline(capsys):
    assert main(["list", "sweeps"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert [r.split()[0] for r in rows] == sorted(p.stem for p in (REPO / "sweeps").glob("*.yaml"))
    quick = next(r for r in rows if r.startswith("quick "))
    assert quick.split(None, 1)[1] == "The shipped default sweep"  # its header's first sentence


def test_plot_of_a_damaged_results_table_is_one_line(capsys, tmp_path):
    (tmp_path / "results.parquet").write_text("not parquet")
    line = one_line_error(capsys, ["plot", str(tmp_path)])
    assert f"{tmp_path / 'results.parquet'}: cannot read the results table" in line
    assert "not a finished sweep directory" in one_line_error(capsys, ["plot", str(tmp_path / "nowhere")])


@pytest.mark.parametrize("field, value, expected", [
    ("racks", "[100000000]", "field 'racks[0]': must be <= 1048576"),
    ("racks", "[100000]", "field 'racks': dally-3tier: 100000 racks of 64 GPUs is 6400000 GPUs"),
    ("seeds", "[4294967296]", "field 'seeds[0]': must be <= 4294967295"),
    ("comm", "{backend: analytical, channels: 100000}", "field 'comm.channels[0]': must be <= 64"),
    ("simulator", "{round_interval_s: 0.000001}", "field 'simulator.round_interval_s': must be >= 1"),
    ("simulator", "{restore_seconds: 1.0e+12}", "field 'simulator.restore_seconds': must be <= 86400"),
    # a switch is true or false: bool("no") is True, so a word must not turn an option on (or leave it on)
    ("comm", "{backend: ns3, options: {ns3: {fast_path: 'no'}}}", "fast_path must be true or false, got 'no'"),
    ("comm", "{backend: ns3, options: {ns3: {exact_reuse: 0}}}", "exact_reuse must be true or false, got 0"),
    ("comm", "{backend: ns3, options: {ns3: {timeout_s: 0}}}", "timeout_s must be a number of seconds > 0"),
    ("comm", "{backend: ns3, options: {ns3: {timeout_s: -5}}}", "timeout_s must be a number of seconds > 0"),
    # a window under one ack's frames (7 x 8984 B sent before the 8th) stalled every longer message, for ever
    ("comm", "{backend: ns3, options: {ns3: {window_bytes: 62888}}}",
     "window_bytes (62888) must exceed ack_every - 1 (7)"),
])
def test_sweep_specs_have_the_commands_bounds(capsys, tmp_path, field, value, expected):
    spec = write(tmp_path, "s.yaml", f"""\
        topology: {REPO}/topologies/dally-3tier.yaml
        policies: [fifo]
        workloads: [batch:n=3]
        {field}: {value}
        """)
    assert expected in one_line_error(capsys, ["sweep", str(spec), "--dry-run"])


def test_model_and_topology_fields_that_would_be_ignored_or_break_later_are_refused(capsys, tmp_path):
    from artist.errors import InputError
    from artist.topology import load_topology
    from artist.workload import ModelProfile

    text = (REPO / "workloads" / "models" / "alexnet.yaml").read_text()
    bad = write(tmp_path, "m.yaml", text + "forward_fraction: 1.0\n")
    with pytest.raises(InputError, match=r"field 'forward_fraction': must be < 1"):
        ModelProfile.from_yaml(bad)
    text = (REPO / "topologies" / "dally-3tier.yaml").read_text().replace(
        "  rack:\n", "  rack:\n    oversubscription: 2.0\n", 1)
    bad = write(tmp_path, "t.yaml", text)
    with pytest.raises(InputError, match=r"field 'tiers\.rack\.oversubscription': unknown field"):
        load_topology(bad)


def test_helios_trace_with_a_repeated_job_id_is_refused_by_line(tmp_path):
    from artist.errors import InputError
    from artist.workload import HELIOS_COLUMNS, read_helios_csv

    row = "{id},u,vc,8,0,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:10,2020-04-01 01:00:00,3600,10"
    trace = write(tmp_path, "cluster_log.csv", ",".join(HELIOS_COLUMNS) + "\n" + row.format(id="a") + "\n"
                  + row.format(id="b") + "\n" + row.format(id="a") + "\n")
    with pytest.raises(InputError, match=r"cluster_log\.csv: line 4: job_id 'a' appears twice \(first on line 2\)"):
        read_helios_csv(trace, ["resnet50"], 0)


def test_a_profile_for_other_backend_latencies_is_one_line(capsys, tmp_path):
    """Same backend/algorithm/channels, but fitted with another NCCL base latency: the Calibrated
    wrapper refuses it, and simulate and comm say so in one line naming the profile."""
    text = (REPO / "calibration" / "profiles" / "h100-analytical.yaml").read_text()
    text = text.replace("    base_s: 8.4e-06\n", "    base_s: 9.9e-06\n")
    text = "\n".join(line for line in text.splitlines() if not line.startswith("id:")) + "\n"
    profile = write(tmp_path, "other.yaml", text)
    common = ["--topology", "h100-dgx", "--channels", "8", "--calibration", str(profile)]
    line = one_line_error(capsys, ["simulate", *common, "--workload", "batch:n=3,gpus=8"])
    assert line.startswith(f"artist: error: {profile}: ") and "9.9e-06" in line
    line = one_line_error(capsys, ["comm", *common, "--model", "resnet50", "--shape", "[[8]]"])
    assert line.startswith(f"artist: error: {profile}: ")


def test_a_sweep_name_that_is_a_path_is_refused(capsys, tmp_path):
    """results/<name> is the default output: a name like '../../x' would write outside results/."""
    spec = write(tmp_path, "s.yaml", f"""\
        name: ../../../escape
        topology: {REPO}/topologies/dally-3tier.yaml
        policies: [fifo]
        workloads: [batch:n=3]
        """)
    assert "field 'name': expected letters, digits" in one_line_error(capsys, ["sweep", str(spec), "--dry-run"])


def test_a_sweep_into_another_sweeps_directory_is_refused_and_its_results_kept(capsys, tmp_path):
    body = (f"topology: {REPO}/topologies/dally-3tier.yaml\nracks: [1]\npolicies: [fifo]\n"
            "workloads: [batch:n=3]\ncomm: analytical\n")
    (tmp_path / "one.yaml").write_text("name: one\n" + body)
    (tmp_path / "two.yaml").write_text("name: two\n" + body)
    out = tmp_path / "out"
    assert main(["sweep", str(tmp_path / "one.yaml"), "--out", str(out), "-j", "1", "--quiet", "--no-plots",
                 "--no-cache"]) == 0
    before = (out / "results.csv").read_bytes()
    capsys.readouterr()
    line = one_line_error(capsys, ["sweep", str(tmp_path / "two.yaml"), "--out", str(out), "-j", "1", "--quiet",
                                   "--no-plots", "--no-cache"])
    assert "holds the results of sweep 'one', not 'two'" in line
    assert (out / "results.csv").read_bytes() == before
    assert main(["sweep", str(tmp_path / "one.yaml"), "--out", str(out), "-j", "1", "--quiet", "--no-plots",
                 "--no-cache"]) == 0  # its own sweep resumes there


def test_an_empty_out_is_refused_rather_than_writing_nothing(capsys):
    assert "--out: empty path" in one_line_error(capsys, ["simulate", "--out", "", "--quiet"])


def test_trace_convert_onto_its_own_input_is_refused_and_the_input_kept(capsys, tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_bytes((REPO / "workloads" / "traces" / "small.csv").read_bytes())
    before = trace.read_bytes()
    line = one_line_error(capsys, ["trace", "convert", str(trace), "--to", str(tmp_path / "." / "t.csv")])
    assert "is the trace being converted" in line and trace.read_bytes() == before


def _edited_file_error(tmp_path, shipped_file: Path, old: str, new: str, load) -> tuple[Path, str]:
    """(the copy, the InputError's text) of loading a shipped file with its first `old` replaced by `new`."""
    from artist.errors import InputError

    text = shipped_file.read_text()
    assert old in text  # the edit point is still there
    bad = write(tmp_path, shipped_file.name, text.replace(old, new, 1))
    with pytest.raises(InputError) as err:
        load(bad)
    return bad, str(err.value)


@pytest.mark.parametrize("old, new, expected", [
    # values that pass as numbers but would hang a run (a step of years) or overflow (inf in a cache key)
    ("    bandwidth_gbps: 400\n", "    bandwidth_gbps: 1.0e-300\n",
     "field 'tiers.rack.bandwidth_gbps': must be >= 0.001"),
    ("    bandwidth_gbps: 800\n", "    bandwidth_gbps: 1.0e+300\n",
     "field 'tiers.spine.bandwidth_gbps': must be <= 1e+06"),
    ("    switch_latency_us: 0.5\n", "    switch_latency_us: 1.0e+308\n",
     "field 'tiers.spine.switch_latency_us': must be <= 1e+06"),
    ("    oversubscription: 1.0\n", "    oversubscription: 1.0e+9\n",
     "field 'tiers.spine.oversubscription': must be <= 1000"),
])
def test_topology_figures_past_any_fabric_are_refused_naming_the_field(tmp_path, old, new, expected):
    from artist.topology import load_topology

    bad, error = _edited_file_error(tmp_path, REPO / "topologies" / "dally-3tier.yaml", old, new, load_topology)
    assert expected in error and str(bad) in error


@pytest.mark.parametrize("old, new, expected", [
    ("  seconds_per_iteration: 0.007599\n", "  seconds_per_iteration: 1.0e+308\n",
     "field 'compute.seconds_per_iteration': must be <= 86400"),
    ('  - ["classifier.6.bias", 1000]', '  - ["classifier.6.bias", 1000000000000000000]', "numel must be <= 1e+13"),
])
def test_model_figures_past_any_model_are_refused_naming_the_field(tmp_path, old, new, expected):
    from artist.workload import ModelProfile

    bad, error = _edited_file_error(tmp_path, REPO / "workloads" / "models" / "alexnet.yaml", old, new,
                                    ModelProfile.from_yaml)
    assert expected in error and str(bad) in error


DEEP = "[" * 50_000 + "]" * 50_000  # past Python's recursion limit: a RecursionError traceback before


def test_a_yaml_file_nested_too_deeply_is_one_line(capsys, tmp_path):
    spec = write(tmp_path, "s.yaml", f"name: x\npolicies: {DEEP}\n")
    assert f"{spec}: invalid YAML: nested too deeply" in one_line_error(capsys, ["sweep", str(spec), "--dry-run"])


def test_a_philly_log_nested_too_deeply_is_one_line(capsys, tmp_path):
    log = write(tmp_path, "log.json", "[" + DEEP + "]")
    line = one_line_error(capsys, ["simulate", "--workload", f"philly:path={log}", "--quiet"])
    assert f"{log}: line 1: a job object nested too deeply" in line


def test_a_shape_nested_too_deeply_is_one_line(capsys):
    line = one_line_error(capsys, ["comm", "--model", "resnet50", "--shape", DEEP])
    assert "is nested too deeply" in line


@pytest.mark.parametrize("argv", [
    ["simulate", "--workload", "{dev}", "--quiet"],
    ["simulate", "--workload", "philly:path={dev}", "--quiet"],
    ["simulate", "--topology", "{dev}", "--quiet"],
    ["sweep", "{dev}", "--dry-run"],
])
@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_a_device_or_a_pipe_as_input_is_refused_at_once(tmp_path, argv, kind):
    """/dev/zero read 4.6 GB in 10 s, and a pipe with no writer blocked the open for ever."""
    if kind == "fifo":
        dev = tmp_path / "pipe"
        os.mkfifo(dev)
    else:
        dev = Path("/dev/zero")
        if not dev.exists():
            pytest.skip("no /dev/zero here")
    args = [a.replace("{dev}", str(dev)) for a in argv]
    code = f"import sys; from artist.cli import main; sys.exit(main({args!r}))"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    err = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(err) == 1 and "not a regular file" in err[0] and str(dev) in err[0], err


LOG = REPO / "calibration" / "data" / "stas00_1node_8xA100_allreduce_columns_trimmed.txt"


@pytest.mark.parametrize("extra, expected", [
    (["--backend", "none", "--out", "{tmp}/p.yaml"], "--backend: none makes communication free"),
    (["--out", "{tmp}"], "--out: {tmp} is a directory; name the file to write"),
    (["--out", "{tmp}/p.yaml", "--report", "{tmp}/r.txt"], "--report: {tmp}/r.txt is a file; name a directory"),
    (["--out", "{tmp}/p.yaml", "--plot", "{tmp}"], "--plot: {tmp} is a directory"),
    (["--out", "{log}"], "is one of the logs read: writing it would overwrite it"),
])
def test_calibrate_checks_where_it_writes_before_simulating(capsys, tmp_path, extra, expected):
    log = tmp_path / "log.txt"
    log.write_bytes(LOG.read_bytes())
    (tmp_path / "r.txt").write_text("not a directory")
    args = ["calibrate", "--topology", "dally-3tier", "--logs", str(log), "--layout", "1x8"]
    args += [a.replace("{tmp}", str(tmp_path)).replace("{log}", str(log)) for a in extra]
    line = one_line_error(capsys, args)
    assert expected.replace("{tmp}", str(tmp_path)) in line
    assert log.read_bytes() == LOG.read_bytes() and not (tmp_path / "p.yaml").exists()


def test_latency_table_out_as_a_directory_is_one_line(capsys, tmp_path):
    line = one_line_error(capsys, ["latency-table", "--model", "resnet50", "--shape", "[[8]]", "--out", str(tmp_path)])
    assert f"--out: {tmp_path} is a directory" in line


def test_calibrate_takes_the_name_of_a_shipped_topology(capsys, tmp_path):
    """As every other command does (it was refused: 'dally-3tier: cannot read file')."""
    assert main(["calibrate", "--topology", "dally-3tier", "--logs", str(LOG), "--layout", "1x8", "--out",
                 str(tmp_path / "p.yaml"), "--no-cache"]) == 0
    assert "topology dally-3tier" in capsys.readouterr().out and (tmp_path / "p.yaml").is_file()


@pytest.mark.parametrize("damage", [b"", b'{"jobs": 3, "fini'])
def test_a_run_record_torn_by_a_power_loss_is_run_again(capsys, tmp_path, damage):
    """A 0-byte or cut summary.json used to break every later sweep of the spec with a JSONDecodeError."""
    spec = write(tmp_path, "s.yaml", f"""\
        name: torn
        topology: {REPO}/topologies/dally-3tier.yaml
        racks: [1]
        policies: [fifo, tiresias]
        workloads: [batch:n=3]
        comm: analytical
        """)
    out = tmp_path / "out"
    args = ["sweep", str(spec), "--out", str(out), "-j", "1", "--quiet", "--no-plots", "--no-cache"]
    assert main(args) == 0
    table = (out / "results.csv").read_bytes()
    torn = sorted((out / "runs").iterdir())[0] / "summary.json"
    torn.write_bytes(damage)
    capsys.readouterr()
    assert main(args) == 0
    assert "1 already done, 1 run now" in capsys.readouterr().out
    assert (out / "results.csv").read_bytes() == table  # the same row again


def test_comm_json_is_json_for_a_model_and_a_collective_too(capsys):
    """--json was honoured with --job and --plan only: with --model it printed the text table."""
    import json

    assert main(["comm", "--model", "resnet50", "--shape", "[[8,8]]", "--json", "--no-cache"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["model"] == "resnet50" and row["gpus"] == 16 and row["tier"] == "rack"
    assert row["exposed_seconds"] <= row["raw_seconds"] and row["answered_by"] == "analytical"
    assert main(["comm", "--collective", "all_reduce", "--bytes", "1MiB", "--shape", "[[8]]", "--json",
                 "--no-cache"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["bytes_per_rank"] == 1 << 20 and row["seconds"] > 0 and row["from_cache"] is None


def test_a_nul_byte_in_yaml_is_one_line_naming_its_line(capsys, tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_bytes(b"name: x\ntopology: a\x00b\n")
    line = one_line_error(capsys, ["sweep", str(spec), "--dry-run"])
    assert f"{spec}: line 2: invalid YAML: unacceptable character #x0000" in line


def test_a_bad_yaml_policy_param_is_one_line(capsys):
    """PyYAML's message spans seven lines with its quoted context."""
    line = one_line_error(capsys, ["simulate", "--policy", "tiresias", "--policy-param", "thresholds=[1, 2"])
    assert "--policy-param thresholds: not a YAML value: '[1, 2'" in line and "line 1, column 6" in line


@pytest.mark.parametrize("executor, address", [("dask", "tcp://127.0.0.1:1"), ("ray", "127.0.0.1:1")])
def test_a_cluster_address_that_does_not_answer_is_one_line(capsys, tmp_path, executor, address):
    """Dask printed a traceback after 30 s of retries; ray waited for minutes (a TCP connect now asks first)."""
    pytest.importorskip("distributed" if executor == "dask" else "ray")
    spec = write(tmp_path, "s.yaml", f"""\
        topology: {REPO}/topologies/dally-3tier.yaml
        policies: [fifo]
        workloads: [batch:n=3]
        comm: analytical
        """)
    line = one_line_error(capsys, ["sweep", str(spec), "--executor", executor, "--address", address, "--quiet",
                                   "--out", str(tmp_path / "out")])
    assert f"--address: no {'dask scheduler' if executor == 'dask' else 'ray cluster'} answers at {address}" in line


@pytest.mark.parametrize("old, new, expected", [
    ("     float     sum", "     quad      sum", "column 'type': unknown nccl-tests data type 'quad'"),
    ("    164.3    0.00", "   1e308    0.00", "column 'time': 1e308 us is over an hour"),
])
def test_nccl_rows_that_cannot_be_checked_or_are_impossible_are_refused_by_line(tmp_path, old, new, expected):
    """An unknown type skipped the size = count x type check; 1e308 us reached the fit."""
    from artist.calibration.nccl_tests import parse_nccl_tests

    _, error = _edited_file_error(tmp_path, REPO / "calibration" / "data" / "aws_p4de_2node_16xA100_efa.txt", old,
                                  new, parse_nccl_tests)
    assert expected in error and "line " in error


@pytest.fixture(scope="module")
def finished_sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("finished") / "out"
    spec = out.parent / "s.yaml"
    spec.write_text(f"name: fin\ntopology: {REPO}/topologies/dally-3tier.yaml\nracks: [1]\npolicies: [fifo]\n"
                    "workloads: [batch:n=3]\ncomm: analytical\n")
    assert main(["sweep", str(spec), "--out", str(out), "-j", "1", "--quiet", "--no-plots", "--no-cache"]) == 0
    return out


@pytest.mark.parametrize("command", ["report", "plot"])
@pytest.mark.parametrize("damage, expected", [
    (lambda t: t.iloc[0:0], "the results table has no runs"),
    (lambda t: t.assign(jct_mean_s="slow"), "column 'jct_mean_s': expected numbers"),
    (lambda t: t.drop(columns=["racks"]), "the results table lacks column(s) racks"),
])
def test_report_and_plot_of_an_odd_results_table_are_one_line(capsys, tmp_path, finished_sweep, command, damage,
                                                              expected):
    """report raised KeyError tracebacks on such tables; plot checked the columns only."""
    import shutil

    import pandas as pd

    out = tmp_path / "fin"
    shutil.copytree(finished_sweep, out)
    damage(pd.read_parquet(out / "results.parquet")).to_parquet(out / "results.parquet")
    assert expected in one_line_error(capsys, [command, str(out)])


def test_a_full_disk_under_simulate_out_is_one_line_and_leaves_no_half_table(capsys, tmp_path, monkeypatch):
    """It left jobs.csv.tmp behind with a traceback."""
    import errno

    import pandas as pd

    real = pd.DataFrame.to_parquet

    def full(self, path, *args, **kwargs):
        if str(path).endswith("summary.parquet.tmp"):
            Path(path).write_bytes(b"half")
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, path, *args, **kwargs)

    monkeypatch.setattr(pd.DataFrame, "to_parquet", full)
    line = one_line_error(capsys, ["simulate", "--quiet", "--no-cache", "--out", str(tmp_path)])
    assert "summary.parquet: cannot write (No space left on device); written before it: jobs.csv" in line
    assert not list(tmp_path.glob("*.tmp"))


def test_report_out_naming_a_file_is_one_line(capsys, tmp_path, finished_sweep):
    (tmp_path / "r").write_text("a file")
    line = one_line_error(capsys, ["report", str(finished_sweep), "--out", str(tmp_path / "r")])
    assert f"--out: {tmp_path / 'r'} is a file; name a directory" in line


def test_a_run_whose_rounds_would_never_end_is_refused_before_it_starts(capsys, tmp_path):
    """A 1e9-iteration job at 1 s rounds was ~1e8 policy calls, within every other limit."""
    trace = write(tmp_path, "t.csv", "job_id,arrival,model,gpus,iterations\nj1,0,resnet50,8,1000000000\n")
    assert main(["simulate", "--workload", str(trace), "--round-interval", "1", "--quiet", "--no-cache"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "job j1 runs for at least" in err[0] and "more than 1e+07" in err[0]
    # a job 10^6 times shorter is not refused by this bound
    trace.write_text("job_id,arrival,model,gpus,iterations\nj1,0,resnet50,8,1000\n")
    assert main(["simulate", "--workload", str(trace), "--round-interval", "1", "--quiet", "--no-cache"]) == 0


def test_a_profile_without_a_tier_the_run_uses_says_so_before_the_run(capsys, tmp_path):
    """A profile fitted on one machine applied to two racks left the rack and network tiers uncalibrated
    without a word (the results' uncalibrated column says it after the run, this note before)."""
    assert main(["simulate", "--topology", "dally-3tier", "--racks", "2", "--channels", "8", "--calibration",
                 "stas00-a100-analytical", "--quiet", "--no-cache"]) == 0
    err = capsys.readouterr().err
    assert ("note: calibration profile stas00-a100-analytical has no all_reduce correction for the rack, network "
            "tier(s) of dally-3tier") in err
    from artist.sweep.spec import load_sweep_spec

    spec = write(tmp_path, "s.yaml", f"""\
        topology: {REPO}/topologies/dally-3tier.yaml
        racks: [1]
        policies: [fifo]
        workloads: [batch:n=3]
        comm: {{backend: analytical, channels: 8}}
        calibration: {REPO}/calibration/profiles/stas00-a100-analytical.yaml
        """)
    notes = load_sweep_spec(spec).notes
    assert any("no all_reduce correction for the rack tier(s) of dally-3tier" in n for n in notes)


PROBE_PLUGIN = '''
import os
from artist.policies.fifo import Fifo
from artist.policies.registry import register


@register("mask-probe")
class MaskProbe(Fifo):
    """FIFO that writes its process's blocked-signal mask where the test reads it."""

    def __init__(self):
        status = open("/proc/self/status").read()
        mask = int(status.split("SigBlk:")[1].split()[0], 16)
        with open(os.path.join(os.environ["MASK_PROBE_DIR"], str(os.getpid())), "w") as f:
            f.write(str(mask))
'''


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads signal masks from /proc")
def test_sweep_workers_start_with_ctrl_c_blocked_so_only_the_sweep_answers_it(tmp_path):
    """Ctrl-C goes to the whole process group: a worker still importing when it came printed the traceback
    of its interrupted import (1 sweep in 8 at ~1 s). Workers now start with SIGINT blocked (the sweep stops
    them), which this checks in every worker, deterministically, through a policy that reads its own mask."""
    (tmp_path / "probe.py").write_text(PROBE_PLUGIN)
    spec = write(tmp_path, "s.yaml", f"""\
        topology: {REPO}/topologies/dally-3tier.yaml
        policies: [{{name: mask-probe, plugin: probe.py}}]
        workloads: ["batch:n=20"]
        seeds: [0, 1, 2, 3]
        """)
    probes = tmp_path / "probes"
    probes.mkdir()
    env = dict(os.environ, PYTHONPATH=str(REPO), ARTIST_CACHE_DIR=str(tmp_path / "cache"), MASK_PROBE_DIR=str(probes))
    proc = subprocess.Popen(ARTIST + ["sweep", str(spec), "-j", "2", "--quiet", "--no-plots", "--out",
                                      str(tmp_path / "o")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, preexec_fn=_as_from_a_terminal)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    masks = {int(p.name): int(p.read_text()) for p in probes.iterdir()}
    sigint = 1 << (signal.SIGINT - 1)
    assert not masks.pop(proc.pid) & sigint  # the sweep itself (it reads the spec's plugin) answers Ctrl-C
    assert masks and all(m & sigint for m in masks.values()), masks  # every worker that ran a run does not


@pytest.mark.parametrize("policy, extra, named", [
    ("pollux", ["--calibration", "h100-analytical"], "--calibration"),
    ("sia", ["--contention", "shared", "--restore-seconds", "5"], "--contention, --restore-seconds"),
    ("crius", ["--round-interval", "60"], "--round-interval"),
])
def test_rigid_loop_options_under_a_round_based_policy_are_refused_not_ignored(capsys, policy, extra, named):
    # the elastic and Crius loops read none of these: a run that silently looked calibrated (or shared) was wrong
    line = one_line_error(capsys, ["simulate", "--policy", policy, "--workload", "batch:n=2", *extra])
    assert f"--policy: {policy} runs the " in line
    assert f"which does not take {named} (options of the rigid loop)" in line


def test_simulate_takes_a_shipped_trace_by_name(capsys, tmp_path):
    # `--workload small` is workloads/traces/small.csv (as a sweep spec's `workloads: [small]`); an unknown bare
    # name lists the shipped traces
    by_name, by_path = tmp_path / "name", tmp_path / "path"
    assert main(["simulate", "--workload", "small", "--quiet", "--out", str(by_name)]) == 0
    assert main(["simulate", "--workload", str(REPO / "workloads" / "traces" / "small.csv"), "--quiet",
                 "--out", str(by_path)]) == 0
    assert (by_name / "jobs.csv").read_bytes() == (by_path / "jobs.csv").read_bytes()
    capsys.readouterr()
    line = one_line_error(capsys, ["simulate", "--workload", "no-such-trace"])
    assert "no such trace file, not a shipped trace (helios_sample, small)" in line
