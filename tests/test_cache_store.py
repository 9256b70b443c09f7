"""Cached(inner, store) in one process: hits, misses, provenance, counters, claims, errors, the CLI."""

import csv
import io
import os
import pickle
import socket
import sqlite3
import subprocess
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from artist.errors import InputError
from artist.network.analytical import AnalyticalModel
from artist.network.base import CommResult
from artist.network.cache import (CACHE_FILE_NAME, Cached, Claim, LatencyStore, WAIT, _process_start,
                                  default_cache_path)
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
        conn.execute("INSERT INTO inflight VALUES ('k2', 'tok', ?, ?, '', ?)", (socket.gethostname(), dead_pid, time.time()))
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


def test_a_file_that_is_not_a_cache_is_a_clear_error(tmp_path):
    bad = tmp_path / CACHE_FILE_NAME
    bad.write_text("not sqlite at all " * 100)
    with pytest.raises(InputError, match=str(bad)):
        LatencyStore(bad).stats()


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
    assert b.exposed_seconds == AnalyticalModel(fast).iteration_comm_time(model, placement_from_shape(fast, [[8, 8]])).exposed_seconds
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
    from artist.calibration.profile import Calibrated, load_profile

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
