"""The compiled ns-3 engine (engine_build.py, worker.py): same answers as the cppyy fallback,
built once per source hash, reused, and a failed compile is one clear error.

The tiny-library tests compile a few lines against the ns-3 libraries (~1 s each); the
real engine is compiled at most once per installation (the installation's cache, shared
with every other ns-3 test), and the cppyy fallback is started once (~10-30 s).
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

import pytest

from artist.network.analytical import StartupLatency
from artist.network.collectives import allreduce_schedule
from artist.placement import placement_from_shape
from artist.topology import load_topology
from conftest import REPO

pytestmark = pytest.mark.ns3

pytest.importorskip("artist.network.ns3")
from artist.network.ns3 import Ns3Worker, TransportOptions, engine_build, worker  # noqa: E402
from artist.network.ns3.builder import EngineCollective, build_engine_input  # noqa: E402

needs_compiler = pytest.mark.skipif(engine_build.find_compiler() is None, reason="no C++ compiler ($CXX or g++)")
DALLY = load_topology(REPO / "topologies" / "dally-3tier.yaml")
# A few lines that link against ns-3 like the engine does: compiles in about a second.
TINY = {"tiny.cc": '#include "ns3/nstime.h"\nextern "C" long long tiny() { return ns3::Seconds(1).GetInteger(); }\n'}


def ring_requests() -> list[dict]:
    """A 4-GPU ring all-reduce over two machines (NVLink and NIC hops), on both transports."""
    placement = placement_from_shape(DALLY, [[2, 2]])
    schedule = allreduce_schedule("ring", placement, 4_000_000)
    ei = build_engine_input(DALLY, [EngineCollective(schedule)], StartupLatency())
    return [{"arrays": ei.arrays, "nodes": len(ei.node_names), **asdict(TransportOptions(transport=t))}
            for t in ("window", "tcp")]


def answers(w: Ns3Worker) -> bytes:
    runs = [w.run(request, 120.0, "[[2,2]]") for request in ring_requests()]
    # exact reuse's timeline, on ns-3's own time conversions (artist/network/ns3/reuse.py)
    runs.append(w.run({"timeline": {"collectives": [{"ready_s": 1.234567891e-3, "preds": [], "span_ps": 987654321},
                                                    {"ready_s": 1e-9, "preds": [0], "timer_s": 3.3e-7}]}},
                      60.0, "timeline"))
    return pickle.dumps([{k: v for k, v in run.items() if k != "sim_wall_seconds"} for run in runs])


@needs_compiler
def test_compiled_engine_answers_byte_identical_to_the_cppyy_fallback(monkeypatch):
    compiled = Ns3Worker(engine="compiled")
    try:
        compiled.ensure_started()
        assert compiled.info["engine"] == "compiled"
        from_compiled = answers(compiled)
    finally:
        compiled.close()
    # No compiler on PATH: "auto" falls back to cppyy.cppdef and says so.
    monkeypatch.setenv("CXX", "artist-no-such-compiler")
    scratch_dirs = set(Path(tempfile.gettempdir()).glob("artist-ns3-*"))
    fallback = Ns3Worker(engine="auto")
    try:
        fallback.ensure_started()
        assert fallback.info["engine"] == "jit" and "no C++ compiler" in fallback.info["engine_detail"]
        from_fallback = answers(fallback)
    finally:
        fallback.close()
    # the bindings were imported from an empty scratch directory, removed once loaded
    assert set(Path(tempfile.gettempdir()).glob("artist-ns3-*")) <= scratch_dirs
    assert from_compiled == from_fallback
    assert {k: compiled.info[k] for k in ("ns3_version", "engine_version")} == \
           {k: fallback.info[k] for k in ("ns3_version", "engine_version")}


@needs_compiler
def test_a_worker_loads_the_compiled_engine_without_the_ns3_python_bindings():
    """Only the ns-3 libraries the engine links are loaded: no `from ns import ns`, no cppyy."""
    probe = ("import json, sys\nfrom artist.network.ns3.worker import load_engine\n"
             "engine, info = load_engine('compiled')\n"
             "try:\n    engine.run({}, {'mtu': 9000.5})\nexcept TypeError as exc:\n    info['refused'] = str(exc)\n"
             "print(json.dumps({**info, 'imported': [m for m in ('ns', 'ns3.ns', 'cppyy') if m in sys.modules]}))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout.splitlines()[-1])
    assert info["engine"] == "compiled" and info["imported"] == []
    assert "'mtu' is an integer" in info["refused"]  # a fractional value is refused, not truncated


@needs_compiler
def test_the_cache_key_follows_every_source_text():
    toolchain = engine_build.find_toolchain()
    sources = worker.engine_sources()
    key = engine_build.library_key(sources, toolchain)
    assert engine_build.library_key(dict(sources), toolchain) == key
    for name in sources:
        changed = {**sources, name: sources[name] + "\n// changed\n"}
        assert engine_build.library_key(changed, toolchain) != key, name


def test_the_generated_entry_points_follow_the_field_lists(monkeypatch):
    """A field added to worker.py's lists gets its entry point (and so a new cache key)."""
    before = worker.c_api_source()
    monkeypatch.setattr(worker, "_U32", worker._U32 + ("some_new_field",))
    after = worker.c_api_source()
    assert '"some_new_field"' in after and '"some_new_field"' not in before


