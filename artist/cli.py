"""The `artist` command line: one sub-command per module under artist/commands/."""

from __future__ import annotations

import importlib
import os
import sys

from artist.commands._args import Parser
from artist.errors import InputError, Interrupted

# Each module defines add_parser(subparsers) and sets `func` on its parser.
COMMAND_MODULES = (
    "artist.commands.simulate",
    "artist.commands.calibrate",
    "artist.commands.latency_table",
    "artist.commands.cache",
    "artist.commands.comm",
    "artist.commands.plans",
    "artist.commands.sweep",
    "artist.commands.plot",
    "artist.commands.report",
    "artist.commands.list",
    "artist.commands.trace",
)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"artist {version('artist')}"
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "artist (not installed)"


def build_parser() -> Parser:
    parser = Parser(prog="artist", description=__doc__)
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(name).add_parser(sub)
    return parser


def _engine_error(exc: BaseException) -> bool:
    """An ns-3 run that hung, crashed or failed, or a compiled engine (ns-3's, the phase model's) that
    could not be built (without importing the ns-3 package to ask)."""
    runner = sys.modules.get("artist.network.ns3.runner")
    build = sys.modules.get("artist.network.ns3.engine_build")
    return ((runner is not None and isinstance(exc, runner.Ns3SimulationError))
            or (build is not None and isinstance(exc, build.EngineBuildError)))


def _quiet_broken_pipe() -> int:
    """`artist cache export --csv | head`: the reader left; stop quietly, as `cat` does."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # Python's flush at exit would raise again otherwise
    return 141  # 128 + SIGPIPE, what a shell reports for a writer killed by the signal


def _one_line(text: str) -> str:
    """A message that carries a worker's traceback, cut to its first and last lines."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0] if len(lines) <= 1 else f"{lines[0]} ... {lines[-1].strip()}"


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a bad option (already said in one line)
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"artist: error: {exc}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        print(f"artist: interrupted: {exc.summary}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("artist: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except RuntimeError as exc:
        from artist.simulator import SimulationError

        if _engine_error(exc) or isinstance(exc, SimulationError):
            print(f"artist: error: {_one_line(str(exc))}", file=sys.stderr)
            return 3
        raise


if __name__ == "__main__":
    sys.exit(main())
