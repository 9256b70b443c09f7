"""Latency tables: hand-computed rows, CSV, regression checks, the command, parallel runs through the cache."""

import io
import math
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pandas as pd
import pytest

from artist.errors import InputError
from artist.latency_table import (COLUMNS, STANDARD_SHAPES, build_latency_table, compare_tables,
                                  read_table_csv, standard_shapes, table_to_csv, write_table_csv)
from artist.network.cache import CACHE_FILE_NAME, LatencyStore
from artist.network.stack import CommSpec
from artist.testing import assert_latency_table
from artist.topology import load_topology
from artist.workload import load_models

REPO = Path(__file__).resolve().parent.parent
TOPOLOGY = REPO / "topologies" / "dally-3tier.yaml"
TOY_MODELS = REPO / "tests" / "golden" / "models"

# Figures of topologies/dally-3tier.yaml and NCCL's Ring/Simple latencies (tuning.cc, see analytical.py),
# written out here so the expectations below do not come from the code under test.
NVLINK_BPS, NIC_BPS = 2400e9, 400e9
NVLINK_PATH_S = 2 * 0.005e-6 + 0.1e-6  # two GPU<->NVSwitch links + the switch
NIC_PATH_S = 2 * 0.01e-6 + 0.13e-6  # two NIC links + the rack switch
SPINE_PATH_S = 2 * 0.01e-6 + 2 * 0.15e-6 + 2 * 0.13e-6 + 0.5e-6  # + two uplinks, two rack switches, the spine
BASE_S, NVLINK_STEP_S, NET_STEP_S = 8.4e-6, 3.4e-6, 14.0e-6


def ring_seconds(nbytes, n, step_fixed_s, bottleneck_bps):
    """Ring all-reduce on uniform hops: base + 2(n-1) steps, each a start-up + path latency + one chunk over
    the slowest link (a chunk's latency path then has the same 2(n-1) hops of one kind)."""
    return BASE_S + 2 * (n - 1) * (step_fixed_s + (nbytes / n) * 8 / bottleneck_bps)


@pytest.fixture(scope="module")
def topo():
    return load_topology(TOPOLOGY)


@pytest.fixture(scope="module")
def toys():
    return load_models(TOY_MODELS)


def _row(table, model, shape):
    rows = table[(table.model == model) & (table["shape"] == shape)]
    assert len(rows) == 1
    return rows.iloc[0]


def test_rows_match_hand_computed_ring_times(topo, toys):
    table = build_latency_table(topo, list(toys.values()), [[[8]], [[1] * 8], [[1] * 4, [1] * 4]]).table
    one = 8_000_000  # toy-one-bucket: one bucket, ready at the end of the backward pass
    cases = {
        "[[8]]": ("machine", ring_seconds(one, 8, NVLINK_STEP_S + NVLINK_PATH_S, NVLINK_BPS)),
        "[[1,1,1,1,1,1,1,1]]": ("rack", ring_seconds(one, 8, NET_STEP_S + NIC_PATH_S, NIC_BPS)),
        # Two of the eight hops cross the spine (same 400 Gb/s NIC bottleneck: the 64-NIC
        # uplink bundle carries one chunk each way). Latency follows one chunk's 14 hops,
        # which cross the two rack boundaries (4 hops apart) at most 4 times.
        "[[1,1,1,1],[1,1,1,1]]": ("network", BASE_S + 4 * (NET_STEP_S + SPINE_PATH_S) + 10 * (NET_STEP_S + NIC_PATH_S)
                                  + 2 * 7 * (one / 8) * 8 / NIC_BPS),
    }
    for shape, (tier, seconds) in cases.items():
        row = _row(table, "toy-one-bucket", shape)
        assert (row.tier, row.gpus, row.backend, row.calibrated) == (tier, 8, "analytical", False)
        assert row.collective_seconds == pytest.approx(seconds, rel=1e-9)
        assert row.exposed_seconds == pytest.approx(seconds, rel=1e-9)  # nothing to overlap with
        assert row.compute_seconds == 0.05
        assert row.comm_pct_of_compute == pytest.approx(100 * seconds / 0.05, rel=1e-9)


