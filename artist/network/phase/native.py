"""The phase engine compiled: engine.cc, built once per installation with the system's C++ compiler and
loaded with ctypes. It runs engine.py's algorithm with the same floating-point operations in the same
order, so its answers are engine.py's bit for bit (tests/test_phase_native.py checks that on every
scenario it runs), ~150x faster an event (0.24 us against 38 us, measured on a 30-job component of a
1 000-job trace).

    run = compiled_runner()   # None: no compiler, a failed build, or ARTIST_PHASE_ENGINE=python
    run(jobs, links, capacity, steps, windows, tolerance, max_steps, max_events, budget, alone...) -> NativeRun

ARTIST_PHASE_ENGINE: "auto" (default: compiled when it builds, else engine.py's loop), "compiled" (a
build failure is an error), "python" (engine.py's loop: the reference). Every answer records which
engine gave it (PhaseSteady.engine). The library lives beside the ns-3 engine's (engine_build.py's
cache: one compile per installation and source text, shared by all processes).
"""

from __future__ import annotations

import ctypes
import os
import warnings
from itertools import chain
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from artist.errors import InputError
from artist.memo import memoised_by_identity
from artist.network.ns3 import engine_build

SOURCE = Path(__file__).with_name("engine.cc")
CXX_FLAGS = ("-std=c++17", "-O2", "-fPIC", "-shared",
             "-ffp-contract=off")  # no fused multiply-adds: engine.py's rounding, operation by operation
ENGINE_CHOICES = ("auto", "compiled", "python")

_loaded: dict = {}  # "lib" -> ctypes library, or "failed" -> the reason


@dataclass
class NativeJob:
    ends: list[float]
    comms: list[float]
    comm: float  # communication of the step in progress (a job that never ended a step: what it had run)


@dataclass
class NativeRun:
    jobs: list[NativeJob]
    now: float
    done: bool
    events: int


def engine_choice() -> str:
    choice = os.environ.get("ARTIST_PHASE_ENGINE", "auto").strip().lower() or "auto"
    if choice not in ENGINE_CHOICES:  # bad input: one line through the CLI (InputError), not a traceback
        raise InputError("environment", f"ARTIST_PHASE_ENGINE={choice!r}",
                         f"expected one of {', '.join(ENGINE_CHOICES)}")
    return choice


def compiled_runner(required: bool = False) -> Callable[..., NativeRun] | None:
    """The compiled engine's runner, building it on first use; None when engine.py's loop must run
    (ARTIST_PHASE_ENGINE=python, or auto and no compiler or a failed build: warned once).
    required: the compiled engine or an EngineBuildError, whatever the environment says."""
    choice = "compiled" if required else engine_choice()
    if choice == "python":
        return None
    lib = _library(required=choice == "compiled")
    return None if lib is None else lambda *args: _run(lib, *args)


def _library(required: bool):
    if "lib" in _loaded:
        return _loaded["lib"]
    if "failed" in _loaded and not required:
        return None
    try:
        lib = ctypes.CDLL(str(_build().path))
    except (engine_build.EngineBuildError, OSError) as exc:
        if required:
            raise engine_build.EngineBuildError(f"the compiled phase engine is required "
                                                f"(ARTIST_PHASE_ENGINE=compiled) but: {exc}") from None
        if "failed" not in _loaded:
            warnings.warn(f"the phase engine runs in Python (slower, same answers): {str(exc).splitlines()[0]}",
                          RuntimeWarning, stacklevel=3)
        _loaded["failed"] = str(exc)
        return None
    _declare(lib)
    _loaded["lib"] = lib
    return lib


def _build() -> engine_build.BuiltLibrary:
    compiler = engine_build.find_compiler()
    if compiler is None:
        raise engine_build.EngineBuildError("no C++ compiler found ($CXX, else g++ on PATH)")
    compiler = os.path.realpath(compiler)
    sources = {"engine.cc": SOURCE.read_text()}
    key_inputs = {"engine": "phase", "sources": engine_build.sources_digest(sources), "compiler": compiler,
                  "compiler_version": engine_build.compiler_version(compiler), "flags": list(CXX_FLAGS)}
    root = engine_build.cache_root().parent / "phase-engine"
    return engine_build.build_cached(sources, key_inputs, lambda cc, out: [compiler, *CXX_FLAGS, *map(str, cc), "-o",
                                                                           str(out)], root, "the phase engine")


_P = ctypes.c_void_p
_D = ctypes.POINTER(ctypes.c_double)
_I64 = ctypes.POINTER(ctypes.c_int64)
_I32 = ctypes.POINTER(ctypes.c_int32)
_U8 = ctypes.POINTER(ctypes.c_uint8)


