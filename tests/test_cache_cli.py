"""`artist cache verify | clear | stats | export` on healthy, damaged and filtered caches, and in shell pipes."""

import argparse
import csv
import io
import os
import shlex
import sqlite3
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from artist.cli import main
from artist.commands.cache import duration
from artist.network.cache import CACHE_FILE_NAME, CachedTiming, LatencyStore
from artist.placement import placement_from_shape
from artist.topology import load_topology

REPO = Path(__file__).resolve().parent.parent
ISO = "%Y-%m-%dT%H:%M:%S.%fZ"


@pytest.fixture(scope="module")
def placement():
    return placement_from_shape(load_topology(REPO / "topologies" / "dally-3tier.yaml"), [[8]])


@pytest.fixture
def cache_dir(tmp_path):
    return tmp_path / "cache"


def put(store, key, backend, wall, placement):
    """One entry as Cached would store it, with a known backend and simulated wall time."""
    claim = store.get_or_claim(key)
    result = CachedTiming(((0.5, 1.0),), exposed_seconds=0.5, collective_seconds=1.0, backend=backend)
    store.put(claim, {"backend": {"backend": backend, "version": "1"}, "model": key}, key, placement, result, wall)


def fill(path, placement, ns3=(), analytical=()):
    """Entries n0, n1... of ns3 and a0, a1... of analytical with the given wall seconds."""
    store = LatencyStore(path)
    for i, wall in enumerate(ns3):
        put(store, f"n{i}", "ns3", wall, placement)
    for i, wall in enumerate(analytical):
        put(store, f"a{i}", "analytical", wall, placement)
    store.close()


def keys(path):
    conn = sqlite3.connect(path)
    try:
        return sorted(k for (k,) in conn.execute("SELECT key FROM entries"))
    finally:
        conn.close()


def run_cli(capsys, cache_dir, *argv):
    code = main(["cache", "--cache-dir", str(cache_dir), *argv])
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- verify


def test_verify_a_healthy_cache(capsys, cache_dir, placement):
    fill(cache_dir / CACHE_FILE_NAME, placement, ns3=[2.0], analytical=[0.1, 0.1])
    code, out, err = run_cli(capsys, cache_dir, "verify")
    assert code == 0 and err == ""
    assert f"cache: {cache_dir / CACHE_FILE_NAME}" in out
    assert "integrity check: ok" in out
    assert "entries: 3 (analytical 2, ns3 1)" in out
    assert "unreadable entries: 0" in out


def test_verify_a_missing_cache_creates_nothing(capsys, cache_dir):
    code, out, _ = run_cli(capsys, cache_dir, "verify")
    assert code == 0 and "no cache file yet" in out
    assert not cache_dir.exists()


def test_verify_random_bytes_names_the_file_and_the_fix(capsys, cache_dir):
    cache_dir.mkdir()
    path = cache_dir / CACHE_FILE_NAME
    path.write_bytes(os.urandom(1 << 14))
    code, out, err = run_cli(capsys, cache_dir, "verify")
    assert code == 1
    assert "integrity check: failed (file is not a database)" in out
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert str(path) in err and "clear` to start afresh" in err


def test_verify_counts_an_entry_whose_result_does_not_parse(capsys, cache_dir, placement):
    path = cache_dir / CACHE_FILE_NAME
    fill(path, placement, analytical=[0.1, 0.1, 0.1])
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("""UPDATE entries SET result_json = '{"exposed_seconds": 1.0}' WHERE key = 'a1'""")
    conn.close()
    code, out, err = run_cli(capsys, cache_dir, "verify")
    assert code == 1
    assert "integrity check: ok" in out and "entries: 3" in out and "unreadable entries: 1" in out
    assert len(err.strip().splitlines()) == 1
    assert "1 of 3 entries" in err and "entry a1" in err and "'collective_seconds'" in err
    assert "clear --unreadable" in err
    # The fix it names works, and keeps the readable entries.
    code, out, _ = run_cli(capsys, cache_dir, "clear", "--unreadable")
    assert code == 0 and "cleared 1 entries" in out
    assert keys(path) == ["a0", "a2"]
    assert run_cli(capsys, cache_dir, "verify")[0] == 0


