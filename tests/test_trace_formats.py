"""The trace readers on hand-written fixtures in each published schema (tests/data/traces/README.md).

Expected GPU counts, run times, GPU-hours, categories and iterations are worked out by hand from the
fixture rows and the documented rules (docs/pages/reference/formats.md, "Supported trace formats"), not read
back from the code.
"""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import pytest

from artist.errors import InputError
from artist.workload import load_models
from artist.workload.spec import jobs_from_spec
from artist.workload.traces.formats import FORMATS, detect_format
from artist.workload.traces.load import load_trace
from artist.workload.traces.options import TraceOptions
from artist.workload.traces.stats import trace_stats

from conftest import REPO

DATA = REPO / "tests" / "data" / "traces"
PHILLY = DATA / "philly_cluster_job_log.json"
HELIOS = REPO / "workloads" / "traces" / "helios_sample.csv"
V100 = 0.485830  # mapping.GPU_SPEEDS, as topologies/hetero-a100-v100.yaml


@pytest.fixture(scope="module")
def models():
    return load_models()


def by_id(jobs):
    return {j.job_id: j for j in jobs}


def write(tmp_path, name, text) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


# --------------------------------------------------------------------------- detection


@pytest.mark.parametrize("name, fmt", [
    ("philly_cluster_job_log.json", "philly"), ("pai", "pai"), ("trace_seren.csv", "acme"),
    ("trace_kalos.csv", "acme"), ("pollux_workload.csv", "pollux"), ("sia_workload.csv", "pollux"),
    ("gavel.trace", "gavel"), ("gavel_msr.trace", "gavel"), ("tiresias_job.csv", "tiresias"),
    ("crius_trace.csv", "crius")])
def test_each_fixture_is_recognised(name, fmt):
    assert detect_format(DATA / name) == fmt


def test_shipped_traces_are_recognised():
    assert detect_format(HELIOS) == "helios"
    assert detect_format(REPO / "workloads" / "traces" / "small.csv") == "artist"


# --------------------------------------------------------------------------- Philly

# jobid suffix -> (GPUs, run time s, arrival s): GPUs of the first attempt's details, run time = last
# attempt's end - first attempt's start, arrival = submitted_time - 01:00:00 of the first job.
PHILLY_EXPECTED = {
    "0001": (8, 3600, 0), "0002": (4, 7200, 600), "0003": (1, 60, 1200), "0004": (16, 43200, 1800),
    "0007": (2, 1800, 14400), "0008": (4, 3600, 29700),
}
# GPU-hours 8, 8, 1/60, 192, 1.0, 4 -> Pollux categories M, M, S, XL, S (1.0 is S's upper bound), M.
PHILLY_CATEGORY = {"0001": "M", "0002": "M", "0003": "S", "0004": "XL", "0007": "S", "0008": "M"}
CATEGORY_MODELS = {"S": {"resnet18", "mobilenet_v3_large"}, "M": {"alexnet", "bert_large"}, "L": {"vgg11"},
                   "XL": {"resnet50"}}


def test_philly_gpus_run_times_arrivals_and_categories(models):
    jobs, report = load_trace(PHILLY, models, seed=0)
    got = {j.job_id[-4:]: j for j in jobs}
    assert set(got) == set(PHILLY_EXPECTED)  # 0005 has no attempt, 0006 is still running
    assert report.rows == 8 and report.kept == 6 and sum(report.dropped.values()) == 2
    for key, (gpus, run, arrival) in PHILLY_EXPECTED.items():
        job = got[key]
        assert (job.gpus, job.arrival) == (gpus, arrival)
        assert job.model in CATEGORY_MODELS[PHILLY_CATEGORY[key]]
        assert job.iterations == round(run / models[job.model].compute_seconds)  # alone, on the reference A100


def test_philly_gpu_type_scales_iterations_by_its_speed(models):
    plain = by_id(load_trace(PHILLY, models, seed=3)[0])
    v100 = by_id(load_trace(PHILLY, models, seed=3, options=TraceOptions(gpu_type="V100"))[0])
    for job_id, job in v100.items():
        run = PHILLY_EXPECTED[job_id[-4:]][1]
        assert job.model == plain[job_id].model  # the same seeded draw
        assert job.iterations == round(run * V100 / models[job.model].compute_seconds)


