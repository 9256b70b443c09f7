"""Errors raised for bad user input: every one names where the problem is."""

from __future__ import annotations

from pathlib import Path


class InputError(ValueError):
    """Bad input file or value. The message names the file and the line or field."""

    def __init__(self, source: str, where: str | None, problem: str):
        self.source = str(source)
        self.where = where
        self.problem = problem
        location = f"{self.source}: {where}" if where else self.source
        super().__init__(f"{location}: {problem}")


def read_input_file(path: str | Path) -> tuple[str, bytes]:
    """An input file's UTF-8 text and its bytes (for content hashes). A file that cannot be read or
    is not UTF-8 raises InputError naming it."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(str(path), None, f"cannot read file ({exc.strerror})") from exc
    try:
        return data.decode("utf-8"), data
    except UnicodeDecodeError as exc:
        raise InputError(str(path), None, f"not UTF-8 text (byte {exc.start})") from exc
