"""`artist calibrate`: fit, determinism, --check, and errors naming file and line."""

from __future__ import annotations

import json
from pathlib import Path
from statistics import median

import pytest
import yaml

from artist.calibration import load_profile
from artist.calibration.correction import KINDS
from artist.calibration.nccl_tests import parse_nccl_tests
from artist.cli import main
from artist.limits import MAX_CHANNELS
from artist.network.analytical import AnalyticalModel
from artist.network.cache import CACHE_FILE_NAME, LatencyStore
from artist.placement import placement_from_shape
from artist.topology import load_topology

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "calibration" / "data"
H100_LOGS = [str(DATA / "xxrjun_1node_8xH100_allcoll.txt"), str(DATA / "xxrjun_2node_2xH100_1gpn_smoke.txt")]
TOPOLOGY = str(REPO / "topologies" / "h100-dgx.yaml")
# 2 nodes x 2 GPUs, all_reduce of 1, 2 and 4 MiB on lines 12, 13, 14 (tests/data/nccl/README.md).
GOOD_LOG = Path(__file__).resolve().parent / "data" / "nccl" / "good_2x2_allreduce.txt"
MIB = 1 << 20


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """`artist calibrate` uses the latency cache by default: keep each test's in its own directory."""
    monkeypatch.setenv("ARTIST_CACHE_DIR", str(tmp_path / "default-cache"))
    return tmp_path / "default-cache" / CACHE_FILE_NAME


def test_fit_writes_a_profile_and_is_deterministic(tmp_path, capsys):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    assert main(["calibrate", "--topology", TOPOLOGY, "--logs", *H100_LOGS, "--out", str(a), "--name", "p",
                 "--plot", str(tmp_path / "busbw.png")]) == 0
    out = capsys.readouterr().out
    assert "16 GiB" in out and "held-out" in out and "xxrjun_2node_2xH100_1gpn_smoke.txt" in out
    assert (tmp_path / "busbw.png").stat().st_size > 0
    assert main(["calibrate", "--topology", TOPOLOGY, "--logs", *H100_LOGS, "--out", str(b), "--name", "p",
                 "--quiet"]) == 0
    assert a.read_bytes() == b.read_bytes()
    profile = load_profile(a)
    assert set(profile.corrections) == {"machine", "rack"} and profile.inherited == {"network": "rack"}
    assert [log["file"] for log in profile.logs] == [Path(p).name for p in H100_LOGS]
    # Every collective a log holds is fitted in its tier: all five on 1 x 8, all_reduce and sendrecv on 2 x 1.
    assert sorted(profile.corrections["machine"]) == sorted(KINDS)
    assert sorted(profile.corrections["rack"]) == ["all_reduce", "send_recv"]
    assert profile.uncalibrated() == [] and profile.warnings == ()


def test_fit_from_auto_is_refused_with_its_replacement(tmp_path, capsys):
    assert main(["calibrate", "--topology", TOPOLOGY, "--logs", *H100_LOGS, "--fit-from", "auto",
                 "--out", str(tmp_path / "x.yaml")]) == 2
    assert "--regimes auto" in capsys.readouterr().err


