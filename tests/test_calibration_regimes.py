"""NCCL regime detection (where the algorithm/protocol evidently switches), the fitted size range,
and the acceptance figure for every shipped log on the analytical backend."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from artist.calibration import load_profile
from artist.calibration.fit import AUTO, FIT, HELD_OUT, MIB, OUTSIDE, error_summary, simulate_test
from artist.calibration.nccl_tests import parse_nccl_tests
from artist.calibration.regimes import find_kinks, last_regime_start
from artist.cli import main
from artist.network.analytical import AnalyticalModel
from artist.topology import load_topology

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "calibration" / "data"
SIZES = [MIB << k for k in range(11)]  # 1 MiB .. 1 GiB


def _affine(a_us, gbs):
    return lambda s: a_us * 1e-6 + s / (gbs * 1e9)


def test_a_switch_between_two_affine_regimes_is_found_where_it_happens():
    small, large = _affine(150, 20), _affine(900, 185)  # the two regimes of the gcp a3mega log, rounded
    times = [small(s) if s < 16 * MIB else large(s) for s in SIZES]
    kinks = find_kinks(SIZES, times)
    assert [k.size_bytes for k in kinks] == [16 * MIB]
    assert last_regime_start(SIZES, times) == 16 * MIB


def test_one_affine_regime_with_small_noise_has_no_kink():
    # +-2 % alternating noise where the increments are well above it (32 MiB - 32 GiB, as xxrjun 1 x 8)
    sizes = [s << 5 for s in SIZES]
    line = _affine(40, 250)
    times = [line(s) * (1 + 0.02 * (-1) ** k) for k, s in enumerate(sizes)]
    assert find_kinks(sizes, times) == []
    assert last_regime_start(sizes, times) == sizes[0]


def test_a_latency_floor_ends_in_a_kink():
    line = _affine(100, 100)
    times = [line(s) for s in SIZES]
    times[0] = times[1] = times[2] = 170e-6  # flat 1-4 MiB above the line, as the stas00 A100 log (~101 us)
    assert last_regime_start(SIZES, times) == 8 * MIB


def _all_reduce(name):
    log = parse_nccl_tests(DATA / name)
    (test,) = log.tests_of("all_reduce")
    rows = sorted((r for r in test.rows if r.size_bytes >= MIB), key=lambda r: r.size_bytes)
    return log, test, [r.size_bytes for r in rows], [r.time_us * 1e-6 for r in rows]


# Expected starts read off the logs by hand: gcp's incremental bandwidth jumps from 20.7 GB/s
# (8 -> 16 MiB) to 204 GB/s (16 -> 32 MiB); stas00's time is flat at ~101 us over 1-4 MiB, more
# than doubles from 8 to 16 MiB (133.5 -> 276.6 us) and then grows steadily; aws changes its
# incremental bandwidth 8.5 -> 20.7 -> 19.6 -> 48.2 -> 30.4 -> 52.9 -> 40.8 GB/s up to 256 MiB and
# stays within 4 % of 42 GB/s from 128 MiB on; the xxrjun logs stay within 256-285 GB/s and 45-48 GB/s.
@pytest.mark.parametrize("name, start", [
    ("gcp_a3mega_2node_16xH100_tcpxo.txt", 16 * MIB),
    ("stas00_1node_8xA100_allreduce_columns_trimmed.txt", 16 * MIB),
    ("aws_p4de_2node_16xA100_efa.txt", 64 * MIB),
    ("xxrjun_1node_8xH100_allcoll.txt", 32 * MIB),
    ("xxrjun_2node_2xH100_1gpn_smoke.txt", 32 * MIB),
])
def test_last_regime_of_each_shipped_log(name, start):
    _, _, sizes, times = _all_reduce(name)
    assert last_regime_start(sizes, times) == start


def test_sizes_below_the_regime_are_outside_and_never_fitted():
    dally = load_topology(REPO / "topologies" / "dally-3tier.yaml")
    log, test, sizes, _ = _all_reduce("stas00_1node_8xA100_allreduce_columns_trimmed.txt")
    points = simulate_test(AnalyticalModel(dally), dally, log, test, (8,), MIB, None, AUTO)
    assert [p.size_bytes for p in points] == sizes
    roles = [p.role for p in points]
    assert roles == [OUTSIDE] * 4 + [FIT, HELD_OUT] * 5 + [FIT]  # 1-8 MiB outside, 16 MiB - 16 GiB alternate
    s = error_summary(points)
    assert (s["outside_points"], s["held_out_points"], s["fit_range_bytes"]) == (4, 5, [16 * MIB, 16 << 30])


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
ANALYTICAL_FITS = sorted(n for n, f in REFIT.FITS.items() if f[0] == "analytical")


@pytest.mark.parametrize("name", ANALYTICAL_FITS)
def test_every_shipped_log_meets_the_acceptance_figure_on_the_analytical_backend(name, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    argv = REFIT.argv_of(name)
    argv[argv.index("--out") + 1] = str(tmp_path / f"{name}.yaml")
    argv = argv[:argv.index("--plot")] + argv[argv.index("--plot") + 2:]
    assert main(argv) == 0
    profile = load_profile(tmp_path / f"{name}.yaml")
    for log, errors in profile.fit["logs"].items():
        assert errors["held_out_points"] >= 2, log
        assert errors["held_out_median_error_after"] <= 0.05, (log, errors)
    # The shipped profile is what the listed command makes (nothing edited by hand).
    assert load_profile(REPO / "calibration" / "profiles" / f"{name}.yaml").id == profile.id
