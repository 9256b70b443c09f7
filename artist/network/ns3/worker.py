"""The ns-3 worker process: loads the C++ engine once, serves runs.

Runs in a process started by runner.py (multiprocessing, spawn context). The
engine (engine.cc, interface engine.h) is loaded one of two ways (load_engine):

* compiled (wherever a C++ compiler is found): engine.cc plus C entry points
  generated here from the field lists below (c_api_source) are compiled once
  per installation into a shared library (engine_build.py) and loaded with
  ctypes in 0.02-0.05 s per process (measured). The ns-3 Python bindings are
  not imported: the library pulls in just the ns-3 modules it links, and
  run_spec sets the picosecond time resolution itself. ctypes releases the
  GIL during calls.
* jit (fallback where no compiler is found): the ns-3 Python bindings are
  imported (every ns-3 module) from a fresh empty directory, because they scan
  the working directory recursively for ns-3 libraries; the time resolution is
  set to picoseconds right after the import, before any ns3::Time exists;
  cppyy.cppdef compiles engine.cc. ~14 CPU-s per process in all (measured on
  the development machine). run_spec is marked to release the GIL.
Both give the same answers (tests/test_ns3_engine_build.py). The worker's
"ready" info says which one loaded ("engine") and from where.

A new Spec or Result field needs only its declaration in engine.h and its name
in one of the lists below: the generated entry points follow the lists, and
the changed sources give the compiled engine a new cache key, so every
installation rebuilds it at its next start.

The process dies with its parent (artist/lifeline.py): a killed sweep worker
or user process must not leave ns-3 simulating. That is why run_spec must
release the GIL: the lifeline thread acts while the engine runs.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import tempfile
import time
import traceback
from pathlib import Path

from artist.network.ns3 import engine_build

ENGINE_SOURCE = Path(__file__).with_name("engine.cc")
ENGINE_HEADER = Path(__file__).with_name("engine.h")
ENGINE_MODES = ("auto", "compiled", "jit")  # auto: compiled where a compiler is found, else jit

# Spec fields filled from numpy arrays, by C++ element type.
_U32 = ("link_a", "link_b", "route_off", "route_link", "route_dir", "m_src", "m_dst", "m_route", "m_coll",
        "m_conn", "dep_off", "dep_idx", "c_first", "c_pred_off", "c_pred_idx")
_U64 = ("m_bytes",)
_F64 = ("link_bps", "link_delay_s", "m_alpha_s", "c_ready_s", "c_base_s")
_VECTORS = (("u32", _U32, "uint32"), ("u64", _U64, "uint64"), ("f64", _F64, "float64"))
TRANSPORTS = {"window": 0, "tcp": 1}
# Spec scalars set from the request when present ("nodes" and "transport" always are).
_SCALARS = ("mtu", "window_bytes", "ack_every", "queue_packets", "tcp_red_k_packets", "tcp_buffer_bytes",
            "tcp_min_rto_s", "debug_hang", "debug_crash", "scheduler", "arbitration")
_SPEC_SCALARS = ("nodes", "transport") + _SCALARS
# Result fields returned to the parent, in this order, by C++ type.
_RESULT_F64_VECTORS = ("c_start_s", "c_end_s", "m_done_s")
_RESULT_U64_VECTORS = ("node_rx_bytes", "node_tx_bytes", "c_end_ps")
_RESULT_U64 = ("data_packets", "ack_packets", "device_transmissions", "drops", "events", "last_event_ps")
_RESULT_F64 = ("t0_s",)

_C_API = """\
// C entry points of the compiled ns-3 engine, called through ctypes by artist/network/ns3/worker.py,
// which generates this file from its field lists. Field types come from engine.h: a list naming a
// field of another type does not compile. Entry points taking a name return 0, or -1 for a name
// they do not know.
#include "engine.h"

#include <cstring>
#include <exception>
#include <type_traits>

using artist_ns3::Result;
using artist_ns3::Spec;