def _declare(lib) -> None:
    lib.phase_run.restype = _P
    lib.phase_run.argtypes = [ctypes.c_int, _I64, _D, _U8, _D, _I64, _I32, _I64, _D, _I32, ctypes.c_int, _D, _I64,
                              _I32, _D, _I32, _D, _D, _D, _U8, ctypes.c_int, _D, ctypes.c_int64, _I32, ctypes.c_double,
                              ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, _D, _D]
    lib.phase_error.restype = ctypes.c_char_p
    lib.phase_error.argtypes = [_P]
    lib.phase_now.restype = ctypes.c_double
    lib.phase_now.argtypes = [_P]
    lib.phase_done.restype = ctypes.c_int
    lib.phase_done.argtypes = [_P]
    lib.phase_events.restype = ctypes.c_int64
    lib.phase_events.argtypes = [_P]
    lib.phase_steps.restype = ctypes.c_int64
    lib.phase_steps.argtypes = [_P, ctypes.c_int]
    lib.phase_comm.restype = ctypes.c_double
    lib.phase_comm.argtypes = [_P, ctypes.c_int]
    lib.phase_copy.restype = None
    lib.phase_copy.argtypes = [_P, ctypes.c_int, _D, _D]
    lib.phase_free.restype = None
    lib.phase_free.argtypes = [_P]


def _ptr(array: np.ndarray, kind):
    return array.ctypes.data_as(kind)


@dataclass(frozen=True)
class PackedJob:
    """A job's nodes as flat arrays (packed once per job object: an LLM job is ~10^4 nodes, met in many
    components), its bundles by local class: (crossings in the job's own link numbering, cap, burst rate,
    exposed), numbered in order of appearance."""

    seconds: np.ndarray
    comm: np.ndarray
    comm_seconds: np.ndarray
    dep_off: np.ndarray  # per node, the start of its deps in `deps` (one more entry: the end)
    deps: np.ndarray
    bundle_off: np.ndarray  # per node, the start of its bundles (one more entry: the end)
    work: np.ndarray
    bundle_class: np.ndarray  # local class of each bundle
    classes: tuple  # ((crossings, cap, burst rate, exposed, shown, ups), ...) by local class number
    phases: int  # nodes with bundles (engine.window_of)


_packed: dict = {}
MAX_PACKED = 512  # jobs kept packed per process (a bound; the model keeps 256 job forms)


def packed(job) -> PackedJob:
    return memoised_by_identity(_packed, (job,), lambda: _pack(job), MAX_PACKED)


def _pack(job) -> PackedJob:
    nodes = job.nodes
    dep_off = np.zeros(len(nodes) + 1, dtype=np.int64)
    np.cumsum([len(node.deps) for node in nodes], out=dep_off[1:])
    bundle_off = np.zeros(len(nodes) + 1, dtype=np.int64)
    np.cumsum([len(node.bundles) for node in nodes], out=bundle_off[1:])
    work, bundle_class = [], []
    class_of: dict = {}
    of_bundles: dict = {}  # per bundles tuple (by identity; the job holds them): their local classes
    phases = 0
    for node in nodes:
        if node.bundles:
            phases += 1
            numbers = of_bundles.get(id(node.bundles))
            if numbers is None:
                numbers = of_bundles[id(node.bundles)] = [
                    class_of.setdefault((b.crossings, b.cap, b.burst_rate, b.exposed, b.shown, b.ups),
                                        len(class_of))
                    for b in node.bundles]
            work.extend(b.work for b in node.bundles)
            bundle_class.extend(numbers)
    return PackedJob(np.array([node.seconds for node in nodes], dtype=np.float64),
                     np.array([node.communication for node in nodes], dtype=np.uint8),
                     np.array([node.comm_seconds for node in nodes], dtype=np.float64), dep_off,
                     np.fromiter(chain.from_iterable(node.deps for node in nodes), dtype=np.int32,
                                 count=int(dep_off[-1])), bundle_off,
                     np.asarray(work, dtype=np.float64), np.asarray(bundle_class, dtype=np.int32),
                     tuple(class_of), phases)


