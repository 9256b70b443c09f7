"""NCCL regime detection (where the algorithm/protocol evidently switches), the regimes the fit
treats separately, and the acceptance figure for every shipped log on the analytical backend."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from artist.calibration import load_profile
from artist.calibration.correction import NCCL_TEST_KIND
from artist.calibration.fit import FIT, HELD_OUT, MIB, OUTSIDE, error_summary, simulate_test
from artist.calibration.nccl_tests import parse_nccl_tests
from artist.calibration.regimes import MIN_REGIME_SIZES, find_kinks, regime_starts
from artist.cli import main
from artist.network.analytical import AnalyticalModel
from artist.topology import load_topology

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "calibration" / "data"
SIZES = [MIB << k for k in range(11)]  # 1 MiB .. 1 GiB


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """`artist calibrate` uses the latency cache by default: keep each test's in its own directory."""
    monkeypatch.setenv("ARTIST_CACHE_DIR", str(tmp_path / "cache"))


def _affine(a_us, gbs):
    return lambda s: a_us * 1e-6 + s / (gbs * 1e9)


def test_a_switch_between_two_affine_regimes_is_found_where_it_happens():
    small, large = _affine(150, 20), _affine(900, 185)  # the two regimes of the gcp a3mega log, rounded
    times = [small(s) if s < 16 * MIB else large(s) for s in SIZES]
    kinks = find_kinks(SIZES, times)
    assert [k.size_bytes for k in kinks] == [16 * MIB]
    assert regime_starts(SIZES, times) == [MIB, 16 * MIB]


def test_one_affine_regime_with_small_noise_has_no_kink():
    # +-2 % alternating noise where the increments are well above it (32 MiB - 32 GiB, as xxrjun 1 x 8)
    sizes = [s << 5 for s in SIZES]
    line = _affine(40, 250)
    times = [line(s) * (1 + 0.02 * (-1) ** k) for k, s in enumerate(sizes)]
    assert find_kinks(sizes, times) == []
    assert regime_starts(sizes, times) == [sizes[0]]


def test_a_latency_floor_ends_in_a_kink():
    line = _affine(100, 100)
    times = [line(s) for s in SIZES]
    times[0] = times[1] = times[2] = 170e-6  # flat 1-4 MiB above the line, as the stas00 A100 log (~101 us)
    # Kinks at 2 MiB and 4 MiB (the floor) and 8 MiB (the line starts): the 1-size pieces 1, 2 and 4 MiB
    # are one stretch of 3 sizes, a regime of its own.
    assert [k.size_bytes for k in find_kinks(SIZES, times)] == [2 * MIB, 4 * MIB, 8 * MIB]
    assert regime_starts(SIZES, times) == [MIB, 8 * MIB]


def test_a_two_size_stretch_joins_the_neighbour_whose_line_is_nearer():
    a, b = _affine(150, 20), _affine(900, 185)  # the gcp-like regimes of the first test
    # 16 and 32 MiB 20 % above line B (B below 16 MiB is far from A's times, so kinks appear at 16 and 64 MiB).
    up = [a(s) if s < 16 * MIB else b(s) * (1.2 if s < 64 * MIB else 1.0) for s in SIZES]
    # Line A up to 32 MiB, 32 MiB 30 % above it, line B from 64 MiB.
    down = [a(s) * (1.3 if s == 32 * MIB else 1.0) if s < 64 * MIB else b(s) for s in SIZES]
    for times in (up, down):  # precondition: 16-32 MiB is a stretch of 2 < MIN_REGIME_SIZES sizes
        assert [k.size_bytes for k in find_kinks(SIZES, times)] == [16 * MIB, 64 * MIB] and MIN_REGIME_SIZES == 3
    # up: 20 % off line B, but off line A by ~1.3x (A(32 MiB) = 1.83 ms vs 1.2 x 1.08 ms): joins B.
    assert regime_starts(SIZES, up) == [MIB, 16 * MIB]
    # down: 16 MiB on line A, 32 MiB 30 % off it; line B gives 0.99 ms vs 0.99 ms at 16 MiB but
    # 1.08 ms vs 2.38 ms at 32 MiB (55 % off): joins A.
    assert regime_starts(SIZES, down) == [MIB, 64 * MIB]


