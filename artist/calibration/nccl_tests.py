"""Parser for nccl-tests output (all_reduce_perf and friends) as NVIDIA prints it.

A file may hold several tests one after another (all_reduce, all_gather, ...).
Each test is made of, in this order and each part optional except the column
header and the rows:

    # nccl-tests version 2.17.8 nccl-headers=22902 nccl-library=22902
    # Collective test starting: all_reduce_perf
    # nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 ...
    # Using devices
    #  Rank  0 Group  0 Pid 4180122 on cnode3-002 device  0 [0000:1b:00] NVIDIA H100 80GB HBM3
    #                out-of-place                       in-place
    #  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw  #wrong
    #   (B) (elements)                  (us) (GB/s) (GB/s)         (us) (GB/s) (GB/s)
       33554432  4194304  double  sum  -1  182.87  183.49  321.10  0  182.88  183.48  321.08  0
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 437.957
    # Collective test concluded: all_reduce_perf

Variants handled: the older ``error`` column instead of ``#wrong``, no ``root``
column, very old rank lines without ``Group``, ``N/A`` cells, rank prefixes put
by MPI launchers (``0: `` or ``[1,0]<stdout>:``), columns trimmed by hand (the
column header line says which columns there are), sizes written with ``_``
digit separators, lines whose leading ``#`` was lost (logs pasted into
Markdown). Lines that are not nccl-tests output (launcher commands, NCCL INFO
lines, Markdown) are kept in ``NcclLog.ignored_lines`` with their line numbers
so that a caller can show them; a line that looks like a size row but does not
parse is an error naming the file and line.

After parsing, every row is checked (``check_test``). Rows that cannot be
measurements are refused with an InputError naming the file and line: a size
that is not count x type size (x ranks for the collectives that print the
whole buffer, see SIZE_SCALES_WITH_RANKS), a time of 0 (out-of-place or
in-place, where present), and a ``#wrong`` count above 0 (nccl-tests found
wrong results: the timed run was broken) unless the caller allows it
(``allow_wrong``, `artist calibrate --allow-wrong`), which turns each such row
into an ``Issue`` of kind 'wrong'. ``#wrong`` = N/A (nccl-tests -c 0, no
check) is not an error. Then algbw = size / time, busbw = algbw x the
collective's bus factor, and the rank count implied by busbw / algbw against
the one the ``Using devices`` block lists are compared; disagreements are
reported as ``Issue``s.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import median
from typing import Callable

from artist.errors import InputError, read_input_file

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv",
               "gather", "scatter")

# busbw = algbw x factor(n), from nccl-tests doc/PERFORMANCE.md
# (see ../shared/nccl-logs/nccl_tests_format_and_busbw.md).
BUS_FACTORS: dict[str, Callable[[int], float]] = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "gather": lambda n: (n - 1) / n,
    "scatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "sendrecv": lambda n: 1.0,
}

# Collectives whose printed size is count x ranks x type size. nccl-tests (src/common.cu, TimeTest)
# prints size = max(sendBytes, expectedBytes) and count = paramcount, from each collective's
# GetCollByteCount: paramcount is the per-rank count and one buffer holds ranks x paramcount for
# all_gather, reduce_scatter, alltoall, gather, scatter (and hypercube); all_reduce, broadcast,
# reduce and sendrecv have size = count x type size (NVIDIA/nccl-tests a0b82b2, src/*.cu).
SIZE_SCALES_WITH_RANKS = ("all_gather", "reduce_scatter", "alltoall", "gather", "scatter", "hypercube")

# Bytes per element of nccl-tests' data types (nccl-tests src/common.cu type names).
TYPE_BYTES = {
    "int8": 1, "uint8": 1, "char": 1, "int32": 4, "int": 4, "uint32": 4, "int64": 8, "uint64": 8,
    "half": 2, "float16": 2, "float": 4, "float32": 4, "double": 8, "float64": 8, "bfloat16": 2,
    "f8e4m3": 1, "f8e5m2": 1, "fp8_e4m3": 1, "fp8_e5m2": 1,
}

KEY_COLUMNS = ("size", "count", "type", "redop", "root")
# One collective's time in a row, in us: an hour (nccl-tests' largest sizes take seconds).
MAX_TIME_US = 3.6e9
WRONG_COLUMNS = ("#wrong", "error")

# Printed figures are rounded (time to ~4-5 significant digits, GB/s to 2 decimals):
# a cell agrees with its recomputed value within half a unit of its last digit plus this relative slack.
RELATIVE_SLACK = 0.005

# Out-of-place and in-place times of one row are two samples of the same collective. In the
# shipped logs 115 of 120 rows with both agree within 4 %; five differ by 5.9-17.8 % (aws p4de
# 2 MiB 8.5 %; gcp a3mega 8 B, 1 KiB, 128 KiB; xxrjun 2 x 1 sendrecv 32 MiB 6.3 %). More than 5 %
# apart is reported as a noisy measurement (our threshold: the acceptance error of a calibration).
NOISY_TIME_SPREAD = 0.05

_RANK_PREFIX = re.compile(r"^\s*(?:\[\d+,\d+\]<std(?:out|err)>:|\d+:(?=\s|#|$))\s?")
_VERSION = re.compile(r"^nccl-tests version (\S+)(?: nccl-headers=(\d+))?(?: nccl-library=(\d+))?")
_STARTING = re.compile(r"^Collective test starting:\s*(\S+)")
_CONCLUDED = re.compile(r"^Collective test concluded:\s*(\S+)")
_RANK_LINE = re.compile(
    r"^Rank\s+(?P<rank>\d+)\s+(?:Group\s+(?P<group>\d+)\s+)?Pid\s+(?P<pid>\d+)\s+on\s+(?P<host>\S+)\s+"
    r"device\s+(?P<device>\d+)\s+\[(?P<bus>[^\]]*)\]\s*(?P<name>.*)$")
_PARAM_PAIRS = re.compile(r"(nThread|nGpus|minBytes|maxBytes|step:|warmup iters:|agg iters:|iters:|validation:|graph:)"
                          r"\s*(\S+)")
_AVG_BUSBW = re.compile(r"^Avg bus bandwidth\s*:\s*(\S+)")
_OUT_OF_BOUNDS = re.compile(r"^Out of bounds values\s*:\s*(\d+)\s*(\S*)")
_REDUCING = re.compile(r"^Reducing maxBytes to (\d+)")


@dataclass(frozen=True)
class Device:
    rank: int
    host: str
    device: int
    name: str
    line: int


@dataclass(frozen=True)
class Measurement:
    """One of a row's out-of-place / in-place column groups. None = N/A (or column absent)."""

    time_us: float | None
    algbw_gbs: float | None
    busbw_gbs: float | None
    wrong: float | None = None  # '#wrong' count (int) or the older 'error' (max abs error, float)