@needs_compiler
def test_a_second_load_reuses_the_built_library(tmp_path):
    toolchain = engine_build.find_toolchain()
    first = engine_build.build_library(TINY, toolchain, root=tmp_path)
    assert first.compiled and first.path.is_file()
    stamp = first.path.stat().st_mtime_ns
    second = engine_build.build_library(TINY, toolchain, root=tmp_path)
    assert (second.compiled, second.path, second.path.stat().st_mtime_ns) == (False, first.path, stamp)
    # The real engine in the installation's cache: built at most once (maybe by another test), then reused.
    engine_build.build_library(worker.engine_sources(), toolchain)
    assert not engine_build.build_library(worker.engine_sources(), toolchain).compiled


@needs_compiler
def test_processes_building_the_same_key_at_once_compile_it_once(tmp_path):
    toolchain = engine_build.find_toolchain()
    with ThreadPoolExecutor(3) as pool:  # each build opens its own lock file descriptor, as processes do
        builds = list(pool.map(lambda _: engine_build.build_library(TINY, toolchain, root=tmp_path), range(3)))
    assert sum(b.compiled for b in builds) == 1
    assert len({b.path for b in builds}) == 1
    assert [p.name for p in builds[0].path.parent.iterdir() if p.name.endswith(".tmp")] == []


@needs_compiler
def test_a_failed_compile_is_one_clear_error_with_the_compiler_output(tmp_path):
    toolchain = engine_build.find_toolchain()
    broken = {"engine.cc": "int run_spec( {\n"}
    with pytest.raises(engine_build.EngineBuildError) as caught:
        engine_build.build_library(broken, toolchain, root=tmp_path)
    message = str(caught.value)
    assert message.startswith("compiling the ns-3 engine failed")
    assert "engine.cc:1:" in message and "error" in message  # the compiler's own diagnostic
    assert message.splitlines()[-1].startswith("--- first error:")  # what a one-line summary ends with
    key_dir = tmp_path / engine_build.library_key(broken, toolchain)
    assert sorted(p.name for p in key_dir.iterdir()) == ["build.json", "build.lock", "src"]  # no library, no temp file


def test_no_compiler_means_no_toolchain_and_compiled_mode_says_so(monkeypatch):
    monkeypatch.setenv("CXX", "artist-no-such-compiler")
    assert engine_build.find_toolchain() is None
    with pytest.raises(engine_build.EngineBuildError, match="no C\\+\\+ compiler"):
        worker.load_engine("compiled")


def _fake_library(root: Path) -> tuple[dict, Path]:
    """A cache entry as build_cached leaves it, without compiling (key inputs -> root/<key>/engine.so)."""
    inputs = {"sources": {"x.cc": "0"}, "test": "private cache"}
    key_dir = root / engine_build._key_of(inputs)
    key_dir.mkdir(parents=True)
    (key_dir / engine_build.LIBRARY_NAME).write_bytes(b"\x7fELF")
    return inputs, key_dir


def test_a_library_others_may_write_is_made_private_before_it_is_loaded(tmp_path):
    """A cache directory under a shared XDG_CACHE_HOME: whoever can write it can replace the library this
    process loads. The user's own entries lose group and other write permission."""
    root = tmp_path / "cache"
    inputs, key_dir = _fake_library(root)
    for path in (root, key_dir, key_dir / engine_build.LIBRARY_NAME):
        path.chmod(0o777 if path.is_dir() else 0o666)
    built = engine_build.build_cached({"x.cc": "0"}, inputs, lambda cc, out: ["false"], root, "test")
    assert not built.compiled
    for path in (root, key_dir, built.path):
        assert path.stat().st_mode & 0o022 == 0


@pytest.mark.skipif(not hasattr(__import__("os"), "getuid") or __import__("os").getuid() != 0,
                    reason="giving a file to another user needs root")
def test_a_library_of_another_user_is_not_loaded(tmp_path):
    import os

    root = tmp_path / "cache"
    inputs, key_dir = _fake_library(root)
    os.chown(key_dir / engine_build.LIBRARY_NAME, 12345, 12345)
    with pytest.raises(engine_build.EngineBuildError, match="belongs to another user or others may write it"):
        engine_build.build_cached({"x.cc": "0"}, inputs, lambda cc, out: ["false"], root, "test")
