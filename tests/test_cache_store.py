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
from artist.network.base import CommResult, time_node_by_node
from artist.network.cache import (CACHE_FILE_NAME, CacheUnusable, Cached, CachedTiming, Claim, LatencyStore,
                                  UnreadableEntry, WAIT, check_cache_usable, created_before, default_cache_path,
                                  inspect_cache, result_from_json, result_to_json)
from artist.network.cache.store import _process_start
from artist.parallel.ddp import ddp_step
from artist.parallel.graph import Node, StepGraph
from artist.perf.compute import ComputeModel
from artist.perf.model import PerfModel
from artist.placement import Placement, placement_from_shape
from artist.topology import load_topology
from artist.workload import ModelProfile

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def topo():
    return load_topology(REPO / "topologies" / "dally-3tier.yaml")


@pytest.fixture
def store_path(tmp_path):
    return tmp_path / "cache" / CACHE_FILE_NAME


MODEL = ModelProfile("m", (30_000_000, 10_000_000), 0.1, "A100")  # two buckets


class CountingInner:
    """Fake backend: counts calls; every communication node takes 1 ms per GPU of its group,
    packets = 100 per GPU of the graph."""

    name = "counting"

    def __init__(self, topology, fail=False):
        self.topology = topology
        self.calls = []
        self.fail = fail

    def identity(self):
        return {"backend": self.name, "version": "7", "ns3_version": "3.44"}

    def time(self, graphs):
        self.calls.append(tuple(sorted((job, Placement(self.topology, g.gpus).canonical_shape)
                                       for job, g in graphs.items())))
        if self.fail:
            raise RuntimeError("simulation crashed")
        out = {}
        for job, graph in graphs.items():
            n = len(graph.gpus)
            out[job] = time_node_by_node(graph, lambda node: 1e-3 * len(node.group),
                                         CommResult(self.name, packets=100 * n, details={"note": "fake", "n": n}))
        return out

    def collective_seconds(self, group, nbytes, kind="all_reduce"):
        self.calls.append((kind, int(nbytes), group.canonical_shape))
        return 1e-3 * group.size


def step_graph(placement, model=MODEL):
    return ddp_step(model, placement, ComputeModel(placement.topology).step_seconds(model, placement))


def estimate(fabric, placement, model=MODEL):
    """What a policy asks: one DDP step alone (a fresh PerfModel, so that its own memo hides nothing)."""
    return PerfModel(fabric, ComputeModel(placement.topology)).estimate(model, placement)


def same_timeline(a, b):
    return (a.node_seconds, a.node_end, a.comm_seconds, a.step_seconds) == \
           (b.node_seconds, b.node_end, b.comm_seconds, b.step_seconds)


def test_miss_then_hit_returns_the_same_answer_flagged_as_hit(topo, store_path):
    inner = CountingInner(topo)
    cached = Cached(inner, LatencyStore(store_path))
    p = placement_from_shape(topo, [[4], [4]])
    graph = step_graph(p)
    first = cached.time({"job": graph})["job"]
    second = cached.time({"job": graph})["job"]
    assert len(inner.calls) == 1
    assert (first.result.cache_hit, second.result.cache_hit) == (False, True)
    expected = inner.time({"job": graph})["job"]  # the backend alone, for comparison
    assert expected.node_seconds[2::2] == (1e-3 * 8, 1e-3 * 8)  # the two buckets' all-reduces
    for r in (first, second):
        assert same_timeline(r, expected) and r.result.backend == "counting"
    assert first.result.packets == expected.result.packets == 800
    assert second.result.packets == 0  # nothing simulated for a hit
    assert second.result.details["note"] == "fake" and second.result.details["cache"]["simulated_packets"] == 800
    # What a policy sees through the performance model: the same step, the second time a hit.
    a, b = estimate(cached, p), estimate(cached, p)
    assert a.comm.cache_hit and b.comm.cache_hit and len(inner.calls) == 2  # no simulation since
    assert (a.step_seconds, a.exposed_comm_seconds, a.comm_seconds) == \
           (b.step_seconds, b.exposed_comm_seconds, b.comm_seconds)
    assert b.comm_seconds == expected.comm_seconds == 2 * (1e-3 * 8)
    assert b.exposed_comm_seconds == pytest.approx(8e-3)  # the last bucket, ready when compute ends