@dataclass(frozen=True)
class SizeRow:
    line: int
    size_bytes: int
    count: int | None
    dtype: str | None
    redop: str | None
    root: int | None
    out_of_place: Measurement
    in_place: Measurement | None
    extra: tuple[tuple[str, str], ...] = ()  # columns after the known ones (e.g. -I 1 statistics), raw text

    @property
    def times_us(self) -> tuple[float, ...]:
        """The row's measured times: out-of-place, then in-place (N/A and absent ones left out)."""
        return tuple(m.time_us for m in (self.out_of_place, self.in_place) if m is not None and m.time_us is not None)

    @property
    def time_us(self) -> float | None:
        """Measured time of one operation: the mean of the out-of-place and in-place times. Both time the
        same collective on the same size (NCCL's all-reduce costs the same either way), so they are two
        samples of one quantity; nccl-tests' own 'Avg bus bandwidth' averages both too. A row with one
        of them N/A (or trimmed away) uses the other."""
        times = self.times_us
        return sum(times) / len(times) if times else None

    @property
    def time_spread(self) -> float | None:
        """|out-of-place - in-place| / their mean: how much two samples of one time disagree (None
        with fewer than two)."""
        times = self.times_us
        return abs(times[0] - times[1]) / (0.5 * (times[0] + times[1])) if len(times) == 2 and sum(times) > 0 else None


