"""Physically impossible nccl-tests rows are refused before any fit (artist/calibration/plausibility.py),
and every shipped log of real hardware passes the same rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import NIC_GBPS, NVSWITCH_GBPS, make_topology

from artist import shipped
from artist.calibration.nccl_tests import parse_nccl_tests
from artist.calibration.plausibility import bus_ceiling_bytes_per_s, impossible_rows
from artist.calibration.profile import load_profile
from artist.cli import main
from artist.topology import load_topology

REPO = Path(__file__).resolve().parent.parent
TOPOLOGY = str(REPO / "topologies" / "h100-dgx.yaml")
# 2 nodes x 2 GPUs, all_reduce of 1, 2 and 4 MiB on lines 12, 13, 14 (tests/data/nccl/README.md)
GOOD_LOG = Path(__file__).resolve().parent / "data" / "nccl" / "good_2x2_allreduce.txt"
ROW_4MIB = ("     4194304       1048576     float     sum      -1   250.00   16.78   25.17       0"
            "   250.00   16.78   25.17       0")


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ARTIST_CACHE_DIR", str(tmp_path / "cache"))


def _row(us: float) -> str:
    # the 4 MiB row at another time, its bandwidth columns as nccl-tests prints them (4 ranks: bus factor 1.5)
    algbw = 4194304 / (us * 1e-6) / 1e9
    cells = f"{us:8.2f} {algbw:7.2f} {1.5 * algbw:7.2f}       0"
    return f"     4194304       1048576     float     sum      -1 {cells} {cells}"


def _log(tmp_path, us: float) -> Path:
    text = GOOD_LOG.read_text()
    assert text.count(ROW_4MIB) == 1
    path = tmp_path / "edited.txt"
    path.write_text(text.replace(ROW_4MIB, _row(us)))
    return path


def test_the_ceiling_by_hand():
    # one NIC per GPU (the test topology's default): 2 x (NVSwitch link + NIC) per GPU, in bytes/s
    topo = make_topology()
    assert bus_ceiling_bytes_per_s(topo) == pytest.approx(2 * (NVSWITCH_GBPS + NIC_GBPS) * 1e9 / 8)


def test_every_shipped_log_of_real_hardware_passes():
    checked = 0
    for path in sorted((REPO / "calibration" / "profiles").glob("*.yaml")):
        profile = load_profile(path)
        topo = load_topology(shipped.ROOT / profile.topology_path)
        for entry in profile.logs:
            for test in parse_nccl_tests(shipped.ROOT / entry["path"]).tests:
                rows = sorted((r for r in test.rows if r.time_us), key=lambda r: r.size_bytes)
                assert impossible_rows(topo, test, rows) == [], (path.name, entry["file"], test.first_line)
                checked += 1
    assert checked >= 20


@pytest.mark.parametrize("us, words", [
    (2.5, "bus bandwidth 2,517 GB/s at 4194304 B is above what any NCCL algorithm can reach on h100-dgx"),
    (30.0, "time falls 5.0x from 2097152 B (150 us) to 4194304 B (30 us)"),
], ids=["above-the-ceiling", "time-falls"])
def test_an_impossible_row_is_refused_naming_its_line_or_left_out_and_recorded(tmp_path, capsys, us, words):
    log = _log(tmp_path, us)
    out = tmp_path / "p.yaml"
    assert main(["calibrate", "--topology", TOPOLOGY, "--logs", str(log), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{log}: line 14: {words}" in err[0] and "--allow-impossible" in err[0]
    assert not out.exists()
    assert main(["calibrate", "--topology", TOPOLOGY, "--logs", str(log), "--out", str(out),
                 "--allow-impossible"]) == 0
    assert f"warning: {log}: line 14: left out of the fit: {words}" in capsys.readouterr().err
    profile = load_profile(out)
    (test,) = profile.logs[0]["tests"]
    assert [r["line"] for r in test["excluded_rows"]] == [14] and words in test["excluded_rows"][0]["reason"]
    assert test["simulated_sizes_bytes"] == [1048576, 2097152]  # the fit never saw the 4 MiB row
    assert "--allow-impossible" in " ".join(profile.notes)