def test_a_single_size_joins_its_only_neighbour():
    a = _affine(150, 20)
    times = [a(s) for s in SIZES]
    times[0] = times[1]  # 1 MiB on a floor: the time does not grow to 2 MiB, a kink at 2 MiB
    assert [k.size_bytes for k in find_kinks(SIZES, times)] == [2 * MIB]
    assert regime_starts(SIZES, times) == [MIB]


def _all_reduce(name):
    log = parse_nccl_tests(DATA / name)
    (test,) = log.tests_of("all_reduce")
    rows = sorted((r for r in test.rows if r.size_bytes >= MIB), key=lambda r: r.size_bytes)
    return log, test, [r.size_bytes for r in rows], [r.time_us * 1e-6 for r in rows]


# Expected regimes read off the logs by hand (sizes >= 1 MiB): gcp's incremental bandwidth jumps from
# 20.7 GB/s (8 -> 16 MiB) to 204 GB/s (16 -> 32 MiB): 1-8 MiB and 16 MiB - 8 GiB. stas00's time is
# flat at ~101 us over 1-4 MiB, 8 MiB is 133.5 us, and it more than doubles from 8 to 16 MiB (276.6 us):
# kinks at 2, 4, 8 and 16 MiB leave 1-size pieces 1, 2, 4, 8 MiB, one stretch of 4 sizes, and
# 16 MiB - 16 GiB. aws changes its incremental bandwidth 8.5 -> 20.7 -> 19.6 -> 48.2 -> 30.4 -> 52.9
# -> 40.8 GB/s up to 256 MiB: kinks at 2, 16, 32, 64 MiB; 1 MiB alone joins 2-8 MiB (its only
# neighbour), 16-32 MiB (2 sizes) joins 64 MiB - 2 GiB, whose line is nearer. The xxrjun logs stay
# within 256-285 GB/s and 45-48 GB/s: one regime each.
@pytest.mark.parametrize("name, starts", [
    ("gcp_a3mega_2node_16xH100_tcpxo.txt", [MIB, 16 * MIB]),
    ("stas00_1node_8xA100_allreduce_columns_trimmed.txt", [MIB, 16 * MIB]),
    ("aws_p4de_2node_16xA100_efa.txt", [MIB, 16 * MIB]),
    ("xxrjun_1node_8xH100_allcoll.txt", [32 * MIB]),
    ("xxrjun_2node_2xH100_1gpn_smoke.txt", [32 * MIB]),
])
def test_regimes_of_each_shipped_log(name, starts):
    _, _, sizes, times = _all_reduce(name)
    assert regime_starts(sizes, times) == starts


def test_sizes_alternate_inside_each_regime_and_fit_from_makes_outside():
    dally = load_topology(REPO / "topologies" / "dally-3tier.yaml")
    log, test, sizes, _ = _all_reduce("stas00_1node_8xA100_allreduce_columns_trimmed.txt")
    points = simulate_test(AnalyticalModel(dally), dally, log, test, (8,), MIB)
    assert [p.size_bytes for p in points] == sizes
    # 1-8 MiB: fit, held-out, fit, held-out; 16 MiB - 16 GiB (11 sizes) starts again with a fit.
    assert [p.role for p in points] == [FIT, HELD_OUT] * 2 + [FIT, HELD_OUT] * 5 + [FIT]
    assert {p.regime_from for p in points[:4]} == {MIB} and {p.regime_from for p in points[4:]} == {16 * MIB}
    s = error_summary(points)
    assert (s["outside_points"], s["held_out_points"], s["fit_range_bytes"]) == (0, 7, [MIB, 16 << 30])
    cut = simulate_test(AnalyticalModel(dally), dally, log, test, (8,), MIB, None, 16 * MIB)
    assert [p.role for p in cut] == [OUTSIDE] * 4 + [FIT, HELD_OUT] * 5 + [FIT]


@pytest.mark.parametrize("name, nics, nic_gbs", [("gcp_a3mega_2node_16xH100_tcpxo.txt", 8, 25.0),
                                                  ("aws_p4de_2node_16xA100_efa.txt", 4, 12.5)])