@dataclass(frozen=True)
class Issue:
    line: int
    message: str
    kind: str  # 'row' (one row disagrees), 'ranks' (the rank count implied by busbw/algbw disagrees),
    # 'spread' (the row's out-of-place and in-place times disagree: a noisy measurement) or 'wrong'
    # (nccl-tests found wrong results in the row; kept only when the caller allows it)


@dataclass(frozen=True)
class NcclTest:
    source: str
    first_line: int
    collective: str | None  # None when the log does not name it and it cannot be inferred
    version: str | None = None
    nccl_library: int | None = None
    params: dict = field(default_factory=dict)
    params_line: int | None = None
    devices: tuple[Device, ...] = ()
    devices_line: int | None = None
    columns: tuple[str, ...] = ()
    header_line: int | None = None
    rows: tuple[SizeRow, ...] = ()
    avg_busbw_gbs: float | None = None
    avg_busbw_line: int | None = None
    out_of_bounds: int | None = None
    notes: tuple[tuple[int, str], ...] = ()
    issues: tuple[Issue, ...] = ()
    collective_inferred: bool = False  # True when the name was deduced from busbw/algbw (older logs omit it)

    @property
    def ranks(self) -> int | None:
        return len(self.devices) if self.devices else None

    @property
    def hosts(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for d in self.devices:
            seen.setdefault(d.host, None)
        return tuple(seen)

    @property
    def gpus_per_host(self) -> tuple[int, ...]:
        """Ranks on each host, in order of first appearance."""
        return tuple(sum(1 for d in self.devices if d.host == h) for h in self.hosts)

    @property
    def nodes(self) -> int | None:
        return len(self.hosts) if self.devices else None

    @property
    def gpus_per_node(self) -> int | None:
        """Ranks per host when every host has the same number, else None."""
        counts = set(self.gpus_per_host)
        return counts.pop() if len(counts) == 1 else None

    @property
    def implied_ranks(self) -> int | None:
        """Rank count implied by busbw / algbw (None if the collective's factor does not depend on it)."""
        return implied_rank_count(self)

    def where(self) -> str:
        return f"line {self.first_line}"


@dataclass(frozen=True)
class NcclLog:
    source: str
    sha256: str
    tests: tuple[NcclTest, ...]
    ignored_lines: tuple[tuple[int, str], ...] = ()  # not nccl-tests output, kept so callers can show them

    @property
    def issues(self) -> tuple[Issue, ...]:
        return tuple(i for t in self.tests for i in t.issues)

    def tests_of(self, collective: str) -> tuple[NcclTest, ...]:
        return tuple(t for t in self.tests if t.collective == collective)


def parse_nccl_tests(path: str | Path, allow_wrong: bool = False) -> NcclLog:
    """allow_wrong: rows with '#wrong' > 0 are kept (each reported as an Issue of kind 'wrong')
    instead of refused."""
    text, data = read_input_file(path)
    return parse_nccl_text(text, str(path), hashlib.sha256(data).hexdigest(), allow_wrong=allow_wrong)


def parse_nccl_text(text: str, source: str = "<nccl-tests log>", sha256: str | None = None,
                    allow_wrong: bool = False) -> NcclLog:
    if sha256 is None:
        sha256 = hashlib.sha256(text.encode()).hexdigest()
    parser = _Parser(source)
    for number, raw in enumerate(text.splitlines(), start=1):
        parser.feed(number, raw)
    tests = parser.finish()
    if not tests:
        raise InputError(source, None, "no nccl-tests results found (no column header and size rows)")
    return NcclLog(source, sha256, tuple(check_test(t, allow_wrong) for t in tests), tuple(parser.ignored))


class _Parser:
    def __init__(self, source: str):
        self.source = source
        self.tests: list[NcclTest] = []
        self.current: dict | None = None
        self.ignored: list[tuple[int, str]] = []
        self.in_devices = False

    # A test is accumulated as a dict, frozen into an NcclTest when the next one starts.
    def _new(self, line: int) -> dict:
        self._close()
        self.current = {"first_line": line, "collective": None, "params": {}, "devices": [], "rows": [],
                        "notes": [], "columns": ()}
        return self.current

    def _close(self):
        if self.current is not None:
            c = self.current
            if c["rows"] or c["columns"]:
                if not c["rows"]:
                    raise InputError(self.source, f"line {c['header_line']}", "column header without any size rows")
                self.tests.append(NcclTest(
                    source=self.source, first_line=c["first_line"], collective=c["collective"],
                    version=c.get("version"), nccl_library=c.get("nccl_library"), params=c["params"],
                    params_line=c.get("params_line"), devices=tuple(c["devices"]),
                    devices_line=c.get("devices_line"), columns=c["columns"], header_line=c.get("header_line"),
                    rows=tuple(c["rows"]), avg_busbw_gbs=c.get("avg_busbw"), avg_busbw_line=c.get("avg_line"),
                    out_of_bounds=c.get("oob"), notes=tuple(c["notes"])))
            elif c["devices"] or c["params"]:
                raise InputError(self.source, f"line {c['first_line']}",
                                 "test header without a column header ('size count type ...') or size rows")
        self.current = None

    def _test_for_header(self, line: int) -> dict:
        """The test a header-part line belongs to: the current one unless it already has rows."""
        c = self.current
        if c is None or c["rows"] or c.get("concluded"):
            return self._new(line)
        return c

    def feed(self, number: int, raw: str) -> None:
        line = _RANK_PREFIX.sub("", raw, count=1).rstrip()
        commented = line.lstrip().startswith("#")
        body = line.lstrip()[1:].strip() if commented else line.strip()
        if not body:
            self.in_devices = False
            return
        if body.startswith("Rank") and self.in_devices:
            m = _RANK_LINE.match(body)
            if not m:
                raise InputError(self.source, f"line {number}", f"malformed 'Using devices' rank line: {body!r}")
            self.current["devices"].append(Device(int(m["rank"]), m["host"], int(m["device"]), m["name"].strip(),
                                                  number))
            return
        self.in_devices = False
        if m := _VERSION.match(body):
            c = self._test_for_header(number)
            if c.get("version") or c["collective"] or c["params"] or c["devices"] or c["columns"]:
                c = self._new(number)
            c["version"] = m[1]
            c["nccl_library"] = int(m[3]) if m[3] else None
            return
        if m := _STARTING.match(body):
            c = self._test_for_header(number)
            if c["collective"] or c["params"] or c["devices"] or c["columns"]:
                c = self._new(number)
            c["collective"] = _collective_name(m[1])
            return
        if body.startswith("nThread"):
            c = self._test_for_header(number)
            if c["params"] or c["devices"] or c["columns"]:
                c = self._new(number)
            c["params"] = _parse_params(body, self.source, number)
            c["params_line"] = number
            return
        if body == "Using devices":
            c = self._test_for_header(number)
            if c["devices"] or c["columns"]:
                c = self._new(number)
            c["devices_line"] = number
            self.in_devices = True
            return
        if "out-of-place" in body and "in-place" in body and not body[0].isdigit():
            return  # column-group caption above the header
        tokens = body.split()
        if tokens[0] == "size":
            c = self._test_for_header(number)
            if c["columns"]:
                c = self._new(number)
            c["columns"] = _check_columns(tokens, self.source, number)
            c["header_line"] = number
            return
        if body.startswith("(B)"):
            return  # units line
        if m := _CONCLUDED.match(body):
            if self.current is not None:
                if self.current["collective"] is None:
                    self.current["collective"] = _collective_name(m[1])
                self.current["concluded"] = True
            return
        if m := _AVG_BUSBW.match(body):
            c = self._require_rows(number, "'Avg bus bandwidth' footer")
            c["avg_busbw"] = _number(m[1], self.source, number, "Avg bus bandwidth")
            c["avg_line"] = number
            return
        if m := _OUT_OF_BOUNDS.match(body):
            c = self._require_rows(number, "'Out of bounds values' footer")
            c["oob"] = int(m[1])
            if m[2] and m[2] != "OK":
                c["notes"].append((number, f"out of bounds values: {m[1]} {m[2]}"))
            return
        if m := _REDUCING.match(body):
            if self.current is not None:
                self.current["notes"].append((number, body))
                return
        if not commented and _looks_like_row(tokens):
            c = self.current
            if c is None or not c["columns"]:
                raise InputError(self.source, f"line {number}",
                                 "size row before any column header "
                                 "('size count type redop root time algbw busbw ...')")
            c["rows"].append(_parse_row(tokens, c["columns"], self.source, number))
            return
        self.ignored.append((number, raw.rstrip()))

    def _require_rows(self, number: int, what: str) -> dict:
        if self.current is None or not self.current["rows"]:
            raise InputError(self.source, f"line {number}", f"{what} without any size rows before it")
        return self.current

    def finish(self) -> list[NcclTest]:
        self._close()
        return self.tests


def _collective_name(binary: str) -> str:
    name = binary.rsplit("/", 1)[-1]
    return name[:-5] if name.endswith("_perf") else name


def _parse_params(body: str, source: str, line: int) -> dict:
    params = {}
    for key, value in _PARAM_PAIRS.findall(body):
        key = key.rstrip(":").replace(" ", "_")
        if key == "step":
            params[key] = value
            continue
        try:
            params[key] = int(value)
        except ValueError:
            raise InputError(source, f"line {line}", f"'{key}' should be an integer, got {value!r}") from None
    for required in ("nThread", "nGpus", "minBytes", "maxBytes"):
        if required not in params:
            raise InputError(source, f"line {line}", f"test parameter line lacks '{required}'")
    return params


def _check_columns(tokens: list[str], source: str, line: int) -> tuple[str, ...]:
    """Validate a column header: key columns, then one or two groups of time/algbw/busbw[/#wrong|error]."""
    if "time" not in tokens:
        raise InputError(source, f"line {line}", f"column header has no 'time' column: {' '.join(tokens)}")
    first_time = tokens.index("time")
    for name in tokens[:first_time]:
        if name not in KEY_COLUMNS:
            raise InputError(source, f"line {line}",
                             f"unknown column {name!r} before 'time' (known: {', '.join(KEY_COLUMNS)})")
    rest = tokens[first_time:]
    groups = 0
    i = 0
    while i < len(rest) and rest[i] == "time" and groups < 2:
        if rest[i + 1:i + 3] != ["algbw", "busbw"]:
            raise InputError(source, f"line {line}", "each 'time' column must be followed by 'algbw busbw'")
        i += 3
        if i < len(rest) and rest[i] in WRONG_COLUMNS:
            i += 1
        groups += 1
    return tuple(tokens)


def _looks_like_row(tokens: list[str]) -> bool:
    return bool(tokens) and tokens[0].replace("_", "").isdigit()


def _number(text: str, source: str, line: int, column: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(source, f"line {line}", f"column '{column}': expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise InputError(source, f"line {line}", f"column '{column}': not a finite number: {text!r}")
    if column == "time" and value > MAX_TIME_US:  # (1e308 us passed and reached the fit as inf bandwidths)
        raise InputError(source, f"line {line}", f"column 'time': {text} us is over an hour for one collective; "
                                                 f"at most {MAX_TIME_US:g} us")
    return value


def _cell(text: str, source: str, line: int, column: str, integer: bool = False):
    if text == "N/A":
        return None
    if integer:
        try:
            return int(text)
        except ValueError:
            raise InputError(source, f"line {line}", f"column '{column}': expected an integer, got {text!r}") from None
    return _number(text, source, line, column)


def _wrong_count(text: str, source: str, line: int) -> int | None:
    """A '#wrong' cell: N/A (not checked, nccl-tests -c 0) or a count of wrong elements. nccl-tests
    prints it with %6g (src/util.cu, writeBenchmarkLineBody), so 1e+06 is a count too."""
    value = _cell(text, source, line, "#wrong")
    if value is None:
        return None
    if value < 0 or value != int(value):
        raise InputError(source, f"line {line}", f"column '#wrong': expected a count of wrong elements, got {text!r}")
    return int(value)


def _parse_row(tokens: list[str], columns: tuple[str, ...], source: str, line: int) -> SizeRow:
    if len(tokens) != len(columns):
        raise InputError(source, f"line {line}",
                         f"size row has {len(tokens)} cells but the column header has {len(columns)} "
                         f"({' '.join(columns)}); truncated or malformed row")
    key: dict = {}
    groups: list[dict] = []
    extra: list[tuple[str, str]] = []
    i = 0
    while i < len(columns) and columns[i] in KEY_COLUMNS:
        key[columns[i]] = tokens[i]
        i += 1
    while i < len(columns) and columns[i] == "time" and len(groups) < 2:
        g = {"time": _cell(tokens[i], source, line, "time"),
             "algbw": _cell(tokens[i + 1], source, line, "algbw"),
             "busbw": _cell(tokens[i + 2], source, line, "busbw")}
        i += 3
        if i < len(columns) and columns[i] in WRONG_COLUMNS:
            g["wrong"] = (_wrong_count(tokens[i], source, line) if columns[i] == "#wrong"
                          else _cell(tokens[i], source, line, columns[i]))
            i += 1
        for name in ("time", "algbw", "busbw"):
            if g[name] is not None and g[name] < 0:
                raise InputError(source, f"line {line}", f"column '{name}' is negative: {g[name]}")
        groups.append(g)
    extra = list(zip(columns[i:], tokens[i:]))
    size = _cell(key["size"], source, line, "size", integer=True)
    if size is None or size < 0:
        raise InputError(source, f"line {line}", f"column 'size': expected a byte count, got {key['size']!r}")
    count = _cell(key["count"], source, line, "count", integer=True) if "count" in key else None
    if "type" in key and key["type"] not in TYPE_BYTES:  # its size could not be checked against count x type
        raise InputError(source, f"line {line}", f"column 'type': unknown nccl-tests data type {key['type']!r}; "
                                                 f"known: {', '.join(sorted(TYPE_BYTES))}")
    root = _cell(key["root"], source, line, "root", integer=True) if "root" in key else None
    measurements = [Measurement(g["time"], g["algbw"], g["busbw"], g.get("wrong")) for g in groups]
    return SizeRow(line=line, size_bytes=size, count=count, dtype=key.get("type"), redop=key.get("redop"), root=root,
                   out_of_place=measurements[0], in_place=measurements[1] if len(measurements) > 1 else None,
                   extra=tuple(extra))


# ---- consistency checks -----------------------------------------------------

def _agrees(printed: float, expected: float, decimals: int = 2) -> bool:
    return abs(printed - expected) <= 0.5 * 10 ** -decimals + RELATIVE_SLACK * abs(expected) + 1e-12


def implied_rank_count(test: NcclTest) -> int | None:
    """Solve busbw / algbw = factor(n) for n over rows with algbw >= 1 GB/s (rounding makes smaller ones useless)."""
    if test.collective not in BUS_FACTORS or test.collective in ("broadcast", "reduce", "sendrecv"):
        return None
    r = _busbw_algbw_ratio(test)
    if r is None:
        return None
    if test.collective == "all_reduce":
        if r >= 2.0:
            return None
        n = 2.0 / (2.0 - r)
    else:
        if r >= 1.0:
            return None
        n = 1.0 / (1.0 - r)
    return max(1, round(n))


def _busbw_algbw_ratio(test: NcclTest) -> float | None:
    ratios = [m.busbw_gbs / m.algbw_gbs for row in test.rows for m in (row.out_of_place, row.in_place)
              if m is not None and m.algbw_gbs is not None and m.busbw_gbs is not None and m.algbw_gbs >= 1.0]
    return median(ratios) if ratios else None


def infer_collective(test: NcclTest) -> NcclTest:
    """Older logs and hand-trimmed ones do not name their collective. Only all_reduce has a bus
    factor above 1 (2(n-1)/n for n > 2), so busbw/algbw clearly above 1 identifies it; any other
    ratio is ambiguous and the collective stays unknown."""
    if test.collective is not None:
        return test
    ratio = _busbw_algbw_ratio(test)
    if ratio is None or ratio <= 1.05:  # 1.05: well above rounding noise, below 2(3-1)/3 = 1.33
        return test
    note = (test.first_line, f"collective not named in the log; all_reduce inferred from busbw/algbw = {ratio:.3f} > 1")
    return replace(test, collective="all_reduce", collective_inferred=True, notes=test.notes + (note,))


def _size_problem(test: NcclTest, row: SizeRow) -> str | None:
    """Why the row's size contradicts count x type size (x ranks where nccl-tests prints the whole
    buffer), or None. Rows without count or type (trimmed columns) or of a type nccl-tests does not
    name cannot be checked. Ranks: the 'Using devices' count and the one busbw/algbw implies (they
    differ only in a mislabelled log, reported as a 'ranks' issue; either explains the size). A test
    whose collective is unknown may be of either kind; with no rank count at all, any whole number
    of per-rank buffers is accepted."""
    width = TYPE_BYTES.get(row.dtype) if row.dtype is not None else None
    if row.count is None or width is None:
        return None
    plain = row.count * width
    text = f"size {row.size_bytes} B != count {row.count} x {row.dtype} ({width} B)"
    if test.collective is not None and test.collective not in SIZE_SCALES_WITH_RANKS:
        return None if row.size_bytes == plain else f"{text} = {plain} B"
    ranks = sorted({n for n in (test.ranks, test.implied_ranks) if n is not None})
    allowed = [plain * n for n in ([1] if test.collective is None else []) + ranks]
    if row.size_bytes in allowed:
        return None
    if not ranks and plain > 0 and row.size_bytes % plain == 0:
        return None
    whole = (f"{' or '.join(map(str, ranks))} ranks = {' or '.join(str(plain * n) for n in ranks)} B" if ranks
             else f"ranks: not a whole multiple of {plain} B")
    if test.collective is None:
        return (f"{text} = {plain} B, nor x {whole} (the log does not name its collective: all_reduce, broadcast, "
                f"reduce and sendrecv print size = count x type size, the others size = count x ranks x type size)")
    return f"{text} x {whole} ({test.collective} prints the count per rank and the size of all ranks' buffer)"


def _refuse_unusable_row(test: NcclTest, row: SizeRow, allow_wrong: bool) -> Issue | None:
    """Raise InputError for a row that cannot be a measurement; with allow_wrong, a row whose
    results nccl-tests found wrong becomes an Issue of kind 'wrong' instead."""
    where = f"line {row.line}"
    problem = _size_problem(test, row)
    if problem:
        raise InputError(test.source, where, problem)
    groups = [(label, m) for label, m in (("out-of-place", row.out_of_place), ("in-place", row.in_place))
              if m is not None]
    for label, m in groups:
        if m.time_us is not None and m.time_us <= 0:
            raise InputError(test.source, where, f"{label} time is {m.time_us:.2f} us: a measured time must be > 0 "
                                                 f"(size / time would be infinite)")
    if "#wrong" not in test.columns:
        return None  # older logs' 'error' column is the largest absolute error, not a count
    wrong = [(label, m.wrong) for label, m in groups if m.wrong is not None and m.wrong > 0]
    if not wrong:
        return None
    counts = ", ".join(f"{label} #wrong = {n}" for label, n in wrong)
    if not allow_wrong:
        raise InputError(test.source, where, f"{counts}: nccl-tests found wrong results, so this run is not a valid "
                                             f"measurement (artist calibrate --allow-wrong uses such rows, with a "
                                             f"warning)")
    return Issue(row.line, f"{counts}: nccl-tests found wrong results; used because of --allow-wrong", "wrong")


def check_test(test: NcclTest, allow_wrong: bool = False) -> NcclTest:
    """Return the test with its issues: rows whose algbw/busbw disagree with size, time and rank
    count, a rank count implied by busbw/algbw that differs from the header's, an 'Avg bus
    bandwidth' footer that is not the mean of the rows' busbw, and (with allow_wrong) rows with
    '#wrong' > 0. Rows that cannot be measurements raise InputError (_refuse_unusable_row)."""
    test = infer_collective(test)
    issues: list[Issue] = []
    n = test.ranks
    implied = implied_rank_count(test)
    if n is not None and implied is not None and implied != n:
        issues.append(Issue(test.rows[0].line,
                            f"busbw/algbw implies {implied} ranks for {test.collective}, but 'Using devices' "
                            f"(line {test.devices_line}) lists {n}", "ranks"))
    ranks_for_checks = n if n is not None else implied
    factor = BUS_FACTORS.get(test.collective) if test.collective else None
    for row in test.rows:
        wrong = _refuse_unusable_row(test, row, allow_wrong)
        if wrong is not None:
            issues.append(wrong)
        for label, m in (("out-of-place", row.out_of_place), ("in-place", row.in_place)):
            if m is None or m.time_us is None or m.time_us <= 0:
                continue
            algbw = row.size_bytes / m.time_us / 1e3  # GB/s with GB = 1e9 B
            if m.algbw_gbs is not None and not _agrees(m.algbw_gbs, algbw):
                issues.append(Issue(row.line, f"{label} algbw {m.algbw_gbs} GB/s != size/time = {algbw:.2f} GB/s",
                                    "row"))
            if m.busbw_gbs is not None and factor is not None and ranks_for_checks is not None:
                busbw = algbw * factor(ranks_for_checks)
                if not _agrees(m.busbw_gbs, busbw):
                    issues.append(Issue(row.line, f"{label} busbw {m.busbw_gbs} GB/s != algbw x bus factor "
                                                  f"({ranks_for_checks} ranks) = {busbw:.2f} GB/s", "row"))
        spread = row.time_spread
        if spread is not None and spread > NOISY_TIME_SPREAD:
            issues.append(Issue(row.line, f"out-of-place and in-place times differ by {spread:.1%} "
                                          f"({row.times_us[0]} vs {row.times_us[1]} us): a noisy measurement; "
                                          f"their mean is used", "spread"))
    if test.avg_busbw_gbs is not None:
        values = [m.busbw_gbs for r in test.rows for m in (r.out_of_place, r.in_place) if m is not None]
        if values and all(v is not None for v in values):
            mean = sum(values) / len(values)
            if not _agrees(test.avg_busbw_gbs, mean, 3):
                issues.append(Issue(test.avg_busbw_line, f"'Avg bus bandwidth' {test.avg_busbw_gbs} != mean busbw "
                                                         f"of the rows {mean:.3f}", "row"))
    return replace(test, issues=tuple(issues))
