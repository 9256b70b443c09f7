"""`artist trace stats` and `artist trace convert`: output, the frozen CSV, one-line errors."""

from __future__ import annotations

import json

from artist.cli import main
from artist.workload import load_models, read_jobs_csv
from artist.workload.spec import jobs_from_spec

from conftest import REPO

DATA = REPO / "tests" / "data" / "traces"
PHILLY = DATA / "philly_cluster_job_log.json"


def one_line_error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_stats_json_has_jobs_and_gpu_hours(capsys):
    assert main(["trace", "stats", str(DATA / "tiresias_job.csv"), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["format"] == "tiresias" and stats["jobs"] == 5
    # GPU-seconds: 1x200 + 8x300 + 2x100 + 4x600 + 1x150 (num_gpu x duration of the five rows)
    assert abs(stats["gpu_hours"] - 5350 / 3600) < 1e-12
    assert stats["gpu_histogram"] == {"1": 2, "2": 1, "4": 1, "8": 1}


def test_stats_text_with_an_explicit_format(capsys):
    assert main(["trace", "stats", str(DATA / "pai"), "--format", "pai"]) == 0
    out = capsys.readouterr().out
    assert "jobs              5 (4 GPU, 1 CPU-only)" in out and "GPU demand" in out and "V100M32: 1" in out


def test_convert_freezes_the_workload_the_spec_gives(capsys, tmp_path):
    out = tmp_path / "philly.csv"
    argv = ["trace", "convert", str(PHILLY), "--to", str(out), "--busiest-hours", "1", "--rate", "3/h",
            "--seed", "4", "--gpu-type", "V100"]
    assert main(argv) == 0
    assert "wrote 3 jobs" in capsys.readouterr().out
    models = load_models()
    frozen = read_jobs_csv(out, models)
    spec = f"philly:path={PHILLY},busiest_hours=1,rate=3/h,seed=4,gpu_type=V100"
    assert frozen == jobs_from_spec(spec, models, 0)
    first = out.read_bytes()
    assert main(argv) == 0 and out.read_bytes() == first  # byte-identical on a rerun


def test_trace_errors_are_one_line(capsys, tmp_path):
    assert "no such file or directory" in one_line_error(capsys, ["trace", "stats", str(tmp_path / "none.json")])
    odd = tmp_path / "odd.csv"
    odd.write_text("a,b\n1,2\n")
    assert "cannot tell the trace format" in one_line_error(capsys, ["trace", "stats", str(odd)])
    line = one_line_error(capsys, ["trace", "convert", str(PHILLY), "--to", str(tmp_path / "x.csv"),
                                   "--states", "maybe"])
    assert "parameter 'states'" in line
    line = one_line_error(capsys, ["trace", "convert", str(PHILLY), "--to", str(tmp_path / "no" / "dir.csv")])
    assert line.startswith("artist: error: command line: --to: cannot write")
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    line = one_line_error(capsys, ["trace", "convert", str(empty), "--format", "philly",
                                   "--to", str(tmp_path / "e.csv")])
    assert "no jobs kept of 0 read" in line and not (tmp_path / "e.csv").exists()
    bad = tmp_path / "bad.json"
    bad.write_text('[{"jobid": "a"}]')
    assert f"{bad}: line 1 (job a), field 'submitted_time': missing" in one_line_error(
        capsys, ["trace", "stats", str(bad)])