def test_three_buckets_overlap_with_the_backward_pass_by_hand(topo, toys):
    row = _row(build_latency_table(topo, [toys["toy-three-buckets"]], [[[8]]]).table, "toy-three-buckets", "[[8]]")
    fixed = NVLINK_STEP_S + NVLINK_PATH_S
    b32, b16 = ring_seconds(32e6, 8, fixed, NVLINK_BPS), ring_seconds(16e6, 8, fixed, NVLINK_BPS)
    compute = 0.02
    # Forward third, then buckets of 32, 32, 16 MB ready after 2/5, 4/5 and all of the backward bytes.
    end = 0.0
    for seconds, ready in ((b32, 1 / 3 + 2 / 3 * 2 / 5), (b32, 1 / 3 + 2 / 3 * 4 / 5), (b16, 1.0)):
        end = max(end, ready * compute) + seconds
    assert row.collective_seconds == pytest.approx(2 * b32 + b16, rel=1e-9)
    assert row.exposed_seconds == pytest.approx(end - compute, rel=1e-6)
    assert row.exposed_seconds == pytest.approx(b16, rel=1e-6)  # the earlier buckets finish in time


def test_standard_set_has_the_papers_three_eight_gpu_placements_then_16_32_64(topo, toys):
    assert len(STANDARD_SHAPES) == 9
    table = build_latency_table(topo, list(toys.values()), standard_shapes()).table
    assert list(table.columns) == list(COLUMNS)
    assert list(table.model) == ["toy-one-bucket"] * 9 + ["toy-three-buckets"] * 9  # models x shapes, in order
    first = table[table.model == "toy-one-bucket"]
    assert list(first.gpus) == [8, 8, 8, 16, 16, 32, 32, 64, 64]
    assert list(first.tier) == ["machine", "rack", "network"] + ["rack", "network"] * 3
    # Leaving the machine, then the rack, never makes one bucket's all-reduce faster.
    c = list(first.collective_seconds)
    assert c[0] < c[1] < c[2]
    for rack, network in ((c[3], c[4]), (c[5], c[6]), (c[7], c[8])):
        assert rack <= network


def test_standard_set_that_does_not_fit_names_the_shape(toys):
    one_rack = load_topology(TOPOLOGY, racks=1)
    with pytest.raises(InputError, match=r"shape \[\[1,1,1,1\],\[1,1,1,1\]\].*does not fit"):
        build_latency_table(one_rack, list(toys.values()), standard_shapes())


def test_a_shape_given_twice_is_refused(topo, toys):
    with pytest.raises(InputError, match="listed twice"):
        build_latency_table(topo, list(toys.values()), [[[4], [4, 4]], [[4, 4], [4]]])


def test_csv_is_deterministic_and_reads_back_bit_exact(topo, toys, tmp_path):
    shapes = [[[8]], [[4, 4], [2]]]
    a = table_to_csv(build_latency_table(topo, list(toys.values()), shapes).table)
    b = table_to_csv(build_latency_table(topo, list(toys.values()), shapes).table)
    assert a == b
    path = tmp_path / "t.csv"
    table = build_latency_table(topo, list(toys.values()), shapes).table
    write_table_csv(table, path)
    back = read_table_csv(path)
    for column in ("collective_seconds", "exposed_seconds", "compute_seconds", "comm_pct_of_compute"):
        assert list(back[column]) == list(table[column])
    assert list(back.calibrated) == [False] * 4 and list(back["shape"]) == list(table["shape"])


# --------------------------------------------------------------------------- comparison


def _golden(tmp_path, table):
    path = tmp_path / "golden.csv"
    write_table_csv(table, path)
    return path


@pytest.fixture
def table(topo, toys):
    return build_latency_table(topo, list(toys.values()), [[[8]], [[4], [4]]]).table


