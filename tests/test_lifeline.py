"""Worker processes die with the process that started them (artist/lifeline.py): a kill -9 of a
sweep must not leave its loky workers, nor the ns-3 worker they started, simulating on.

The processes under test are real ones, killed with SIGKILL; every wait has a timeout and every
process a test started is killed in a finally block, so a failing test cannot hang or leak."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from artist import lifeline
from conftest import REPO

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")

GONE_WITHIN_S = 10.0


# --------------------------------------------------------------------------- /proc helpers


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (index 0 = state, 1 = ppid, 19 = starttime)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text[text.rindex(")") + 2:].split()


def _identity(pid: int) -> tuple[int, str] | None:
    """(pid, start time): names one process even if its pid is reused later."""
    fields = _stat(pid)
    return None if fields is None else (pid, fields[19])


def _alive(ident: tuple[int, str]) -> bool:
    fields = _stat(ident[0])
    # A zombie has exited (it waits for whoever adopted it to reap it); a new start time is a reused pid.
    return fields is not None and fields[19] == ident[1] and fields[0] not in ("Z", "X")


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields is not None and int(fields[1]) == pid:
                out.append(int(entry.name))
    return out


def _cpu_seconds(pid: int) -> float:
    fields = _stat(pid)
    return 0.0 if fields is None else (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _wait_gone(idents, timeout_s: float) -> tuple[list, float]:
    """(the processes still alive after timeout_s, seconds waited)."""
    started = time.monotonic()
    while True:
        alive = [i for i in idents if _alive(i)]
        waited = time.monotonic() - started
        if not alive or waited > timeout_s:
            return alive, waited
        time.sleep(0.05)


def _kill_all(idents) -> None:
    for ident in idents:
        if _alive(ident):
            try:
                os.kill(ident[0], signal.SIGKILL)
            except ProcessLookupError:
                pass


def _kill_session(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(timeout=30)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


# --------------------------------------------------------------------------- the lifeline itself

# A main process that starts a chain of `depth` workers (child, grandchild, ...) with multiprocessing
# spawn; each arms the lifeline, appends its pid to the report file, starts the next, and sleeps.
CHAIN = textwrap.dedent("""
    import multiprocessing as mp, os, sys, time
    from artist import lifeline

    def node(depth, report):
        armed = lifeline.arm()
        if depth > 1:
            mp.get_context("spawn").Process(target=node, args=(depth - 1, report)).start()
        with open(report, "a") as f:
            f.write(f"{os.getpid()} {armed}\\n")
        time.sleep(600)

    if __name__ == "__main__":
        depth, report = int(sys.argv[1]), sys.argv[2]
        print(lifeline.arm(), lifeline.armed(), flush=True)  # a main process: refused
        mp.get_context("spawn").Process(target=node, args=(depth, report)).start()
        time.sleep(600)
""")


@pytest.mark.parametrize("depth", [1, 2], ids=["child", "child-and-grandchild"])
def test_workers_exit_when_the_process_that_started_them_is_killed(tmp_path, depth):
    script, report = tmp_path / "chain.py", tmp_path / "pids.txt"
    script.write_text(CHAIN)
    proc = subprocess.Popen([sys.executable, str(script), str(depth), str(report)], stdout=subprocess.PIPE,
                            text=True, start_new_session=True, cwd=tmp_path)
    idents = []
    try:
        assert proc.stdout.readline().split() == ["False", "False"]  # not armed in the main process
        deadline = time.monotonic() + 60
        lines = []
        while len(lines) < depth and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
            lines = report.read_text().splitlines() if report.exists() else []
        assert len(lines) == depth, f"workers did not start: {lines}"
        assert all(line.split()[1] == "True" for line in lines)  # armed in every worker
        idents = [_identity(int(line.split()[0])) for line in lines]
        assert None not in idents
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        alive, waited = _wait_gone(idents, GONE_WITHIN_S)
        assert alive == [], f"still alive {waited:.1f} s after the kill: {alive}"
        # One poll interval per generation, plus the time to start Python threads on a busy machine.
        assert waited < depth * lifeline.POLL_INTERVAL_S + 3.0
    finally:
        _kill_session(proc)
        _kill_all(i for i in idents if i is not None)


def test_worker_lives_on_while_its_parent_lives(tmp_path):
    script, report = tmp_path / "chain.py", tmp_path / "pids.txt"
    script.write_text(CHAIN)
    proc = subprocess.Popen([sys.executable, str(script), "1", str(report)], stdout=subprocess.PIPE, text=True,
                            start_new_session=True, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while not (report.exists() and report.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        ident = _identity(int(report.read_text().split()[0]))
        time.sleep(4 * lifeline.POLL_INTERVAL_S)
        assert _alive(ident)
    finally:
        _kill_session(proc)


def test_not_armed_in_the_main_process():
    """The user's own process (pytest here, the sweep driver with -j 1, a sweep under nohup) never
    gets a lifeline: it must not exit because the shell that started it did."""
    assert not lifeline.is_worker_process()
    assert lifeline.arm() is False
    assert not lifeline.armed()
    assert "artist-lifeline" not in {t.name for t in threading.enumerate()}


def test_sweep_with_one_job_runs_in_the_main_process_unarmed(tmp_path):
    from artist.sweep.run import run_sweep
    from artist.sweep.spec import load_sweep_spec
    from sweep_helpers import tiny_spec

    report = run_sweep(load_sweep_spec(tiny_spec(tmp_path)), tmp_path / "out", n_jobs=1, progress=False,
                       plots=False, cache_dir=tmp_path / "cache")
    assert report.failed == [] and len(report.executed) == 2
    assert not lifeline.armed()
    assert "artist-lifeline" not in {t.name for t in threading.enumerate()}


def _row_in_worker(spec, topology, model, shape):
    from artist.latency_table import _row_task

    _row_task(spec, topology, model, shape)
    return os.getpid(), lifeline.armed(), lifeline.arm()


def test_latency_table_rows_arm_the_lifeline_in_joblib_workers_only():
    from joblib import Parallel, delayed

    from artist.latency_table import _row_task, check_shapes
    from artist.network.stack import CommSpec
    from artist.topology import load_topology
    from artist.workload import load_models

    topology = load_topology(REPO / "topologies" / "dally-3tier.yaml")
    model = load_models()["resnet18"]
    shapes = check_shapes(topology, [[[2]], [[8]], [[8, 8]], [[4, 4]]])
    _row_task(CommSpec(), topology, model, shapes[0])  # --jobs 1: in this process, not armed
    assert not lifeline.armed()
    out = Parallel(n_jobs=2, backend="loky")(delayed(_row_in_worker)(CommSpec(), topology, model, s)
                                             for s in shapes)
    assert all(pid != os.getpid() and armed and again for pid, armed, again in out)


# --------------------------------------------------------------------------- the real thing

# Two 3000-job analytical runs per worker; one run takes ~28 s on the 2-core reference machine
# (4 runs: 113 s at -j 1), so both workers are mid-run when the sweep is killed.
SWEEP = """\
name: lifeline
topology: {topology}
racks: [2]
policies: [fifo, tiresias]
workloads:
  - label: batch-3000
    spec: batch:n=3000