def test_two_node_logs_beat_any_ring_so_nccl_ran_a_tree(name, nics, nic_gbs):
    # A ring's busbw cannot exceed the node's NIC bandwidth (every byte crosses the NICs
    # 2(N-1)/N times); a tree on 2 nodes sends S per node, reaching 2(N-1)/N = 15/8 of it.
    _, test, _, _ = _all_reduce(name)
    peak = max(r.out_of_place.busbw_gbs for r in test.rows)
    assert nics * nic_gbs < peak < 15 / 8 * nics * nic_gbs


def _refit_module():
    spec = importlib.util.spec_from_file_location("refit", REPO / "calibration" / "refit.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REFIT = _refit_module()


def _check_recorded_errors(profile, within_5pct=tuple(NCCL_TEST_KIND.values())):
    """Per fitted log and every collective it holds (the logs' tests, read independently): every
    regime has fit and held-out sizes, and the held-out median |error| is below the uncalibrated
    one, and <= 5 % for the kinds in within_5pct."""
    fitted = [log for log in profile.logs if log.get("role", "fit") == "fit"]
    assert sorted(profile.fit["logs"]) == sorted(log["file"] for log in fitted)
    for log in fitted:
        kinds = profile.fit["logs"][log["file"]]
        held = [NCCL_TEST_KIND[t.collective] for t in parse_nccl_tests(REPO / log["path"]).tests]
        assert sorted(kinds) == sorted(held), log["file"]
        for kind, errors in kinds.items():
            where = (log["file"], kind)
            # Every size >= 1 MiB is covered: nothing outside (the xxrjun logs start at 32 MiB).
            assert errors["outside_points"] == 0 and (errors["fit_range_bytes"][0] <= MIB
                                                      or log["file"].startswith("xxrjun")), where
            assert all(r["held_out_points"] >= 1 and r["fit_points"] >= 2 for r in errors["regimes"]), where
            assert errors["held_out_points"] == sum(r["held_out_points"] for r in errors["regimes"]) >= 2, where
            assert errors["held_out_median_error_after"] < errors["held_out_median_error_before"], (where, errors)
            if kind in within_5pct:
                assert errors["held_out_median_error_after"] <= 0.05, (where, errors)
ANALYTICAL_FITS = sorted(n for n, f in REFIT.FITS.items() if f[0] == "analytical")


@pytest.mark.parametrize("name", ANALYTICAL_FITS)
def test_every_shipped_log_meets_the_acceptance_figure_on_the_analytical_backend(name, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    argv = REFIT.argv_of(name)
    argv[argv.index("--out") + 1] = str(tmp_path / f"{name}.yaml")
    argv = argv[:argv.index("--plot")] + argv[argv.index("--plot") + 2:]
    assert main(argv) == 0
    profile = load_profile(tmp_path / f"{name}.yaml")
    _check_recorded_errors(profile)
    # The shipped profile is what the listed command makes (nothing edited by hand).
    assert load_profile(REPO / "calibration" / "profiles" / f"{name}.yaml").id == profile.id


NS3_FITS = sorted(n for n, f in REFIT.FITS.items() if f[0] == "ns3")


@pytest.mark.parametrize("name", NS3_FITS)
def test_every_shipped_ns3_profile_recorded_the_acceptance_figure(name):
    """ns-3 fits take minutes, so CI reads what calibration/refit.py recorded in the shipped profile
    (made by the command refit.py lists, with the fit code of this tree; the analytical twin above
    is re-made and compared by id)."""
    profile = load_profile(REPO / "calibration" / "profiles" / f"{name}.yaml")
    assert profile.backend["backend"] == "ns3"
    # The 5 % figure is asserted for all_reduce (the acceptance figure of the all-reduce fits); the
    # other kinds must beat uncalibrated. The 1 x 8 H100 sendrecv log plateaus at 820-826 us from 64 to
    # 128 MiB (its regime 32-128 MiB has 3 sizes), which the fit's held-out size misses by ~30 % on ns-3.
    _check_recorded_errors(profile, within_5pct=("all_reduce",))