def test_comparison_reports_each_value_out_of_tolerance_with_its_relative_error(table):
    golden = table.copy()
    golden.loc[0, "exposed_seconds"] = table.loc[0, "exposed_seconds"] / 1.03  # measured is 3 % above
    golden.loc[1, "collective_seconds"] = table.loc[1, "collective_seconds"] * 1.01  # within 2 %
    result = compare_tables(table, golden, rtol=0.02)
    assert not result.ok
    assert len(result.deviations) == 1
    d = result.deviations[0]
    assert (d.column, d.key[:2]) == ("exposed_seconds", ("toy-one-bucket", "[[8]]"))
    assert d.relative_error == pytest.approx(0.03, rel=1e-9)
    (line,) = result.report_lines()
    assert "OUT OF TOLERANCE model=toy-one-bucket shape=[[8]]" in line and "relative error 3.000%" in line
    assert repr(float(table.loc[0, "exposed_seconds"])) in line  # the measured value is printed
    assert compare_tables(table, golden, rtol=0.031).ok


def test_comparison_reports_missing_extra_and_mismatched_rows(table):
    golden = table.copy()
    golden.loc[0, "tier"] = "rack"
    golden = pd.concat([golden.iloc[[0, 2, 3]], pd.DataFrame([{**golden.iloc[0].to_dict(), "model": "ghost"}])])
    result = compare_tables(table, golden, rtol=0.02)
    lines = result.report_lines()
    assert any(line.startswith("MISMATCH model=toy-one-bucket shape=[[8]]")
               and "tier measured machine golden rack" in line for line in lines)
    assert [line for line in lines if line.startswith("MISSING")] == [
        "MISSING model=ghost shape=[[8]] backend=analytical calibrated=false: in the golden table, not measured"]
    assert [line for line in lines if line.startswith("EXTRA")] == [
        "EXTRA model=toy-one-bucket shape=[[4],[4]] backend=analytical calibrated=false: "
        "measured, not in the golden table"]
    assert result.compared_rows == 3


def test_a_zero_golden_value_needs_atol(table):
    golden = table.copy()
    golden.loc[0, "exposed_seconds"] = 0.0
    result = compare_tables(table, golden, rtol=0.5)
    assert [d.relative_error for d in result.deviations] == [math.inf]
    assert compare_tables(table, golden, rtol=0.0, atol=1e-3).ok


def test_assert_latency_table_passes_and_fails_with_the_report(table, tmp_path):
    path = _golden(tmp_path, table)
    assert_latency_table(table, path)  # DataFrame vs file
    assert_latency_table(path, path, rtol=0.0)  # file vs file
    off = table.copy()
    off.loc[1, "compute_seconds"] *= 1.1
    with pytest.raises(AssertionError) as info:
        assert_latency_table(off, path, rtol=0.02)
    assert "compute_seconds measured" in str(info.value) and "relative error 10.000%" in str(info.value)


@pytest.mark.parametrize("edit, where, problem", [
    (lambda t: t.replace("collective_seconds,", ""), "line 1", "missing column"),
    (lambda t: t.replace("model,", "model,notes,", 1), "line 1", "unknown column"),
    (lambda t: t.replace(",0.05,", ",fast,", 1), "line 2, column 'compute_seconds'", "not a number"),
    (lambda t: t.replace(",0.05,", ",nan,", 1), "line 2, column 'compute_seconds'", "not a finite number"),
    (lambda t: t.replace(",false,", ",maybe,", 1), "line 2, column 'calibrated'", "expected true or false"),
    (lambda t: t.replace("[[8]]", "[[8]", 1), "line 2, column 'shape'", "not a JSON list"),
    (lambda t: t + t.splitlines()[1] + "\n", "line 6", "already given on line 2"),
    (lambda t: t + "a,b\n", "line 6", "has 2 cells"),
])
def test_bad_golden_files_name_the_line_and_column(table, tmp_path, edit, where, problem):
    path = tmp_path / "bad.csv"
    path.write_text(edit(table_to_csv(table)))
    with pytest.raises(InputError) as info:
        read_table_csv(path)
    assert str(path) in str(info.value) and where in str(info.value) and problem in str(info.value)