def test_verify_and_export_a_cache_written_by_cached(capsys, cache_dir, placement):
    """Entries as Cached writes them (a step graph, a single collective) verify clean and export with
    the shape and tier of the GPUs asked about."""
    from artist.network.analytical import AnalyticalModel
    from artist.network.cache import Cached
    from artist.perf.model import as_perf_model
    from artist.workload import ModelProfile

    cached = Cached(AnalyticalModel(placement.topology), LatencyStore(cache_dir / CACHE_FILE_NAME))
    as_perf_model(cached, placement.topology).estimate(ModelProfile("m", (30_000_000,), 0.1, "A100"), placement)
    cached.collective_seconds(placement, 1 << 20)
    cached.close()
    code, out, err = run_cli(capsys, cache_dir, "verify")
    assert code == 0 and err == "" and "entries: 2 (analytical 2)" in out and "unreadable entries: 0" in out
    code, out, _ = run_cli(capsys, cache_dir, "export", "--csv")
    rows = sorted(csv.DictReader(io.StringIO(out)), key=lambda r: r["model_name"])
    assert code == 0
    assert [(r["model_name"], r["shape"], r["tier"], r["gpus"]) for r in rows] == \
           [("all_reduce 1048576 B", "[[8]]", "machine", "8"), ("step", "[[8]]", "machine", "8")]


WAVE_1_RESULT = ('{"backend":"ns3","bucket_seconds":[0.5],"calibrated":false,"collective_seconds":1.0,'
                 '"details":{},"exposed_seconds":0.5,"packets":0}')


def test_entries_of_the_per_bucket_format_are_named_and_cleared(capsys, cache_dir, placement):
    """An entry stored before step graphs (bucket_seconds, no node_seconds) is never served (its key is of
    another KEY_VERSION); verify names it and `clear --unreadable` drops it, keeping the others."""
    path = cache_dir / CACHE_FILE_NAME
    fill(path, placement, ns3=[3.0], analytical=[0.1])
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE entries SET result_json = ? WHERE key = 'n0'", (WAVE_1_RESULT,))
    conn.close()
    code, out, err = run_cli(capsys, cache_dir, "verify")
    assert code == 1 and "unreadable entries: 1" in out
    assert "entry n0" in err and "lacks field 'node_seconds'" in err and "clear --unreadable" in err
    code, out, _ = run_cli(capsys, cache_dir, "clear", "--unreadable")  # an unreadable ns-3 entry needs no --yes
    assert code == 0 and "cleared 1 entries" in out and keys(path) == ["a0"]


# --------------------------------------------------------------------------- clear on a damaged file


def test_clear_removes_a_file_of_random_bytes_and_its_side_files(capsys, cache_dir):
    cache_dir.mkdir()
    path = cache_dir / CACHE_FILE_NAME
    path.write_bytes(os.urandom(1 << 14))
    (cache_dir / "unrelated.txt").write_text("keep me")

    code, out, err = run_cli(capsys, cache_dir, "stats")  # every other command: one line, exit 2
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert str(path) in err and "cache verify`" in err and "cache clear`" in err

    for suffix in ("-wal", "-shm"):  # as a crashed writer leaves them (SQLite itself drops them on a clean close)
        Path(f"{path}{suffix}").write_bytes(os.urandom(100))
    code, out, err = run_cli(capsys, cache_dir, "clear")
    assert code == 0, err
    assert "removed latency-cache.sqlite, latency-cache.sqlite-wal, latency-cache.sqlite-shm" in out
    assert sorted(p.name for p in cache_dir.iterdir()) == ["unrelated.txt"]
    code, out, _ = run_cli(capsys, cache_dir, "stats")  # a fresh cache from here on
    assert code == 0 and "entries: 0" in out


