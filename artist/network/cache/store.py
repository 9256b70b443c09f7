"""The SQLite file behind ``Cached``: answers, in-flight claims, counters, and the file's checks.

Store. One SQLite file in WAL mode under ``$ARTIST_CACHE_DIR`` (else
``$XDG_CACHE_HOME/artist``, else ``~/.cache/artist``), readable with any SQLite
client (table ``entries``). Every write is one ``BEGIN IMMEDIATE`` transaction,
so a process killed mid-write leaves either the whole entry or nothing. Readers
never take the write lock. SQLite's WAL needs shared memory between its users:
the file must live on a local file system (not NFS); several processes of one
machine are fine.

In-flight de-duplication (our choice). Before simulating a missing key a
process inserts a claim row into ``inflight`` (owner host, pid, the pid's start
time from /proc, claim time) inside a ``BEGIN IMMEDIATE`` transaction that
first re-checks ``entries`` and any existing claim; the primary key on ``key``
makes the claim atomic. Other askers of that key poll ``entries`` (read-only)
until the value lands. A claim is stale, and is taken over, when its owner is
on this host and is gone (no such pid, a zombie, or the pid now belongs to a
process started at another time), or when it is older than ``claim_ttl_s``
(the only test possible for an owner on another host, and a backstop against
an owner stuck forever). We do not use a heartbeat thread: a backend that runs
C++ in-process through cppyy holds the GIL while it runs, so a Python heartbeat
would stop beating during exactly the long simulations it is meant to cover,
while the owner's liveness can be read from outside at any time.

Damage. A file that SQLite cannot read as the cache (not a database, a damaged
page, another schema version, tables lacking columns) raises ``CacheUnusable``,
an InputError naming the file and the recovery (``artist cache verify`` to see,
``artist cache clear`` to start afresh), whichever operation meets the damage
first; an entry whose stored result does not parse raises ``UnreadableEntry``.
``check_cache_usable`` looks at the whole file once, for a driver to call before
it starts any run; ``inspect_cache`` is what ``artist cache verify`` reports.

Counters (hits, misses, simulated and saved wall seconds) live in the store.
Hits are counted in memory and added to the store with the next write, every
few seconds, on ``flush()`` / ``close()`` and at interpreter exit, so that a
hit costs no write transaction.
"""

from __future__ import annotations

import atexit
import functools
import json
import math
import os
import random
import shlex
import socket
import sqlite3
import threading
import time
import weakref
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import quote

from artist.errors import InputError
from artist.jsonkey import canonical_json
from artist.network.base import CommResult
from artist.placement import Placement, shape_to_text

CACHE_FILE_NAME = "latency-cache.sqlite"
# Bump SCHEMA_VERSION when the tables change (KEY_VERSION, in key.py, when the key material does).
SCHEMA_VERSION = 1

DEFAULT_BUSY_TIMEOUT_S = 60.0
DEFAULT_CLAIM_TTL_S = 3600.0
MAX_CLOCK_SKEW_S = 300.0  # hosts sharing a cache agree on the time within minutes (NTP keeps them within ms)
DEFAULT_POLL_INTERVAL_S = 0.02
COUNTER_FLUSH_INTERVAL_S = 2.0
COUNTER_NAMES = ("hits", "misses", "simulated_wall_seconds", "saved_wall_seconds")
NS3_BACKEND = "ns3"  # Ns3Model.name: the entries that cost real simulation time to rebuild
# SQLite side files of one database: WAL, its shared-memory index, the rollback journal
# (present only if the file was ever used outside WAL mode). The store keeps its claims in
# the ``inflight`` table, so it has no lock or claim files of its own.
SIDE_FILE_SUFFIXES = ("-wal", "-shm", "-journal")

