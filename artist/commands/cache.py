"""`artist cache stats | verify | clear | export --csv`: look into the persistent latency cache."""

from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

from artist.commands._common import CACHE_DIR_HELP
from artist.errors import InputError
from artist.network.cache import (ENTRY_COLUMNS, CACHE_FILE_NAME, NS3_BACKEND, CacheUnusable, LatencyStore,
                                  cache_files, created_before, default_cache_path, inspect_cache,
                                  readable_ns3_results, remove_cache_files)

_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
MAX_AGE_S = 36_500 * 86400.0  # 100 years: older than any cache entry can be


def duration(text: str) -> float:
    """--older-than: a number and a unit, 90s, 30m, 12h, 7d or 2w; seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text)
    if m is None:
        raise argparse.ArgumentTypeError(f"expected a duration such as 90s, 30m, 12h or 7d, got {text!r}")
    seconds = float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
    if seconds > MAX_AGE_S:
        raise argparse.ArgumentTypeError(f"must be at most 36500d, got {text!r}")
    return seconds


def add_parser(sub) -> None:
    p = sub.add_parser("cache", help="inspect, verify, export or clear the latency cache",
                       description="The persistent latency cache (one SQLite file; $ARTIST_CACHE_DIR, "
                                   "else ~/.cache/artist).")
    p.add_argument("--cache-dir", default=None, help=CACHE_DIR_HELP)
    actions = p.add_subparsers(dest="cache_action", required=True)
    actions.add_parser("stats", help="entries, hits, misses, simulated seconds saved")
    actions.add_parser("verify", help="check the file: SQLite's integrity check and that every entry reads back "
                                      "(exit 1 when something is wrong)")
    clear = actions.add_parser(
        "clear", help="delete entries (all of them, or those the filters select)",
        description="Delete the entries the filters select (every entry, claim and counter without filters). "
                    "ns-3 results cost real simulation time: deleting any needs --yes. A file that cannot be "
                    "opened as the cache (damaged, another schema) is removed with its SQLite side files.")
    clear.add_argument("--backend", choices=(NS3_BACKEND, "analytical"), default=None,
                       help="only entries of this backend")
    clear.add_argument("--older-than", type=duration, default=None, metavar="DURATION",
                       help="only entries created more than DURATION ago (90s, 30m, 12h, 7d, 2w); "
                            "entries without a creation time count as oldest")
    clear.add_argument("--unreadable", action="store_true",
                       help="only entries whose stored result cannot be read back (see `artist cache verify`)")
    clear.add_argument("--yes", action="store_true", help="allow deleting ns-3 results")
    export = actions.add_parser("export", help="write the entries as a table")
    export.add_argument("--csv", nargs="?", const="-", default=None, metavar="PATH",
                        help="CSV to PATH (default: standard output)")
    p.set_defaults(func=run)


def cache_path_from_args(args) -> str | None:
    """The cache file named by a command's --cache-dir / --no-cache options; None when the cache is off.
    Shared by every command that reads or writes the cache, so they all open the same file."""
    if getattr(args, "no_cache", False):
        return None
    return str(Path(args.cache_dir) / CACHE_FILE_NAME if args.cache_dir else default_cache_path())


def store_from_args(args) -> LatencyStore:
    return LatencyStore(cache_path_from_args(args))


def run(args) -> int:
    code = _run(args)
    # Push buffered output out here, inside the command: a reader that left (`| head -1`) then raises
    # BrokenPipeError where the CLI turns it into a quiet exit, not at interpreter exit.
    sys.stdout.flush()
    return code


def _run(args) -> int:
    if args.cache_action == "verify":
        return _verify(Path(cache_path_from_args(args)))
    store = store_from_args(args)
    try:
        if args.cache_action == "stats":
            _stats(store)
        elif args.cache_action == "clear":
            return _clear(store, args)
        elif args.cache_action == "export":
            return _export(store, args)
    finally:
        store.close()
    return 0


def _stats(store: LatencyStore) -> None:
    s = store.stats()
    print(f"cache: {s['path']}")
    by_backend = ", ".join(f"{k} {v}" for k, v in s["entries_by_backend"].items()) or "none"
    print(f"entries: {s['entries']} ({by_backend})")
    print(f"in-flight claims: {s['inflight_claims']}")
    print(f"hits: {int(s['hits'])}")
    print(f"misses: {int(s['misses'])}")
    print(f"hit rate: {100 * s['hit_rate']:.1f}%")
    print(f"simulated wall seconds: {s['simulated_wall_seconds']:.3f}")
    print(f"wall seconds saved by hits: {s['saved_wall_seconds']:.3f}")


def _verify(path: Path) -> int:
    report = inspect_cache(path)
    print(f"cache: {path}")
    if not report.exists:
        print("no cache file yet: nothing to verify")
        return 0
    print(f"integrity check: {'; '.join(report.integrity[:3]) or 'not run'}"
          + (f" (and {len(report.integrity) - 3} more)" if len(report.integrity) > 3 else ""))
    if report.schema_version is not None:
        print(f"schema version: {report.schema_version}")
    if report.entries is not None:
        by_backend = ", ".join(f"{k} {v}" for k, v in report.entries_by_backend.items()) or "none"
        print(f"entries: {report.entries} ({by_backend})")
        print(f"unreadable entries: {report.unreadable}")
    if report.ok:
        print("ok")
        return 0
    location = f"{path}: {report.where}" if report.where else str(path)
    print(f"artist cache verify: {location}: {report.problem}: {report.fix}", file=sys.stderr)
    return 1


def _selection_text(args) -> str:
    parts = [f"backend {args.backend}" if args.backend else "",
             f"created more than {_age_text(args.older_than)} ago" if args.older_than is not None else "",
             "unreadable" if args.unreadable else ""]
    return ", ".join(p for p in parts if p)


def _age_text(seconds: float) -> str:
    for unit in ("w", "d", "h", "m"):
        if seconds >= _UNIT_SECONDS[unit] and seconds % _UNIT_SECONDS[unit] == 0:
            return f"{seconds / _UNIT_SECONDS[unit]:g}{unit}"
    return f"{seconds:g}s"


def _clear(store: LatencyStore, args) -> int:
    before = created_before(args.older_than) if args.older_than is not None else None
    selection = _selection_text(args)
    present = cache_files(store.path)  # SQLite may drop stale side files itself while failing to open
    try:
        outcome = store.clear(backend=args.backend, before=before, unreadable=args.unreadable, allow_ns3=args.yes)
    except CacheUnusable as exc:
        store.close()  # let go of the file before removing it
        return _remove_unusable(store.path, present, exc, selection, args.yes)
    if not outcome.deleted:
        print(f"artist cache clear: would delete {outcome.ns3_entries} ns-3 results "
              f"({outcome.ns3_wall_seconds:.1f} simulated wall seconds) of {outcome.entries} selected entries "
              f"from {store.path}; add --yes to delete them", file=sys.stderr)
        return 1
    print(f"cleared {outcome.entries} entries{f' ({selection})' if selection else ''} from {store.path}")
    return 0


def _remove_unusable(path: Path, present: list[Path], exc: CacheUnusable, selection: str, yes: bool) -> int:
    """`artist cache clear` on a file that cannot be opened as the cache: remove it and its side files."""
    if selection:
        raise InputError(str(path), exc.where, f"{exc.detail}: cannot select entries ({selection}) in a file that "
                                               "cannot be opened as the cache; `artist cache clear` without "
                                               "filters removes it") from None
    ns3 = readable_ns3_results(path)  # e.g. a cache of another schema version is intact and may hold them
    if ns3 is not None and ns3[0] and not yes:
        print(f"artist cache clear: {path} cannot be opened as the cache ({exc.detail}) but holds "
              f"{ns3[0]} ns-3 results ({ns3[1]:.1f} simulated wall seconds); add --yes to remove it", file=sys.stderr)
        return 1
    remove_cache_files(path)
    removed = [f for f in present if not f.exists()]
    why = f"{exc.where}: {exc.detail}" if exc.where else exc.detail
    print(f"removed {', '.join(f.name for f in removed) or 'nothing'} from {path.parent}: {why}")
    return 0


def _export(store: LatencyStore, args) -> int:
    if args.csv is None:
        print("artist cache export: choose a format: --csv [PATH]", file=sys.stderr)
        return 2
    rows = store.export_rows()
    columns = [c for c in ENTRY_COLUMNS if c != "result_json"]
    try:
        out = sys.stdout if args.csv == "-" else open(args.csv, "w", newline="")
    except OSError as exc:
        raise InputError(args.csv, None, f"cannot write the CSV ({exc.strerror})") from exc
    try:
        w = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
        w.writeheader()
        for row in rows:
            w.writerow({k: repr(v) if isinstance(v, float) else v for k, v in row.items()})
    finally:
        if out is not sys.stdout:
            out.close()
    if args.csv != "-":
        print(f"exported {len(rows)} entries to {args.csv}", file=sys.stderr)
    return 0
