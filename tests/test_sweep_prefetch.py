"""Sweep prefetch and the ns-3 cost model (artist/sweep/prefetch.py, cost.py, questions.py)."""

from __future__ import annotations

import io
import sqlite3
from contextlib import redirect_stderr, redirect_stdout

import pytest

from artist.parallel.graph import Node
from artist.sweep.cost import makespan, piece_cost
from artist.sweep.questions import Piece
from artist.sweep.run import run_sweep
from artist.sweep.spec import load_sweep_spec
from artist.topology import load_topology
from conftest import REPO
from sweep_helpers import write_spec, write_topology

pytestmark = pytest.mark.ns3
DALLY = load_topology(REPO / "topologies" / "dally-3tier.yaml")


def tiny_ns3_spec(tmp_path):
    write_topology(tmp_path, racks=1, machines_per_rack=2, gpus_per_machine=4)
    (tmp_path / "t.csv").write_text("job_id,arrival,model,gpus,iterations\n"
                                    "a,0,mobilenet_v3_large,2,1000\nb,0,resnet18,4,1000\nc,10,mobilenet_v3_large,4,500\n")
    # the fast path off: these steps share no link, so it would answer them all and leave nothing to prefetch
    return write_spec(tmp_path, {"topology": "topo.yaml", "racks": [1, 2], "policies": ["fifo"],
                                 "workloads": ["t.csv"],
                                 "comm": {"backend": "ns3", "options": {"ns3": {"fast_path": False}}}})


def test_dry_run_counts_steps_the_fast_path_answers_as_no_ns3_run(tmp_path):
    """The cost model asks the backend's path rule: with the fast path on, a tiny sweep whose steps share
    no link needs no ns-3 run at all; with it off, every step is costed in ns-3 runs."""
    pytest.importorskip("artist.network.ns3")
    from artist.sweep.cost import sweep_cost
    from artist.sweep.questions import collect_questions

    off = load_sweep_spec(tiny_ns3_spec(tmp_path))
    spec_on = tmp_path / "on.yaml"
    spec_on.write_text((tmp_path / "spec.yaml").read_text().replace("fast_path: false", "fast_path: true"))
    on = load_sweep_spec(spec_on)
    cost_off, cost_on = sweep_cost(collect_questions(off.runs, off.models)), sweep_cost(collect_questions(on.runs,
                                                                                                          on.models))
    assert cost_off.fast_steps == 0 and cost_off.packets > 0
    assert cost_on.fast_steps == cost_on.steps == cost_off.steps > 0 and cost_on.packets == 0
    assert cost_on.cpu_seconds < cost_off.cpu_seconds


def alone_entries(cache_dir) -> int:
    with sqlite3.connect(cache_dir / "latency-cache.sqlite") as conn:
        return conn.execute("SELECT count(*) FROM entries WHERE model_name LIKE '% alone'").fetchone()[0]


def test_predicted_packets_and_frames_equal_what_ns3_counts():
    ns3 = pytest.importorskip("artist.network.ns3")
    pool = ns3.Ns3Pool(size=1)
    try:
        for channels in (1, 4):
            model = ns3.Ns3Model(DALLY, channels=channels, pool=pool)
            for kind, group, nbytes in [("all_reduce", (0, 1, 8, 9, 64, 65), 3_333_333),
                                        ("all_gather", (0, 8), 2_000_000), ("send_recv", (9, 1), 1_000_001)]:
                schedule = model._node_schedule(Node(0, kind, group=group, nbytes=nbytes), accelerate=False)
                simulated = model.reuse.isolated(model, [schedule], kind)[0]
                predicted = piece_cost(DALLY, Piece(kind, group, nbytes, ""), "ring", channels)
                assert (predicted.packets, predicted.frame_hops) == (simulated.packets, simulated.frames_on_wires)
    finally:
        pool.close()


def test_makespan_is_the_longest_first_schedule():
    assert makespan([3, 3, 2, 2, 2], 2) == 7  # {3, 2, 2} and {3, 2}
    assert makespan([10, 1, 1], 4) == 10
    assert makespan([], 2) == 0


