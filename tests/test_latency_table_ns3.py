"""ns-3 backend through the cache, and the shipped ns-3 golden latency table.

A repeated latency table runs with zero simulations; the golden table
(tests/golden/ns3_dally-3tier_toy-models_small.csv, produced by running the ns-3 backend,
see tests/golden/README.md) still holds, through artist.testing.assert_latency_table and
through `artist latency-table --check`. Small shapes and the synthetic profiles keep the
ns-3 work to ~15 s on 2 cores; the full `--standard` set is a manual run:
    artist latency-table --standard --backend ns3   (twice; the second says "0 simulations")
"""

import csv
import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from artist.latency_table import build_latency_table, read_table_csv
from artist.network.stack import CommSpec
from artist.placement import parse_shape
from artist.testing import assert_latency_table
from artist.topology import load_topology
from artist.workload import load_models

pytestmark = pytest.mark.ns3

REPO = Path(__file__).resolve().parent.parent
TOPOLOGY = REPO / "topologies" / "dally-3tier.yaml"
TOY_MODELS = REPO / "tests" / "golden" / "models"
GOLDEN = REPO / "tests" / "golden" / "ns3_dally-3tier_toy-models_small.csv"
# The golden table's shapes (tests/golden/README.md regenerates it with exactly these).
GOLDEN_SHAPES = ("[[2]]", "[[4]]", "[[8]]", "[[1,1]]", "[[2,2]]", "[[4],[4]]")
# ns-3 runs are deterministic (integer picosecond clock, fixed schedules, no random streams
# in the window transport): a tight tolerance catches any change of the engine, the builder,
# the transport options, a profile or the topology; 1e-6 leaves room only for floating-point
# reassociation on the Python side.
GOLDEN_RTOL = 1e-6
# The golden table is a full packet run: checked with the message-level fast path off (its own check
# against this table is test_fast_path_answers_are_within_1_percent_of_the_golden_packet_runs).
PACKETS_ONLY = (("fast_path", False),)


@pytest.fixture(scope="module")
def ns3_backend():
    module = pytest.importorskip("artist.network.ns3")
    if not hasattr(module, "Ns3Model"):
        pytest.skip("artist.network.ns3 has no Ns3Model yet")


def _cli(argv):
    from artist.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_repeated_ns3_table_runs_from_cache(ns3_backend, tmp_path):
    argv = ["latency-table", "--backend", "ns3", "--topology", str(REPO / "topologies" / "dally-3tier.yaml"),
            "--models", str(REPO / "tests" / "golden" / "models"), "--model", "toy-one-bucket",
            "--shape", "[[2]]", "--shape", "[[1,1]]", "--shape", "[[1],[1]]", "--cache-dir", str(tmp_path)]
    code, first, err1 = _cli(argv)
    assert code == 0, err1
    assert "0 cache hits, 3 simulations" in err1
    code, second, err2 = _cli(argv)
    assert code == 0, err2
    assert "3 cache hits, 0 simulations" in err2
    assert first == second
    backends = {row["backend"] for row in csv.DictReader(io.StringIO(first))}
    assert len(backends) == 1 and backends != {"analytical"}


@pytest.fixture(scope="module")
def golden_cache(ns3_backend, tmp_path_factory):
    """A cache directory filled by measuring the golden table's rows once (ns-3, uncalibrated)."""
    return tmp_path_factory.mktemp("ns3-golden-cache")


@pytest.fixture(scope="module")
def measured_golden_rows(golden_cache):
    topology = load_topology(TOPOLOGY)
    models = list(load_models(TOY_MODELS).values())
    spec = CommSpec("ns3", options=PACKETS_ONLY, cache=str(golden_cache / "latency-cache.sqlite"))
    return build_latency_table(topology, models, [parse_shape(s) for s in GOLDEN_SHAPES], spec)


def test_golden_ns3_table_covers_every_toy_model_and_shape_and_says_ns3():
    """A golden file that lost rows, or came from another backend, would check less than it claims."""
    golden = read_table_csv(GOLDEN)
    assert set(golden["backend"]) == {"ns3"} and not golden["calibrated"].any()
    expected = {(m, s) for m in load_models(TOY_MODELS) for s in GOLDEN_SHAPES}
    assert set(zip(golden["model"], golden["shape"])) == expected and len(golden) == len(expected)


def test_golden_ns3_table_holds(measured_golden_rows):
    assert measured_golden_rows.simulations == len(measured_golden_rows.table)  # measured now, not read back
    assert_latency_table(measured_golden_rows.table, GOLDEN, rtol=GOLDEN_RTOL)


