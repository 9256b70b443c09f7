"""`artist calibrate --pairwise`: how much the node pairs of a cluster differ, from two-node sendrecv logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from artist.calibration.pairwise import pairwise_report
from artist.cli import main

REPO = Path(__file__).resolve().parent.parent
PAIRS = sorted((REPO / "calibration" / "data").glob("xxrjun_2node_16xH100_8gpn_*_alltoall_sendrecv.txt"))
GIB = 1 << 30


def _log(path: Path, hosts: tuple[str, ...], busbw: float) -> Path:
    """A sendrecv log of one GPU on each host, at 1 and 2 GiB, `busbw` GB/s (nccl-tests' columns consistent:
    algbw = size / time, busbw = algbw for sendrecv)."""
    devices = "\n".join(f"#  Rank {r:2d} Group  0 Pid {100 + r} on {h} device  0 [0000:1b:00] NVIDIA H100 80GB HBM3"
                        for r, h in enumerate(hosts))
    rows = []
    for size in (GIB, 2 * GIB):
        time_us = size / (busbw * 1e3)
        rows.append(f"{size:>12} {size // 8:>13}    double     sum      -1 {time_us:8.1f} {busbw:7.2f} {busbw:7.2f}"
                    f"       0 {time_us:8.1f} {busbw:7.2f} {busbw:7.2f}       0")
    params = (f"# nThread 1 nGpus 1 minBytes {GIB} maxBytes {2 * GIB} step: 2(factor) warmup iters: 5 iters: 20 "
              f"agg iters: 1 validation: 1 graph: 0")
    path.write_text(f"""# Collective test starting: sendrecv_perf
{params}
#
# Using devices
{devices}
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
{chr(10).join(rows)}
# Out of bounds values : 0 OK
# Avg bus bandwidth    : {busbw:.4f}
#
# Collective test concluded: sendrecv_perf
""")
    return path


def test_two_leaves_by_hand(tmp_path):
    """a, b behind one switch and c, d behind another: 50 GB/s within, 40 across (invented for the test)."""
    bandwidth = {("a", "b"): 50.0, ("c", "d"): 49.8, ("a", "c"): 40.0, ("a", "d"): 40.2, ("b", "c"): 40.1,
                 ("b", "d"): 39.9}
    logs = [_log(tmp_path / f"{x}{y}.txt", (x, y), bw) for (x, y), bw in bandwidth.items()]
    report = pairwise_report(logs)
    assert [(p.hosts, p.busbw_gbs) for p in report.pairs] == sorted(bandwidth.items())
    assert report.groups == [("a", "b"), ("c", "d")] and not report.inconsistent
    assert report.spread == pytest.approx(1 - 39.9 / 50.0)
    assert sorted(report.within()) == [49.8, 50.0] and sorted(report.across()) == [39.9, 40.0, 40.1, 40.2]


def test_pairs_within_the_noise_make_one_group(tmp_path):
    logs = [_log(tmp_path / f"{i}.txt", pair, bw) for i, (pair, bw) in
            enumerate([(("a", "b"), 46.0), (("a", "c"), 45.7), (("b", "c"), 46.2)])]
    report = pairwise_report(logs)
    assert report.threshold_gbs is None and report.groups == []
    assert report.spread == pytest.approx(1 - 45.7 / 46.2)


def test_a_slow_pair_inside_a_group_is_listed(tmp_path):
    """a-b and b-c fast join a, b, c into one group; a-c slow contradicts it (e.g. one bad cable)."""
    logs = [_log(tmp_path / f"{i}.txt", pair, bw) for i, (pair, bw) in
            enumerate([(("a", "b"), 50.0), (("b", "c"), 50.0), (("a", "c"), 40.0)])]
    report = pairwise_report(logs)
    assert report.groups == [("a", "b", "c")]
    assert [p.hosts for p in report.inconsistent] == [("a", "c")]


def test_the_shipped_h100_pairs_are_three_leaf_groups(capsys):
    """The 45 pairs of 10 nodes (2 x 8 H100): within the groups 45.8-46.3 GB/s, across 41.6-43.1 (read from
    the logs' 4-16 GiB rows by hand)."""
    assert len(PAIRS) == 45
    assert main(["calibrate", "--pairwise", "--json", "--logs", *map(str, PAIRS)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["groups"] == [["cnode3-002", "cnode3-003"],
                                ["cnode3-004", "cnode3-005", "cnode3-006", "cnode3-007", "cnode3-008", "cnode3-010",
                                 "cnode3-011"],
                                ["cnode3-009"]]
    assert not report["inconsistent"]
    fast = [p["busbw_gbs"] for p in report["pairs"] if p["busbw_gbs"] > report["threshold_gbs"]]
    slow = [p["busbw_gbs"] for p in report["pairs"] if p["busbw_gbs"] <= report["threshold_gbs"]]
    assert len(fast) == 1 + 21 and 45.7 < min(fast) and max(fast) < 46.4
    assert len(slow) == 45 - 22 and 41.5 < min(slow) and max(slow) < 43.2
    assert 0.09 < report["spread"] < 0.11


def _one_line(capsys, argv) -> str:
    assert main(argv) != 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_bad_pairwise_input_is_one_line(tmp_path, capsys):
    three = _log(tmp_path / "three.txt", ("a", "b", "c"), 45.0)
    assert "three.txt" in _one_line(capsys, ["calibrate", "--pairwise", "--logs", str(three),
                                             str(_log(tmp_path / "ab.txt", ("a", "b"), 45.0))])
    ab, ab_again = _log(tmp_path / "1.txt", ("a", "b"), 45.0), _log(tmp_path / "2.txt", ("b", "a"), 44.0)
    assert "also the pair of" in _one_line(capsys, ["calibrate", "--pairwise", "--logs", str(ab), str(ab_again)])
    assert "at least two pairs" in _one_line(capsys, ["calibrate", "--pairwise", "--logs", str(ab)])
    line = _one_line(capsys, ["calibrate", "--pairwise", "--logs", str(ab), "--out", str(tmp_path / "p.yaml")])
    assert "--out" in line
    one_host = REPO / "calibration" / "data" / "xxrjun_1node_8xH100_allcoll.txt"  # its sendrecv: 8 GPUs of one host
    line = _one_line(capsys, ["calibrate", "--pairwise", "--logs", str(one_host), str(ab)])
    assert "xxrjun_1node_8xH100_allcoll.txt" in line and "two hosts" in line