def _run(lib, jobs: Sequence, links: Sequence[Sequence[int]] | None, capacity: Sequence[float],
         steps: int | None, windows: Sequence[int], tolerance: float, max_steps: int, max_events: int,
         event_budget: int, alone_steps: Sequence[float] | None,
         alone_comms: Sequence[float] | None) -> NativeRun:
    """engine.run_component's loop on flat arrays: the jobs' packed arrays end to end, their link numbers
    mapped through links[j] (None: already the component's), bundle classes numbered in order of
    appearance over the jobs with engine.py's keys: (crossings, cap, shown, ups), or where bursts can collide
    (job, crossings, cap, burst rate, exposed, shown, ups); elsewhere every class's exposed is passed as 0 (no
    collision caps). Each class has three numbers, as in engine.py: the whole bundle, its up stage, its down
    stage (their crossings), and whether its bundles have two stages."""
    packs = [packed(job) for job in jobs]
    bursty = len(jobs) > 1 and any(exposed > 0 for pack in packs for _, _, _, exposed, _, _ in pack.classes)
    class_of: dict = {}  # engine.py's class key -> its first number (three each: whole, up stage, down stage)
    numbers = []  # per number: (crossings, cap, job, burst rate, exposed, shown, two stages)
    parts = []
    for j, pack in enumerate(packs):
        mapping = None if links is None else links[j]
        local = []
        for crossings, cap, burst_rate, exposed, shown, ups in pack.classes:
            if mapping is not None:
                crossings = tuple((mapping[link], m) for link, m in crossings)
            key = (j, crossings, cap, burst_rate, exposed, shown, ups) if bursty else (crossings, cap, shown, ups)
            if key not in class_of:
                class_of[key] = len(numbers)
                two = len(jobs) > 1 and 0 < ups < len(crossings)
                burst = (burst_rate, exposed) if bursty else (0.0, 0.0)
                for part in (crossings, crossings[:ups], crossings[ups:]):  # engine.py's BOTH, UP, DOWN
                    numbers.append((part, cap, j, *burst, shown, two))
            local.append(class_of[key])
        parts.append(np.asarray(local, dtype=np.int32)[pack.bundle_class] if local else pack.bundle_class)
    node_counts = [len(p.seconds) for p in packs]
    job_off = np.concatenate(([0], np.cumsum(node_counts))).astype(np.int64)
    dep_base = np.cumsum([0] + [len(p.deps) for p in packs[:-1]])
    bundle_base = np.cumsum([0] + [len(p.work) for p in packs[:-1]])
    cross_off, cross_link, cross_load = [0], [], []
    for crossings, *_ in numbers:
        for link, load in crossings:
            cross_link.append(link)
            cross_load.append(load)
        cross_off.append(len(cross_link))
    column = list(zip(*numbers)) if numbers else [()] * 7
    arrays = {
        "job_off": job_off, "seconds": np.concatenate([p.seconds for p in packs]),
        "comm": np.concatenate([p.comm for p in packs]),
        "comm_seconds": np.concatenate([p.comm_seconds for p in packs]),
        "dep_off": np.concatenate([p.dep_off[:-1] + base for p, base in zip(packs, dep_base)]
                                  + [[dep_base[-1] + len(packs[-1].deps)]]).astype(np.int64),
        "deps": np.concatenate([p.deps for p in packs]),
        "bundle_off": np.concatenate([p.bundle_off[:-1] + base for p, base in zip(packs, bundle_base)]
                                     + [[bundle_base[-1] + len(packs[-1].work)]]).astype(np.int64),
        "work": np.concatenate([p.work for p in packs]),
        "bundle_class": np.concatenate(parts).astype(np.int32),
        "class_cap": np.asarray(column[1], dtype=np.float64),
        "cross_off": np.asarray(cross_off, dtype=np.int64), "cross_link": np.asarray(cross_link, dtype=np.int32),
        "cross_load": np.asarray(cross_load, dtype=np.float64),
        "class_job": np.asarray(column[2], dtype=np.int32),
        "class_burst": np.asarray(column[3], dtype=np.float64),
        "class_exposed": np.asarray(column[4], dtype=np.float64),
        "class_shown": np.asarray(column[5], dtype=np.float64),
        "class_two": np.asarray(column[6], dtype=np.uint8),
        "capacity": np.asarray(capacity, dtype=np.float64), "windows": np.asarray(windows, dtype=np.int32),
        "alone_steps": None if alone_steps is None else np.asarray(alone_steps, dtype=np.float64),
        "alone_comms": None if alone_comms is None else np.asarray(alone_comms, dtype=np.float64),
    }
    a = arrays
    handle = lib.phase_run(
        len(jobs), _ptr(a["job_off"], _I64), _ptr(a["seconds"], _D), _ptr(a["comm"], _U8), _ptr(a["comm_seconds"], _D),
        _ptr(a["dep_off"], _I64), _ptr(a["deps"], _I32), _ptr(a["bundle_off"], _I64),
        _ptr(a["work"], _D),
        _ptr(a["bundle_class"], _I32), len(numbers), _ptr(a["class_cap"], _D), _ptr(a["cross_off"], _I64),
        _ptr(a["cross_link"], _I32), _ptr(a["cross_load"], _D), _ptr(a["class_job"], _I32),
        _ptr(a["class_burst"], _D), _ptr(a["class_exposed"], _D), _ptr(a["class_shown"], _D),
        _ptr(a["class_two"], _U8), len(a["capacity"]),
        _ptr(a["capacity"], _D),
        -1 if steps is None else int(steps), _ptr(a["windows"], _I32), float(tolerance), int(max_steps),
        int(max_events), int(event_budget),
        None if a["alone_steps"] is None else _ptr(a["alone_steps"], _D),
        None if a["alone_comms"] is None else _ptr(a["alone_comms"], _D))
    try:
        error = lib.phase_error(handle).decode()
        if error:
            raise ValueError(error)
        out = []
        for j in range(len(jobs)):
            n = lib.phase_steps(handle, j)
            ends, comms = np.empty(n), np.empty(n)
            lib.phase_copy(handle, j, _ptr(ends, _D), _ptr(comms, _D))
            out.append(NativeJob(ends.tolist(), comms.tolist(), lib.phase_comm(handle, j)))
        return NativeRun(out, lib.phase_now(handle), bool(lib.phase_done(handle)), lib.phase_events(handle))
    finally:
        lib.phase_free(handle)
