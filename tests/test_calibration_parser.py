"""nccl-tests parser: every shipped log (counts known from reading the files and the sources
named in calibration/data/SOURCES.md) and hand-made malformed ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from artist.calibration import parse_nccl_tests, parse_nccl_text
from artist.errors import InputError

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "calibration" / "data"
BAD = Path(__file__).resolve().parent / "data" / "nccl"


def test_every_shipped_log_is_covered_here():
    # A new log in calibration/data must get its expectations below.
    assert sorted(p.name for p in DATA.glob("*.txt")) == sorted(SHIPPED)


# file -> (collective per test, rows per test, nodes, GPUs per node, ranks the busbw/algbw ratio implies)
SHIPPED = {
    "xxrjun_1node_8xH100_allcoll.txt": (["all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv"],
                                        [10] * 5, 1, 8, [8, 8, 8, 8, None]),
    "xxrjun_2node_2xH100_1gpn_smoke.txt": (["all_reduce", "sendrecv"], [5, 5], 2, 1, [2, None]),
    "gcp_a3mega_2node_16xH100_tcpxo.txt": (["all_reduce"], [31], 2, 8, [16]),
    # No 'Using devices' block: nodes unknown; 16 ranks = 2 x p4de per the source.
    "aws_p4de_2node_16xA100_efa.txt": (["all_reduce"], [29], None, None, [16]),
    "stas00_1node_8xA100_allreduce_columns_trimmed.txt": (["all_reduce"], [20], None, None, [8]),
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_log_counts(name):
    collectives, rows, nodes, per_node, implied = SHIPPED[name]
    log = parse_nccl_tests(DATA / name)
    assert [t.collective for t in log.tests] == collectives
    assert [len(t.rows) for t in log.tests] == rows
    assert all(t.nodes == nodes and t.gpus_per_node == per_node for t in log.tests)
    assert [t.implied_ranks for t in log.tests] == implied
    # Published logs are self-consistent (every algbw/busbw agrees with size, time and ranks); the
    # only issues are rows whose two samples of one time disagree by > 5 %, listed in NOISY_ROWS.
    assert [(i.kind, i.line) for i in log.issues] == [("spread", line) for line in NOISY_ROWS.get(name, [])]


# Rows whose out-of-place and in-place times differ by more than 5 %, found by reading the files:
# aws 2 MiB 432.6 vs 397.4 us (8.5 %); gcp 8 B 135.8 vs 123.5, 1 KiB 147.1 vs 123.1, 128 KiB 159.3 vs
# 169.0 us; xxrjun 2 x 1 sendrecv 32 MiB 838.43 vs 787.24 us.
NOISY_ROWS = {
    "aws_p4de_2node_16xA100_efa.txt": [21],
    "gcp_a3mega_2node_16xH100_tcpxo.txt": [33, 40, 47],
    "xxrjun_2node_2xH100_1gpn_smoke.txt": [34],
}


def test_time_is_the_mean_of_the_out_of_place_and_in_place_samples():
    (t,) = parse_nccl_tests(DATA / "aws_p4de_2node_16xA100_efa.txt").tests
    row = next(r for r in t.rows if r.size_bytes == 2097152)
    assert row.line == 21 and row.time_us == pytest.approx((432.6 + 397.4) / 2)
    assert row.time_spread == pytest.approx(35.2 / 415.0)
    (issue,) = [i for i in t.issues if i.line == 21]
    assert "8.5%" in issue.message and "432.6" in issue.message and "397.4" in issue.message
    # One sample only (columns trimmed by hand): that sample, no spread.
    last = parse_nccl_tests(DATA / "stas00_1node_8xA100_allreduce_columns_trimmed.txt").tests[0].rows[-1]
    assert last.time_us == last.out_of_place.time_us and last.time_spread is None


def test_a_row_with_one_sample_n_a_uses_the_other():
    text = (BAD / "good_2x2_allreduce.txt").read_text().replace("       0   250.00   16.78   25.17       0",
                                                                 "       0      N/A     N/A     N/A     N/A")
    row = next(r for r in parse_nccl_text(text, "edited.txt").tests[0].rows if r.line == 14)
    assert row.in_place.time_us is None and row.time_us == row.out_of_place.time_us == 250.0


def test_collective_named_by_the_log_is_not_marked_inferred():
    log = parse_nccl_tests(DATA / "xxrjun_1node_8xH100_allcoll.txt")
    assert not any(t.collective_inferred for t in log.tests)
    # Unnamed tests (older or pasted logs) are all_reduce by their ratio 2(n-1)/n > 1.
    assert parse_nccl_tests(DATA / "aws_p4de_2node_16xA100_efa.txt").tests[0].collective_inferred


def test_row_values_and_header_fields():
    log = parse_nccl_tests(DATA / "xxrjun_1node_8xH100_allcoll.txt")
    t = log.tests[0]
    assert t.version == "2.17.8" and t.nccl_library == 22902
    assert t.params["nGpus"] == 1 and t.params["maxBytes"] == 68719476736
    assert t.avg_busbw_gbs == pytest.approx(437.957)
    first = t.rows[0]
    assert (first.size_bytes, first.count, first.dtype, first.redop, first.root) == (33554432, 4194304, "double", "sum", -1)
    assert first.out_of_place.time_us == 182.87 and first.in_place.busbw_gbs == 321.08
    # the file's own numbers: size / time = 33554432 B / 182.87 us = 183.49 GB/s
    assert first.size_bytes / first.out_of_place.time_us / 1e3 == pytest.approx(first.out_of_place.algbw_gbs, abs=0.005)
    # alltoall's in-place #wrong reads N/A
    assert log.tests[3].rows[0].in_place.wrong is None


def test_trimmed_columns_and_digit_separators():
    t = parse_nccl_tests(DATA / "stas00_1node_8xA100_allreduce_columns_trimmed.txt").tests[0]
    assert t.columns == ("size", "time", "algbw", "busbw")
    sizes = [r.size_bytes for r in t.rows]
    assert sizes[0] == 32768 and sizes[-1] == 17179869184 and 1048576 in sizes
    assert t.rows[-1].in_place is None and t.rows[-1].count is None


def test_markdown_wrapper_lines_are_reported_not_read():
    log = parse_nccl_tests(DATA / "gcp_a3mega_2node_16xH100_tcpxo.txt")
    texts = [text for _, text in log.ignored_lines]
    assert texts[0] == "## NCCL TEST RESULT" and any("mpirun" in t for t in texts)
    assert all(not t.strip()[:1].isdigit() for t in texts)


def test_hand_made_consistent_log():
    log = parse_nccl_tests(BAD / "good_2x2_allreduce.txt")
    (t,) = log.tests
    assert (t.nodes, t.gpus_per_node, t.ranks, len(t.rows)) == (2, 2, 4, 3)
    assert t.hosts == ("nodeA", "nodeB")
    assert log.issues == ()
    assert len(log.sha256) == 64


def test_old_format_with_mpi_prefix_error_column_and_no_root():
    (t,) = parse_nccl_tests(BAD / "old_format_mpi_prefix.txt").tests
    assert t.columns[:5] == ("size", "count", "type", "redop", "time")
    assert (t.nodes, t.gpus_per_node, len(t.rows)) == (2, 1, 2)
    assert t.rows[0].root is None and t.rows[0].out_of_place.wrong == 5e-07 and t.rows[0].in_place.wrong is None
    assert t.collective is None


@pytest.mark.parametrize("name, line, words", [
    ("truncated_row.txt", 13, "7 cells"),
    ("wrong_column_count.txt", 14, "14 cells"),
    ("non_numeric_cell.txt", 13, "'15O.00'"),
    ("missing_header.txt", 9, "before any column header"),
])
def test_malformed_logs_name_file_and_line(name, line, words):
    with pytest.raises(InputError) as err:
        parse_nccl_tests(BAD / name)
    message = str(err.value)
    assert name in message and f"line {line}:" in message and words in message


def test_mislabelled_rank_count_is_reported():
    log = parse_nccl_tests(BAD / "mislabelled_ranks.txt")
    kinds = {i.kind for i in log.issues}
    assert "ranks" in kinds
    ranks_issue = next(i for i in log.issues if i.kind == "ranks")
    assert "implies 8 ranks" in ranks_issue.message and "lists 4" in ranks_issue.message


def test_row_disagreeing_with_its_time_is_reported():
    text = (BAD / "good_2x2_allreduce.txt").read_text().replace("   250.00   16.78   25.17       0   250.00",
                                                                 "   250.00   16.78   25.17       0   350.00")
    log = parse_nccl_text(text, "edited.txt")
    rows = [i for i in log.issues if i.kind == "row"]
    assert rows and all(i.line == 14 for i in rows if "in-place" in i.message)


def test_avg_footer_that_is_not_the_mean_is_reported():
    text = (BAD / "good_2x2_allreduce.txt").read_text().replace("20.6233", "30.0")
    log = parse_nccl_text(text, "edited.txt")
    assert any("Avg bus bandwidth" in i.message for i in log.issues)


def test_empty_or_unrelated_file_is_an_error(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("just some text\n")
    with pytest.raises(InputError, match="no nccl-tests results"):
        parse_nccl_tests(p)