def test_clear_of_a_damaged_file_refuses_filters(capsys, cache_dir):
    cache_dir.mkdir()
    path = cache_dir / CACHE_FILE_NAME
    path.write_text("a text file, not a cache\n" * 50)
    code, _, err = run_cli(capsys, cache_dir, "clear", "--backend", "analytical")
    assert code == 2 and "cannot select entries" in err and len(err.strip().splitlines()) == 1
    assert path.read_text().startswith("a text file")  # untouched


def test_clear_of_another_schema_keeps_its_ns3_results_without_yes(capsys, cache_dir, placement):
    path = cache_dir / CACHE_FILE_NAME
    fill(path, placement, ns3=[30.0, 12.5], analytical=[0.1])
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE meta SET value = '2' WHERE name = 'schema_version'")
    conn.close()
    code, _, err = run_cli(capsys, cache_dir, "clear")
    assert code == 1 and "2 ns-3 results (42.5 simulated wall seconds)" in err and "--yes" in err
    assert path.exists()
    code, out, _ = run_cli(capsys, cache_dir, "clear", "--yes")
    assert code == 0 and "schema 2" in out and not path.exists()


# --------------------------------------------------------------------------- clear filters


def test_clear_everything_needs_yes_when_it_holds_ns3_results(capsys, cache_dir, placement):
    path = cache_dir / CACHE_FILE_NAME
    fill(path, placement, ns3=[10.0, 5.5], analytical=[0.1])
    code, out, err = run_cli(capsys, cache_dir, "clear")
    assert code == 1 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "would delete 2 ns-3 results (15.5 simulated wall seconds)" in err and "add --yes" in err
    assert keys(path) == ["a0", "n0", "n1"]  # nothing deleted
    code, out, _ = run_cli(capsys, cache_dir, "clear", "--yes")
    assert code == 0 and "cleared 3 entries" in out and keys(path) == []


def test_clear_by_backend(capsys, cache_dir, placement):
    path = cache_dir / CACHE_FILE_NAME
    fill(path, placement, ns3=[1.0], analytical=[0.1, 0.2])
    code, out, _ = run_cli(capsys, cache_dir, "clear", "--backend", "analytical")  # no --yes needed
    assert code == 0 and "cleared 2 entries (backend analytical)" in out
    assert keys(path) == ["n0"]
    assert run_cli(capsys, cache_dir, "clear", "--backend", "ns3")[0] == 1
    assert keys(path) == ["n0"]
    assert run_cli(capsys, cache_dir, "clear", "--backend", "ns3", "--yes")[0] == 0
    assert keys(path) == []


def test_a_filtered_clear_keeps_the_counters(capsys, cache_dir, placement):
    path = cache_dir / CACHE_FILE_NAME
    fill(path, placement, ns3=[1.0], analytical=[0.1, 0.2])
    assert run_cli(capsys, cache_dir, "clear", "--backend", "analytical")[0] == 0
    assert LatencyStore(path).counters()["misses"] == 3
    assert run_cli(capsys, cache_dir, "clear", "--yes")[0] == 0
    assert LatencyStore(path).counters()["misses"] == 0