def test_philly_states_drop_and_flag(models):
    dropped, report = load_trace(PHILLY, models, 0, options=TraceOptions(states="drop"))
    assert {j.job_id[-4:] for j in dropped} == {"0001", "0004", "0007", "0008"}  # Killed 0002, Failed 0003 gone
    assert report.dropped["cancelled (state Killed)"] == 1 and report.dropped["failed (state Failed)"] == 1
    flagged, report = load_trace(PHILLY, models, 0, options=TraceOptions(states="flag"))
    assert len(flagged) == 6 and sum(report.flagged.values()) == 2
    assert any("flagged (kept) 1: failed (state Failed)" in line for line in report.lines())


def test_philly_busiest_hour_and_rate_sampling(models):
    # Hour 0 (01:00-02:00) holds 0001-0004 once 0005/0006 are dropped; hours 4 and 8 hold one job each.
    window, _ = load_trace(PHILLY, models, 0, options=TraceOptions(busiest_hours=1))
    assert {j.job_id[-4:] for j in window} == {"0001", "0002", "0003", "0004"}
    two_hours, _ = load_trace(PHILLY, models, 0, options=TraceOptions(busiest_hours=5))  # hours 0-4: five jobs
    assert len(two_hours) == 5
    picks = set()
    for seed in range(12):
        sampled, _ = load_trace(PHILLY, models, seed, options=TraceOptions(busiest_hours=1, rate_per_hour=2))
        assert len(sampled) == 2 and {j.job_id[-4:] for j in sampled} <= {"0001", "0002", "0003", "0004"}
        assert sampled[0].arrival == 0.0
        picks.add(frozenset(j.job_id for j in sampled))
    assert len(picks) > 1  # the seed decides which two


def test_philly_spec_seed_parameter_overrides_the_run_seed(models):
    spec = f"philly:path={PHILLY},busiest_hours=1,rate=2/h,seed=7"
    assert jobs_from_spec(spec, models, 0) == jobs_from_spec(spec, models, 99)
    assert jobs_from_spec(spec, models, 0) == load_trace(PHILLY, models, 7, "philly",
                                                         TraceOptions(busiest_hours=1, rate_per_hour=2))[0]


def philly_text(jobs: list) -> str:
    return json.dumps(jobs, indent=2)


def philly_job(jobid, gpus=("gpu0",), submitted="2017-10-07 01:00:00", start="2017-10-07 01:00:00",
               end="2017-10-07 02:00:00", status="Pass"):
    return {"status": status, "vc": "v", "jobid": jobid, "user": "u", "submitted_time": submitted,
            "attempts": [{"start_time": start, "end_time": end, "detail": [{"ip": "m1", "gpus": list(gpus)}]}]}


def test_philly_malformed_json_is_named_by_line(tmp_path, models):
    text = philly_text([philly_job("a"), philly_job("b")])
    broken = text.replace('"jobid": "b",', '"jobid": "b"', 1)  # a missing comma in the second object
    path = write(tmp_path, "log.json", broken)
    line = broken[:broken.index('"jobid": "b"')].count("\n") + 2  # the error is at the next key
    with pytest.raises(InputError, match=rf"log\.json: line {line}: not valid JSON"):
        load_trace(path, models, 0, "philly")
    with pytest.raises(InputError, match=r"expected a JSON array of jobs"):
        load_trace(write(tmp_path, "obj.json", "{}"), models, 0, "philly")
    with pytest.raises(InputError, match=r"not closed"):
        load_trace(write(tmp_path, "cut.json", text[:-2]), models, 0, "philly")


def test_philly_bad_field_stops_or_is_skipped_and_counted(tmp_path, models):
    bad = philly_job("b")
    bad["attempts"][0]["detail"][0]["gpus"] = "gpu0"
    late = philly_job("c", end="2017-10-07 00:00:00")  # ends before it starts
    path = write(tmp_path, "log.json", philly_text([philly_job("a"), bad, late]))
    with pytest.raises(InputError, match=r"log\.json: line \d+ \(job b\), field 'attempts\[0\]\.detail\[0\]\.gpus'"):
        load_trace(path, models, 0, "philly")
    jobs, report = load_trace(path, models, 0, "philly", TraceOptions(skip_bad_rows=True))
    assert [j.job_id for j in jobs] == ["a"] and report.bad_rows == 2
    assert "(job b)" in report.first_bad and "skipped 2 malformed row(s)" in report.lines()[1]


