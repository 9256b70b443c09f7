"""`artist cache stats | clear | export --csv`: look into the persistent latency cache."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from artist.network.cache import ENTRY_COLUMNS, CACHE_FILE_NAME, LatencyStore, default_cache_path


def add_parser(sub) -> None:
    p = sub.add_parser("cache", help="inspect, export or clear the latency cache",
                       description="The persistent latency cache (one SQLite file; $ARTIST_CACHE_DIR, "
                                   "else ~/.cache/artist).")
    p.add_argument("--cache-dir", default=None, help=f"directory holding {CACHE_FILE_NAME} (default: $ARTIST_CACHE_DIR)")
    actions = p.add_subparsers(dest="cache_action", required=True)
    actions.add_parser("stats", help="entries, hits, misses, simulated seconds saved")
    actions.add_parser("clear", help="delete every entry, claim and counter")
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
    store = store_from_args(args)
    try:
        if args.cache_action == "stats":
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
        elif args.cache_action == "clear":
            n = store.clear()
            print(f"cleared {n} entries from {store.path}")
        elif args.cache_action == "export":
            if args.csv is None:
                print("artist cache export: choose a format: --csv [PATH]", file=sys.stderr)
                return 2
            rows = store.export_rows()
            columns = [c for c in ENTRY_COLUMNS if c != "result_json"]
            out = sys.stdout if args.csv == "-" else open(args.csv, "w", newline="")
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
    finally:
        store.close()
    return 0
