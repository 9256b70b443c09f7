"""Argument types and the parser class shared by every `artist` sub-command.

Every number has a bound (artist.limits); a bad value is one line naming the
option, exit code 2, no usage dump and no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import math
import sys
from functools import lru_cache


class Parser(argparse.ArgumentParser):
    """argparse, but an error is one line: `artist <command>: error: <what>`."""

    def error(self, message: str):  # noqa: D102 - argparse's hook
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _bounded(convert, what: str, minimum, maximum, allow):
    """An argparse type: text -> convert(text), finite, in [minimum, maximum] or one of `allow`
    (special values such as -1 = all cores, 0 = off)."""

    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        if value in allow:
            return value
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {_text(minimum)}, got {_text(value)}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be <= {_text(maximum)}, got {_text(value)}")
        return value

    parse.__name__ = convert.__name__  # argparse names the type in its messages
    return parse


def _text(x) -> str:
    return str(x) if isinstance(x, int) else f"{x:g}"


def integer(minimum: int | None = None, maximum: int | None = None, *, allow: tuple[int, ...] = ()):
    """An integer option in [minimum, maximum], or one of the special values in `allow`."""
    return _bounded(int, "an integer", minimum, maximum, allow)


def number(minimum: float | None = None, maximum: float | None = None, *, allow: tuple[float, ...] = ()):
    """A finite float option in [minimum, maximum], or one of the special values in `allow`."""
    return _bounded(float, "a number", minimum, maximum, allow)


@lru_cache(maxsize=None)
def command_parser(command: str) -> argparse.ArgumentParser:
    """The parser of `artist <command>`, built as artist.cli builds it (from artist.commands.<command>): its
    defaults are what a run gets for an option not given."""
    root = Parser(prog="artist")
    sub = root.add_subparsers(dest="command", parser_class=Parser)
    importlib.import_module(f"artist.commands.{command.replace('-', '_')}").add_parser(sub)
    return sub.choices[command]