def test_philly_first_attempt_without_gpus_is_a_log_gap_not_a_cpu_job(tmp_path, models):
    path = write(tmp_path, "log.json", philly_text([philly_job("a"), philly_job("b", gpus=())]))
    jobs, report = load_trace(path, models, 0, "philly", TraceOptions(cpu_jobs="keep"))
    assert [j.job_id for j in jobs] == ["a"] and report.dropped == {"first attempt lists no GPUs (a gap in the log)": 1}


def test_philly_duplicate_job_id_names_both_lines(tmp_path, models):
    path = write(tmp_path, "log.json", philly_text([philly_job("a"), philly_job("a")]))
    with pytest.raises(InputError, match=r"job id 'a' appears twice \(first on line 2 \(job a\)\)"):
        load_trace(path, models, 0, "philly")


# --------------------------------------------------------------------------- PAI


def test_pai_tables_joined_as_published(models):
    jobs, report = load_trace(DATA / "pai", models, 0)
    got = by_id(jobs)
    assert set(got) == {"jsyn01", "jsyn02", "jsyn03"}  # jsyn04 is running (no end), jsyn05 asks no GPU
    # jsyn01: worker 2 x 100 % + ps CPU-only = 2 GPUs; run 3700 - 100 (earliest task start) on a V100.
    # 2 GPU-hours -> category M.
    assert got["jsyn01"].gpus == 2 and got["jsyn01"].model in CATEGORY_MODELS["M"]
    assert got["jsyn01"].iterations == round(3600 * V100 / models[got["jsyn01"].model].compute_seconds)
    # jsyn02: 1 x 50 % = half a GPU -> 1; run 7400 - 400 on a T4 (no speed figure: the A100's, said in a note).
    assert got["jsyn02"].gpus == 1
    assert got["jsyn02"].iterations == round(7000 / models[got["jsyn02"].model].compute_seconds)
    # jsyn03: 4 x 100 % = 4 GPUs, failed after 400 - 310 = 90 s: 0.1 GPU-hours -> S.
    assert got["jsyn03"].gpus == 4 and got["jsyn03"].model in CATEGORY_MODELS["S"]
    assert [j.arrival for j in jobs] == [0.0, 100.0, 200.0]  # job start_time is the submission
    text = "\n".join(report.lines())
    assert "fraction of one GPU" in text and "'T4' has no speed figure" in text and "'MISC'" in text
    assert report.dropped["CPU-only (0 GPUs)"] == 1


def test_pai_cpu_jobs_kept_as_one_gpu_and_gpu_speed_option(models):
    jobs, _ = load_trace(DATA / "pai", models, 0, options=TraceOptions(cpu_jobs="keep", gpu_speeds=(("T4", 0.25),)))
    got = by_id(jobs)
    assert got["jsyn05"].gpus == 1  # 600 s run (1200 - 600)
    assert got["jsyn05"].iterations == round(600 / models[got["jsyn05"].model].compute_seconds)
    assert got["jsyn02"].iterations == round(7000 * 0.25 / models[got["jsyn02"].model].compute_seconds)


def test_pai_header_file_and_bad_rows(tmp_path, models):
    pai = tmp_path / "pai"
    pai.mkdir()
    (pai / "pai_job_table.csv").write_text((DATA / "pai" / "pai_job_table.csv").read_text())
    tasks = (DATA / "pai" / "pai_task_table.csv").read_text().splitlines()
    tasks[2] = tasks[2].replace(",50.0,", ",half,")
    (pai / "pai_task_table.csv").write_text("\n".join(tasks) + "\n")
    with pytest.raises(InputError, match=r"pai_task_table\.csv: line 3, column 'plan_gpu': not a number: 'half'"):
        load_trace(pai, models, 0, "pai")
    jobs, report = load_trace(pai, models, 0, "pai", TraceOptions(skip_bad_rows=True))
    assert report.bad_rows == 1 and "jsyn02" not in by_id(jobs)  # its only task was the bad row
    (pai / "pai_job_table.header").write_text("job_name,inst_id,user,state,start_time,end_time\n")
    with pytest.raises(InputError, match=r"pai_job_table\.header: line 1: missing column\(s\) status"):
        load_trace(pai, models, 0, "pai")
    with pytest.raises(InputError, match=r"no pai_task_table\.csv"):
        (pai / "pai_task_table.csv").unlink()
        load_trace(pai, models, 0, "pai")