def test_check_evaluates_a_profile_on_another_log(capsys):
    profile = str(REPO / "calibration" / "profiles" / "h100-analytical.yaml")
    gcp = str(DATA / "gcp_a3mega_2node_16xH100_tcpxo.txt")
    assert main(["calibrate", "--check", profile, "--topology", TOPOLOGY, "--logs", gcp, "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "gcp_a3mega_2node_16xH100_tcpxo.txt" in out and "[[8,8]]" in out


def test_bad_log_exits_2_naming_file_and_line(tmp_path, capsys):
    bad = Path(__file__).resolve().parent / "data" / "nccl" / "truncated_row.txt"
    assert main(["calibrate", "--topology", TOPOLOGY, "--logs", str(bad), "--out", str(tmp_path / "x.yaml")]) == 2
    err = capsys.readouterr().err
    assert "truncated_row.txt: line 13:" in err
    assert not (tmp_path / "x.yaml").exists()


def test_log_without_devices_needs_a_layout(tmp_path, capsys):
    aws = str(DATA / "aws_p4de_2node_16xA100_efa.txt")
    dally = str(REPO / "topologies" / "dally-3tier.yaml")
    assert main(["calibrate", "--topology", dally, "--logs", aws, "--out", str(tmp_path / "x.yaml")]) == 2
    assert "--layout" in capsys.readouterr().err
    assert main(["calibrate", "--topology", dally, "--logs", aws, "--layout", "2x8", "--out", str(tmp_path / "x.yaml"),
                 "--quiet"]) == 0


@pytest.mark.ns3
def test_ns3_fit_on_a_small_log(tmp_path, capsys):
    """`artist calibrate --backend ns3` end to end on the 2 x 1 H100 log, three sizes (32-128 MiB)."""
    pytest.importorskip("artist.network.ns3")
    out = tmp_path / "ns3.yaml"
    assert main(["calibrate", "--topology", TOPOLOGY, "--logs", H100_LOGS[1], "--backend", "ns3", "--channels", "8",
                 "--max-bytes", str(128 << 20), "--out", str(out), "--quiet"]) == 0
    profile = load_profile(out)
    assert profile.backend["backend"] == "ns3" and profile.backend["channels"] == 8
    tests = {t["collective"]: t for t in profile.logs[0]["tests"]}
    assert sorted(tests) == ["all_reduce", "send_recv"]  # the log's two tests
    assert all(t["fitted_range_bytes"] == [32 << 20, 128 << 20] for t in tests.values())
    assert sorted(profile.corrections) == ["rack"] and sorted(profile.corrections["rack"]) == sorted(tests)
    stats = profile.fit["tiers"]["rack"]["kinds"]["all_reduce"]
    assert (stats["fit_points"], stats["held_out_points"]) == (2, 1)
    # NVIDIA: 46-48 GB/s measured per NDR 400 Gb/s NIC (50 GB/s line rate), nccl-tests issue #290;
    # the window transport carries payload at close to line rate, so the factor lands near 46-48 / 50.
    (regime,) = profile.corrections["rack"]["all_reduce"].regimes  # 32-128 MiB: one NCCL regime (no kink in the log)
    assert 0.88 <= regime.correction.bandwidth_factor <= 0.98
    assert stats["held_out_median_abs_error"] <= 0.05
    assert "ns3" in capsys.readouterr().out


def _pct_errors(simulated, measured):
    return [100 * abs(s / m - 1) for s, m in zip(simulated, measured)]


def test_check_json_prints_one_row_per_log_and_collective(tmp_path, capsys):
    """`--check --json`: stdout is only a JSON list, one object per (log, collective), with the
    documented keys; the numbers re-computed here by hand from the backend and the profile's YAML."""
    profile_path = REPO / "calibration" / "profiles" / "h100-analytical.yaml"
    assert main(["calibrate", "--check", str(profile_path), "--topology", TOPOLOGY, "--logs", str(GOOD_LOG),
                 H100_LOGS[1], "--json", "--no-cache"]) == 0
    captured = capsys.readouterr()
    rows = json.loads(captured.out)  # nothing else on stdout
    assert "profile h100-analytical" in captured.err
    assert [(r["log"], r["collective"]) for r in rows] == [
        ("good_2x2_allreduce.txt", "all_reduce"),
        ("xxrjun_2node_2xH100_1gpn_smoke.txt", "all_reduce"), ("xxrjun_2node_2xH100_1gpn_smoke.txt", "send_recv")]
    for r in rows:
        assert {"log", "collective", "sizes", "median_err_uncalibrated_pct", "median_err_calibrated_pct",
                "max_err_calibrated_pct"} <= set(r)
    assert [r["sizes"] for r in rows] == [3, 5, 5]  # 1, 2, 4 MiB; 32 - 512 MiB
    # GOOD_LOG by hand: [[2,2]] (rack tier) on the profile's backend (analytical, ring, 8 channels);
    # measured 100, 150, 250 us. Its sizes are below the rack all-reduce's first regime (32 MiB, read
    # from the YAML), so only that regime's bandwidth factor applies: t0 + (t - t0) / f.
    h100 = load_topology(TOPOLOGY)
    model = AnalyticalModel(h100, channels=8)
    group = placement_from_shape(h100, [[2, 2]])
    (first, *_) = yaml.safe_load(profile_path.read_text())["tiers"]["rack"]["kinds"]["all_reduce"]["regimes"]
    sizes, measured = [MIB, 2 * MIB, 4 * MIB], [100e-6, 150e-6, 250e-6]
    assert first["from_bytes"] == 32 * MIB  # precondition: every size of the log lies below it
    t = [model.collective_seconds(group, n) for n in sizes]
    t0 = model.collective_seconds(group, 4)  # 1 byte per rank
    corrected = [t0 + (x - t0) / first["bandwidth_factor"] for x in t]
    good = rows[0]
    assert good["median_err_uncalibrated_pct"] == pytest.approx(median(_pct_errors(t, measured)), abs=1e-4)
    assert good["median_err_calibrated_pct"] == pytest.approx(median(_pct_errors(corrected, measured)), abs=1e-4)
    assert good["max_err_calibrated_pct"] == pytest.approx(max(_pct_errors(corrected, measured)), abs=1e-4)


def _backend_log(tmp_path, name):
    """GOOD_LOG's 2 x 2 all-reduce with the times the default backend (analytical, ring, 1 channel)
    gives, so uncalibrated is right to the log's 0.01 us rounding and any correction is worse."""
    h100 = load_topology(TOPOLOGY)
    model = AnalyticalModel(h100)
    group = placement_from_shape(h100, [[2, 2]])
    text = GOOD_LOG.read_text()
    busbw = []
    for size, old in ((MIB, "100.00   10.49   15.73"), (2 * MIB, "150.00   13.98   20.97"),
                      (4 * MIB, "250.00   16.78   25.17")):
        us = model.collective_seconds(group, size) * 1e6
        algbw = size / us / 1e3  # GB/s; busbw = algbw x 2(n-1)/n, n = 4
        busbw.append(round(algbw * 2 * 3 / 4, 2))
        assert text.count(old) == 2  # out-of-place and in-place
        text = text.replace(old, f"{us:.2f}   {algbw:.2f}   {busbw[-1]:.2f}")
    text = text.replace("20.6233", f"{sum(busbw) / 3:.4f}")  # the Avg footer: the mean busbw
    path = tmp_path / name
    path.write_text(text)
    assert parse_nccl_tests(path).issues == ()  # precondition: a self-consistent log
    return path, model, group


def test_holdout_worse_than_uncalibrated_is_refused_unless_forced(tmp_path, capsys):
    holdout, model, group = _backend_log(tmp_path, "holdout.txt")
    # GOOD_LOG's times, 50 us + 50 us per MiB, are affine in the size as the backend's are, so the profile
    # fitted on it reproduces them: on holdout.txt (the backend's own times) its error is GOOD_LOG's
    # distance from the backend, median > 10 % (precondition), against ~0 uncalibrated.
    off = median(abs(us * 1e-6 / model.collective_seconds(group, size) - 1)
                 for size, us in ((MIB, 100.0), (2 * MIB, 150.0), (4 * MIB, 250.0)))
    assert off > 0.1
    out = tmp_path / "x.yaml"
    assert _fit(GOOD_LOG, out, "--holdout", str(holdout)) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("artist: error: holdout.txt: "), captured.err
    assert "worse than uncalibrated" in lines[0] and "holdout.txt all_reduce" in lines[0] and "--force" in lines[0]
    assert not out.exists()

    assert _fit(GOOD_LOG, out, "--holdout", str(holdout), "--force") == 0
    err = capsys.readouterr().err
    profile = load_profile(out)
    (warning,) = profile.warnings
    assert "--force" in warning and "holdout.txt all_reduce" in warning
    assert f"warning: {warning}" in err
    assert yaml.safe_load(out.read_text())["warnings"] == [warning]
    assert [(log["file"], log["role"]) for log in profile.logs] == [("good_2x2_allreduce.txt", "fit"),
                                                                    ("holdout.txt", "holdout")]
    (row,) = profile.fit["holdout"]["rows"]
    assert row["log"] == "holdout.txt" and row["sizes"] == 3
    assert row["median_err_uncalibrated_pct"] < 0.05  # the log's 0.01 us rounding
    assert row["median_err_calibrated_pct"] == pytest.approx(100 * off, rel=1e-3)
    assert any("--holdout" in note for note in profile.notes)  # the stored command re-makes it


def test_holdout_that_the_profile_improves_is_accepted(tmp_path, capsys):
    # The same measurements under another name: the fit's own data, every size held out.
    holdout = tmp_path / "again.txt"
    holdout.write_text(GOOD_LOG.read_text())
    out = tmp_path / "x.yaml"
    assert _fit(GOOD_LOG, out, "--holdout", str(holdout)) == 0
    profile = load_profile(out)
    assert profile.warnings == () and "warnings" not in yaml.safe_load(out.read_text())
    (row,) = profile.fit["holdout"]["rows"]
    assert row["log"] == "again.txt" and row["median_err_calibrated_pct"] < row["median_err_uncalibrated_pct"]


def test_holdout_goes_with_fitting_not_check(tmp_path, capsys):
    profile = str(REPO / "calibration" / "profiles" / "h100-analytical.yaml")
    assert main(["calibrate", "--check", profile, "--logs", str(GOOD_LOG), "--holdout", str(GOOD_LOG)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "--holdout" in err


def test_report_writes_markdown_and_a_plot_per_log_and_collective(tmp_path, capsys):
    report = tmp_path / "report"
    assert main(["calibrate", "--topology", TOPOLOGY, "--logs", H100_LOGS[1], "--out", str(tmp_path / "x.yaml"),
                 "--report", str(report), "--quiet"]) == 0
    text = (report / "report.md").read_text()
    for kind in ("all_reduce", "send_recv"):  # the 2 x 1 log's two collectives
        png = report / f"xxrjun_2node_2xH100_1gpn_smoke-{kind}.png"
        assert png.stat().st_size > 0 and f"]({png.name})" in text
        assert f"xxrjun_2node_2xH100_1gpn_smoke.txt: {kind}" in text


def _edited_log(tmp_path, old, new):
    text = GOOD_LOG.read_text()
    assert text.count(old) == 1, old  # precondition: the edit hits exactly one place
    path = tmp_path / "edited.txt"
    path.write_text(text.replace(old, new))
    return path


def _fit(log, out, *extra):
    return main(["calibrate", "--topology", TOPOLOGY, "--logs", str(log), "--out", str(out), "--quiet", *extra])


@pytest.mark.parametrize("old, new, problem", [
    # 262144 floats are 1048576 B, not the 2097152 B the row prints (all_reduce: size = count x type size).
    ("2097152        524288", "2097152        262144", "size 2097152 B != count 262144 x float (4 B) = 1048576 B"),
    ("-1   150.00", "-1     0.00", "out-of-place time is 0.00 us"),  # size / 0 us: no bandwidth
    ("20.97       0   150.00", "20.97       5   150.00", "out-of-place #wrong = 5"),  # nccl-tests found wrong results
], ids=["size-vs-count", "zero-time", "wrong"])
def test_unusable_row_is_one_line_naming_file_and_line(tmp_path, capsys, old, new, problem):
    log = _edited_log(tmp_path, old, new)
    assert _fit(log, tmp_path / "x.yaml") == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"artist: error: {log}: line 13: {problem}"), captured.err
    assert "Traceback" not in captured.err and captured.out == ""
    assert not (tmp_path / "x.yaml").exists()


def test_allow_wrong_uses_the_row_with_one_warning_naming_file_and_line(tmp_path, capsys):
    log = _edited_log(tmp_path, "20.97       0   150.00", "20.97       5   150.00")
    assert _fit(log, tmp_path / "x.yaml", "--allow-wrong") == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and warnings[0].startswith(f"warning: {log}: line 13: out-of-place #wrong = 5")
    # The stored command re-makes the profile: it says the wrong row was allowed.
    assert any("--allow-wrong" in note for note in load_profile(tmp_path / "x.yaml").notes)


# The fit of GOOD_LOG asks the backend 4 questions: t0 at 1 byte per rank (4 B, correction.base_seconds)
# and the log's 3 sizes, 1, 2 and 4 MiB (all >= the default --min-bytes of 1 MiB).
QUESTIONS = 4


def test_a_rerun_is_answered_from_the_cache_with_the_same_profile(tmp_path, monkeypatch, capsys):
    cache = tmp_path / "cache"
    assert _fit(GOOD_LOG, tmp_path / "a.yaml", "--cache-dir", str(cache)) == 0
    assert LatencyStore(cache / CACHE_FILE_NAME).stats()["entries"] == QUESTIONS

    def no_backend(self, placement, nbytes, kind="all_reduce"):
        raise AssertionError(f"the backend was asked for {nbytes} B: not answered from the cache")

    monkeypatch.setattr(AnalyticalModel, "collective_seconds", no_backend)
    capsys.readouterr()
    assert _fit(GOOD_LOG, tmp_path / "b.yaml", "--cache-dir", str(cache)) == 0
    assert f"{QUESTIONS} backend answers from the cache, 0 simulated" in capsys.readouterr().err
    assert load_profile(tmp_path / "b.yaml").id == load_profile(tmp_path / "a.yaml").id


def test_the_default_cache_is_artist_cache_dir_and_no_cache_writes_none(tmp_path, own_cache):
    assert _fit(GOOD_LOG, tmp_path / "a.yaml", "--no-cache") == 0
    assert not own_cache.exists()
    assert _fit(GOOD_LOG, tmp_path / "b.yaml") == 0
    assert LatencyStore(own_cache).stats()["entries"] == QUESTIONS


def test_ctrl_c_says_what_the_cache_kept_and_a_rerun_continues_from_it(tmp_path, monkeypatch, capsys):
    real = AnalyticalModel.collective_seconds
    asked = []

    def ctrl_c_at_the_third(self, placement, nbytes, kind="all_reduce"):
        asked.append(nbytes)
        if len(asked) == 3:
            raise KeyboardInterrupt
        return real(self, placement, nbytes, kind)

    monkeypatch.setattr(AnalyticalModel, "collective_seconds", ctrl_c_at_the_third)
    cache = tmp_path / "cache"
    out = tmp_path / "a.yaml"
    assert _fit(GOOD_LOG, out, "--cache-dir", str(cache)) == 130
    err = capsys.readouterr().err
    # Two answers were finished before Ctrl-C: each is written to the cache as soon as it is computed.
    assert len(err.splitlines()) == 1 and err.startswith("artist: interrupted: ") and "Traceback" not in err
    assert "2 backend answers are in the cache" in err and str(cache / CACHE_FILE_NAME) in err
    assert "re-running the same command continues from them" in err
    assert LatencyStore(cache / CACHE_FILE_NAME).stats()["entries"] == 2 and not out.exists()

    asked.clear()
    monkeypatch.setattr(AnalyticalModel, "collective_seconds",
                        lambda self, p, n, kind="all_reduce": asked.append(n) or real(self, p, n, kind))
    assert _fit(GOOD_LOG, out, "--cache-dir", str(cache)) == 0
    assert len(asked) == QUESTIONS - 2  # only the two questions not answered before Ctrl-C
    assert _fit(GOOD_LOG, tmp_path / "fresh.yaml", "--no-cache") == 0
    assert load_profile(out).id == load_profile(tmp_path / "fresh.yaml").id


def test_ctrl_c_without_cache_says_nothing_was_kept(tmp_path, monkeypatch, capsys):
    def ctrl_c(self, placement, nbytes, kind="all_reduce"):
        raise KeyboardInterrupt

    monkeypatch.setattr(AnalyticalModel, "collective_seconds", ctrl_c)
    assert _fit(GOOD_LOG, tmp_path / "a.yaml", "--no-cache") == 130
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "--no-cache" in err and "starts over" in err


@pytest.mark.parametrize("extra, words", [
    (["--channels", "0"], "--channels: must be >= 1"),
    (["--channels", str(MAX_CHANNELS + 1)], f"--channels: must be <= {MAX_CHANNELS}"),
    (["--min-bytes", "-1"], "--min-bytes: must be >= 0"),
    (["--max-bytes", "-5"], "--max-bytes: must be >= 0"),
    (["--algorithm", "butterfly"], "--algorithm: invalid choice: 'butterfly'"),
])
def test_numeric_options_are_bounded(tmp_path, capsys, extra, words):
    assert _fit(GOOD_LOG, tmp_path / "x.yaml", *extra) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and words in err


def test_min_bytes_above_max_bytes_is_one_line(tmp_path, capsys):
    assert _fit(GOOD_LOG, tmp_path / "x.yaml", "--min-bytes", "4194304", "--max-bytes", "1048576") == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "--min-bytes: 4194304 is above --max-bytes 1048576" in err


def test_check_on_a_log_the_profile_was_fitted_on_says_so_and_holds_none_out(tmp_path, capsys):
    """--check labelled every size of the very log a profile was fitted on 'held-out'; such a log's errors are
    in-sample. The same measurements under other bytes (another log) are held out."""
    profile = REPO / "calibration" / "profiles" / "stas00-a100-analytical.yaml"
    log = DATA / "stas00_1node_8xA100_allreduce_columns_trimmed.txt"
    other = tmp_path / "other.txt"
    other.write_text(log.read_text() + "\n# the same run, another file\n")
    args = ["calibrate", "--check", str(profile), "--layout", "1x8", "--json", "--logs"]
    assert main(args + [str(log)]) == 0
    out = capsys.readouterr()
    assert f"note: {log} is a log this profile was fitted on" in out.err
    rows = json.loads(out.out)
    assert main(args + [str(other)]) == 0
    out = capsys.readouterr()
    assert "was fitted on" not in out.err
    held = json.loads(out.out)
    assert rows and held and len(rows) == len(held)
    for fitted_row, held_row in zip(rows, held):
        assert fitted_row["held_out_sizes"] == 0 < held_row["held_out_sizes"]