ENTRY_COLUMNS = (
    "key", "backend", "backend_version", "ns3_version", "model_name", "model_signature", "shape", "gpus", "tier",
    "exposed_seconds", "collective_seconds", "wall_seconds", "created_at", "result_json", "key_json",
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entries (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    backend_version TEXT NOT NULL,
    ns3_version TEXT NOT NULL,
    model_name TEXT NOT NULL,
    model_signature TEXT NOT NULL,
    shape TEXT NOT NULL,
    gpus INTEGER NOT NULL,
    tier TEXT NOT NULL,
    exposed_seconds REAL NOT NULL,
    collective_seconds REAL NOT NULL,
    wall_seconds REAL NOT NULL,
    created_at TEXT NOT NULL,
    result_json TEXT NOT NULL,
    key_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS inflight (
    key TEXT PRIMARY KEY,
    token TEXT NOT NULL,
    owner_host TEXT NOT NULL,
    owner_pid INTEGER NOT NULL,
    owner_start TEXT NOT NULL,
    claimed_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value REAL NOT NULL);
"""



# --------------------------------------------------------------------------- where


def default_cache_dir() -> Path:
    if os.environ.get("ARTIST_CACHE_DIR"):
        return Path(os.environ["ARTIST_CACHE_DIR"]).expanduser()
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "artist"
    return Path.home() / ".cache" / "artist"


def default_cache_path() -> Path:
    return default_cache_dir() / CACHE_FILE_NAME


# --------------------------------------------------------------------------- process liveness


_HOST = socket.gethostname()


def _process_start(pid: int) -> str:
    """Start time of a process in clock ticks since boot (Linux /proc), '' where unknown."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return fields[19]  # field 22 of stat(5); fields[0] is field 3
    except (OSError, IndexError):
        return ""


_OWN_START: dict[int, str] = {}


def _own_process_start() -> str:
    """_process_start of this process, read once per process (by pid: a forked child reads its own):
    every claim records it, and a /proc read per claim cost ~1 ms on a loaded machine."""
    pid = os.getpid()
    start = _OWN_START.get(pid)
    if start is None:
        start = _OWN_START[pid] = _process_start(pid)
    return start


def _process_state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def owner_is_gone(host: str, pid: int, start: str) -> bool:
    """True when we can tell that a claim's owner process no longer exists."""
    if host != _HOST:
        return False  # cannot tell; the claim's age decides
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # exists, belongs to another user
    if _process_state(pid) == "Z":
        return True  # killed, not yet reaped
    current = _process_start(pid)
    return bool(start and current and current != start)


# --------------------------------------------------------------------------- store


@dataclass(frozen=True)
class CachedTiming:
    """What one entry holds: every graph's node durations, in the order of the key's graphs,
    and where they came from. exposed_seconds (how long the steps run past their last compute
    node; for a DDP step, its exposed communication) and collective_seconds (the communication
    nodes' durations summed) are kept as columns too, for people reading the file."""

    node_seconds: tuple[tuple[float, ...], ...]
    exposed_seconds: float
    collective_seconds: float
    backend: str
    calibrated: bool = False
    packets: int = 0
    details: dict = field(default_factory=dict, compare=False, hash=False)

    def provenance(self) -> CommResult:
        return CommResult(self.backend, self.calibrated, packets=self.packets, details=dict(self.details))


@dataclass(frozen=True)
class StoredAnswer:
    result: CachedTiming  # as the inner model answered
    wall_seconds: float  # what producing it cost
    created_at: str


@dataclass(frozen=True)
class Claim:
    key: str
    token: str


WAIT = "wait"  # another live process holds the claim


def _iso(moment: datetime) -> str:
    """created_at text: fixed width (the year zero-padded, which strftime does not promise before
    year 1000), so text order is time order."""
    return f"{moment.year:04d}-{moment.strftime('%m-%dT%H:%M:%S.%f')}Z"


def _utc_now() -> str:
    return _iso(datetime.now(timezone.utc))


def created_before(age_seconds: float, now: datetime | None = None) -> str:
    """The created_at text of the moment age_seconds before now: entries older than the age sort below it."""
    now = now or datetime.now(timezone.utc)
    try:
        return _iso(now - timedelta(seconds=age_seconds))
    except OverflowError:  # before year 1: every dated entry is younger
        return _iso(datetime.min)


def result_to_json(result: CachedTiming) -> str:
    return canonical_json({
        "exposed_seconds": result.exposed_seconds, "collective_seconds": result.collective_seconds,
        "backend": result.backend, "calibrated": result.calibrated,
        "node_seconds": [list(graph) for graph in result.node_seconds],
        "packets": result.packets, "details": result.details,
    })


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# What result_from_json needs of each field: a damaged entry must fail here, by name,
# not later inside the simulator.
_RESULT_FIELDS = {
    "exposed_seconds": ("a finite number", _is_number),
    "collective_seconds": ("a finite number", _is_number),
    "backend": ("text", lambda v: isinstance(v, str)),
    "calibrated": ("true or false", lambda v: isinstance(v, bool)),
    "node_seconds": ("a list of lists of finite numbers",
                     lambda v: isinstance(v, list) and all(isinstance(g, list) and all(map(_is_number, g)) for g in v)),
    "packets": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "details": ("an object", lambda v: isinstance(v, dict)),
}


def result_from_json(text: str) -> CachedTiming:
    """The answer stored as text; ValueError saying what is wrong when it cannot be read back."""
    try:
        d = json.loads(text)
    except (TypeError, ValueError) as exc:  # TypeError: a number or NULL where text should be
        raise ValueError(f"result_json is not JSON ({exc})") from None
    if not isinstance(d, dict):
        raise ValueError("result_json is not a JSON object")
    for name, (kind, ok) in _RESULT_FIELDS.items():
        if name not in d:
            raise ValueError(f"result_json lacks field {name!r}")
        if not ok(d[name]):
            raise ValueError(f"result_json field {name!r} is not {kind}")
    return CachedTiming(tuple(tuple(float(x) for x in g) for g in d["node_seconds"]), d["exposed_seconds"],
                        d["collective_seconds"], d["backend"], d["calibrated"], d["packets"], d["details"])


def stored_answer_from_row(result_json, wall_seconds, created_at) -> StoredAnswer:
    """One entry's (result_json, wall_seconds, created_at) columns; ValueError when they cannot be read back.
    SQLite's column types are advisory, so a damaged row can hold text where a number belongs."""
    result = result_from_json(result_json)
    if not _is_number(wall_seconds):
        raise ValueError(f"wall_seconds is not a finite number ({wall_seconds!r})")
    if not isinstance(created_at, str):
        raise ValueError(f"created_at is not text ({created_at!r})")
    return StoredAnswer(result, float(wall_seconds), created_at)


# --------------------------------------------------------------------------- damage


def cache_command(path: str | Path, action: str) -> str:
    """`artist cache <action>` as the user would type it to act on this file."""
    path = Path(path)
    if path.name == CACHE_FILE_NAME and path.resolve() != default_cache_path().resolve():
        return f"`artist cache --cache-dir {shlex.quote(str(path.parent))} {action}`"
    return f"`artist cache {action}`"


class CacheUnusable(InputError):
    """The file cannot be opened as the latency cache: not SQLite, damaged, another schema version.
    ``detail`` says what is wrong without the recovery advice."""

    def __init__(self, path: str | Path, detail: str, where: str | None = None, fix: str | None = None):
        self.detail = detail
        fix = fix or (f"run {cache_command(path, 'verify')} to see what is wrong, "
                      f"or {cache_command(path, 'clear')} to start afresh")
        super().__init__(str(path), where, f"{detail}: {fix}")


class UnreadableEntry(InputError):
    """One entry's stored result does not parse or lacks a field; the rest of the file is fine."""

    def __init__(self, path: str | Path, key: str, detail: str):
        self.key = key
        self.detail = detail
        super().__init__(str(path), f"entry {key}",
                         f"cannot be read back ({detail}): run {cache_command(path, 'clear --unreadable')} "
                         "to drop the unreadable entries (they are simulated again when next asked)")


_DAMAGE_CODES = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB
# Trouble with the file's surroundings, not its content: busy past the timeout, read-only,
# I/O error, disk full, cannot open, no permission.
_ENVIRONMENT_CODES = {3, 5, 6, 8, 10, 13, 14}


def _sqlite_code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)  # Python >= 3.11; extended codes carry the primary in the low byte
    return None if code is None else code & 0xFF


def is_damage(exc: sqlite3.Error) -> bool:
    code = _sqlite_code(exc)
    if code is not None:
        return code in _DAMAGE_CODES
    return "malformed" in str(exc) or "not a database" in str(exc)


def _is_environment(exc: sqlite3.Error) -> bool:
    code = _sqlite_code(exc)
    if code is not None:
        return code in _ENVIRONMENT_CODES
    text = str(exc)
    return any(w in text for w in ("locked", "readonly", "disk I/O", "is full", "unable to open", "permission"))


def _sqlite_errors_named(method):
    """A store method whose SQLite damage or environment failure becomes one InputError naming the file;
    anything else (a bug in our SQL) stays as it is."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as exc:
            if is_damage(exc):
                raise CacheUnusable(self.path, f"damaged latency cache ({exc})") from exc
            if _is_environment(exc):
                raise InputError(str(self.path), None, f"cannot use the latency cache ({exc})") from exc
            raise

    return wrapper


# Columns each table must have; a file with a table lacking one was written by something else.
_REQUIRED_COLUMNS = {
    "meta": ("name", "value"),
    "entries": ENTRY_COLUMNS,
    "inflight": ("key", "token", "owner_host", "owner_pid", "owner_start", "claimed_at"),
    "counters": ("name", "value"),
}


def _schema_problem(conn: sqlite3.Connection) -> tuple[str, str] | None:
    """(where, what) of the first required table column that is missing; a missing table is no
    problem (opening the store creates it)."""
    for table, columns in _REQUIRED_COLUMNS.items():
        have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        if not have:
            continue
        for column in columns:
            if column not in have:
                return f"table {table}", f"lacks column {column!r}: not a latency cache of this version"
    return None


def _schema_version_problem(version: str | None) -> str | None:
    if version is None or version == str(SCHEMA_VERSION):
        return None
    return f"cache written with schema {version}, this version reads {SCHEMA_VERSION}"


_LIVE_STORES: "weakref.WeakSet[LatencyStore]" = weakref.WeakSet()


@atexit.register
def _flush_live_stores():
    for store in list(_LIVE_STORES):
        try:
            store.flush()
        except Exception:  # noqa: BLE001 - exit must not fail on a store that went away
            pass


class LatencyStore:
    """The SQLite file behind Cached. One connection per process and thread, opened lazily,
    so a store can be pickled to joblib workers or used after fork."""

    def __init__(self, path: str | Path | None = None, *, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
                 claim_ttl_s: float = DEFAULT_CLAIM_TTL_S, poll_interval_s: float = DEFAULT_POLL_INTERVAL_S):
        self.path = Path(path) if path is not None else default_cache_path()
        self.busy_timeout_s = busy_timeout_s
        self.claim_ttl_s = claim_ttl_s
        self.poll_interval_s = poll_interval_s
        self._local = threading.local()
        self._lock = threading.Lock()
        self._pending = dict.fromkeys(COUNTER_NAMES, 0.0)
        self._pending_pid = os.getpid()
        self._last_flush = time.monotonic()
        _LIVE_STORES.add(self)

    def _forget_parents_counts(self) -> None:
        """After a fork the child holds a copy of the parent's unwritten counts; the parent
        writes them, so the child must not."""
        if self._pending_pid != os.getpid():
            self._pending = dict.fromkeys(COUNTER_NAMES, 0.0)
            self._pending_pid = os.getpid()

    def __getstate__(self):
        self.flush()
        return {"path": self.path, "busy_timeout_s": self.busy_timeout_s, "claim_ttl_s": self.claim_ttl_s,
                "poll_interval_s": self.poll_interval_s}

    def __setstate__(self, state):
        self.__init__(state["path"], busy_timeout_s=state["busy_timeout_s"], claim_ttl_s=state["claim_ttl_s"],
                      poll_interval_s=state["poll_interval_s"])

    # ---- connection ---------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            return conn
        self._local.conn = self._open()
        self._local.pid = os.getpid()
        return self._local.conn

    def _open(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(str(self.path.parent), None,
                             f"cannot create the cache directory ({exc.strerror})") from exc
        # Switching a new file to WAL takes an exclusive lock for which SQLite does not
        # always call the busy handler, so workers opening a fresh cache at the same
        # moment can see "database is locked": retry those until the busy timeout.
        deadline = time.monotonic() + self.busy_timeout_s
        while True:
            try:
                return self._open_once()
            except InputError as exc:
                locked = isinstance(exc.__cause__, sqlite3.OperationalError) and "locked" in str(exc.__cause__)
                if not locked or time.monotonic() > deadline:
                    raise
                time.sleep(0.01 + 0.04 * random.random())

    def _open_once(self) -> sqlite3.Connection:
        if self.path.exists() and not self.path.is_file():  # SQLite would only say "unable to open"
            raise InputError(str(self.path), None, "a directory or special file, not the cache file: "
                                                   "move it away or point ARTIST_CACHE_DIR elsewhere")
        try:
            conn = sqlite3.connect(str(self.path), timeout=self.busy_timeout_s, isolation_level=None)
        except sqlite3.DatabaseError as exc:  # e.g. no permission to read it
            raise InputError(str(self.path), None, f"cannot open the latency cache ({exc})") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise InputError(str(self.path), None, f"cannot switch the cache to WAL mode (got {mode!r})")
            # WAL + NORMAL: a commit survives a process crash; only an OS crash or power loss
            # may lose the last commits, never consistency. Acceptable for a cache.
            conn.execute("PRAGMA synchronous = NORMAL")
            with _transaction(conn):
                for statement in filter(str.strip, _SCHEMA.split(";")):
                    conn.execute(statement)
                problem = _schema_problem(conn)
                if problem is not None:
                    raise CacheUnusable(self.path, problem[1], where=problem[0])
                row = conn.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
                if row is None:
                    conn.execute("INSERT INTO meta(name, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                elif _schema_version_problem(row[0]):
                    raise CacheUnusable(self.path, _schema_version_problem(row[0]), where="table meta, schema_version",
                                        fix=f"run {cache_command(self.path, 'clear')} to start afresh "
                                            "or point ARTIST_CACHE_DIR elsewhere")
        except sqlite3.DatabaseError as exc:
            conn.close()
            if is_damage(exc):
                raise CacheUnusable(self.path, f"damaged latency cache ({exc})") from exc
            raise InputError(str(self.path), None, f"cannot open the latency cache ({exc})") from exc
        except InputError:
            conn.close()
            raise
        return conn

    def close(self) -> None:
        self.flush()
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            conn.close()
        self._local = threading.local()

    # ---- reads --------------------------------------------------------------
    def _answer_from_row(self, key: str, row) -> StoredAnswer:
        try:
            return stored_answer_from_row(*row)
        except ValueError as exc:
            raise UnreadableEntry(self.path, key, str(exc)) from None

    @_sqlite_errors_named
    def get(self, key: str) -> StoredAnswer | None:
        row = self._conn().execute(
            "SELECT result_json, wall_seconds, created_at FROM entries WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return self._answer_from_row(key, row)

    @_sqlite_errors_named
    def claim_holder(self, key: str):
        return self._conn().execute(
            "SELECT owner_host, owner_pid, owner_start, claimed_at FROM inflight WHERE key = ?", (key,)).fetchone()

    # ---- claims -------------------------------------------------------------
    @_sqlite_errors_named
    def get_or_claim(self, key: str) -> StoredAnswer | Claim | str:
        """The stored answer, or a claim for us to simulate it, or WAIT while a live owner works."""
        conn = self._conn()
        with _transaction(conn):
            row = conn.execute("SELECT result_json, wall_seconds, created_at FROM entries WHERE key = ?",
                               (key,)).fetchone()
            if row is not None:
                return self._answer_from_row(key, row)
            holder = conn.execute("SELECT owner_host, owner_pid, owner_start, claimed_at FROM inflight WHERE key = ?",
                                  (key,)).fetchone()
            if holder is not None:
                if not self._is_stale(holder):
                    return WAIT
                conn.execute("DELETE FROM inflight WHERE key = ?", (key,))
            token = os.urandom(16).hex()
            conn.execute("INSERT INTO inflight(key, token, owner_host, owner_pid, owner_start, claimed_at) "
                         "VALUES (?, ?, ?, ?, ?, ?)",
                         (key, token, _HOST, os.getpid(), _own_process_start(), time.time()))
            return Claim(key, token)

    def _is_stale(self, holder) -> bool:
        host, pid, start, claimed_at = holder
        age = time.time() - claimed_at
        # a claim dated ahead of this clock by more than any clock skew (a wrong clock, a bad row) would never
        # age: it is stale, as an old one is
        return owner_is_gone(host, pid, start) or age > self.claim_ttl_s or age < -MAX_CLOCK_SKEW_S

    @_sqlite_errors_named
    def release(self, claim: Claim) -> None:
        conn = self._conn()
        with _transaction(conn):
            conn.execute("DELETE FROM inflight WHERE key = ? AND token = ?", (claim.key, claim.token))

    # ---- writes -------------------------------------------------------------
    @_sqlite_errors_named
    def put(self, claim: Claim, material: dict, model_name: str, placement: Placement | None, result: CachedTiming,
            wall_seconds: float, count_miss: bool = True) -> str:
        """Store one answer, drop our claim and count the miss, all in one transaction.
        If another process stored the key meanwhile (it took over a claim it judged stale),
        the first answer stays. count_miss=False: a part of an answer (ns-3 exact reuse's collectives
        alone), not a question anyone asked."""
        identity = material["backend"]
        row = {
            "key": claim.key,
            "backend": result.backend,
            "backend_version": str(identity.get("version", "")),
            "ns3_version": str(identity.get("ns3_version", "")),
            "model_name": model_name,
            "model_signature": material["model"],
            "shape": shape_to_text(placement.canonical_shape) if placement is not None else "[]",
            "gpus": placement.size if placement is not None else 0,
            "tier": placement.tier if placement is not None else "",
            "exposed_seconds": float(result.exposed_seconds),
            "collective_seconds": float(result.collective_seconds),
            "wall_seconds": float(wall_seconds),
            "created_at": _utc_now(),
            "result_json": result_to_json(result),
            "key_json": canonical_json(material),
        }
        if count_miss:
            self.count(misses=1, simulated_wall_seconds=wall_seconds, flush=False)
        conn = self._conn()
        with _transaction(conn):
            self._write_entry(conn, row)
            conn.execute("DELETE FROM inflight WHERE key = ? AND token = ?", (claim.key, claim.token))
            self._write_counters(conn)
        return row["created_at"]

    def _write_entry(self, conn: sqlite3.Connection, row: dict) -> None:
        columns = ", ".join(ENTRY_COLUMNS)
        marks = ", ".join("?" for _ in ENTRY_COLUMNS)
        conn.execute(f"INSERT OR IGNORE INTO entries({columns}) VALUES ({marks})", [row[c] for c in ENTRY_COLUMNS])

    # ---- counters -----------------------------------------------------------
    def count(self, flush: bool = True, **deltas: float) -> None:
        with self._lock:
            self._forget_parents_counts()
            for name, value in deltas.items():
                self._pending[name] += value
        if flush and time.monotonic() - self._last_flush > COUNTER_FLUSH_INTERVAL_S:
            self.flush()

    def _write_counters(self, conn: sqlite3.Connection) -> None:
        """Inside an open transaction: add pending counts to the store."""
        with self._lock:
            self._forget_parents_counts()
            pending, self._pending = self._pending, dict.fromkeys(COUNTER_NAMES, 0.0)
            self._last_flush = time.monotonic()
        for name, value in pending.items():
            if value:
                conn.execute("INSERT INTO counters(name, value) VALUES (?, ?) "
                             "ON CONFLICT(name) DO UPDATE SET value = value + excluded.value", (name, value))

    @_sqlite_errors_named
    def flush(self) -> None:
        with self._lock:
            self._forget_parents_counts()
            if not any(self._pending.values()):
                return
        conn = self._conn()
        with _transaction(conn):
            self._write_counters(conn)

    @_sqlite_errors_named
    def counters(self) -> dict[str, float]:
        self.flush()
        rows = dict(self._conn().execute("SELECT name, value FROM counters").fetchall())
        return {name: rows.get(name, 0.0) for name in COUNTER_NAMES}

    # ---- maintenance --------------------------------------------------------
    @_sqlite_errors_named
    def stats(self) -> dict:
        counters = self.counters()
        conn = self._conn()
        entries = conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
        by_backend = dict(conn.execute("SELECT backend, COUNT(*) FROM entries GROUP BY backend ORDER BY backend"))
        inflight = conn.execute("SELECT COUNT(*) FROM inflight").fetchone()[0]
        lookups = counters["hits"] + counters["misses"]
        return {
            "path": str(self.path),
            "entries": entries,
            "entries_by_backend": by_backend,
            "inflight_claims": inflight,
            **{name: counters[name] for name in COUNTER_NAMES},
            "hit_rate": counters["hits"] / lookups if lookups else 0.0,
        }

    @_sqlite_errors_named
    def clear(self, *, backend: str | None = None, before: str | None = None, unreadable: bool = False,
              allow_ns3: bool = False) -> "ClearOutcome":
        """Delete the entries selected by every filter given (all entries when none is): of one
        ``backend``, created before the created_at text ``before`` (see ``created_before``; an entry
        without a time in our format counts as oldest), or whose result cannot be read back.

        Readable ns-3 results took real simulation time: unless ``allow_ns3``, a selection holding any
        deletes nothing and the outcome says what it would have deleted. An unreadable ns-3 entry
        cannot be served anyway, so it needs no permission. Clearing everything also drops claims
        and counters; a filtered clear keeps them (the counters are the history of the whole file)."""
        conditions, params = [], {}
        if backend is not None:
            conditions.append("backend = :backend")
            params["backend"] = backend
        if before is not None:
            conditions.append("(created_at < :before OR created_at NOT GLOB "
                              "'[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T*')")
            params["before"] = before
        where = " AND ".join(conditions) or "1"
        everything = not conditions and not unreadable
        conn = self._conn()
        with _transaction(conn):
            if unreadable:
                keys = [key for key, *row in conn.execute(
                    f"SELECT key, result_json, wall_seconds, created_at FROM entries WHERE {where}", params)
                    if not _readable(row)]
                ns3, ns3_wall = 0, 0.0
            else:
                keys = None
                ns3, ns3_wall = conn.execute(f"SELECT COUNT(*), TOTAL(wall_seconds) FROM entries WHERE {where} "
                                             "AND backend = :ns3", {**params, "ns3": NS3_BACKEND}).fetchone()
            selected = len(keys) if keys is not None else \
                conn.execute(f"SELECT COUNT(*) FROM entries WHERE {where}", params).fetchone()[0]
            if ns3 and not allow_ns3:
                return ClearOutcome(selected, ns3, ns3_wall, deleted=False)
            if keys is not None:
                conn.executemany("DELETE FROM entries WHERE key = ?", ((k,) for k in keys))
            else:
                conn.execute(f"DELETE FROM entries WHERE {where}", params)
            if everything:
                conn.execute("DELETE FROM inflight")
                conn.execute("DELETE FROM counters")
                with self._lock:
                    self._pending = dict.fromkeys(COUNTER_NAMES, 0.0)
        return ClearOutcome(selected, ns3, ns3_wall, deleted=True)

    @_sqlite_errors_named
    def export_rows(self) -> list[dict]:
        columns = [c for c in ENTRY_COLUMNS if c != "result_json"]
        cur = self._conn().execute(f"SELECT {', '.join(columns)} FROM entries ORDER BY key")
        return [dict(zip(columns, row)) for row in cur]


def _readable(row) -> bool:
    try:
        stored_answer_from_row(*row)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class ClearOutcome:
    entries: int  # entries the filters selected
    ns3_entries: int  # of them, readable ns-3 results
    ns3_wall_seconds: float  # what simulating those cost
    deleted: bool  # False: ns-3 results were selected without allow_ns3, nothing was deleted


class _transaction:
    """BEGIN IMMEDIATE ... COMMIT, ROLLBACK on error. IMMEDIATE takes the write lock up front,
    so the busy timeout applies and a read-then-write never fails on a stale snapshot."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def __enter__(self):
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.conn.execute("COMMIT")
        elif self.conn.in_transaction:  # SQLite may already have rolled back (e.g. on a damaged page)
            try:
                self.conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # the error that brought us here is the one to report
        return False


# --------------------------------------------------------------------------- whole-file checks


@dataclass
class CacheReport:
    """What ``inspect_cache`` found; ``problem`` and ``fix`` are None when all is well."""

    path: Path
    exists: bool = True
    integrity: tuple[str, ...] = ()  # SQLite's check: ("ok",) when sound
    schema_version: str | None = None
    entries: int | None = None  # None: could not be counted
    entries_by_backend: dict = field(default_factory=dict)
    unreadable: int = 0
    first_unreadable: tuple[str, str] | None = None  # (key, what is wrong)
    problem: str | None = None
    fix: str | None = None
    where: str | None = None
    whole_file: bool = False  # the problem is the file, not some entries

    @property
    def ok(self) -> bool:
        return self.problem is None

    def error(self) -> InputError:
        if self.whole_file:
            return CacheUnusable(self.path, self.problem, where=self.where, fix=self.fix)
        key, detail = self.first_unreadable
        return UnreadableEntry(self.path, key, f"{detail}; {self.unreadable} of {self.entries} entries "
                                               "cannot be read back")


def _existing_file_uri(path: Path) -> str:
    """Open without creating: a missing file is an error, not a new empty cache. (Not mode=ro: a
    read-only connection leaves -wal and -shm behind; the last read-write one removes them.)"""
    return f"file:{quote(str(Path(path).resolve()))}?mode=rw"


def inspect_cache(path: str | Path | None = None, *, thorough: bool = True,
                  busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S) -> CacheReport:
    """Check the cache file without changing it: SQLite's integrity check (``integrity_check`` when
    thorough, else the faster ``quick_check``), the schema, and whether every entry can be read back."""
    path = Path(path) if path is not None else default_cache_path()
    report = CacheReport(path)
    clear = cache_command(path, "clear")

    def unusable(problem: str, where: str | None = None, fix: str | None = None) -> CacheReport:
        report.problem, report.where, report.whole_file = problem, where, True
        report.fix = fix or f"run {clear} to start afresh (it removes the file)"
        return report

    if not path.exists():
        report.exists = False
        return report
    if not path.is_file():
        return unusable("a directory or special file, not the cache file",
                        fix="move it away or point ARTIST_CACHE_DIR elsewhere")
    try:
        # Only reads follow: verifying creates no tables and switches no journal mode.
        conn = sqlite3.connect(_existing_file_uri(path), uri=True, timeout=busy_timeout_s)
    except sqlite3.Error as exc:
        raise InputError(str(path), None, f"cannot open the latency cache ({exc})") from exc
    try:
        try:
            check = "integrity_check" if thorough else "quick_check"
            report.integrity = tuple(row[0] for row in conn.execute(f"PRAGMA {check}"))
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise InputError(str(path), None, f"cannot read the latency cache ({exc})") from exc
            report.integrity = (f"failed ({exc})",)
            return unusable(f"damaged latency cache ({exc})")
        try:
            _inspect_content(conn, report)
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise InputError(str(path), None, f"cannot read the latency cache ({exc})") from exc
            return unusable(f"damaged latency cache ({exc})")
        if report.integrity != ("ok",):
            more = f" (and {len(report.integrity) - 1} more)" if len(report.integrity) > 1 else ""
            return unusable(f"SQLite {check} failed: {report.integrity[0]}{more}")
        if report.problem is None and report.unreadable:
            key, detail = report.first_unreadable
            report.problem = (f"{report.unreadable} of {report.entries} entries cannot be read back "
                              f"(entry {key}: {detail})")
            report.fix = (f"run {cache_command(path, 'clear --unreadable')} to drop them "
                          "(they are simulated again when next asked)")
        return report
    finally:
        conn.close()


def _inspect_content(conn: sqlite3.Connection, report: CacheReport) -> None:
    clear = cache_command(report.path, "clear")
    problem = _schema_problem(conn)
    if problem is not None:
        report.where, report.problem, report.whole_file = problem[0], problem[1], True
        report.fix = f"run {clear} to start afresh (it removes the file)"
        return
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "meta" in tables:
        row = conn.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
        report.schema_version = row[0] if row else None
        version_problem = _schema_version_problem(report.schema_version)
        if version_problem:
            report.where, report.problem, report.whole_file = "table meta, schema_version", version_problem, True
            report.fix = f"run {clear} to start afresh or point ARTIST_CACHE_DIR elsewhere"
            return
    if "entries" not in tables:
        report.entries = 0
        return
    report.entries = conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
    report.entries_by_backend = dict(conn.execute(
        "SELECT backend, COUNT(*) FROM entries GROUP BY backend ORDER BY backend"))
    for key, *row in conn.execute("SELECT key, result_json, wall_seconds, created_at FROM entries ORDER BY key"):
        try:
            stored_answer_from_row(*row)
        except ValueError as exc:
            report.unreadable += 1
            if report.first_unreadable is None:
                report.first_unreadable = (key, str(exc))


def check_cache_usable(path: str | Path | None = None) -> None:
    """Fail fast before any run: raise ``CacheUnusable`` (an InputError naming the file and how to
    recover) when the cache file cannot be used, ``UnreadableEntry`` when some entry cannot be read
    back. A missing file is created, as the first run would. None: the default cache file."""
    store = LatencyStore(path)
    try:
        store._conn()  # opening checks the header, the journal mode, the tables and the schema version
    finally:
        store.close()
    report = inspect_cache(store.path, thorough=False)
    if not report.ok:
        raise report.error()


def cache_files(path: str | Path) -> list[Path]:
    """The cache file and whichever SQLite side files of it exist."""
    path = Path(path)
    return [f for f in [path] + [path.with_name(path.name + s) for s in SIDE_FILE_SUFFIXES] if f.exists()]


def remove_cache_files(path: str | Path) -> list[Path]:
    """Delete the cache file and its side files; the ones removed."""
    removed = []
    for f in cache_files(path):
        try:
            f.unlink()
        except FileNotFoundError:
            continue  # another process removed it meanwhile
        except OSError as exc:
            raise InputError(str(f), None, f"cannot remove ({exc.strerror})") from exc
        removed.append(f)
    return removed


def readable_ns3_results(path: str | Path) -> tuple[int, float] | None:
    """(ns-3 entries, their simulated wall seconds) still countable in a file that cannot be opened as
    the cache (another schema version, a damaged page elsewhere); None when they cannot be counted."""
    try:
        conn = sqlite3.connect(_existing_file_uri(path), uri=True, timeout=1.0)
    except sqlite3.Error:
        return None
    try:
        n, wall = conn.execute("SELECT COUNT(*), TOTAL(wall_seconds) FROM entries WHERE backend = ?",
                               (NS3_BACKEND,)).fetchone()
        return int(n), float(wall)
    except sqlite3.Error:
        return None
    finally:
        conn.close()
