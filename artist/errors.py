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


class UnknownFieldError(InputError):
    """A mapping holds a field its reader does not know; `allowed` lists the ones it does."""

    def __init__(self, source: str, where: str | None, allowed):
        self.allowed = tuple(sorted(allowed))
        super().__init__(source, where, f"unknown field (allowed: {', '.join(self.allowed)})")


# Bytes of one input file read whole (specs, topologies, models, and traces for their content hash): 2 GiB.
# The largest published trace shipped in pieces (Helios' Saturn cluster log) is ~0.3 GB.
MAX_INPUT_BYTES = 2 << 30


def regular_input_file(path: str | Path) -> Path:
    """The path, if it names a regular file; InputError otherwise. Why before opening: a device
    (/dev/zero, /dev/urandom) reads without end and a pipe with no writer blocks the open itself."""
    import stat

    path = Path(path)
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise InputError(str(path), None, f"cannot read file ({exc.strerror or exc})") from exc
    if stat.S_ISDIR(mode):
        raise InputError(str(path), None, "a directory, not a file")
    if not stat.S_ISREG(mode):
        raise InputError(str(path), None, "not a regular file (a device, pipe or socket): input is read from files")
    return path


def read_input_file(path: str | Path) -> tuple[str, bytes]:
    """An input file's UTF-8 text (a leading byte-order mark dropped, as spreadsheet programs
    write one) and its bytes (for content hashes). A file that cannot be read or is not UTF-8
    raises InputError naming it and the line of the first bad byte."""
    path = regular_input_file(path)
    if path.stat().st_size > MAX_INPUT_BYTES:
        raise InputError(str(path), None, f"larger than {MAX_INPUT_BYTES >> 30} GiB: not read")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(str(path), None, f"cannot read file ({exc.strerror or exc})") from exc
    try:
        return data.decode("utf-8-sig"), data
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(str(path), f"line {line}", f"not UTF-8 text (byte {exc.start} is 0x{data[exc.start]:02x}); "
                                                    f"save the file as UTF-8") from exc


class Interrupted(Exception):
    """Ctrl-C during a command, with what is saved and how to resume; the CLI prints it as one line."""

    def __init__(self, summary: str):
        self.summary = summary
        super().__init__(summary)
