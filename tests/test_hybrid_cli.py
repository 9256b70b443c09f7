"""`artist comm --model M --plan ...` and `artist plans`: outputs, their internal conservation laws,
and every bad input as one line with a non-zero exit."""

from __future__ import annotations

import json

import pytest

from artist.cli import main

H100 = ["--topology", "dgx-h100", "--no-cache"]


def _json(capsys, *argv):
    assert main(["comm", *argv, "--json", *H100]) == 0
    return json.loads(capsys.readouterr().out)


def test_comm_plan_json_has_the_issue_keys_and_its_times_add_up(capsys):
    out = _json(capsys, "--model", "gpt3-13b", "--plan", "dp=4,tp=8,pp=2")
    assert {"step_s", "compute_s", "exposed_comm_s", "memory_gib_per_gpu", "bubble_fraction"} <= set(out)
    assert set(out["exposed_comm_s"]) == {"tp", "pp", "dp", "ep"}
    assert out["plan"] == "dp=4,tp=8,pp=2,ep=1,microbatches=128"  # default: 512 sequences / dp 4
    # The critical path is compute (the busiest stage's own + the bubble) plus exposed communication.
    parts = out["compute_s"] + out["bubble_fraction"] * out["step_s"] + sum(out["exposed_comm_s"].values())
    assert parts == pytest.approx(out["step_s"], rel=1e-9)
    assert out["exposed_comm_s"]["tp"] > 0 and out["exposed_comm_s"]["ep"] == 0.0
    assert 0 < out["memory_gib_per_gpu"] < 80e9 / 2**30


def test_comm_plan_text_output_is_deterministic(capsys):
    argv = ["comm", "--model", "moe-0.69b", "--plan", "dp=4,tp=2,pp=2,ep=2,microbatches=4", *H100]
    assert main(argv) == 0
    first = capsys.readouterr().out
    assert main(argv) == 0
    assert capsys.readouterr().out == first
    assert "exposed EP seconds" in first and "bubble fraction" in first


def test_tp_across_two_machines_is_slower_than_inside_one(capsys):
    inside = _json(capsys, "--model", "gpt3-1.3b", "--plan", "dp=1,tp=8,pp=1", "--gpus", "0-7")
    split = _json(capsys, "--model", "gpt3-1.3b", "--plan", "dp=1,tp=8,pp=1", "--gpus", "0-3,8-11")
    assert split["exposed_comm_s"]["tp"] > 2 * inside["exposed_comm_s"]["tp"]
    assert split["compute_s"] == inside["compute_s"]


@pytest.mark.parametrize("argv,message", [
    (["--model", "gpt3-13b", "--plan", "dp=4,tp=x"], "whole number"),
    (["--model", "resnet50", "--plan", "dp=1"], "LLM zoo"),
    (["--model", "gpt3-13b", "--plan", "dp=4,tp=8,pp=2", "--gpus", "0-7"], "needs dp x tp x pp = 64"),
    (["--model", "gpt3-175b", "--plan", "dp=8"], "does not fit on a H100"),
    (["--model", "gpt3-13b", "--plan", "dp=2,ep=2"], "no experts"),
    (["--model", "gpt3-175b", "--plan", "dp=8,tp=8,pp=16", "--microbatches", "60000"], "step-graph nodes"),
    (["--model", "gpt3-13b", "--plan", "dp=4096,tp=8,microbatches=1"], "needs 32768 GPUs"),
    (["--model", "gpt3-13b", "--plan", "dp=3,tp=8"], "global batch 512 is not a whole number of micro-batches"),
    (["--model", "gpt3-13b", "--plan", "dp=1,pp=41"], "more pipeline stages"),
    (["--model", "resnet50", "--shape", "[[8]]", "--microbatches", "4"], "only with --plan"),
])
def test_bad_plan_input_is_one_line(capsys, argv, message):
    assert main(["comm", *argv, *H100]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and err.startswith("artist: error:")


def test_plans_ranks_feasible_plans_and_refuses_the_rest(capsys):
    assert main(["plans", "--model", "moe-1.3b", "--gpus", "16", "--topology", "dally-3tier", "--global-batch", "64",
                 "--top", "100", "--no-cache"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split() for line in lines[2:] if not line.startswith("refused")]
    steps = [float(r[2]) for r in rows]
    assert steps == sorted(steps) and len(rows) > 5
    assert any(",ep=2," in r[1] for r in rows) and any(",ep=1," in r[1] for r in rows)
    header = lines[0]
    assert f"{len(rows)} plans fit" in header


def test_plans_with_no_split_of_the_batch_is_one_line(capsys):
    assert main(["plans", "--model", "gpt3-1.3b", "--gpus", "16", "--global-batch", "3", "--micro-batch-size", "2",
                 "--no-cache"]) == 2
    assert "split into no plan" in capsys.readouterr().err


def test_plans_and_comm_split_a_plan_alike(capsys):
    # one default: the top plan of `artist plans`, given to `comm --plan` without its micro-batches, is the
    # same step (the global batch 512 split over dp); a stated global batch splits alike in both
    assert main(["plans", "--model", "gpt3-1.3b", "--gpus", "16", "--top", "1", *H100]) == 0
    top = capsys.readouterr().out.splitlines()[2].split()
    plan, step = top[1], float(top[2])
    assert plan.endswith(",microbatches=" + str(512 // int(plan.split(",")[0].split("=")[1])))
    bare = plan.rsplit(",microbatches=", 1)[0]
    assert _json(capsys, "--model", "gpt3-1.3b", "--plan", bare)["step_s"] == pytest.approx(step, abs=5e-5)
    assert _json(capsys, "--model", "gpt3-1.3b", "--plan", "dp=2,tp=8,pp=1", "--global-batch", "64")["plan"] \
        == "dp=2,tp=8,pp=1,ep=1,microbatches=32"


def test_plans_shows_progress_on_a_terminal_only(capsys, monkeypatch):
    import io
    import sys

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    argv = ["plans", "--model", "gpt3-1.3b", "--gpus", "8", "--top", "1", *H100]
    assert main(argv) == 0
    assert capsys.readouterr().err == ""  # not a terminal: no bar
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(argv) == 0
    fits, refused = capsys.readouterr().out.splitlines()[0].split(": ")[1].split(" plans fit, ")
    total = int(fits) + int(refused.split()[0])
    assert "plans of gpt3-1.3b" in terminal.getvalue() and f"/{total} [" in terminal.getvalue()
