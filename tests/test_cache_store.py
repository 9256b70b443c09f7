"""Cached(inner, store) in one process: hits, misses, provenance, counters, claims, errors, the CLI."""

import csv
import io
import os
import pickle
import re
import socket
import sqlite3
import subprocess
import sys
import time
from contextlib import redirect_stdout
from datetime import datetime, timezone
from pathlib import Path

import pytest

from artist.errors import InputError
from artist.network.analytical import AnalyticalModel
from artist.network.base import CommResult
from artist.network.cache import (CACHE_FILE_NAME, CacheUnusable, Cached, Claim, LatencyStore, UnreadableEntry, WAIT,
                                  check_cache_usable, created_before, default_cache_path, inspect_cache,
                                  result_from_json, result_to_json)
from artist.network.cache.store import _process_start
from artist.placement import placement_from_shape
from artist.topology import load_topology
from artist.workload import ModelProfile

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def topo():
    return load_topology(REPO / "topologies" / "dally-3tier.yaml")


@pytest.fixture
def store_path(tmp_path):
    return tmp_path / "cache" / CACHE_FILE_NAME


MODEL = ModelProfile("m", (30_000_000, 10_000_000), 0.1, "A100")


class CountingInner:
    """Fake backend: counts calls; answer = 1 ms per GPU plus a bucket time, packets = 100 per GPU."""

    name = "counting"

    def __init__(self, fail=False):
        self.calls = []
        self.fail = fail

    def identity(self):
        return {"backend": self.name, "version": "7", "ns3_version": "3.44"}

    def iteration_comm_time(self, model, placement):
        self.calls.append((model.name, placement.canonical_shape))
        if self.fail:
            raise RuntimeError("simulation crashed")
        n = placement.size
        return CommResult(exposed_seconds=1e-3 * n, collective_seconds=2e-3 * n, backend=self.name,
                          bucket_seconds=(1e-3 * n, 1e-3 * n), packets=100 * n, details={"note": "fake", "n": n})


def test_miss_then_hit_returns_the_same_answer_flagged_as_hit(topo, store_path):
    inner = CountingInner()
    cached = Cached(inner, LatencyStore(store_path))
    p = placement_from_shape(topo, [[4], [4]])
    first = cached.iteration_comm_time(MODEL, p)
    second = cached.iteration_comm_time(MODEL, p)
    assert len(inner.calls) == 1
    assert (first.cache_hit, second.cache_hit) == (False, True)
    expected = inner.iteration_comm_time(MODEL, p)
    for r in (first, second):
        assert (r.exposed_seconds, r.collective_seconds, r.bucket_seconds, r.backend) == \
               (8e-3, 16e-3, (8e-3, 8e-3), "counting")
    assert first.packets == expected.packets == 800
    assert second.packets == 0  # nothing simulated for a hit
    assert second.details["note"] == "fake" and second.details["cache"]["simulated_packets"] == 800


def test_answers_persist_across_instances_and_survive_exact_float_round_trip(topo, store_path):
    analytical = AnalyticalModel(topo)
    shapes = ([[8]], [[1] * 8], [[4, 4], [2]])
    direct = [analytical.iteration_comm_time(MODEL, placement_from_shape(topo, s)) for s in shapes]
    first = Cached(AnalyticalModel(topo), LatencyStore(store_path))
    for s in shapes:
        first.iteration_comm_time(MODEL, placement_from_shape(topo, s))
    first.close()
    inner = CountingInner()  # a backend that would answer differently: proves the answer comes from the file
    inner.identity = analytical.identity
    again = Cached(inner, LatencyStore(store_path))
    for s, want in zip(shapes, direct):
        got = again.iteration_comm_time(MODEL, placement_from_shape(topo, s))
        assert got.cache_hit
        assert got.exposed_seconds == want.exposed_seconds  # bit-exact
        assert got.bucket_seconds == want.bucket_seconds
    assert inner.calls == []