# --------------------------------------------------------------------------- Helios and Acme


def test_helios_states_and_cpu_jobs(models):
    keep, report = load_trace(HELIOS, models, 0, "helios")
    assert len(keep) == 9 and report.dropped == {"CPU-only (0 GPUs)": 1}
    drop, report = load_trace(HELIOS, models, 0, "helios", TraceOptions(states="drop"))
    # FAILED 900004, CANCELLED 900005, TIMEOUT 900007 and NODE_FAIL 900010 (failed, HeliosData README).
    assert sorted(j.job_id for j in drop) == ["900001", "900002", "900006", "900008", "900009"]
    assert sum(report.dropped.values()) == 5
    flag, report = load_trace(HELIOS, models, 0, "helios", TraceOptions(states="flag", cpu_jobs="flag"))
    assert len(flag) == 10 and sum(report.flagged.values()) == 5
    assert by_id(flag)["900003"].gpus == 1


def test_helios_option_workload_and_skipped_rows(tmp_path, models):
    lines = HELIOS.read_text().splitlines()
    lines[2] = lines[2].replace(",1,4,1,COMPLETED", ",one,4,1,COMPLETED")
    lines[5] = lines[5] + ",extra"
    path = write(tmp_path, "cluster_log.csv", "\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"cluster_log\.csv: line 3, column 'gpu_num': not a number: 'one'"):
        jobs_from_spec(f"helios:path={path}", models, 0)
    jobs, report = load_trace(path, models, 0, "helios", TraceOptions(skip_bad_rows=True))
    assert report.bad_rows == 2 and len(jobs) == 7  # 9 GPU jobs less 900002 (line 3) and 900005 (line 6)


def test_acme_zones_and_columns(models):
    seren, report = load_trace(DATA / "trace_seren.csv", models, 0)
    got = by_id(seren)
    assert set(got) == {"7000001", "7000002", "7000004"}  # 7000003 asks no GPU
    assert [got[i].arrival for i in ("7000001", "7000002", "7000004")] == [0.0, 600.0, 1800.0]
    # 7000004: 16 GPUs x 2 h = 32 GPU-hours -> L -> vgg11.
    assert got["7000004"].model == "vgg11"
    assert got["7000004"].iterations == round(7200 / models["vgg11"].compute_seconds)
    kalos, _ = load_trace(DATA / "trace_kalos.csv", models, 0)
    assert [(j.gpus, j.model) for j in kalos][0] == (64, "resnet50")  # 64 x 2 h = 128 GPU-hours: XL


def test_acme_bad_time_and_ragged_row(tmp_path, models):
    lines = (DATA / "trace_seren.csv").read_text().splitlines()
    lines[2] = lines[2].replace("2023-03-01 00:10:00+08:00", "2023-03-01 25:10:00+08:00", 1)
    lines[3] = lines[3] + ",1"
    path = write(tmp_path, "trace_seren.csv", "\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"trace_seren\.csv: line 3, column 'submit_time': not a number or a"):
        load_trace(path, models, 0)
    jobs, report = load_trace(path, models, 0, options=TraceOptions(skip_bad_rows=True))
    assert report.bad_rows == 2 and [j.job_id for j in jobs] == ["7000001", "7000004"]


# --------------------------------------------------------------------------- workload files


def test_pollux_iterations_are_epochs_times_steps_per_epoch(models):
    jobs = by_id(load_trace(DATA / "pollux_workload.csv", models, 0)[0])
    assert jobs["cifar10-0"].iterations == 100 * math.ceil(50_000 / 1024) and jobs["cifar10-0"].model == "resnet18"
    assert jobs["imagenet-3"].iterations == 90 * math.ceil(1_281_167 / 3200) and jobs["imagenet-3"].gpus == 16
    assert jobs["bert-4"].iterations == 2 * math.ceil(87_599 / 96) and jobs["bert-4"].model == "bert_large"
    assert jobs["yolov3-5"].model == "vgg11" and jobs["yolov3-5"].arrival == 3000
    sia = by_id(load_trace(DATA / "sia_workload.csv", models, 0)[0])  # the extra category column is ignored
    assert sia["cifar10-0"].iterations == 100 * math.ceil(50_000 / 256)


def test_gavel_layouts(models):
    jobs = load_trace(DATA / "gavel.trace", models, 0)[0]
    assert [(j.model, j.gpus, j.iterations, j.arrival) for j in jobs] == [
        ("resnet50", 4, 47442, 0.0), ("bert_large", 1, 138497, 22.0), ("alexnet", 2, 1058998, 44500.0)]
    old = load_trace(DATA / "gavel_msr.trace", models, 0)[0]  # 7 fields: arrival before scale_factor
    assert [(j.job_id, j.gpus, j.iterations, j.arrival) for j in old] == [("gavel-2", 2, 10000, 0.0),
                                                                          ("gavel-1", 1, 1104675, 6.0)]


def test_gavel_ragged_line_and_unknown_job_type(tmp_path, models):
    lines = (DATA / "gavel.trace").read_text().splitlines()
    path = write(tmp_path, "x.trace", lines[0] + "\n" + lines[1] + "\textra\n")
    with pytest.raises(InputError, match=r"x\.trace: line 2: has 11 cells, expected 10"):
        load_trace(path, models, 0, "gavel")
    path = write(tmp_path, "y.trace", lines[0].replace("ResNet-50", "GPT-9") + "\n")
    with pytest.raises(InputError, match=r"y\.trace: line 1, column 'job_type': unknown job type 'GPT-9'"):
        load_trace(path, models, 0, "gavel")


def test_tiresias_and_crius(models):
    tiresias = by_id(load_trace(DATA / "tiresias_job.csv", models, 0)[0])
    assert (tiresias["0"].model, tiresias["0"].iterations) == ("vgg11", 500)  # vgg19 -> the VGG profile
    assert (tiresias["2"].model, tiresias["2"].gpus) == ("resnet50", 2)
    crius = load_trace(DATA / "crius_trace.csv", models, 0)[0]
    assert [(j.model, j.gpus, j.iterations, j.arrival) for j in crius] == [
        ("bert_large", 4, 20000, 0.0), ("bert_large", 1, 50000, 100.0), ("bert_large", 8, 12000, 250.0),
        ("resnet50", 2, 30000, 3600.0)]


@pytest.mark.parametrize("name, column, bad, problem", [
    ("tiresias_job.csv", "model_name", "lenet", "unknown model 'lenet'"),
    ("crius_trace.csv", "model_name", "gpt__1B", "unknown model family 'gpt'"),
    ("pollux_workload.csv", "application", "mnist", "unknown application 'mnist'"),
    ("tiresias_job.csv", "num_gpu", "-1", "must be >= 1"),
])
def test_workload_file_bad_cells_name_line_and_column(tmp_path, models, name, column, bad, problem):
    lines = (DATA / name).read_text().splitlines()
    header = lines[0].split(",")
    cells = lines[2].split(",")
    cells[header.index(column)] = bad
    lines[2] = ",".join(cells)
    path = write(tmp_path, name, "\n".join(lines) + "\n")
    with pytest.raises(InputError, match=rf"line 3, column '{column}': {problem}"):
        load_trace(path, models, 0)


# --------------------------------------------------------------------------- stats, determinism, specs


def test_stats_of_the_philly_fixture():
    s = trace_stats(PHILLY)
    assert s["format"] == "philly" and s["jobs"] == 8 and s["gpu_jobs"] == 7  # 0005 has no attempt: no GPUs
    assert s["jobs_without_gpus"] == 1
    gpu_seconds = 8 * 3600 + 4 * 7200 + 1 * 60 + 16 * 43200 + 2 * 1800 + 4 * 3600  # 0006 has no run time
    assert s["gpu_hours"] == pytest.approx(gpu_seconds / 3600)
    assert s["gpu_histogram"] == {"1": 1, "2": 2, "4": 2, "8": 1, "16": 1}
    assert s["arrivals_per_hour"] == [5, 0, 0, 0, 1, 0, 0, 0, 1]
    assert s["states"] == {"cancelled": 1, "completed": 5, "failed": 1}


def test_loads_are_deterministic(models):
    for path in (PHILLY, DATA / "pai", HELIOS):
        options = TraceOptions(busiest_hours=2, rate_per_hour=1.5)
        assert load_trace(path, models, 5, options=options)[0] == load_trace(path, models, 5, options=options)[0]


def test_size_rule_ranks_profiles_by_gradient_bytes(models):
    jobs = by_id(load_trace(PHILLY, models, 0, options=TraceOptions(assign="size"))[0])
    ranked = sorted(models, key=lambda m: models[m].total_bytes)  # 6 profiles -> groups of 2, 2, 1, 1
    assert jobs["application_0000000000000_0003"].model in ranked[:2]  # S
    assert jobs["application_0000000000000_0001"].model in ranked[2:4]  # M
    assert jobs["application_0000000000000_0004"].model == ranked[5]  # XL


@pytest.mark.parametrize("spec, where, problem", [
    ("philly:busiest_hours=8", "path", "required"),
    (f"philly:path={PHILLY},hours=8", "hours", "unknown"),
    (f"philly:path={PHILLY},rate=fast", "rate", "expected jobs per hour"),
    (f"philly:path={PHILLY},busiest_hours=0", "busiest_hours", "must be in"),
    (f"philly:path={PHILLY},states=ignore", "states", "expected one of keep, drop, flag"),
    (f"philly:path={PHILLY},gpu_speed=T4", "gpu_speed", "TYPE:SPEED"),
    ("pai:path=/nowhere/pai", "path", "no such file"),
])
def test_trace_spec_errors_name_the_parameter(models, spec, where, problem):
    with pytest.raises(InputError, match=rf"parameter '{where}'.*{problem}"):
        jobs_from_spec(spec, models, 0)


def test_every_format_has_a_reader_and_documented_fields():
    for fmt in FORMATS.values():
        assert fmt.fields_used and callable(fmt.reader)
        assert not set(fmt.fields_used) & set(fmt.fields_dropped)


def test_a_submission_centuries_later_is_refused_before_any_histogram(tmp_path, models):
    lines = HELIOS.read_text().splitlines()
    lines[4] = lines[4].replace("2020-07-01 08:10:30", "2999-07-01 08:10:30", 1)  # job 900004, line 5
    path = write(tmp_path, "cluster_log.csv", "\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"cluster_log\.csv: line 5: submitted .* at most 1e\+09 s"):
        load_trace(path, models, 0, "helios", TraceOptions(busiest_hours=8))
    with pytest.raises(InputError, match=r"cluster_log\.csv: line 5: submitted"):
        trace_stats(path)


def test_simulate_prints_the_load_report_as_notes(capsys, tmp_path):
    from artist.cli import main

    argv = ["simulate", "--racks", "1", "--no-cache", "--quiet", "--out", str(tmp_path / "o"),
            "--workload", f"helios:path={HELIOS},states=drop"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "note: dropped 1: CPU-only (0 GPUs)" in err and "note: dropped 1: cancelled (state CANCELLED)" in err


def test_the_speed_benchmarks_synthetic_log_is_in_the_schema(tmp_path, models):
    """benchmarks/trace_speed.py's generator, at 200 jobs: every job read, about 1 % without an attempt."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("trace_speed", REPO / "benchmarks" / "trace_speed.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    path = tmp_path / "cluster_job_log"
    bench.write_synthetic_philly(path, 200, seed=0)
    assert len(json.loads(path.read_text())) == 200
    jobs, report = load_trace(path, models, 0, "philly")
    assert report.rows == 200 and report.bad_rows == 0 and len(jobs) + sum(report.dropped.values()) == 200
