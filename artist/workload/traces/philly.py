"""Microsoft Philly `cluster_job_log` (msr-fiddle/philly-traces, README "Schema"): one JSON array of jobs,

    {"status": "Pass"|"Killed"|"Failed", "vc": "...", "jobid": "application_...", "user": "...",
     "submitted_time": "2017-10-07 01:11:39",
     "attempts": [{"start_time": "...", "end_time": "...", "detail": [{"ip": "m47", "gpus": ["gpu0", ...]}]}]}

Used: jobid, user, vc, status (state), submitted_time (arrival), attempts: GPUs = the GPUs listed in the
first attempt's details (as the repository's analysis notebook counts them), run time = the last attempt's
end_time - the first attempt's start_time (the notebook's run time; retries and the gaps between them are
inside it). Dropped: detail[].ip (machine ids; cluster_machine_list is not read: its GPU counts contradict
the job log, philly-traces issue #8, e.g. 8-GPU attempts on a machine listed with 2 GPUs, so the job
log's GPU lists are taken as the truth). Jobs with no attempt, or whose first start or last end is missing
(still running when the log was taken, or a logging gap, as the README notes), have no run time: dropped,
counted; so are jobs whose first attempt lists no GPU (every Philly job is a GPU job). Times have no
zone: read as UTC (only differences matter).

The array is parsed one job object at a time (json.JSONDecoder.raw_decode over a sliding buffer), so the
memory is that of the records kept, not of the file; one object may not exceed MAX_OBJECT_CHARS.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

from artist.errors import InputError, read_input_file, regular_input_file
from artist.limits import MAX_ARRIVAL_S, MAX_GPUS
from artist.workload.traces.csvrows import parse_time
from artist.workload.traces.options import guarded
from artist.workload.traces.record import LoadReport, TraceRecord

FIELDS_USED = ("jobid", "user", "vc", "status", "submitted_time", "attempts[].start_time", "attempts[].end_time",
               "attempts[].detail[].gpus")
FIELDS_DROPPED = ("attempts[].detail[].ip",)
CHUNK_CHARS = 1 << 20
# One job object of the real log is well under 100 kB (a few attempts of a few machines); 64 Mi characters
# bounds the buffer a malformed or endless object could grow.
MAX_OBJECT_CHARS = 64 << 20


def read_philly(path: str | Path, report: LoadReport, skip_bad: bool = False) -> Iterator[TraceRecord]:
    path = Path(path)
    return guarded(json_array_objects(path), lambda line, obj: _record(path, line, obj, report), report, skip_bad)


def json_array_objects(path: Path) -> Iterator[tuple[int, object]]:
    """(line of its first character, value) of each element of the JSON array that is the file."""
    decoder = json.JSONDecoder()
    regular_input_file(path)
    try:
        fh = open(path, encoding="utf-8-sig")
    except OSError as exc:
        raise InputError(str(path), None, f"cannot read file ({exc.strerror or exc})") from exc
    with fh:
        buf, pos, line, eof = "", 0, 1, False

        def more() -> bool:
            nonlocal buf, pos, eof
            if eof:
                return False
            try:
                chunk = fh.read(CHUNK_CHARS)
            except UnicodeDecodeError:
                read_input_file(path)  # raises naming the line of the first bad byte
                raise
            if not chunk:
                eof = True
                return False
            buf = buf[pos:] + chunk
            pos = 0
            return True

        def skip_space():
            nonlocal pos, line
            while True:
                while pos < len(buf) and buf[pos] in " \t\r\n":
                    if buf[pos] == "\n":
                        line += 1
                    pos += 1
                if pos < len(buf) or not more():
                    return

        skip_space()
        if pos >= len(buf) or buf[pos] != "[":
            raise InputError(str(path), f"line {line}", "expected a JSON array of jobs ('[' first), as "
                                                        "Philly's cluster_job_log")
        pos += 1
        first = True
        while True:
            skip_space()
            if pos >= len(buf):
                raise InputError(str(path), f"line {line}", "the JSON array is not closed (file ends early)")
            if buf[pos] == "]":
                return
            if not first:
                if buf[pos] != ",":
                    raise InputError(str(path), f"line {line}", f"expected ',' or ']' between jobs, got "
                                                                f"{buf[pos]!r}")
                pos += 1
                skip_space()
            first = False
            while True:
                try:
                    value, end = decoder.raw_decode(buf, pos)
                    break
                except json.JSONDecodeError as exc:
                    if len(buf) - pos > MAX_OBJECT_CHARS:
                        raise InputError(str(path), f"line {line}", f"one job object is longer than "
                                                                    f"{MAX_OBJECT_CHARS} characters") from None
                    if not more():
                        where = line + buf.count("\n", pos, exc.pos)
                        raise InputError(str(path), f"line {where}", f"not valid JSON ({exc.msg})") from None
                except RecursionError:  # thousands of nested arrays: no job object looks like that
                    raise InputError(str(path), f"line {line}", "a job object nested too deeply to be one") from None
            start_line = line
            line += buf.count("\n", pos, end)
            pos = end
            yield start_line, value


def _record(path: Path, line: int, obj, report: LoadReport) -> TraceRecord | None:
    where = f"line {line}"
    if not isinstance(obj, dict):
        raise InputError(str(path), where, f"expected a job object, got {type(obj).__name__}")
    job_id = _text(obj, "jobid", path, where, required=True)
    where = f"line {line} (job {job_id})"
    submit_text = _text(obj, "submitted_time", path, where, required=True)
    submit = parse_time(submit_text, path, f"{where}, field 'submitted_time'")
    attempts = obj.get("attempts")
    if not isinstance(attempts, list):
        raise InputError(str(path), f"{where}, field 'attempts'", "expected a list of attempts")
    if not attempts:
        report.drop("no recorded scheduling attempt (no GPUs or run time in the log)")
        return None
    for i, a in enumerate(attempts):
        if not isinstance(a, dict) or not isinstance(a.get("detail", []), list):
            raise InputError(str(path), f"{where}, field 'attempts[{i}]'", "expected {start_time, end_time, detail}")
    gpus = 0
    for j, d in enumerate(attempts[0].get("detail", [])):
        if not isinstance(d, dict) or not isinstance(d.get("gpus"), list):
            raise InputError(str(path), f"{where}, field 'attempts[0].detail[{j}].gpus'", "expected a list of GPUs")
        gpus += len(d["gpus"])
    if gpus == 0:  # every Philly job is a GPU job: an empty list is a gap in the log, not a CPU job
        report.drop("first attempt lists no GPUs (a gap in the log)")
        return None
    if gpus > MAX_GPUS:
        raise InputError(str(path), f"{where}, field 'attempts[0].detail'", f"{gpus} GPUs; at most {MAX_GPUS}")
    start = _time_or_none(attempts[0], "start_time", path, f"{where}, field 'attempts[0].start_time'")
    end = _time_or_none(attempts[-1], "end_time", path, f"{where}, field 'attempts[{len(attempts) - 1}].end_time'")
    duration = None
    if start is not None and end is not None:
        duration = end - start
        if not 0 <= duration <= MAX_ARRIVAL_S:
            raise InputError(str(path), f"{where}, field 'attempts'",
                             f"run time {duration:g} s (last end - first start) must be in [0, {MAX_ARRIVAL_S:g}]")
    return TraceRecord(job_id=job_id, submit=submit, gpus=gpus, where=where, duration=duration,
                       state=_text(obj, "status", path, where), user=_text(obj, "user", path, where),
                       vc=_text(obj, "vc", path, where))


def _text(obj: dict, key: str, path, where: str, required: bool = False) -> str:
    value = obj.get(key)
    if value is None or value == "":
        if required:
            raise InputError(str(path), f"{where}, field '{key}'", "missing")
        return ""
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise InputError(str(path), f"{where}, field '{key}'", f"expected text, got {value!r}")
    return str(value).strip()


def _time_or_none(obj: dict, key: str, path, where: str) -> float | None:
    value = obj.get(key)
    if value is None or value in ("", "None"):  # the README: an attempt may lack either time
        return None
    if not isinstance(value, str):
        raise InputError(str(path), where, f"expected a 'YYYY-MM-DD HH:MM:SS' time, got {value!r}")
    return parse_time(value, path, where)