def test_row_holds_provenance_and_is_queryable_with_plain_sqlite(topo, store_path):
    cached = Cached(CountingInner(), LatencyStore(store_path))
    cached.iteration_comm_time(MODEL, placement_from_shape(topo, [[8, 8]]))
    cached.close()
    conn = sqlite3.connect(store_path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    row = conn.execute("SELECT backend, backend_version, ns3_version, model_name, shape, gpus, tier, exposed_seconds, "
                       "wall_seconds, created_at FROM entries").fetchone()
    backend, version, ns3, name, shape, gpus, tier, exposed, wall, created = row
    assert (backend, version, ns3, name, shape, gpus, tier) == ("counting", "7", "3.44", "m", "[[8,8]]", 16, "rack")
    assert exposed == pytest.approx(16e-3)
    assert wall >= 0 and created.endswith("Z") and created[:2] == "20"
    assert conn.execute("SELECT COUNT(*) FROM inflight").fetchone()[0] == 0


def test_counters_count_hits_misses_and_saved_seconds_persistently(topo, store_path):
    cached = Cached(CountingInner(), LatencyStore(store_path))
    shapes = ([[8]], [[4, 4]], [[2], [2]])
    for _ in range(3):
        for s in shapes:
            cached.iteration_comm_time(MODEL, placement_from_shape(topo, s))
    cached.close()
    stats = LatencyStore(store_path).stats()
    assert (stats["entries"], stats["misses"], stats["hits"]) == (3, 3, 6)
    assert stats["hit_rate"] == pytest.approx(6 / 9)
    walls = [r[0] for r in sqlite3.connect(store_path).execute("SELECT wall_seconds FROM entries")]
    assert stats["simulated_wall_seconds"] == pytest.approx(sum(walls))
    assert stats["saved_wall_seconds"] == pytest.approx(2 * sum(walls))  # every entry hit twice
    assert (cached.session.hits, cached.session.misses) == (6, 3)


def test_sqlite_hit_without_memo_is_counted_too(topo, store_path):
    Cached(CountingInner(), LatencyStore(store_path)).iteration_comm_time(MODEL, placement_from_shape(topo, [[8]]))
    cold = Cached(CountingInner(), LatencyStore(store_path), memo=False)
    for _ in range(4):
        assert cold.iteration_comm_time(MODEL, placement_from_shape(topo, [[8]])).cache_hit
    assert cold.inner.calls == []
    cold.flush()  # hits are buffered in memory and written every few seconds, on flush, close and exit
    assert LatencyStore(store_path).counters()["hits"] == 4


def test_failed_simulation_releases_its_claim_and_stores_nothing(topo, store_path):
    store = LatencyStore(store_path)
    with pytest.raises(RuntimeError, match="crashed"):
        Cached(CountingInner(fail=True), store).iteration_comm_time(MODEL, placement_from_shape(topo, [[8]]))
    conn = sqlite3.connect(store_path)
    assert conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM inflight").fetchone()[0] == 0
    ok = CountingInner()
    assert not Cached(ok, store).iteration_comm_time(MODEL, placement_from_shape(topo, [[8]])).cache_hit
    assert len(ok.calls) == 1


def test_claims_of_a_live_owner_are_respected_and_of_a_dead_one_taken_over(store_path):
    store = LatencyStore(store_path)
    mine = store.get_or_claim("k1")
    assert isinstance(mine, Claim)
    assert store.get_or_claim("k1") == WAIT  # this process is alive: wait for it
    # A claim left by a process that has exited.
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    dead_pid = int(dead.stdout)
    conn = sqlite3.connect(store_path)
    with conn:
        conn.execute("INSERT INTO inflight VALUES ('k2', 'tok', ?, ?, '', ?)",
                     (socket.gethostname(), dead_pid, time.time()))
    assert isinstance(store.get_or_claim("k2"), Claim)
    # A claim from another host cannot be checked: it is respected until the TTL runs out.
    with conn:
        conn.execute("INSERT INTO inflight VALUES ('k3', 'tok', 'elsewhere', 1, '', ?)", (time.time(),))
        conn.execute("INSERT INTO inflight VALUES ('k4', 'tok', 'elsewhere', 1, '', ?)", (time.time() - 7200,))
    assert store.get_or_claim("k3") == WAIT
    assert isinstance(store.get_or_claim("k4"), Claim)  # older than the 1 h default TTL


def test_a_reused_pid_does_not_keep_a_claim_alive(store_path):
    """Same pid, different process start time: the owner is gone."""
    store = LatencyStore(store_path)
    store.stats()  # creates the file
    conn = sqlite3.connect(store_path)
    with conn:
        conn.execute("INSERT INTO inflight VALUES ('k', 'tok', ?, ?, ?, ?)",
                     (socket.gethostname(), os.getpid(), _process_start(os.getpid()), time.time()))
        conn.execute("INSERT INTO inflight VALUES ('k-reused', 'tok', ?, ?, '1', ?)",
                     (socket.gethostname(), os.getpid(), time.time()))
    assert _process_start(os.getpid()) not in ("", "1")
    assert store.get_or_claim("k") == WAIT  # this very process, right start time: alive
    assert isinstance(store.get_or_claim("k-reused"), Claim)


def test_store_pickles_to_workers_and_reopens(topo, store_path):
    cached = Cached(CountingInner(), LatencyStore(store_path))
    cached.iteration_comm_time(MODEL, placement_from_shape(topo, [[8]]))
    clone = pickle.loads(pickle.dumps(cached.store))
    assert clone.path == store_path
    assert clone.stats()["entries"] == 1


def test_default_location_follows_artist_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("ARTIST_CACHE_DIR", str(tmp_path / "here"))
    assert default_cache_path() == tmp_path / "here" / CACHE_FILE_NAME
    monkeypatch.delenv("ARTIST_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_path() == tmp_path / "xdg" / "artist" / CACHE_FILE_NAME


def test_another_schema_version_is_refused_by_name(store_path):
    LatencyStore(store_path).stats()
    conn = sqlite3.connect(store_path)
    with conn:
        conn.execute("UPDATE meta SET value = '999' WHERE name = 'schema_version'")
    with pytest.raises(InputError, match="schema 999"):
        LatencyStore(store_path).stats()


# --------------------------------------------------------------------------- CLI


def _cli(argv):
    from artist.cli import main

    out = io.StringIO()
    with redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue()


def test_cli_stats_export_clear(topo, store_path, tmp_path):
    cached = Cached(CountingInner(), LatencyStore(store_path))
    for s in ([[8]], [[4], [4]]):
        cached.iteration_comm_time(MODEL, placement_from_shape(topo, s))
    cached.iteration_comm_time(MODEL, placement_from_shape(topo, [[8]]))
    cached.close()
    d = str(store_path.parent)

    code, out = _cli(["cache", "--cache-dir", d, "stats"])
    assert code == 0
    assert "entries: 2 (counting 2)" in out and "hits: 1" in out and "misses: 2" in out

    code, out = _cli(["cache", "--cache-dir", d, "export", "--csv"])
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and [r["shape"] for r in sorted(rows, key=lambda r: r["gpus"])] == ["[[8]]", "[[4],[4]]"]
    assert {r["tier"] for r in rows} == {"machine", "network"}
    assert [r["key"] for r in rows] == sorted(r["key"] for r in rows)  # stable order

    target = tmp_path / "export.csv"
    assert _cli(["cache", "--cache-dir", d, "export", "--csv", str(target)])[0] == 0
    assert len(list(csv.DictReader(target.open()))) == 2

    code, out = _cli(["cache", "--cache-dir", d, "clear"])
    assert code == 0 and "cleared 2 entries" in out
    stats = LatencyStore(store_path).stats()
    assert (stats["entries"], stats["hits"], stats["misses"]) == (0, 0, 0)


def test_cli_cache_uses_artist_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("ARTIST_CACHE_DIR", str(tmp_path / "env-cache"))
    code, out = _cli(["cache", "stats"])
    assert code == 0 and str(tmp_path / "env-cache" / CACHE_FILE_NAME) in out


def test_in_process_shortcut_never_serves_a_stale_key(topo, store_path):
    """The memo maps (model, topology, shape, GPU speeds, identity) to keys; topologies that compare
    equal but differ in GPU speeds, or a backend whose settings change, must still get new keys."""
    import dataclasses

    from artist.topology import GpuType

    cached = Cached(AnalyticalModel(topo), LatencyStore(store_path))
    model = dataclasses.replace(MODEL, compute_seconds=0.002)  # short compute: the speed shows in the answer
    slow = dataclasses.replace(topo, gpu_types={"A100": GpuType("A100", 1.0)})
    fast = dataclasses.replace(topo, gpu_types={"A100": GpuType("A100", 4.0)})
    assert slow == fast  # gpu_types is not part of Topology equality
    a = cached.iteration_comm_time(model, placement_from_shape(slow, [[8, 8]]))
    b = cached.iteration_comm_time(model, placement_from_shape(fast, [[8, 8]]))
    assert not a.cache_hit and not b.cache_hit
    alone = AnalyticalModel(fast).iteration_comm_time(model, placement_from_shape(fast, [[8, 8]]))
    assert b.exposed_seconds == alone.exposed_seconds
    assert a.exposed_seconds != b.exposed_seconds

    # A backend whose settings change after creation gets new keys (its identity is read every time).
    inner = CountingInner()
    versioned = Cached(inner, LatencyStore(store_path))
    p = placement_from_shape(slow, [[8, 8]])
    versioned.iteration_comm_time(model, p)
    inner.identity = lambda: {"backend": "counting", "version": "8"}
    assert not versioned.iteration_comm_time(model, p).cache_hit
    assert len(inner.calls) == 2


def test_single_collectives_are_cached_apart_from_iterations(topo, store_path):
    class CountingAnalytical(AnalyticalModel):
        calls = 0

        def collective_seconds(self, placement, nbytes):
            CountingAnalytical.calls += 1
            return super().collective_seconds(placement, nbytes)

    p = placement_from_shape(topo, [[8], [8]])
    cached = Cached(CountingAnalytical(topo), LatencyStore(store_path))
    want = AnalyticalModel(topo).collective_seconds(p, 8_000_000)
    assert cached.collective_seconds(p, 8_000_000) == want
    calls = CountingAnalytical.calls
    again = Cached(CountingAnalytical(topo), LatencyStore(store_path), memo=False)
    assert again.collective_seconds(p, 8_000_000) == want  # from the file
    assert CountingAnalytical.calls == calls and again.session.hits == 1
    assert again.collective_seconds(p, 8_000_001) == AnalyticalModel(topo).collective_seconds(p, 8_000_001)
    # An iteration of a one-bucket model of the same bytes is another question, with its own entry.
    one_bucket = ModelProfile("one", (8_000_000,), 0.1, "A100")
    assert not cached.iteration_comm_time(one_bucket, p).cache_hit
    names = sorted(r["model_name"] for r in LatencyStore(store_path).export_rows())
    assert names == ["allreduce 8000000 B", "allreduce 8000001 B", "one"]


def test_calibrated_over_cached_answers_collectives(store_path):
    from artist.calibration.profile import load_profile
    from artist.network.calibrated import Calibrated

    h100 = load_topology(REPO / "topologies" / "h100-dgx.yaml")
    profile = load_profile(REPO / "calibration" / "profiles" / "h100-analytical.yaml")
    p = placement_from_shape(h100, [[8], [8]])
    through_cache = Calibrated(Cached(AnalyticalModel(h100, channels=8), LatencyStore(store_path)), profile)
    direct = Calibrated(AnalyticalModel(h100, channels=8), profile)
    assert through_cache.collective_seconds(p, 1 << 26) == direct.collective_seconds(p, 1 << 26)


def test_a_forked_child_does_not_write_its_parents_unwritten_hits_again(topo, store_path):
    import multiprocessing

    cached = Cached(CountingInner(), LatencyStore(store_path))
    p = placement_from_shape(topo, [[8]])
    cached.iteration_comm_time(MODEL, p)  # miss, written
    for _ in range(3):
        cached.iteration_comm_time(MODEL, p)  # 3 hits, pending in memory

    def child():
        cached.iteration_comm_time(MODEL, p)  # 1 hit of its own
        cached.flush()

    proc = multiprocessing.get_context("fork").Process(target=child)
    proc.start()
    proc.join(60)
    assert proc.exitcode == 0
    cached.flush()
    assert LatencyStore(store_path).counters()["hits"] == 4


# --------------------------------------------------------------------------- damage


def _fill(store_path, topo, n, backend="counting"):
    """n entries of about 1 kB each, written as Cached writes them; the store is closed after."""
    store = LatencyStore(store_path)
    p = placement_from_shape(topo, [[8]])
    for i in range(n):
        result = CommResult(exposed_seconds=0.5, collective_seconds=1.0, backend=backend,
                            bucket_seconds=(0.25,) * 4, details={"pad": "x" * 900})
        store.put(store.get_or_claim(f"k{i:04d}"), {"backend": {"version": "1"}, "model": f"m{i}"}, f"m{i}", p,
                  result, 2.0)
    store.close()
    return store_path


def _damage_middle_pages(path):
    """Overwrite the middle fifth of the file (whole pages, far from the header and the schema page)."""
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    pages = len(data) // page
    assert pages >= 50, pages  # enough pages that the middle holds only entry data
    for n in range(2 * pages // 5, 3 * pages // 5):
        data[n * page:(n + 1) * page] = b"\xff" * page
    path.write_bytes(bytes(data))


def _assert_names_file_and_recovery(exc_info, path):
    text = str(exc_info.value)
    assert text.startswith(f"{path}:")
    # `artist cache verify`, with --cache-dir when the file is not the default one
    assert re.search(r"`artist cache (--cache-dir \S+ )?verify` to see", text), text
    assert re.search(r"`artist cache (--cache-dir \S+ )?clear` to start afresh", text), text
    assert "\n" not in text


@pytest.mark.parametrize("content", [b"not sqlite at all\n" * 100, None, b""], ids=["text", "random", "empty-ok"])
def test_opening_a_file_that_is_not_a_cache_names_it_and_the_recovery(tmp_path, content):
    path = tmp_path / CACHE_FILE_NAME
    path.write_bytes(os.urandom(8192) if content is None else content)
    if content == b"":  # SQLite reads an empty file as an empty database: a usable new cache
        assert LatencyStore(path).stats()["entries"] == 0
        return
    for operation in (lambda s: s.stats(), lambda s: s.get("k"), lambda s: s.export_rows(),
                      lambda s: s.clear(allow_ns3=True), lambda s: s.get_or_claim("k")):
        with pytest.raises(CacheUnusable) as exc_info:
            operation(LatencyStore(path))
        _assert_names_file_and_recovery(exc_info, path)


def test_damage_met_after_opening_is_the_same_error(topo, store_path):
    _damage_middle_pages(_fill(store_path, topo, 400))
    store = LatencyStore(store_path)
    store._conn()  # the header and schema pages are intact: opening succeeds
    for operation in (store.export_rows, store.stats, lambda: store.clear(allow_ns3=True)):
        with pytest.raises(CacheUnusable) as exc_info:
            operation()
        _assert_names_file_and_recovery(exc_info, store_path)
        assert "malformed" in str(exc_info.value)
    with pytest.raises(CacheUnusable):
        check_cache_usable(store_path)
    report = inspect_cache(store_path)  # what `artist cache verify` prints
    assert not report.ok and report.whole_file and "clear` to start afresh" in report.fix


def test_a_truncated_cache_is_the_same_error(topo, store_path):
    _fill(store_path, topo, 200)
    with open(store_path, "r+b") as fh:
        fh.truncate(store_path.stat().st_size // 2)
    with pytest.raises(CacheUnusable) as exc_info:
        LatencyStore(store_path).export_rows()
    _assert_names_file_and_recovery(exc_info, store_path)
    with pytest.raises(CacheUnusable):
        check_cache_usable(store_path)


def test_the_recovery_commands_name_a_non_default_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("ARTIST_CACHE_DIR", str(tmp_path / "default"))
    path = tmp_path / "my cache" / CACHE_FILE_NAME
    path.parent.mkdir()
    path.write_bytes(b"garbage" * 1000)
    with pytest.raises(CacheUnusable, match=r"`artist cache --cache-dir '.*my cache' clear`"):
        LatencyStore(path).stats()


def test_a_table_lacking_columns_is_refused_by_name(store_path):
    store_path.parent.mkdir(parents=True)
    conn = sqlite3.connect(store_path)
    conn.execute("CREATE TABLE entries (key TEXT PRIMARY KEY, value TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(CacheUnusable, match="table entries: lacks column 'backend'"):
        LatencyStore(store_path).stats()


def test_an_unreadable_entry_is_named_not_a_key_error(topo, store_path):
    _fill(store_path, topo, 3)
    conn = sqlite3.connect(store_path)
    with conn:
        conn.execute("""UPDATE entries SET result_json = '{"exposed_seconds": 1.0}' WHERE key = 'k0001'""")
    conn.close()
    store = LatencyStore(store_path)
    assert store.get("k0000").result.exposed_seconds == 0.5  # the others still serve
    for ask in (store.get, store.get_or_claim):
        with pytest.raises(UnreadableEntry, match=r"entry k0001: cannot be read back \(result_json lacks field "
                                                  r"'collective_seconds'\).*clear --unreadable"):
            ask("k0001")
    with pytest.raises(UnreadableEntry, match="1 of 3 entries"):
        check_cache_usable(store_path)
    outcome = store.clear(unreadable=True)
    assert (outcome.entries, outcome.deleted) == (1, True)
    check_cache_usable(store_path)  # fine again
    assert store.get("k0001") is None  # a miss now: simulated again when next asked


@pytest.mark.parametrize("text,why", [
    ("not json", "not JSON"),
    ("[1, 2]", "not a JSON object"),
    ('{"exposed_seconds": 1}', "lacks field 'collective_seconds'"),
    ('{"exposed_seconds": "1", "collective_seconds": 1, "backend": "b", "calibrated": false, "bucket_seconds": [],'
     ' "packets": 0, "details": {}}', "'exposed_seconds' is not a finite number"),
    ('{"exposed_seconds": NaN, "collective_seconds": 1, "backend": "b", "calibrated": false, "bucket_seconds": [],'
     ' "packets": 0, "details": {}}', "'exposed_seconds' is not a finite number"),
    ('{"exposed_seconds": 1, "collective_seconds": 1, "backend": "b", "calibrated": false, "bucket_seconds": [1, "x"],'
     ' "packets": 0, "details": {}}', "'bucket_seconds' is not a list of finite numbers"),
    ('{"exposed_seconds": 1, "collective_seconds": 1, "backend": "b", "calibrated": 0, "bucket_seconds": [],'
     ' "packets": 0, "details": {}}', "'calibrated' is not true or false"),
])
def test_result_from_json_says_what_is_wrong(text, why):
    with pytest.raises(ValueError, match=re.escape(why)):
        result_from_json(text)


def test_result_round_trips_through_json():
    r = CommResult(exposed_seconds=0.1, collective_seconds=0.3, backend="b", calibrated=True,
                   bucket_seconds=(0.1, 0.2), packets=7, details={"a": [1]})
    assert result_from_json(result_to_json(r)) == r


def test_check_cache_usable_creates_a_missing_cache_and_passes_a_healthy_one(topo, store_path):
    assert check_cache_usable(store_path) is None
    assert store_path.exists() and LatencyStore(store_path).stats()["entries"] == 0
    _fill(store_path, topo, 5)
    assert check_cache_usable(store_path) is None


def test_check_cache_usable_refuses_random_bytes_and_another_schema(store_path):
    store_path.parent.mkdir(parents=True)
    store_path.write_bytes(os.urandom(4096))
    with pytest.raises(CacheUnusable) as exc_info:
        check_cache_usable(store_path)
    _assert_names_file_and_recovery(exc_info, store_path)
    store_path.unlink()
    LatencyStore(store_path).stats()
    conn = sqlite3.connect(store_path)
    with conn:
        conn.execute("UPDATE meta SET value = '0' WHERE name = 'schema_version'")
    conn.close()
    with pytest.raises(CacheUnusable, match="schema 0"):
        check_cache_usable(store_path)


def test_check_cache_usable_defaults_to_the_default_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("ARTIST_CACHE_DIR", str(tmp_path / "env"))
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / CACHE_FILE_NAME).write_text("x" * 5000)
    with pytest.raises(CacheUnusable, match=re.escape(str(tmp_path / "env" / CACHE_FILE_NAME))):
        check_cache_usable()


def test_clear_holds_back_ns3_results_unless_allowed(topo, store_path):
    _fill(store_path, topo, 2, backend="ns3")
    store = LatencyStore(store_path)
    outcome = store.clear()
    assert (outcome.entries, outcome.ns3_entries, outcome.ns3_wall_seconds, outcome.deleted) == (2, 2, 4.0, False)
    assert store.stats()["entries"] == 2
    assert store.clear(backend="analytical").deleted  # selects nothing of ns-3
    assert store.stats()["entries"] == 2
    assert store.clear(allow_ns3=True).deleted and store.stats()["entries"] == 0


def test_created_before_orders_like_created_at():
    now = datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc)
    assert created_before(3600, now) == "2024-05-01T11:00:00.000000Z"
    assert created_before(0, now) < "2024-05-01T12:00:00.000001Z"
    assert created_before(1e15, now) == "0001-01-01T00:00:00.000000Z"  # past year 1: nothing dated is older
