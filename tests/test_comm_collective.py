"""`artist comm --collective`: one collective alone from the command line, against the hand-computed
α-β times of tests/alpha_beta.py (dally-3tier has the same link figures as conftest's topology and
the NIC is the bottleneck on both), and its bad inputs as one line each."""

from __future__ import annotations

import pytest

from alpha_beta import TWO_RACKS, expected_seconds
from artist.cli import main
from test_cli_hardening import one_line_error

DALLY = ["--topology", "dally-3tier"]


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ARTIST_CACHE_DIR", str(tmp_path / "cache"))


def seconds_printed(capsys, argv) -> float:
    assert main(["comm", *DALLY, *argv]) == 0
    out = capsys.readouterr().out
    return float(out.split("seconds")[1].split()[0])


@pytest.mark.parametrize("kind, gpus", [("all_gather", "0-7,64-71"), ("all_to_all", "0-7,64-71"),
                                        ("send_recv", "0,64")])
def test_one_collective_across_two_racks_is_its_alpha_beta_time(capsys, kind, gpus):
    got = seconds_printed(capsys, ["--collective", kind, "--bytes", "64MiB", "--gpus", gpus])
    assert got == pytest.approx(expected_seconds(kind, TWO_RACKS, 64 * 2**20), abs=1e-9)  # printed to 1 ns


def test_bytes_units_and_shape_name_the_same_question(capsys):
    by_gpus = seconds_printed(capsys, ["--collective", "all_gather", "--bytes", "67108864", "--gpus", "0-7,64-71"])
    by_shape = seconds_printed(capsys, ["--collective", "all_gather", "--bytes", "64MiB", "--shape", "[[8],[8]]"])
    assert by_gpus == by_shape


@pytest.mark.parametrize("argv, expected", [
    (["--collective", "all_gather", "--bytes", "64Mix", "--gpus", "0-7"], "--bytes 64Mix"),
    (["--collective", "all_gather", "--bytes", "0", "--gpus", "0-7"], "between 1 byte"),
    (["--collective", "all_gather", "--bytes", "4PiB", "--gpus", "0-7"], "--bytes 4PiB"),
    (["--collective", "all_gather", "--gpus", "0-7"], "needs --bytes"),
    (["--collective", "all_gather", "--bytes", "1MiB", "--gpus", "7-0"], "--gpus 7-0"),
    (["--collective", "all_gather", "--bytes", "1MiB", "--gpus", "0-99999999999"], "--gpus 0-99999999999"),
    (["--collective", "all_gather", "--bytes", "1MiB", "--gpus", "0,0"], "distinct"),
    (["--collective", "all_gather", "--bytes", "1MiB", "--gpus", "0,128"], "[0, 128)"),
    (["--collective", "all_gather", "--bytes", "1MiB"], "--gpus or --shape"),
    (["--collective", "all_gather", "--bytes", "1MiB", "--gpus", "0-7", "--shape", "[[8]]"], "--gpus or --shape"),
    (["--collective", "send_recv", "--bytes", "1MiB", "--gpus", "0,1,2"], "two GPUs"),
    (["--collective", "all_gather", "--bytes", "1MiB", "--shape", "[[9]]"], "--shape [[9]]"),
    (["--collective", "all_gather", "--model", "resnet50", "--shape", "[[8]]"], "--model"),
    (["--model", "resnet50"], "--shape"),
])
def test_bad_collective_input_is_one_line(capsys, argv, expected):
    assert expected in one_line_error(capsys, ["comm", *DALLY, *argv])
