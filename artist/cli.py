"""The `artist` command line: one sub-command per module under artist/commands/."""

from __future__ import annotations

import argparse
import importlib
import sys

from artist.errors import InputError

# Each module defines add_parser(subparsers) and sets `func` on its parser.
COMMAND_MODULES = (
    "artist.commands.simulate",
    "artist.commands.calibrate",
    "artist.commands.latency_table",
    "artist.commands.cache",
    "artist.commands.comm",
    "artist.commands.sweep",
    "artist.commands.plot",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="artist", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"artist: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