def test_latency_table_check_against_ns3_golden_passes_and_catches_a_change(measured_golden_rows, golden_cache,
                                                                            tmp_path):
    argv = ["latency-table", "--backend", "ns3", "--topology", str(TOPOLOGY), "--models", str(TOY_MODELS),
            "--cache-dir", str(golden_cache), "--rtol", str(GOLDEN_RTOL), "--no-fast-path"]
    for shape in GOLDEN_SHAPES:
        argv += ["--shape", shape]
    code, out, err = _cli([*argv, "--check", str(GOLDEN)])
    assert code == 0, out + err
    assert f"{len(measured_golden_rows.table)} cache hits, 0 simulations" in err  # answered by the rows above
    assert "check OK" in out
    # One golden value off by 1 %: the same measurement must now fail and name the row.
    lines = GOLDEN.read_text().splitlines()
    header = lines[0].split(",")
    cells = next(csv.reader([lines[1]]))
    column = header.index("exposed_seconds")
    cells[column] = repr(float(cells[column]) * 1.01)
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(cells)
    changed = tmp_path / "changed.csv"
    changed.write_text("\n".join([lines[0], buf.getvalue().rstrip("\n"), *lines[2:]]) + "\n")
    code, out, _ = _cli([*argv, "--check", str(changed)])
    assert code == 1
    assert f"OUT OF TOLERANCE model={cells[0]} shape={cells[1]}" in out and "exposed_seconds" in out


def test_fast_path_answers_are_within_1_percent_of_the_golden_packet_runs(ns3_backend, tmp_path):
    """The default ns-3 backend answers these single-job rows at message level (no link is shared),
    within 1 % of the packet runs the golden table recorded, and says so in the cache."""
    topology = load_topology(TOPOLOGY)
    cache = tmp_path / "latency-cache.sqlite"
    run = build_latency_table(topology, list(load_models(TOY_MODELS).values()),
                              [parse_shape(s) for s in GOLDEN_SHAPES], CommSpec("ns3", cache=str(cache)))
    assert_latency_table(run.table, GOLDEN, rtol=0.01)
    with pytest.raises(AssertionError):  # not the packet runs themselves: the fast path answered
        assert_latency_table(run.table, GOLDEN, rtol=GOLDEN_RTOL)
    import sqlite3

    with sqlite3.connect(cache) as db:
        paths = {json.loads(row[0])["details"]["path"] for row in db.execute("SELECT result_json FROM entries")}
    assert paths == {"ns3-message-level"}


def test_no_fast_path_is_refused_for_other_backends():
    code, _, err = _cli(["latency-table", "--backend", "analytical", "--no-fast-path", "--shape", "[[2]]",
                         "--topology", str(TOPOLOGY), "--models", str(TOY_MODELS), "--no-cache"])
    assert code != 0 and "--no-fast-path" in err and "Traceback" not in err


def test_parallel_ns3_table_in_joblib_workers_matches_the_golden_rows(ns3_backend, tmp_path):
    """--jobs 2: each joblib (loky) worker starts its own ns-3 worker. This used to fail twice
    over: the spawned ns-3 worker inherited the start method name 'loky' and died, and the
    resulting Ns3SimulationError could not be unpickled in the parent (BrokenProcessPool)."""
    out = tmp_path / "table.csv"
    code, _, err = _cli(["latency-table", "--backend", "ns3", "--jobs", "2", "--no-cache", "--no-fast-path",
                         "--topology", str(TOPOLOGY), "--models", str(TOY_MODELS), "--model", "toy-one-bucket",
                         "--shape", "[[2]]", "--shape", "[[1,1]]", "--out", str(out)])
    assert code == 0, err
    golden = read_table_csv(GOLDEN)
    golden = golden[(golden["model"] == "toy-one-bucket") & golden["shape"].isin(["[[2]]", "[[1,1]]"])]
    assert len(golden) == 2
    assert_latency_table(read_table_csv(out), golden, rtol=GOLDEN_RTOL)


def test_ns3_simulation_error_survives_pickling_with_its_placement(ns3_backend):
    """Errors cross process boundaries (joblib, sweeps); the placement must come along."""
    import pickle

    from artist.network.ns3 import Ns3SimulationError

    error = pickle.loads(pickle.dumps(Ns3SimulationError("[[4],[4]]", "no answer within the 5 s watchdog")))
    assert isinstance(error, Ns3SimulationError)
    assert (error.shape, error.problem) == ("[[4],[4]]", "no answer within the 5 s watchdog")
    assert "[[4],[4]]" in str(error)
