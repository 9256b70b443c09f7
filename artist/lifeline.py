"""Worker processes that die with the process that started them.

A sweep's runs execute in loky worker processes (joblib), a latency table's rows
too, and a worker running the ns-3 backend starts its own ns-3 child process.
When the sweep's main process is killed (kill -9, the OOM killer, a crashed
terminal) nothing tells those processes: they were seen simulating on, holding
CPU, minutes later. `arm()`, called by such a worker, starts a daemon thread
that exits the worker (os._exit) within ~POLL_INTERVAL_S of its parent's death.

The mechanism, and why:
- Polling os.getppid() against the parent pid recorded at arming time. When a
  process dies the kernel re-parents its children (to init or the nearest
  "subreaper"), so getppid() changes: this works for every way a child can be
  started (fork, spawn, forkserver, loky's fork+exec) and costs one system call
  per poll.
- Not prctl(PR_SET_PDEATHSIG) alone: the signal fires when the *thread* that
  forked the child exits, not the process. loky (and multiprocessing) may start
  workers from a helper thread, and Ns3Worker is started by whichever thread
  first needs it (a Dask worker's thread-pool thread, say); such a thread may
  end while its process lives on, and the worker would be killed under a live
  parent.
- os._exit, not sys.exit: it must work from a thread and must not wait for the
  run in progress or for atexit handlers. What the worker was doing is lost,
  which is the point; the latency cache is SQLite (crash-safe) and the sweep's
  store only holds runs the driver finished writing.
- The thread needs the GIL to act. Pure-Python work (the simulator) hands it
  over every few milliseconds; a long C++ call that keeps it (the ns-3 engine)
  must release it, as worker.py does for run_spec.

Where it is armed, and where it must never be: only in processes some other
process started as its worker, never in the user's own process. The sweep
driver itself runs the runs with -j 1, and a sweep started under nohup must
outlive the shell that started it. A process counts as a worker when
multiprocessing.parent_process() is not None: multiprocessing (fork, spawn,
forkserver) and loky fill it in every child they start, and nothing else does
(checked: loky workers, the ns-3 worker, Dask's nanny-started workers; a
process started from a shell, by subprocess or by nohup has None). So callers
can arm unconditionally at the start of their task; in a main process arm()
does nothing and returns False.

On the cluster executors: a Dask worker process started by a Nanny has a
parent_process (the nanny's process), so it is armed there; Dask already ends
such a worker when its nanny's process goes away (distributed/process.py,
_immediate_exit_when_closed), so this changes nothing. Ray starts its workers
with subprocess from the raylet: parent_process() is None and nothing is armed.

POSIX only (Linux is the target; macOS re-parents the same way). Elsewhere
(Windows: getppid() never changes there) arm() does nothing.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time

POLL_INTERVAL_S = 0.5
EXIT_CODE = 70  # the worker's exit status when its parent died (EX_SOFTWARE; any nonzero would do)

_lock = threading.Lock()
_armed_in: int | None = None  # pid of the process the thread runs in (a forked child inherits this, not the thread)


def is_worker_process() -> bool:
    """True in a process started by multiprocessing or loky (a worker); False in the user's process."""
    return multiprocessing.parent_process() is not None


def armed() -> bool:
    """Whether this process has a lifeline thread watching its parent."""
    return _armed_in == os.getpid()


def arm(poll_interval_s: float = POLL_INTERVAL_S) -> bool:
    """Exit this process when its parent dies, and leave Ctrl-C to the parent. Idempotent (one thread per
    process); cheap to call at the start of every task. Does nothing and returns False in a main process (one that no
    multiprocessing/loky parent started) or off POSIX; returns True when armed."""
    global _armed_in
    if os.name != "posix" or not is_worker_process():
        return False
    with _lock:
        if _armed_in == os.getpid():
            return True
        watched = os.getppid()
        # The multiprocessing parent. It differs from the OS parent under the forkserver start
        # method (the OS parent is then the fork server, which exits with the parent, so watching
        # it is enough), or when the parent died before this call and we were re-parented: then
        # getppid() already names the new parent and would never change, so look at the pid too.
        parent = multiprocessing.parent_process().pid
        also = parent if parent is not None and parent != watched else None
        thread = threading.Thread(target=_watch, args=(watched, also, poll_interval_s), daemon=True,
                                  name="artist-lifeline")
        thread.start()
        _armed_in = os.getpid()
        # Ctrl-C reaches the whole process group; the process that started this worker answers it
        # (one summary line, then it stops its workers), so a worker printing its own
        # KeyboardInterrupt traceback would only bury that line. signal() works in the main thread
        # only: a worker running tasks elsewhere (a Dask thread) keeps its handler.
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    return True


def _watch(watched: int, also: int | None, poll_interval_s: float) -> None:
    while True:
        if os.getppid() != watched or (also is not None and not _alive(also)):
            os._exit(EXIT_CODE)
        time.sleep(poll_interval_s)


def _alive(pid: int) -> bool:
    """Whether pid names a live process (a zombie, dead but not yet reaped, counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return stat[stat.rindex(b")") + 2:][:1] not in (b"Z", b"X")  # field 3, after "(comm)"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc (macOS): ask the kernel; a zombie counts as alive there
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