# --------------------------------------------------------------------------- command line


def _cli(argv):
    from artist.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_cli_check_exits_zero_on_match_and_one_with_the_report(tmp_path):
    base = ["latency-table", "--topology", str(TOPOLOGY), "--models", str(TOY_MODELS), "--cache-dir", str(tmp_path)]
    golden = tmp_path / "golden.csv"
    code, _, _ = _cli(base + ["--shape", "[[8]]", "--shape", "[[4],[4]]", "--out", str(golden)])
    assert code == 0 and len(read_table_csv(golden)) == 4

    code, out, _ = _cli(base + ["--shape", "[[8]]", "--shape", "[[4],[4]]", "--check", str(golden)])
    assert code == 0 and "check OK" in out

    text = golden.read_text().splitlines()
    fields = text[1].split(",")
    fields[7] = repr(float(fields[7]) * 1.05)  # exposed_seconds of the first row, 5 % off
    golden.write_text("\n".join([text[0], ",".join(fields), *text[2:]]) + "\n")
    code, out, _ = _cli(base + ["--shape", "[[8]]", "--shape", "[[2,2]]", "--check", str(golden), "--rtol", "0.02"])
    assert code == 1
    assert "OUT OF TOLERANCE model=toy-one-bucket shape=[[8]]" in out and "exposed_seconds" in out
    assert out.count("MISSING") == 2 and out.count("EXTRA") == 2  # [[4],[4]] rows missing, [[2,2]] rows extra
    assert "check FAILED" in out


def test_cli_repeated_standard_table_runs_from_cache_and_says_so(tmp_path):
    argv = ["latency-table", "--standard", "--topology", str(TOPOLOGY), "--models", str(TOY_MODELS),
            "--cache-dir", str(tmp_path)]
    code, first, err1 = _cli(argv)
    assert code == 0 and "0 cache hits, 18 simulations" in err1
    code, second, err2 = _cli(argv)
    assert code == 0 and "18 cache hits, 0 simulations" in err2
    assert first == second  # byte-identical tables, simulated or cached
    assert LatencyStore(tmp_path / CACHE_FILE_NAME).stats()["entries"] == 18


def test_cli_bad_input_exits_2_naming_it(tmp_path, capsys):
    from artist.cli import main

    common = ["latency-table", "--topology", str(TOPOLOGY), "--models", str(TOY_MODELS), "--no-cache"]
    assert main(common + ["--shape", "[[8],"]) == 2
    assert "--shape [[8]," in capsys.readouterr().err
    assert main(common + ["--shape", "[[16]]"]) == 2
    assert "shape [[16]]" in capsys.readouterr().err
    assert main(common + ["--standard", "--racks", "1"]) == 2
    assert "does not fit" in capsys.readouterr().err
    assert main(common + ["--shape", "[[8]]", "--model", "nope"]) == 2
    assert "unknown model(s) nope" in capsys.readouterr().err
    assert main(common + ["--shape", "[[8]]", "--check", str(tmp_path / "absent.csv")]) == 2
    assert "absent.csv" in capsys.readouterr().err


# --------------------------------------------------------------------------- parallel + cache


def test_parallel_rows_through_a_shared_cache_match_the_serial_table(topo, toys, tmp_path):
    shapes = standard_shapes()[:5]
    serial = build_latency_table(topo, list(toys.values()), shapes).table  # no cache
    spec = CommSpec(cache=str(tmp_path / CACHE_FILE_NAME))
    first = build_latency_table(topo, list(toys.values()), shapes, spec, n_jobs=2)
    second = build_latency_table(topo, list(toys.values()), shapes, spec, n_jobs=2)
    assert table_to_csv(first.table) == table_to_csv(serial) == table_to_csv(second.table)
    assert (first.hits, first.simulations) == (0, 10)
    assert (second.hits, second.simulations) == (10, 0)
    stats = LatencyStore(spec.cache).stats()
    assert (stats["entries"], stats["misses"], stats["hits"], stats["inflight_claims"]) == (10, 10, 10, 0)