def test_prefetch_answers_every_collective_the_runs_then_ask(tmp_path):
    pytest.importorskip("artist.network.ns3")
    from artist.sweep.prefetch import prefetch

    spec = load_sweep_spec(tiny_ns3_spec(tmp_path))
    cache = tmp_path / "cache"
    cache.mkdir()
    report = prefetch(spec.runs, spec.models, cache_path=str(cache / "latency-cache.sqlite"), workers=2,
                      progress=False)
    assert report.simulated == report.pieces > 0 and report.found == 0
    stored = alone_entries(cache)
    assert stored == report.simulated
    swept = run_sweep(spec, tmp_path / "one", n_jobs=1, cache_dir=cache, progress=False, plots=False)
    assert swept.failed == [] and alone_entries(cache) == stored  # the runs composed, simulated no collective
    # The same answers as a sweep without prefetch (and without exact reuse's pieces in its cache).
    plain = run_sweep(load_sweep_spec(tmp_path / "spec.yaml"), tmp_path / "two", n_jobs=1, cache_dir=tmp_path / "c2",
                      progress=False, plots=False)
    assert (swept.out_dir / "results.csv").read_bytes() == (plain.out_dir / "results.csv").read_bytes()
    again = prefetch(spec.runs, spec.models, cache_path=str(cache / "latency-cache.sqlite"), progress=False)
    assert again.simulated == 0 and again.found == report.pieces
    # Through the sweep itself (`artist sweep --prefetch`), into a fresh cache.
    fetched = run_sweep(load_sweep_spec(tmp_path / "spec.yaml"), tmp_path / "three", n_jobs=2,
                        cache_dir=tmp_path / "c3", progress=False, plots=False, prefetch=True)
    assert fetched.failed == [] and fetched.prefetch.simulated == report.pieces
    assert (fetched.out_dir / "results.csv").read_bytes() == (plain.out_dir / "results.csv").read_bytes()


def test_an_interrupted_prefetch_keeps_what_it_finished(tmp_path, monkeypatch):
    pytest.importorskip("artist.network.ns3")
    from artist.network.ns3 import runner
    from artist.sweep.prefetch import prefetch

    spec = load_sweep_spec(tiny_ns3_spec(tmp_path))
    real_run, calls = runner.Ns3Worker.run, []

    def interrupted_on_the_third(self, request, timeout_s, shape):
        calls.append(shape)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real_run(self, request, timeout_s, shape)

    monkeypatch.setattr(runner.Ns3Worker, "run", interrupted_on_the_third)
    cache = tmp_path / "cache"
    cache.mkdir()
    with pytest.raises(KeyboardInterrupt):
        prefetch(spec.runs, spec.models, cache_path=str(cache / "latency-cache.sqlite"), workers=1, progress=False)
    assert alone_entries(cache) == 2


def test_dry_run_prints_the_predicted_ns3_cost(tmp_path):
    from artist.cli import main

    spec_path = tiny_ns3_spec(tmp_path)
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        code = main(["sweep", str(spec_path), "--dry-run", "-j", "2", "--out", str(tmp_path / "out")])
    text = out.getvalue()
    assert code == 0 and "2 runs (0 done, 2 to run)" in text
    assert "ns-3 runs (distinct collectives alone" in text and "CPU-s, wall" in text and "on 2 cores" in text


def test_prefetch_on_a_dask_cluster_hands_the_answers_to_the_runs(tmp_path):
    pytest.importorskip("artist.network.ns3")
    distributed = pytest.importorskip("distributed")
    import dask

    spec_path = tiny_ns3_spec(tmp_path)
    local = run_sweep(load_sweep_spec(spec_path), tmp_path / "local", n_jobs=1, progress=False, plots=False,
                      cache_dir=tmp_path / "cache-local")
    with dask.config.set({"distributed.worker.daemon": False}), distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, host="127.0.0.1") as cluster:
        remote = run_sweep(load_sweep_spec(spec_path), tmp_path / "dask", executor="dask",
                           address=cluster.scheduler_address, progress=False, plots=False,
                           cache_dir=tmp_path / "cache-dask", prefetch=True)
    assert remote.failed == [] and remote.prefetch.simulated == remote.prefetch.pieces > 0
    assert len(remote.prefetch.preloaded) == remote.prefetch.pieces  # answers came back, for the runs
    assert alone_entries(tmp_path / "cache-dask") == remote.prefetch.pieces  # no run simulated another
    assert (remote.out_dir / "results.csv").read_bytes() == (local.out_dir / "results.csv").read_bytes()
