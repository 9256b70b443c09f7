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
    # 10 hosts cnode3-002 .. cnode3-011, one GPU each; every test 32 MiB - 16 GiB (the log reduces maxBytes to
    # ~24.7 GiB, so 10 sizes); all_gather / reduce_scatter / alltoall sizes are 33554400 = 419430 x 8 B x 10 ranks.
    "xxrjun_10node_10xH100_1gpn_allcoll.txt": (["all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv"],
                                               [10] * 5, 10, 1, [10, 10, 10, 10, None]),
    # the same run at 8 GPUs per node (80 ranks); sendrecv implies no rank count (factor 1)
    "xxrjun_10node_80xH100_8gpn_allcoll.txt": (["all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv"],
                                               [10] * 5, 10, 8, [80, 80, 80, 80, None]),
    # the same run at 2 and 4 GPUs per node; all_gather / reduce_scatter / alltoall sizes multiples of ranks x 8 B
    "xxrjun_10node_20xH100_2gpn_allcoll.txt": (["all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv"],
                                               [10] * 5, 10, 2, [20, 20, 20, 20, None]),
    "xxrjun_10node_40xH100_4gpn_allcoll.txt": (["all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv"],
                                               [10] * 5, 10, 4, [40, 40, 40, 40, None]),
    # pairwise runs: alltoall and sendrecv at 4, 8 and 16 GiB, one node pair at 1, 2 and 4 GPUs per node ...
    **{f"xxrjun_2node_{2 * g}xH100_{g}gpn_cnode3-002_cnode3-003_alltoall_sendrecv.txt":
       (["alltoall", "sendrecv"], [3, 3], 2, g, [2 * g, None]) for g in (1, 2, 4)},
    # ... and every one of the 45 pairs of the 10 hosts at 8 GPUs per node
    **{f"xxrjun_2node_16xH100_8gpn_cnode3-{a:03d}_cnode3-{b:03d}_alltoall_sendrecv.txt":
       (["alltoall", "sendrecv"], [3, 3], 2, 8, [16, None]) for a in range(2, 12) for b in range(a + 1, 12)},
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
# 169.0 us; xxrjun 2 x 1 sendrecv 32 MiB 838.43 vs 787.24 us. The xxrjun 10 x 1 log has none: its largest
# spread is all_gather 32 MiB, 721.94 vs 687.61 us (4.9 %).
NOISY_ROWS = {
    # xxrjun 10 x 8: all_reduce 32 MiB 798.52 vs 857.09 us (7.1 %), 128 MiB (11.8 %), 256 MiB (7.8 %), 2 GiB (7.7 %);
    # all_gather 64-256 MiB (6.3-11.6 %); reduce_scatter 32 MiB-1 GiB, 885.81 vs 650.00 us at 64 MiB the worst
    # (30.7 %); alltoall 128 MiB (7.0 %) - found with awk over the two time columns, as the parser does
    "xxrjun_10node_80xH100_8gpn_allcoll.txt": [92, 94, 95, 98, 200, 201, 202, 306, 307, 308, 309, 311, 415],
    # 10 x 2: all_gather 32 MiB (5.3 %), alltoall 256 MiB (7.2 %); 10 x 4: all_reduce 32 MiB (7.5 %), all_gather
    # 256 MiB (5.1 %), reduce_scatter 32 MiB (14.3 %), alltoall 32-128 MiB (9.1-18.0 %); the 2 x 1 pair's alltoall,
    # out-of-place 11.5-11.8 % slower than in-place at every size (awk over the two time columns)
    "xxrjun_10node_20xH100_2gpn_allcoll.txt": [79, 176],
    "xxrjun_10node_40xH100_4gpn_allcoll.txt": [52, 122, 186, 253, 254, 255],
    "xxrjun_2node_2xH100_1gpn_cnode3-002_cnode3-003_alltoall_sendrecv.txt": [14, 15, 16],
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
    assert ((first.size_bytes, first.count, first.dtype, first.redop, first.root)
            == (33554432, 4194304, "double", "sum", -1))
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


# ---- rows that cannot be measurements are refused, naming file and line ------------------------

# 2 nodes x 2 GPUs, made-up figures that are consistent by hand: algbw = size / time (1048576 B /
# 100 us = 10.49 GB/s), busbw = algbw x 2(4-1)/4 for all_reduce, algbw x (4-1)/4 for all_gather.
HEAD = """# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
# Using devices
#  Rank  0 Group  0 Pid 100 on nodeA device  0 [0000:1b:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid 101 on nodeA device  1 [0000:43:00] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid 200 on nodeB device  0 [0000:1b:00] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid 201 on nodeB device  1 [0000:43:00] NVIDIA H100 80GB HBM3
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
"""  # noqa: E501 (nccl-tests output as printed)
ALL_REDUCE = HEAD + """\
     1048576        262144     float     sum      -1   100.00   10.49   15.73       0   100.00   10.49   15.73       0
     2097152        524288     float     sum      -1   150.00   13.98   20.97       0   150.00   13.98   20.97       0
"""
ROW = 9  # line of the 2 MiB row


def _edit(text, old, new):
    assert text.count(old) == 1, old  # precondition: the edit hits exactly one place
    return text.replace(old, new)


def _refused(text, *words):
    with pytest.raises(InputError) as err:
        parse_nccl_text(text, "snippet.txt")
    message = str(err.value)
    assert message.startswith(f"snippet.txt: line {ROW}: ") and "\n" not in message, message
    for w in words:
        assert w in message, message


def test_the_consistent_snippet_parses_clean():
    (test,) = parse_nccl_text(ALL_REDUCE, "snippet.txt").tests
    assert (test.collective, test.ranks, [r.line for r in test.rows], test.issues) == ("all_reduce", 4, [8, ROW], ())


def test_size_contradicting_count_times_type_size_is_refused():
    # 2097152 B printed with 262144 floats: 262144 x 4 B = 1048576 B (all_reduce prints count x type size).
    _refused(_edit(ALL_REDUCE, "2097152        524288", "2097152        262144"),
             "size 2097152 B != count 262144 x float (4 B) = 1048576 B")


def test_all_gather_and_reduce_scatter_print_count_per_rank():
    # nccl-tests src/all_gather.cu, src/reduce_scatter.cu: count = the per-rank count, size = the
    # whole buffer = count x ranks x type size (the xxrjun 1 x 8 log: 33554432 = 524288 x 8 x 8 B).
    for name, redop in (("all_gather", "none"), ("reduce_scatter", "sum")):
        rows = f"""\
     1048576         65536     float  {redop:>6}      -1   100.00   10.49    7.86       0   100.00   10.49    7.86       0
     2097152        131072     float  {redop:>6}      -1   150.00   13.98   10.49       0   150.00   13.98   10.49       0
"""  # noqa: E501 (nccl-tests output as printed)
        text = f"# Collective test starting: {name}_perf\n" + HEAD + rows
        (test,) = parse_nccl_text(text, "snippet.txt").tests
        assert test.collective == name and test.issues == ()
        # The all_reduce relation (count = size / 4 B) is wrong here: 524288 x 4 B x 4 ranks = 8 MiB.
        with pytest.raises(InputError) as err:
            parse_nccl_text(_edit(text, "2097152        131072", "2097152        524288"), "snippet.txt")
        assert str(err.value) == (f"snippet.txt: line {ROW + 1}: size 2097152 B != count 524288 x float (4 B) x 4 "
                                  f"ranks = 8388608 B ({name} prints the count per rank and the size of all ranks' "
                                  f"buffer)")


def test_zero_time_is_refused_out_of_place_or_in_place():
    # 0.00 us makes size / time infinite: one such sample in a row once gave a bandwidth factor of 1000.
    _refused(_edit(ALL_REDUCE, "20.97       0   150.00", "20.97       0     0.00"), "in-place time is 0.00 us")
    _refused(_edit(ALL_REDUCE, "-1   150.00", "-1     0.00"), "out-of-place time is 0.00 us")


def test_wrong_results_are_refused_unless_allowed():
    text = _edit(ALL_REDUCE, "   13.98   20.97       0   150.00", "   13.98   20.97       3   150.00")
    _refused(text, "out-of-place #wrong = 3", "--allow-wrong")
    (test,) = parse_nccl_text(text, "snippet.txt", allow_wrong=True).tests
    assert [(i.kind, i.line) for i in test.issues] == [("wrong", ROW)]
    # nccl-tests prints #wrong with %6g (src/util.cu): 1e+06 is a count of 1000000.
    _refused(_edit(ALL_REDUCE, "   13.98   20.97       0   150.00", "   13.98   20.97   1e+06   150.00"),
             "#wrong = 1000000")


def test_wrong_not_checked_is_not_an_error():
    # nccl-tests -c 0 prints N/A in every #wrong cell; the old 'error' column (largest absolute
    # error, 5e-07 in old_format_mpi_prefix.txt) is not a count either.
    assert ALL_REDUCE.count("       0") == 4  # precondition: the four #wrong cells
    (test,) = parse_nccl_text(ALL_REDUCE.replace("       0", "     N/A"), "snippet.txt").tests
    assert test.issues == () and all(r.out_of_place.wrong is None and r.in_place.wrong is None for r in test.rows)
    assert parse_nccl_tests(BAD / "old_format_mpi_prefix.txt").issues == ()