# --------------------------------------------------------------------------- calibration


H100 = REPO / "topologies" / "h100-dgx.yaml"
H100_PROFILE = REPO / "calibration" / "profiles" / "h100-analytical.yaml"


def test_calibrated_table_goes_through_the_cache_and_says_calibrated(toys, tmp_path):
    from artist.calibration.profile import load_profile
    from artist.network.calibrated import Calibrated
    from artist.network.analytical import AnalyticalModel
    from artist.perf.model import as_perf_model
    from artist.placement import placement_from_shape

    topo = load_topology(H100)
    spec = CommSpec(cache=str(tmp_path / CACHE_FILE_NAME), calibration=str(H100_PROFILE),
                    channels=8)  # the profile was fitted with one ring per NIC (8)
    shapes = [[[8]], [[4], [4]]]
    first = build_latency_table(topo, list(toys.values()), shapes, spec)
    second = build_latency_table(topo, list(toys.values()), shapes, spec)
    assert (first.simulations, second.hits) == (4, 4)
    assert table_to_csv(first.table) == table_to_csv(second.table)
    assert list(first.table.calibrated) == [True] * 4
    direct = as_perf_model(Calibrated(AnalyticalModel(topo, channels=8), load_profile(H100_PROFILE)), topo)
    raw = as_perf_model(AnalyticalModel(topo, channels=8), topo)
    for _, row in first.table.iterrows():
        p = placement_from_shape(topo, [[4], [4]] if row["shape"] == "[[4],[4]]" else [[8]])
        assert row.exposed_seconds == direct.estimate(toys[row.model], p).exposed_comm_seconds
        assert row.collective_seconds == direct.estimate(toys[row.model], p).comm_seconds
        # The calibration moved the numbers: the column is not a label only.
        assert row.collective_seconds != raw.estimate(toys[row.model], p).comm_seconds
    # The cache holds the raw backend answers (a re-fitted profile re-uses them).
    rows = LatencyStore(spec.cache).export_rows()
    raw_values = {raw.estimate(toys[m], placement_from_shape(topo, s)).exposed_comm_seconds
                  for m in toys for s in shapes}
    # ... and the correction's t0: one raw all-reduce of 1 byte per rank per shape (artist.calibration.correction).
    probes = [r for r in rows if r["model_name"].startswith("all_reduce ")]
    assert sorted(r["model_name"] for r in probes) == ["all_reduce 8 B"] * 2
    assert {r["collective_seconds"] for r in probes} == {raw.fabric.collective_seconds(placement_from_shape(topo, s), 8)
                                                          for s in shapes}
    assert {r["exposed_seconds"] for r in rows if r not in probes} == raw_values


def test_calibration_for_another_topology_is_refused_before_any_work(toys):
    topo = load_topology(TOPOLOGY)
    with pytest.raises(InputError, match="fitted on topology 'h100-dgx'"):
        build_latency_table(topo, list(toys.values()), [[[8]]], CommSpec(calibration=str(H100_PROFILE), channels=8))


def test_calibrated_table_says_when_its_bucket_sizes_are_extrapolated(capsys):
    from artist.cli import main

    # ResNet-50's DDP buckets are ~16-29 MiB; the H100 logs start at 32 MiB.
    assert main(["latency-table", "--topology", str(H100), "--calibration", str(H100_PROFILE), "--channels", "8",
                 "--shape", "[[8]]", "--model", "resnet50", "--no-cache"]) == 0
    err = capsys.readouterr().err
    assert "note: calibration profile 'h100-analytical'" in err
    assert "machine tier (fitted on 32 MiB-16 GiB): 4 of 4 distinct sizes outside" in err
