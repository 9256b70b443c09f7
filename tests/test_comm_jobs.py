"""`artist comm --job MODEL:GPUS ...`: every job's step alone and shared, against hand-computed times on
a small ecmp fabric (tests/fabric_helpers.py), and its bad inputs as one line each."""

from __future__ import annotations

import io
import json
import sys

import pytest
import yaml
from conftest import small_topology_mapping
from fabric_helpers import NIC_GBPS, colliding_pairs, ecmp_topology
from test_cli_hardening import one_line_error

from artist.cli import main

TENSOR_FLOATS = 4 * (1 << 20)  # one 16 MiB gradient: one DDP bucket


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.setenv("ARTIST_CACHE_DIR", str(tmp_path / "cache"))
    topo = small_topology_mapping(racks=2, machines_per_rack=4, gpus_per_machine=1, oversubscription=2.0)
    topo["tiers"]["rack"]["bandwidth_gbps"] = NIC_GBPS
    topo["tiers"]["spine"].update(bandwidth_gbps=NIC_GBPS, model="ecmp")
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(topo))
    model = {"name": "onebucket", "tensors": [["w", TENSOR_FLOATS]],
             "compute": {"reference_gpu": "A100", "seconds_per_iteration": 1e-6, "source": "test: negligible"}}
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "onebucket.yaml").write_text(yaml.safe_dump(model))
    return tmp_path


def _run(capsys, files, jobs, *extra):
    argv = ["comm", "--topology", str(files / "t.yaml"), "--models", str(files / "models"), "--backend", "flow",
            *extra]
    for gpus in jobs:
        argv += ["--job", f"onebucket:{','.join(map(str, gpus))}"]
    assert main(argv) == 0
    return capsys.readouterr().out


def test_colliding_jobs_pay_the_bandwidth_time_twice_and_disjoint_ones_nothing(capsys, files):
    topo = ecmp_topology(oversubscription=2.0)  # the same fabric as t.yaml
    nbytes = TENSOR_FLOATS * 4
    bandwidth = 2 * (nbytes / 2) / (NIC_GBPS * 1e9 / 8)  # 2-rank ring: 2 steps of S/2 at the NIC rate
    a, b = colliding_pairs(topo, collide=True)
    rows = json.loads(_run(capsys, files, [a, b], "--json"))
    assert [r["job"] for r in rows] == [f"onebucket:{a[0]},{a[1]}", f"onebucket:{b[0]},{b[1]}"]
    assert {r["backend"] for r in rows} == {"flow"}
    for r in rows:
        assert r["shared_s"] - r["alone_s"] == pytest.approx(bandwidth, rel=0.02)
    c, d = colliding_pairs(topo, collide=False)
    rows = json.loads(_run(capsys, files, [c, d], "--json"))
    assert all(r["shared_s"] == r["alone_s"] for r in rows)
    text = _run(capsys, files, [a, b])
    assert "slowdown" in text and f"onebucket:{a[0]},{a[1]}" in text


@pytest.mark.parametrize("jobs, extra, expected", [
    (["onebucket:0,4", "onebucket:4,5"], [], "GPU 4 is already given"),
    (["onebucket"], [], "expected MODEL:GPUS"),
    (["nosuch:0,4"], [], "unknown model 'nosuch'"),
    (["onebucket:0,99"], [], "--gpus 0,99"),
    (["onebucket:0,4"], ["--backend", "analytical"], "use --backend flow or ns3"),
])
def test_bad_job_input_is_one_line(capsys, files, jobs, extra, expected):
    argv = ["comm", "--topology", str(files / "t.yaml"), "--models", str(files / "models"), "--backend", "flow"]
    for job in jobs:
        argv += ["--job", job]
    assert expected in one_line_error(capsys, argv + extra)


@pytest.mark.parametrize("backend", [["--backend", "flow"], ["--backend", "ns3", "--arbitration", "round-robin"]],
                         ids=["flow", "ns3-round-robin"])
def test_shared_times_are_steady_state_a_long_job_beside_a_short_one(capsys, files, backend):
    # A: compute T then one all-reduce of S (T = S / NIC rate: a 2-rank ring's two steps of S/2);
    # B: four all-reduces of S back to back, compute negligible; their flows share one spine port.
    # Steady state by hand: B always sends, so A's all-reduce runs at half rate: A's step c + 2T = 3T
    # (alone 2T); B has the port alone while A computes (T) and half of it while A sends (2T), i.e.
    # 2T of its 4T of bytes per 3T: its step is 6T (alone 4T). Both slow down by 1.5. From a common
    # start B's first step would be shorter (it has the port alone after A's first step).
    # ns-3 with round-robin switch outputs (the fabric the flow backend is validated against) must
    # give the same hand values.
    nbytes = TENSOR_FLOATS * 4
    t = nbytes / (NIC_GBPS * 1e9 / 8)
    long = {"name": "long", "tensors": [[f"w{i}", TENSOR_FLOATS] for i in range(4)],
            "compute": {"reference_gpu": "A100", "seconds_per_iteration": 1e-6, "source": "test: negligible"}}
    short = {"name": "short", "tensors": [["w", TENSOR_FLOATS]],
             "compute": {"reference_gpu": "A100", "seconds_per_iteration": t, "source": "test: = T"}}
    for m in (long, short):
        (files / "models" / f"{m['name']}.yaml").write_text(yaml.safe_dump(m))
    a, b = colliding_pairs(ecmp_topology(oversubscription=2.0), collide=True)
    argv = ["comm", "--topology", str(files / "t.yaml"), "--models", str(files / "models"), *backend,
            "--job", f"short:{a[0]},{a[1]}", "--job", f"long:{b[0]},{b[1]}", "--json"]
    assert main(argv) == 0
    short_row, long_row = json.loads(capsys.readouterr().out)
    assert short_row["alone_s"] == pytest.approx(2 * t, rel=0.02)
    assert long_row["alone_s"] == pytest.approx(4 * t, rel=0.02)
    assert short_row["shared_s"] == pytest.approx(3 * t, rel=0.03)
    assert long_row["shared_s"] == pytest.approx(6 * t, rel=0.03)
    assert short_row["converged"] and long_row["converged"]
    assert long_row["steps_measured"] >= 8  # two windows of 4 steps at least


class _Terminal(io.StringIO):
    """stderr as a terminal, where the progress bars show (they stay off when stderr is a file or pipe)."""

    def isatty(self):
        return True


def test_comm_jobs_shows_progress_on_a_terminal_only(capsys, files, monkeypatch):
    topo = ecmp_topology(oversubscription=2.0)
    a, b = colliding_pairs(topo, collide=True)
    _run(capsys, files, [a, b], "--json")
    assert capsys.readouterr().err == ""  # not a terminal: no bar
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    _run(capsys, files, [a, b], "--json")
    shown = terminal.getvalue()  # 2 jobs alone, then together: 4 job-steps
    assert "comm --job" in shown and "/4 [" in shown and "alone: onebucket" in shown and "all jobs together" in shown