def test_answers_persist_across_instances_and_survive_exact_float_round_trip(topo, store_path, monkeypatch):
    analytical = AnalyticalModel(topo)
    shapes = ([[8]], [[1] * 8], [[4, 4], [2]])
    graphs = [step_graph(placement_from_shape(topo, s)) for s in shapes]
    direct = [analytical.time({"job": g})["job"] for g in graphs]
    direct_estimates = [estimate(analytical, placement_from_shape(topo, s)) for s in shapes]
    first = Cached(AnalyticalModel(topo), LatencyStore(store_path))
    for g in graphs:
        first.time({"job": g})
    first.close()
    inner = CountingInner(topo)  # a backend that would answer differently: proves the answer comes from the file
    inner.identity = analytical.identity
    import artist.network.cache.key as key  # ... posing as the analytical backend's code too (network/code.py)

    digest = key.code_digest(analytical)
    monkeypatch.setattr(key, "code_digest", lambda model: digest)
    again = Cached(inner, LatencyStore(store_path))
    for g, want in zip(graphs, direct):
        got = again.time({"job": g})["job"]
        assert got.result.cache_hit
        assert same_timeline(got, want)  # bit-exact
    for s, want in zip(shapes, direct_estimates):
        got = estimate(again, placement_from_shape(topo, s))
        assert got.comm.cache_hit
        assert (got.step_seconds, got.exposed_comm_seconds, got.comm_seconds) == \
               (want.step_seconds, want.exposed_comm_seconds, want.comm_seconds)  # bit-exact
    assert inner.calls == []


