"""The CSV row reader every trace format shares: streamed line by line, each row numbered, each bad cell
named by file, line and column (artist.errors.InputError).

Rows are read from the open file as they come (csv over a text stream), so a trace of millions of rows
costs memory for the rows a reader keeps, not for the file. A byte that is not UTF-8 is named by its line
(the file is re-read to find it only when decoding fails).
"""

from __future__ import annotations

import csv
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator, Sequence

from artist.errors import InputError, read_input_file, regular_input_file
from artist.limits import strict_float

# A CSV cell longer than this is refused (csv's own limit is 128 KiB; trace cells are ids and numbers).
MAX_CELL_CHARS = 1 << 17


class CsvRows:
    """Numbered rows of a CSV file as dicts. `columns` given: the file has no header row (published
    headerless tables); else the first row is the header. `delimiter` '\\t' reads TSV."""

    def __init__(self, path: str | Path, columns: Sequence[str] | None = None, delimiter: str = ",",
                 quoting: int = csv.QUOTE_MINIMAL):
        self.path = Path(path)
        self.columns = list(columns) if columns is not None else None
        self.delimiter = delimiter
        self.quoting = quoting
        self.header: list[str] = []

    def __enter__(self):
        regular_input_file(self.path)
        try:
            self.fh = open(self.path, encoding="utf-8-sig", newline="")
        except OSError as exc:
            raise InputError(str(self.path), None, f"cannot read file ({exc.strerror or exc})") from exc
        csv.field_size_limit(MAX_CELL_CHARS)
        self.reader = csv.reader(self.fh, delimiter=self.delimiter, quoting=self.quoting)
        if self.columns is None:
            first = self._next()
            if first is None:
                self.fh.close()
                raise InputError(str(self.path), "line 1", "empty file, expected a header row")
            self.header = [h.strip() for h in first]
            repeated = sorted({h for h in self.header if h and self.header.count(h) > 1})
            if repeated:  # a row dict would keep the last cell and drop the other silently
                self.fh.close()
                raise InputError(str(self.path), "line 1", f"column(s) named twice in the header: "
                                                           f"{', '.join(repeated)}")
        else:
            self.header = self.columns
        return self

    def _next(self):
        try:
            return next(self.reader)
        except StopIteration:
            return None
        except UnicodeDecodeError:
            read_input_file(self.path)  # raises the InputError naming the line of the bad byte
            raise  # pragma: no cover - read_input_file always raises for a file that failed to decode
        except csv.Error as exc:
            raise InputError(str(self.path), f"line {self.reader.line_num}", f"not valid CSV ({exc})") from None

    def rows(self, on_bad=None) -> Iterator[tuple[int, dict[str, str]]]:
        """(line number, {column: cell}) of every non-empty row. A row of the wrong width is an error, or,
        with `on_bad`, handed to it (on_bad(InputError)) and skipped."""
        width = len(self.header)
        while True:
            raw = self._next()
            if raw is None:
                return
            lineno = self.reader.line_num
            if not raw or all(not c.strip() for c in raw):
                continue
            if len(raw) != width:
                error = InputError(str(self.path), f"line {lineno}", f"has {len(raw)} cells, header has {width}"
                                   if self.columns is None else f"has {len(raw)} cells, expected {width} "
                                                                f"({','.join(self.header)})")
                if on_bad is None:
                    raise error
                on_bad(error)
                continue
            yield lineno, dict(zip(self.header, raw))

    def __exit__(self, *exc):
        self.fh.close()
        return False

    def require(self, columns: Sequence[str], what: str) -> None:
        missing = [c for c in columns if c not in self.header]
        if missing:
            raise InputError(str(self.path), "line 1", f"missing {what} column(s) {', '.join(missing)}")


def cell(row: dict, column: str, path, where: str) -> str:
    value = (row.get(column) or "").strip()
    if not value:
        raise InputError(str(path), f"{where}, column '{column}'", "empty")
    return value


def number(row, column, path, where, minimum=None, integer=False, maximum=None) -> float:
    text = cell(row, column, path, where)
    return checked_number(text, path, f"{where}, column '{column}'", minimum, integer, maximum)


def checked_number(text: str, path, where: str, minimum=None, integer=False, maximum=None) -> float:
    try:
        value = strict_float(text)
    except ValueError:
        raise InputError(str(path), where, f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise InputError(str(path), where, f"not a finite number: {text!r}")
    if integer and value != int(value):
        raise InputError(str(path), where, f"not an integer: {text!r}")
    if minimum is not None and value < minimum:
        raise InputError(str(path), where, f"must be >= {minimum}, got {text}")
    if maximum is not None and value > maximum:
        raise InputError(str(path), where, f"must be <= {maximum:g} (artist.limits), got {text}")
    return value


def timestamp(row, column, path, where) -> float:
    return parse_time(cell(row, column, path, where), path, f"{where}, column '{column}'")


def parse_time(text: str, path, where: str) -> float:
    """Seconds: a number, or an ISO time 'YYYY-MM-DD HH:MM:SS[+HH:MM]' as Helios, Acme and Philly store
    times (without an offset read as UTC; only differences between rows matter)."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(str(path), where, f"not a number or a 'YYYY-MM-DD HH:MM:SS' time: {text!r}") from None
    return stamp.replace(tzinfo=stamp.tzinfo or timezone.utc).timestamp()
