"""Argument types and the parser class shared by every `artist` sub-command.

Every number has a bound (artist.limits); a bad value is one line naming the
option, exit code 2, no usage dump and no traceback.
"""

from __future__ import annotations

import argparse
import math
import sys


class Parser(argparse.ArgumentParser):
    """argparse, but an error is one line: `artist <command>: error: <what>`."""

    def error(self, message: str):  # noqa: D102 - argparse's hook
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def integer(minimum: int | None = None, maximum: int | None = None, *, allow: tuple[int, ...] = ()):
    """An integer option in [minimum, maximum] (plus the special values in `allow`, e.g. -1 = all cores)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value in allow:
            return value
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be <= {maximum}, got {value}")
        return value

    parse.__name__ = "integer"
    return parse


def number(minimum: float | None = None, maximum: float | None = None, *, exclusive_minimum: bool = False,
           allow: tuple[float, ...] = ()):
    """A finite float option in [minimum, maximum] ((minimum, maximum] with exclusive_minimum)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        if value in allow:
            return value
        if minimum is not None and (value <= minimum if exclusive_minimum else value < minimum):
            raise argparse.ArgumentTypeError(f"must be {'>' if exclusive_minimum else '>='} {minimum:g}, got {value:g}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be <= {maximum:g}, got {value:g}")
        return value

    parse.__name__ = "number"
    return parse