seeds: [0, 1]
comm: analytical
simulator:
  round_interval_s: 300
  restore_seconds: 30
"""


def _artist() -> list[str]:
    script = Path(sys.executable).with_name("artist")
    return [str(script)] if script.exists() else [sys.executable, "-m", "artist.cli"]


def test_sigkilled_sweep_leaves_no_worker_running(tmp_path):
    """`artist sweep SPEC -j 2` killed with SIGKILL while both loky workers simulate: every process it
    started (workers, loky's resource trackers) is gone within seconds."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(SWEEP.format(topology=REPO / "topologies" / "dally-3tier.yaml"))
    env = {**os.environ, "ARTIST_CACHE_DIR": str(tmp_path / "cache")}
    cmd = [*_artist(), "sweep", str(spec), "-j", "2", "--quiet", "--no-plots", "--out", str(tmp_path / "out")]
    log = tmp_path / "stderr.txt"
    with log.open("w") as err:
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)
    idents = []
    try:
        # Wait until two loky workers exist and have each spent CPU time past their imports (in a run).
        deadline = time.monotonic() + 90
        workers = []
        while time.monotonic() < deadline and proc.poll() is None:
            workers = [p for p in _children(proc.pid)
                       if "loky" in _cmdline(p) and "resource_tracker" not in _cmdline(p)]
            if len(workers) == 2 and all(_cpu_seconds(p) > 3.0 for p in workers):
                break
            time.sleep(0.1)
        assert proc.poll() is None, log.read_text()
        assert len(workers) == 2 and all(_cpu_seconds(p) > 3.0 for p in workers), "workers never got busy"
        idents = [i for i in map(_identity, _children(proc.pid)) if i is not None]
        assert len(idents) >= 2
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        alive, waited = _wait_gone(idents, GONE_WITHIN_S)
        assert alive == [], f"still alive {waited:.1f} s after kill -9 of the sweep: " + \
            ", ".join(f"{pid} {_cmdline(pid)[:100]}" for pid, _ in alive)
        print(f"all {len(idents)} children of the sweep gone {waited:.2f} s after kill -9")
        assert not (tmp_path / "out" / "results.csv").exists()  # it really was killed mid-sweep
    finally:
        _kill_session(proc)
        _kill_all(idents)


@pytest.mark.ns3
def test_ns3_worker_exits_when_its_parent_is_killed_mid_simulation(tmp_path):
    """The ns-3 worker process dies with the process that started it (a loky worker, or the user's
    process at -j 1), even while the engine is inside a run that never ends (the watchdog test hook):
    the run releases the GIL so that the lifeline thread can act."""
    pytest.importorskip("artist.network.ns3")
    script = tmp_path / "hang.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        from artist.network.ns3 import Ns3Model, Ns3Worker
        from artist.placement import placement_from_shape
        from artist.topology import load_topology

        if __name__ == "__main__":
            worker = Ns3Worker()
            worker.ensure_started()
            print(worker.pid, flush=True)
            dally = load_topology({str(REPO / "topologies" / "dally-3tier.yaml")!r})
            Ns3Model(dally, worker=worker, debug_hang=True, timeout_s=600).collective_seconds(
                placement_from_shape(dally, [[2]]), 1_000_000)
    """))
    env = {**os.environ, "ARTIST_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
                            start_new_session=True)
    idents = []
    try:
        line = proc.stdout.readline()  # ns-3 import and engine compile: ~20-35 s
        assert line.strip().isdigit(), "the ns-3 worker did not start"
        ident = _identity(int(line))
        idents = [ident]
        time.sleep(2.0)  # the hanging run starts right after the pid is printed: by now it loops in run_spec
        assert _alive(ident)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        alive, waited = _wait_gone(idents, GONE_WITHIN_S)
        assert alive == [], f"ns-3 worker still alive {waited:.1f} s after its parent was killed"
    finally:
        _kill_session(proc)
        _kill_all(idents)