namespace
{{
bool named(const char* name, const char* field) {{ return std::strcmp(name, field) == 0; }}

template <class T>
int set_scalar(T& field, long long integer, double real, int is_real)
{{
    if constexpr (std::is_floating_point_v<T>) {{ field = is_real ? static_cast<T>(real) : static_cast<T>(integer); }}
    else
    {{
        if (is_real) {{ return -2; }} // a fractional value for an integer field: refused, not truncated
        field = static_cast<T>(integer);
    }}
    return 0;
}}

template <class T>
int view(const std::vector<T>& field, const T** data, size_t* n)
{{ *data = field.data(); *n = field.size(); return 0; }}

template <class T, class F>
int get(const F& field, T* out)
{{
    static_assert(std::is_same_v<T, F>, "a result field is listed under another type in worker.py");
    *out = field;
    return 0;
}}
}} // namespace

extern "C"
{{
const char* artist_engine_version() {{ return artist_ns3::ENGINE_VERSION; }}
double artist_ps_to_seconds(long long ps) {{ return artist_ns3::ps_to_seconds(ps); }}
long long artist_seconds_to_ps(double seconds) {{ return artist_ns3::seconds_to_ps(seconds); }}
void* artist_spec_new() {{ return new Spec(); }}
void artist_spec_free(void* spec) {{ delete static_cast<Spec*>(spec); }}
void artist_result_free(void* result) {{ delete static_cast<Result*>(result); }}
const char* artist_result_error(const void* result) {{ return static_cast<const Result*>(result)->error.c_str(); }}

void* artist_run(const void* spec)
{{
    Result* r = new Result();
    try {{ *r = artist_ns3::run_spec(*static_cast<const Spec*>(spec)); }}
    catch (const std::exception& e) {{ r->error = std::string("engine exception: ") + e.what(); }}
    return r;
}}

int artist_spec_fill_u32(void* spec, const char* name, const uint32_t* p, size_t n)
{{
    Spec& s = *static_cast<Spec*>(spec);
{fill_u32}
    return -1;
}}

int artist_spec_fill_u64(void* spec, const char* name, const uint64_t* p, size_t n)
{{
    Spec& s = *static_cast<Spec*>(spec);
{fill_u64}
    return -1;
}}

int artist_spec_fill_f64(void* spec, const char* name, const double* p, size_t n)
{{
    Spec& s = *static_cast<Spec*>(spec);
{fill_f64}
    return -1;
}}

int artist_spec_set(void* spec, const char* name, long long integer, double real, int is_real)
{{
    Spec& s = *static_cast<Spec*>(spec);
{set_scalar}
    return -1;
}}

int artist_result_f64s(const void* result, const char* name, const double** data, size_t* n)
{{
    const Result& r = *static_cast<const Result*>(result);
{result_f64s}
    return -1;
}}

int artist_result_u64s(const void* result, const char* name, const uint64_t** data, size_t* n)
{{
    const Result& r = *static_cast<const Result*>(result);
{result_u64s}
    return -1;
}}

int artist_result_u64(const void* result, const char* name, uint64_t* out)
{{
    const Result& r = *static_cast<const Result*>(result);
{result_u64}
    return -1;
}}

int artist_result_f64(const void* result, const char* name, double* out)
{{
    const Result& r = *static_cast<const Result*>(result);
{result_f64}
    return -1;
}}
}}
"""


def _branches(names, statement: str) -> str:
    return "\n".join(f'    if (named(name, "{n}")) {{ return {statement.format(n=n)}; }}' for n in names)


def c_api_source() -> str:
    """The C entry points (ctypes) for the field lists above; compiled together with engine.cc."""
    return _C_API.format(
        fill_u32=_branches(_U32, "(artist_ns3::fill_u32(s.{n}, p, n), 0)"),
        fill_u64=_branches(_U64, "(artist_ns3::fill_u64(s.{n}, p, n), 0)"),
        fill_f64=_branches(_F64, "(artist_ns3::fill_f64(s.{n}, p, n), 0)"),
        set_scalar=_branches(_SPEC_SCALARS, "set_scalar(s.{n}, integer, real, is_real)"),
        result_f64s=_branches(_RESULT_F64_VECTORS, "view<double>(r.{n}, data, n)"),
        result_u64s=_branches(_RESULT_U64_VECTORS, "view<uint64_t>(r.{n}, data, n)"),
        result_u64=_branches(_RESULT_U64, "get<uint64_t>(r.{n}, out)"),
        result_f64=_branches(_RESULT_F64, "get<double>(r.{n}, out)"),
    )


def engine_sources() -> dict[str, str]:
    """Everything the compiled engine is built from (and its cache key hashes)."""
    return {"engine.cc": ENGINE_SOURCE.read_text(), "engine.h": ENGINE_HEADER.read_text(),
            "engine_c_api.cc": c_api_source()}


class CompiledEngine:
    """The engine as a shared library built by engine_build.py, called through ctypes."""

    kind = "compiled"

    def __init__(self, library: Path):
        lib = ctypes.CDLL(str(library))  # loads the ns-3 libraries it links, and their dependencies
        p, s, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
        size = ctypes.c_size_t
        for name, restype, argtypes in (
            ("artist_engine_version", s, ()), ("artist_spec_new", p, ()), ("artist_spec_free", None, (p,)),
            ("artist_ps_to_seconds", ctypes.c_double, (ctypes.c_longlong,)),
            ("artist_seconds_to_ps", ctypes.c_longlong, (ctypes.c_double,)),
            ("artist_spec_fill_u32", i, (p, s, p, size)), ("artist_spec_fill_u64", i, (p, s, p, size)),
            ("artist_spec_fill_f64", i, (p, s, p, size)),
            ("artist_spec_set", i, (p, s, ctypes.c_longlong, ctypes.c_double, i)),
            ("artist_run", p, (p,)), ("artist_result_free", None, (p,)), ("artist_result_error", s, (p,)),
            ("artist_result_f64s", i, (p, s, ctypes.POINTER(ctypes.POINTER(ctypes.c_double)), ctypes.POINTER(size))),
            ("artist_result_u64s", i, (p, s, ctypes.POINTER(ctypes.POINTER(ctypes.c_uint64)), ctypes.POINTER(size))),
            ("artist_result_u64", i, (p, s, ctypes.POINTER(ctypes.c_uint64))),
            ("artist_result_f64", i, (p, s, ctypes.POINTER(ctypes.c_double))),
        ):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, argtypes
        self._lib = lib
        self.version = lib.artist_engine_version().decode()

    def ps_to_seconds(self, ps: int) -> float:
        return self._lib.artist_ps_to_seconds(ps)

    def seconds_to_ps(self, seconds: float) -> int:
        return self._lib.artist_seconds_to_ps(seconds)

    @staticmethod
    def _check(status: int, what: str, name: str) -> None:
        if status == -2:
            raise TypeError(f"Spec field {name!r} is an integer in engine.h; got a float")
        if status != 0:
            raise LookupError(f"the compiled ns-3 engine has no {what} {name!r} "
                              f"(engine.h and worker.py's lists disagree)")

    def run(self, vectors: dict, scalars: dict) -> dict:
        """One simulation: Spec vectors keyed by (kind, name), Spec scalars by name; the result fields."""
        lib = self._lib
        spec = lib.artist_spec_new()
        try:
            for (kind, name), a in vectors.items():
                fill = getattr(lib, f"artist_spec_fill_{kind}")
                self._check(fill(spec, name.encode(), a.ctypes.data, len(a)), f"{kind} Spec vector", name)
            for name, value in scalars.items():
                real = isinstance(value, float)
                self._check(lib.artist_spec_set(spec, name.encode(), 0 if real else int(value), float(value), real),
                            "Spec scalar", name)
            started = time.perf_counter()
            res = lib.artist_run(spec)  # ctypes releases the GIL for the call
            wall = time.perf_counter() - started
        finally:
            lib.artist_spec_free(spec)
        try:
            return {**self._result(res), "sim_wall_seconds": wall}
        finally:
            lib.artist_result_free(res)

    def _vector(self, getter, pointer_type, res, name) -> list:
        data, n = ctypes.POINTER(pointer_type)(), ctypes.c_size_t()
        self._check(getter(res, name.encode(), ctypes.byref(data), ctypes.byref(n)), "Result vector", name)
        return data[:n.value] if n.value else []

    def _scalar(self, getter, ctype, res, name):
        out = ctype()
        self._check(getter(res, name.encode(), ctypes.byref(out)), "Result scalar", name)
        return out.value

    def _result(self, res) -> dict:
        lib = self._lib
        return {
            **{n: self._vector(lib.artist_result_f64s, ctypes.c_double, res, n) for n in _RESULT_F64_VECTORS},
            **{n: self._vector(lib.artist_result_u64s, ctypes.c_uint64, res, n) for n in _RESULT_U64_VECTORS},
            **{n: self._scalar(lib.artist_result_u64, ctypes.c_uint64, res, n) for n in _RESULT_U64},
            **{n: self._scalar(lib.artist_result_f64, ctypes.c_double, res, n) for n in _RESULT_F64},
            "error": lib.artist_result_error(res).decode(errors="replace"),
        }


class JitEngine:
    """The engine compiled in this process by cppyy.cppdef, on top of the ns-3 Python bindings."""

    kind = "jit"

    def __init__(self, namespace):
        self._ns = namespace  # cppyy.gbl.artist_ns3
        self.version = str(namespace.ENGINE_VERSION)

    def ps_to_seconds(self, ps: int) -> float:
        return float(self._ns.ps_to_seconds(ps))

    def seconds_to_ps(self, seconds: float) -> int:
        return int(self._ns.seconds_to_ps(seconds))

    def run(self, vectors: dict, scalars: dict) -> dict:
        ns = self._ns
        spec = ns.Spec()
        for (kind, name), a in vectors.items():
            getattr(ns, f"fill_{kind}")(getattr(spec, name), a, len(a))
        for name, value in scalars.items():
            setattr(spec, name, value)
        started = time.perf_counter()
        res = ns.run_spec(spec)
        wall = time.perf_counter() - started
        return {
            **{n: list(getattr(res, n)) for n in _RESULT_F64_VECTORS},
            **{n: [int(x) for x in getattr(res, n)] for n in _RESULT_U64_VECTORS},
            **{n: int(getattr(res, n)) for n in _RESULT_U64},
            **{n: float(getattr(res, n)) for n in _RESULT_F64},
            "error": str(res.error), "sim_wall_seconds": wall,
        }


def _quiet_stderr():
    """Send fd 2 to a file while importing (the bindings print harmless linker noise); returns a restorer."""
    log = tempfile.TemporaryFile(mode="w+")
    saved = os.dup(2)
    os.dup2(log.fileno(), 2)

    def restore() -> str:
        os.dup2(saved, 2)
        os.close(saved)
        log.seek(0)
        return log.read()

    return restore


def load_jit_engine() -> tuple[JitEngine, str]:
    """Import the ns-3 bindings and compile engine.cc with cppyy. Returns (engine, ns3 version)."""
    # `from ns import ns` scans the working directory recursively for ns-3 libraries: import it from an empty
    # one, then go back and remove it (one leaked directory per worker before).
    previous, scratch = os.getcwd(), tempfile.mkdtemp(prefix="artist-ns3-")
    os.chdir(scratch)
    restore = _quiet_stderr()
    try:
        from ns import ns  # noqa: F401  (loads the ns-3 libraries into cppyy)
        import cppyy

        ns.Time.SetResolution(ns.Time.PS)
        cppyy.add_include_path(str(ENGINE_HEADER.parent))  # engine.cc includes "engine.h"
        ok = cppyy.cppdef(ENGINE_SOURCE.read_text())
    except Exception:
        noise = restore()
        raise RuntimeError(f"could not load ns-3 / compile {ENGINE_SOURCE}:\n{traceback.format_exc()}\n{noise[-4000:]}")
    finally:
        os.chdir(previous)
        shutil.rmtree(scratch, ignore_errors=True)
    noise = restore()
    if not ok:
        raise RuntimeError(f"cppyy could not compile {ENGINE_SOURCE}:\n{noise[-4000:]}")
    # A run may take minutes of C++ that touches no Python object: let other threads (the
    # lifeline, artist/lifeline.py) run meanwhile instead of waiting for the run to end.
    cppyy.gbl.artist_ns3.run_spec.__release_gil__ = True
    from importlib.metadata import version

    return JitEngine(cppyy.gbl.artist_ns3), version("ns3")


def load_engine(mode: str = "auto"):
    """Load the engine (once per process). Returns (engine, info for the parent's "ready" message)."""
    if mode not in ENGINE_MODES:
        raise ValueError(f"unknown ns-3 engine mode {mode!r}; known: {', '.join(ENGINE_MODES)}")
    started = time.perf_counter()
    toolchain = engine_build.find_toolchain() if mode != "jit" else None
    if toolchain is None and mode == "compiled":
        raise engine_build.EngineBuildError("no C++ compiler found ($CXX, else g++ on PATH) to build the ns-3 engine")
    if toolchain is None:
        engine, ns3_version = load_jit_engine()
        why = "asked for" if mode == "jit" else "no C++ compiler found ($CXX, else g++ on PATH)"
        info = {"engine": "jit", "engine_detail": f"cppyy.cppdef of {ENGINE_SOURCE.name} ({why})"}
    else:
        built = engine_build.build_library(engine_sources(), toolchain)
        engine, ns3_version = CompiledEngine(built.path), toolchain.ns3_version
        info = {"engine": "compiled", "engine_detail": str(built.path), "compiled_now": built.compiled,
                "compile_seconds": built.compile_seconds}
    info.update(ns3_version=ns3_version, engine_version=engine.version,
                load_seconds=time.perf_counter() - started)
    return engine, info


def run_request(engine, request: dict) -> dict:
    import numpy as np

    vectors = {}
    arrays = request["arrays"]
    for kind, names, dtype in _VECTORS:
        for name in names:
            a = np.ascontiguousarray(arrays[name], dtype=dtype)
            if len(a):  # cppyy cannot pass an empty buffer; the vector stays empty
                vectors[kind, name] = a
    scalars = {"nodes": int(request["nodes"]), "transport": TRANSPORTS[request["transport"]],
               **{name: request[name] for name in _SCALARS if name in request}}
    return engine.run(vectors, scalars)


def serve(engine, request: dict) -> dict:
    """One request: a simulation, or (key "timeline") exact reuse's timeline composed with ns-3's own
    time conversions (reuse.py)."""
    if "timeline" in request:
        from artist.network.ns3.reuse import compose_timeline

        return compose_timeline(request["timeline"], engine.seconds_to_ps, engine.ps_to_seconds)
    return run_request(engine, request)


def worker_main(conn, engine_mode: str = "auto") -> None:
    """Serve requests from the parent until it sends None or the pipe closes; exit at once if the
    parent dies (a run in progress would not notice the closed pipe before it ends)."""
    from artist import lifeline

    lifeline.arm()
    try:
        engine, info = load_engine(engine_mode)
    except Exception as exc:  # reported to the parent, which raises it
        conn.send(("error", str(exc)))
        return
    conn.send(("ready", info))
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        if request is None:
            return
        try:
            conn.send(("ok", serve(engine, request)))
        except Exception:
            conn.send(("error", traceback.format_exc()))
