"""The ns-3 worker process: imports ns-3 once, compiles the engine, serves runs.

Runs in a process started by runner.py (multiprocessing, spawn context). The
import happens from a fresh empty directory because the bindings scan the
working directory recursively for ns-3 libraries. Time resolution is set to
picoseconds right after the import, before any ns3::Time exists.

The process dies with its parent (artist/lifeline.py): a killed sweep worker
or user process must not leave ns-3 simulating. run_spec releases the GIL so
that the lifeline thread can act while the engine runs.
"""

from __future__ import annotations

import os
import tempfile
import time
import traceback
from pathlib import Path

ENGINE_SOURCE = Path(__file__).with_name("engine.cc")

# Spec fields filled from numpy arrays, by C++ element type.
_U32 = ("link_a", "link_b", "route_off", "route_link", "route_dir", "m_src", "m_dst", "m_route", "m_coll",
        "m_conn", "dep_off", "dep_idx", "c_first", "c_pred_off", "c_pred_idx")
_U64 = ("m_bytes",)
_F64 = ("link_bps", "link_delay_s", "m_alpha_s", "c_ready_s", "c_base_s")
TRANSPORTS = {"window": 0, "tcp": 1}
_SCALARS = ("mtu", "window_bytes", "ack_every", "queue_packets", "tcp_red_k_packets", "tcp_buffer_bytes",
            "tcp_min_rto_s", "debug_hang", "debug_crash")


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


def load_engine():
    """Import ns-3 and compile the engine (once per process). Returns (cppyy.gbl.artist_ns3, ns3 version)."""
    os.chdir(tempfile.mkdtemp(prefix="artist-ns3-"))
    restore = _quiet_stderr()
    try:
        from ns import ns  # noqa: F401  (loads the ns-3 libraries into cppyy)
        import cppyy

        ns.Time.SetResolution(ns.Time.PS)
        ok = cppyy.cppdef(ENGINE_SOURCE.read_text())
    except Exception:
        noise = restore()
        raise RuntimeError(f"could not load ns-3 / compile {ENGINE_SOURCE}:\n{traceback.format_exc()}\n{noise[-4000:]}")
    noise = restore()
    if not ok:
        raise RuntimeError(f"cppyy could not compile {ENGINE_SOURCE}:\n{noise[-4000:]}")
    # A run may take minutes of C++ that touches no Python object: let other threads (the
    # lifeline, artist/lifeline.py) run meanwhile instead of waiting for the run to end.
    cppyy.gbl.artist_ns3.run_spec.__release_gil__ = True
    from importlib.metadata import version

    return cppyy.gbl.artist_ns3, version("ns3")


def run_request(engine, request: dict) -> dict:
    import numpy as np

    spec = engine.Spec()
    arrays = request["arrays"]
    spec.nodes = int(request["nodes"])
    for names, fill, dtype in ((_U32, engine.fill_u32, np.uint32), (_U64, engine.fill_u64, np.uint64),
                               (_F64, engine.fill_f64, np.float64)):
        for name in names:
            a = np.ascontiguousarray(arrays[name], dtype=dtype)
            if len(a) == 0:
                continue  # cppyy cannot pass an empty buffer; the vector stays empty
            fill(getattr(spec, name), a, len(a))
    spec.transport = TRANSPORTS[request["transport"]]
    for name in _SCALARS:
        if name in request:
            setattr(spec, name, request[name])
    t0 = time.perf_counter()
    res = engine.run_spec(spec)
    wall = time.perf_counter() - t0
    return {
        "c_start_s": list(res.c_start_s), "c_end_s": list(res.c_end_s), "m_done_s": list(res.m_done_s),
        "node_rx_bytes": [int(x) for x in res.node_rx_bytes], "node_tx_bytes": [int(x) for x in res.node_tx_bytes],
        "data_packets": int(res.data_packets), "ack_packets": int(res.ack_packets),
        "device_transmissions": int(res.device_transmissions), "drops": int(res.drops), "events": int(res.events),
        "t0_s": float(res.t0_s), "error": str(res.error), "sim_wall_seconds": wall,
    }


def worker_main(conn) -> None:
    """Serve requests from the parent until it sends None or the pipe closes; exit at once if the
    parent dies (a run in progress would not notice the closed pipe before it ends)."""
    from artist import lifeline

    lifeline.arm()
    try:
        engine, ns3_version = load_engine()
    except Exception as exc:  # reported to the parent, which raises it
        conn.send(("error", str(exc)))
        return
    conn.send(("ready", {"ns3_version": ns3_version, "engine_version": str(engine.ENGINE_VERSION)}))
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        if request is None:
            return
        try:
            conn.send(("ok", run_request(engine, request)))
        except Exception:
            conn.send(("error", traceback.format_exc()))
