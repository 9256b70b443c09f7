"""ns-3 options from the command line. --ns3-timeout: the ns-3 watchdog of one run is set (comm,
latency-table, plans, simulate, calibrate), reaches the model, is refused with other backends and out of its
bounds in one line, and changes no cache key (answers do not depend on it). --accelerate (comm, calibrate):
steady-state skipping reaches the model, and is refused with other backends in one line."""

from __future__ import annotations

import pytest

from artist.cli import main
from artist.commands._args import command_parser
from conftest import REPO

LOG = REPO / "calibration" / "data"


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ARTIST_CACHE_DIR", str(tmp_path / "cache"))


def _one_line(capsys, argv) -> str:
    assert main(argv) != 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("note:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("command", ["comm", "latency-table", "plans", "simulate", "calibrate"])
def test_every_ns3_command_takes_the_watchdog(command):
    args = command_parser(command).parse_args(_minimal(command) + ["--backend", "ns3", "--ns3-timeout", "1800"])
    from artist.commands._common import ns3_options

    assert ns3_options(args) == (("timeout_s", 1800.0),)


def test_comm_builds_its_ns3_model_with_the_watchdog():
    from artist.commands.comm import _spec
    from artist.network.ns3 import Ns3Model
    from artist.topology import load_topology

    args = command_parser("comm").parse_args(["--model", "resnet50", "--backend", "ns3", "--ns3-timeout", "1800",
                                              "--no-cache"])
    spec = _spec(args)
    assert dict(spec.options)["timeout_s"] == 1800.0
    topology = load_topology(REPO / "topologies" / "dally-3tier.yaml")
    model = Ns3Model(topology, **dict(spec.options))
    assert model.timeout_s == 1800.0
    # the cache key (the model's identity) is that of the default watchdog: cached answers stay valid
    assert model.identity() == Ns3Model(topology, **{k: v for k, v in spec.options if k != "timeout_s"}).identity()


@pytest.mark.parametrize("argv, where", [
    (["comm", "--model", "resnet50", "--shape", "[[2]]", "--ns3-timeout", "60"], "--ns3-timeout"),
    (["comm", "--model", "resnet50", "--backend", "ns3", "--ns3-timeout", "0"], "--ns3-timeout"),
    (["comm", "--model", "resnet50", "--backend", "ns3", "--ns3-timeout", "1e9"], "--ns3-timeout"),
    (["comm", "--model", "resnet50", "--backend", "ns3", "--ns3-timeout", "inf"], "--ns3-timeout"),
])
def test_a_bad_watchdog_is_one_line(capsys, argv, where):
    assert where in _one_line(capsys, argv)


@pytest.mark.parametrize("command", ["comm", "calibrate"])
def test_steady_state_skipping_from_the_command_line(command, capsys, tmp_path):
    from artist.commands._common import ns3_options

    args = command_parser(command).parse_args(_minimal(command) + ["--backend", "ns3", "--accelerate"])
    assert ns3_options(args) == (("accelerate", True),)
    args = command_parser(command).parse_args(_minimal(command) + ["--backend", "ns3"])
    assert ns3_options(args) == ()
    shape = ["--shape", "[[2]]"] if command == "comm" else ["--out", str(tmp_path / "profile.yaml")]
    line = _one_line(capsys, [command] + _minimal(command) + shape + ["--backend", "analytical", "--accelerate"])
    assert "--accelerate" in line and "only with the ns3 backend" in line


def test_calibrate_checks_with_steady_state_skipping(capsys, tmp_path):
    """--check on a profile fitted without skipping: the backend it builds skips (the profile fits it:
    skipping changes no setting a profile is fitted for)."""
    from artist.commands.calibrate import calibration_options, check
    from artist.network.ns3 import Ns3Model

    profile = REPO / "calibration" / "profiles" / "h100-ns3.yaml"
    log = LOG / "xxrjun_2node_2xH100_1gpn_smoke.txt"
    args = command_parser("calibrate").parse_args(["--check", str(profile), "--logs", str(log), "--accelerate",
                                                   "--no-cache", "--max-bytes", "33554432"])
    models: list = []
    try:
        checked = check(args, models, calibration_options(args))
        assert isinstance(models[0], Ns3Model) and models[0].accelerate
        assert checked.points  # the log's sizes up to 32 MiB were simulated and corrected
    finally:
        for model in models:
            if hasattr(model, "close"):
                model.close()


def _minimal(command: str) -> list[str]:
    """The fewest arguments each command's parser needs."""
    if command == "calibrate":
        return ["--logs", str(next(LOG.glob("*.txt"))), "--topology", "dally-3tier"]
    if command == "plans":
        return ["--model", "gpt3-1.3b", "--gpus", "8"]
    return ["--model", "resnet50"] if command == "comm" else []