def test_row_holds_provenance_and_is_queryable_with_plain_sqlite(topo, store_path):
    cached = Cached(CountingInner(topo), LatencyStore(store_path))
    timing = cached.time({"job": step_graph(placement_from_shape(topo, [[8, 8]]))})["job"]
    cached.close()
    conn = sqlite3.connect(store_path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    row = conn.execute("SELECT backend, backend_version, ns3_version, model_name, shape, gpus, tier, exposed_seconds, "
                       "collective_seconds, wall_seconds, created_at, result_json FROM entries").fetchone()
    backend, version, ns3, name, shape, gpus, tier, exposed, collective, wall, created, result_json = row
    assert (backend, version, ns3, name, shape, gpus, tier) == ("counting", "7", "3.44", "step", "[[8,8]]", 16, "rack")
    assert exposed == pytest.approx(16e-3)  # the last bucket runs past the end of compute
    assert collective == timing.comm_seconds == pytest.approx(32e-3)
    assert wall >= 0 and created.endswith("Z") and created[:2] == "20"
    assert result_from_json(result_json).node_seconds == (timing.node_seconds,)
    assert conn.execute("SELECT COUNT(*) FROM inflight").fetchone()[0] == 0


def test_counters_count_hits_misses_and_saved_seconds_persistently(topo, store_path):
    cached = Cached(CountingInner(topo), LatencyStore(store_path))
    shapes = ([[8]], [[4, 4]], [[2], [2]])
    for _ in range(3):
        for s in shapes:
            estimate(cached, placement_from_shape(topo, s))
    cached.close()
    stats = LatencyStore(store_path).stats()
    assert (stats["entries"], stats["misses"], stats["hits"]) == (3, 3, 6)
    assert stats["hit_rate"] == pytest.approx(6 / 9)
    walls = [r[0] for r in sqlite3.connect(store_path).execute("SELECT wall_seconds FROM entries")]
    assert stats["simulated_wall_seconds"] == pytest.approx(sum(walls))
    assert stats["saved_wall_seconds"] == pytest.approx(2 * sum(walls))  # every entry hit twice
    assert (cached.session.hits, cached.session.misses) == (6, 3)


def test_sqlite_hit_without_memo_is_counted_too(topo, store_path):
    estimate(Cached(CountingInner(topo), LatencyStore(store_path)), placement_from_shape(topo, [[8]]))
    cold = Cached(CountingInner(topo), LatencyStore(store_path), memo=False)
    for _ in range(4):
        assert estimate(cold, placement_from_shape(topo, [[8]])).comm.cache_hit
    assert cold.inner.calls == []
    cold.flush()  # hits are buffered in memory and written every few seconds, on flush, close and exit
    assert LatencyStore(store_path).counters()["hits"] == 4


def test_failed_simulation_releases_its_claim_and_stores_nothing(topo, store_path):
    store = LatencyStore(store_path)
    with pytest.raises(RuntimeError, match="crashed"):
        estimate(Cached(CountingInner(topo, fail=True), store), placement_from_shape(topo, [[8]]))
    conn = sqlite3.connect(store_path)
    assert conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM inflight").fetchone()[0] == 0
    ok = CountingInner(topo)
    assert not estimate(Cached(ok, store), placement_from_shape(topo, [[8]])).comm.cache_hit
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
    cached = Cached(CountingInner(topo), LatencyStore(store_path))
    estimate(cached, placement_from_shape(topo, [[8]]))
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
    cached = Cached(CountingInner(topo), LatencyStore(store_path))
    for s in ([[8]], [[4], [4]]):
        estimate(cached, placement_from_shape(topo, s))
    estimate(cached, placement_from_shape(topo, [[8]]))
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
    """The in-process shortcut maps questions (step graphs) to keys; topologies that compare equal but
    differ in GPU speeds give other graphs (other compute), and a backend whose settings change must
    still get new keys."""
    import dataclasses

    from artist.topology import GpuType

    cached = Cached(AnalyticalModel(topo), LatencyStore(store_path))
    model = dataclasses.replace(MODEL, compute_seconds=0.002)  # short compute: the speed shows in the answer
    slow = dataclasses.replace(topo, gpu_types={"A100": GpuType("A100", 1.0)})
    fast = dataclasses.replace(topo, gpu_types={"A100": GpuType("A100", 4.0)})
    assert slow == fast  # gpu_types is not part of Topology equality
    a = estimate(cached, placement_from_shape(slow, [[8, 8]]), model)
    b = estimate(cached, placement_from_shape(fast, [[8, 8]]), model)
    assert not a.comm.cache_hit and not b.comm.cache_hit
    alone = estimate(AnalyticalModel(fast), placement_from_shape(fast, [[8, 8]]), model)
    assert b.exposed_comm_seconds == alone.exposed_comm_seconds
    assert a.exposed_comm_seconds != b.exposed_comm_seconds

    # A backend whose settings change after creation gets new keys (its identity is read every time),
    # for step graphs and for single collectives alike.
    inner = CountingInner(topo)
    versioned = Cached(inner, LatencyStore(store_path))
    p = placement_from_shape(slow, [[8, 8]])
    graph = step_graph(p, model)
    versioned.time({"job": graph})
    versioned.collective_seconds(p, 1_000_000)
    assert versioned.time({"job": graph})["job"].result.cache_hit
    inner.identity = lambda: {"backend": "counting", "version": "8"}
    assert not versioned.time({"job": graph})["job"].result.cache_hit
    versioned.collective_seconds(p, 1_000_000)
    assert len(inner.calls) == 4
    assert versioned.session.misses == 4


def test_single_collectives_are_cached_apart_from_steps(topo, store_path):
    class CountingAnalytical(AnalyticalModel):
        calls = 0

        def collective_seconds(self, group, nbytes, kind="all_reduce"):
            CountingAnalytical.calls += 1
            return super().collective_seconds(group, nbytes, kind)

    p = placement_from_shape(topo, [[8], [8]])
    cached = Cached(CountingAnalytical(topo), LatencyStore(store_path))
    want = AnalyticalModel(topo).collective_seconds(p, 8_000_000)
    assert cached.collective_seconds(p, 8_000_000) == want
    calls = CountingAnalytical.calls
    again = Cached(CountingAnalytical(topo), LatencyStore(store_path), memo=False)
    assert again.collective_seconds(p, 8_000_000) == want  # from the file
    assert CountingAnalytical.calls == calls and again.session.hits == 1
    # Which GPUs of the shape were picked does not matter either.
    other_gpus = Placement(topo, tuple(range(8, 16)) + tuple(range(72, 80)))  # machines 1 and 9
    assert other_gpus.canonical_shape == p.canonical_shape and other_gpus.gpus != p.gpus
    assert again.collective_seconds(other_gpus, 8_000_000) == want
    assert CountingAnalytical.calls == calls and again.session.hits == 2
    assert again.collective_seconds(p, 8_000_001) == AnalyticalModel(topo).collective_seconds(p, 8_000_001)
    gather = AnalyticalModel(topo).collective_seconds(p, 8_000_000, "all_gather")
    assert gather != want and again.collective_seconds(p, 8_000_000, "all_gather") == gather  # its own entry
    # A step of a one-bucket model of the same bytes is another question, with its own entry; so is a
    # graph of that one all-reduce alone (a graph question, not a collective one), though its answer agrees.
    one_bucket = ModelProfile("one", (8_000_000,), 0.1, "A100")
    assert not estimate(cached, p, one_bucket).comm.cache_hit
    alone = StepGraph((Node(0, "all_reduce", group=p.gpus, nbytes=8_000_000),))
    timing = cached.time({"job": alone})["job"]
    assert not timing.result.cache_hit and timing.node_seconds == (want,)
    names = sorted(r["model_name"] for r in LatencyStore(store_path).export_rows())
    assert names == ["all_gather 8000000 B", "all_reduce 8000000 B", "all_reduce 8000001 B", "step", "step"]


def test_calibrated_over_cached_answers_collectives_and_steps(store_path):
    from artist.calibration.profile import load_profile
    from artist.network.calibrated import Calibrated

    h100 = load_topology(REPO / "topologies" / "h100-dgx.yaml")
    profile = load_profile(REPO / "calibration" / "profiles" / "h100-analytical.yaml")
    p = placement_from_shape(h100, [[8], [8]])
    through_cache = Calibrated(Cached(AnalyticalModel(h100, channels=8), LatencyStore(store_path)), profile)
    direct = Calibrated(AnalyticalModel(h100, channels=8), profile)
    assert through_cache.collective_seconds(p, 1 << 26) == direct.collective_seconds(p, 1 << 26)
    graph = step_graph(p)
    want = direct.time({"job": graph})["job"]
    for _ in range(2):  # a miss, then a hit: the correction is applied to the cached raw answer alike
        got = through_cache.time({"job": graph})["job"]
        assert same_timeline(got, want) and got.result.calibrated


def test_a_forked_child_does_not_write_its_parents_unwritten_hits_again(topo, store_path):
    import multiprocessing

    cached = Cached(CountingInner(topo), LatencyStore(store_path))
    p = placement_from_shape(topo, [[8]])
    estimate(cached, p)  # miss, written
    for _ in range(3):
        estimate(cached, p)  # 3 hits, pending in memory

    def child():
        estimate(cached, p)  # 1 hit of its own
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
        result = CachedTiming(((0.25,) * 4,), 0.5, 1.0, backend, details={"pad": "x" * 900})
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


FIELDS = '"collective_seconds": 1, "backend": "b", "calibrated": false, "packets": 0, "details": {}'


@pytest.mark.parametrize("text,why", [
    ("not json", "not JSON"),
    ("[1, 2]", "not a JSON object"),
    ('{"exposed_seconds": 1}', "lacks field 'collective_seconds'"),
    ('{"exposed_seconds": "1", "node_seconds": [], ' + FIELDS + '}', "'exposed_seconds' is not a finite number"),
    ('{"exposed_seconds": NaN, "node_seconds": [], ' + FIELDS + '}', "'exposed_seconds' is not a finite number"),
    ('{"exposed_seconds": 1, "node_seconds": [1, 2], ' + FIELDS + '}',
     "'node_seconds' is not a list of lists of finite numbers"),
    ('{"exposed_seconds": 1, "node_seconds": [[1, "x"]], ' + FIELDS + '}',
     "'node_seconds' is not a list of lists of finite numbers"),
    ('{"exposed_seconds": 1, "node_seconds": [[1], [Infinity]], ' + FIELDS + '}',
     "'node_seconds' is not a list of lists of finite numbers"),
    ('{"exposed_seconds": 1, "node_seconds": [], ' + FIELDS.replace("false", "0") + '}',
     "'calibrated' is not true or false"),
    # An entry written before step graphs (per-bucket seconds): named, not served.
    ('{"exposed_seconds": 1, "bucket_seconds": [0.5], ' + FIELDS + '}', "lacks field 'node_seconds'"),
])
def test_result_from_json_says_what_is_wrong(text, why):
    with pytest.raises(ValueError, match=re.escape(why)):
        result_from_json(text)


def test_result_round_trips_through_json():
    awkward = (0.1 + 0.2, 1 / 3, 5e-324, 1.7976931348623157e308, 2.0 ** -40, 0.0)
    r = CachedTiming(((0.1, 0.2), awkward, ()), 0.1, 0.3, "b", calibrated=True, packets=7, details={"a": [1]})
    back = result_from_json(result_to_json(r))
    assert back == r and back.details == {"a": [1]}
    assert back.node_seconds[1] == awkward  # bit-exact: floats are written as their shortest repr


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


def test_the_in_process_key_memo_is_bounded_by_nodes_and_keeps_answers(topo, store_path, monkeypatch):
    """Questions kept in memory hold their graphs; past MEMO_MAX_NODES the memo starts afresh. Answers are
    the store's and the answer memo's, so a forgotten question is a hit again, never simulated twice."""
    import artist.network.cache.cached as cached_module

    inner = CountingInner(topo)
    cached = Cached(inner, LatencyStore(store_path))
    a, b = step_graph(placement_from_shape(topo, [[4], [4]])), step_graph(placement_from_shape(topo, [[2], [2]]))
    monkeypatch.setattr(cached_module, "MEMO_MAX_NODES", len(a.nodes) + len(b.nodes) - 1)  # room for one only
    first = cached.time({"job": a})["job"]
    cached.time({"job": b})  # a's question forgotten: the two do not fit
    assert len(cached._keys) == 1 and cached._key_nodes == len(b.nodes)
    again = cached.time({"job": a})["job"]
    assert len(inner.calls) == 2 and again.result.cache_hit and same_timeline(first, again)
    twice = cached.time({"job": a})["job"]  # a kept now (b forgotten): key and order only
    assert twice.result.cache_hit and same_timeline(first, twice) and len(inner.calls) == 2
