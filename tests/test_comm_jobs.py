"""`artist comm --job MODEL:GPUS ...`: every job's step alone and shared, against hand-computed times on
a small ecmp fabric (tests/fabric_helpers.py), and its bad inputs as one line each."""

from __future__ import annotations

import json

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