def test_clear_older_than_counts_undated_entries_as_oldest(capsys, cache_dir, placement):
    path = cache_dir / CACHE_FILE_NAME
    fill(path, placement, ns3=[1.0, 1.0], analytical=[0.1] * 5)
    now = datetime.now(timezone.utc)
    ages = {"a0": timedelta(days=10), "a1": timedelta(hours=25), "a2": timedelta(hours=23),
            "n0": timedelta(days=30), "n1": timedelta(minutes=1)}
    conn = sqlite3.connect(path)
    with conn:
        for key, age in ages.items():
            conn.execute("UPDATE entries SET created_at = ? WHERE key = ?", ((now - age).strftime(ISO), key))
        conn.execute("UPDATE entries SET created_at = '' WHERE key = 'a3'")  # no time recorded
        conn.execute("UPDATE entries SET created_at = 'unknown' WHERE key = 'a4'")
    conn.close()

    code, out, _ = run_cli(capsys, cache_dir, "clear", "--backend", "analytical", "--older-than", "1d")
    assert code == 0 and "cleared 4 entries (backend analytical, created more than 1d ago)" in out
    assert keys(path) == ["a2", "n0", "n1"]

    code, _, err = run_cli(capsys, cache_dir, "clear", "--older-than", "7d")  # n0 is 30 days old
    assert code == 1 and "would delete 1 ns-3 results (1.0 simulated wall seconds)" in err
    assert run_cli(capsys, cache_dir, "clear", "--older-than", "7d", "--yes")[0] == 0
    assert keys(path) == ["a2", "n1"]
    assert run_cli(capsys, cache_dir, "clear", "--older-than", "90s")[0] == 0  # a2 only; n1 is a minute old
    assert keys(path) == ["n1"]


@pytest.mark.parametrize("text,seconds", [("90s", 90), ("30m", 1800), ("12h", 43200), ("7d", 604800),
                                          ("2w", 1209600), ("1.5h", 5400)])
def test_durations(text, seconds):
    assert duration(text) == seconds


@pytest.mark.parametrize("text", ["7", "7x", "-1d", "", "d", "1e3s", "36501d"])
def test_a_bad_duration_is_one_line_naming_older_than(capsys, cache_dir, text):
    with pytest.raises(argparse.ArgumentTypeError):
        duration(text)
    assert main(["cache", "--cache-dir", str(cache_dir), "clear", "--older-than", text]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--older-than" in err
    assert not cache_dir.exists()


# --------------------------------------------------------------------------- pipes


def _shell(cache_dir: Path, command: str, tmp_path: Path):
    """`artist <command> | head -1` in a real shell; (artist's exit code, first line, artist's stderr)."""
    err = tmp_path / "stderr.txt"
    artist = f"{shlex.quote(sys.executable)} -m artist.cli"
    script = f"{artist} {command} 2>{shlex.quote(str(err))} | head -1; exit ${{PIPESTATUS[0]}}"
    env = {**os.environ, "ARTIST_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(REPO)}
    proc = subprocess.run(["bash", "-c", script], cwd=REPO, capture_output=True, text=True, env=env, timeout=120)
    return proc.returncode, proc.stdout, err.read_text()


def test_export_csv_into_head_stops_quietly(tmp_path, cache_dir, placement):
    fill(cache_dir / CACHE_FILE_NAME, placement, analytical=[0.1] * 1500)  # ~600 kB of CSV: past any pipe buffer
    code, first, err = _shell(cache_dir, "cache export --csv", tmp_path)
    assert first.startswith("key,backend,")
    assert err == ""  # no traceback, no "Exception ignored"
    assert code == 141  # the reader left while we were writing


def test_stats_and_verify_into_a_reader_that_left_stop_quietly(tmp_path, cache_dir, placement):
    fill(cache_dir / CACHE_FILE_NAME, placement, analytical=[0.1] * 3)
    for command in ("cache stats", "cache verify"):
        code, first, err = _shell(cache_dir, command, tmp_path)
        assert first.startswith("cache: ") and err == "" and code in (0, 141), (command, err)
    # A reader that exits before reading anything: every write fails.
    env = {**os.environ, "ARTIST_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(REPO)}
    for command in ("cache stats", "cache verify", "cache export --csv"):
        script = f"{shlex.quote(sys.executable)} -m artist.cli {command} | true; exit ${{PIPESTATUS[0]}}"
        proc = subprocess.run(["bash", "-c", script], cwd=REPO, capture_output=True, text=True, env=env, timeout=120)
        assert proc.stderr == "" and proc.returncode in (0, 141), (command, proc.stderr)
