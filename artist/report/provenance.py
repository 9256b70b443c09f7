"""Where a report's numbers come from. Per sweep, its stamp: the spec's sha256, the code and the machine that
ran it (OUT/sweep-log.jsonl, artist/sweep/stamp.py) and what its runs cost (run.json). Per calibration profile
of the results, the logs it was fitted on, the topology it was fitted with, the topologies the runs applied it
to, and what it leaves uncalibrated, read from the shipped profile of that name (calibration/profiles/) and
checked against the id the runs recorded (params.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from artist import shipped
from artist.errors import InputError


def calibration_lines(table: pd.DataFrame, run_ids: dict[str, set[str]]) -> list[str]:
    """One sentence per calibration label of the table (not `none`). run_ids: label -> the profile ids the
    runs recorded."""
    from artist.calibration import load_profile
    from artist.calibration.profile import backend_settings

    lines = []
    for label in dict.fromkeys(table["calibration"]):
        if label == "none":
            continue
        applied = ", ".join(dict.fromkeys(table.loc[table["calibration"] == label, "topology"].astype(str)))
        recorded = ", ".join(sorted(run_ids.get(label, set()))) or "not recorded"
        path = shipped.PROFILES_DIR / f"{label}.yaml"
        try:
            profile = load_profile(path)
        except (InputError, ValueError, OSError):
            lines.append(f"Calibration `{label}` (id {recorded}): not a shipped profile; its logs and topology are "
                         f"in the profile file the sweep named (results column `calibration_file`); applied to "
                         f"{applied}.")
            continue
        logs = ", ".join(f"{log.get('file', '?')} ({log.get('role', 'fit')})" for log in profile.logs) or "no log"
        left = ", ".join(f"{t} {k}" for t, k in profile.uncalibrated()) or "nothing"
        fitted_on = profile.topology_name
        same = all(t == fitted_on for t in applied.split(", "))
        id_note = (f"id {profile.id}" if recorded == profile.id
                   else f"the runs recorded id {recorded}, the shipped profile is now {profile.id} (re-fitted since)")
        lines.append(f"Calibration `{label}` ({id_note}): fitted on {logs}, with topology {fitted_on} "
                     f"({profile.topology_path}), for {backend_settings(profile.backend)}; applied to {applied}"
                     + (" (the topology it was fitted on)" if same else " (NOT the topology it was fitted on)")
                     + f"; left uncalibrated: {left}.")
    return lines


def stamp_line(directory: Path, run_ids) -> str:
    """One sentence: the spec's sha256, the code and the machine of the sweep's last invocation that ran runs,
    when its runs finished, the wall time of the invocations that ran them and the runs' CPU seconds."""
    from artist.sweep.store import ResultStore

    ran = [e for e in ResultStore(directory).log_entries() if e.get("executed")]
    last = ran[-1] if ran else {}
    infos = []
    for run_id in run_ids:
        try:
            infos.append(json.loads((directory / "runs" / str(run_id) / "run.json").read_text()))
        except (OSError, ValueError):
            continue
    finished = sorted(str(i["finished_at"]) for i in infos if i.get("finished_at"))
    cpu = [i["cpu_seconds"] for i in infos if isinstance(i.get("cpu_seconds"), (int, float))]
    sha = last.get("spec_sha256")
    where = last.get("machine") or {}
    parts = [f"spec `{last.get('spec', '?')}` sha256 `{sha[:12]}`" if sha else "spec sha256 not recorded",
             f"code `{last['code']}`" if last.get("code") else "code not recorded",
             (f"machine {where.get('host', '?')} ({where.get('cpus', '?')} cores, {where.get('platform', '?')}, "
              f"Python {where.get('python', '?')})") if where else "machine not recorded",
             f"runs finished {finished[0]} to {finished[-1]}" if finished else "finish times not recorded",
             (f"wall {_seconds(sum(float(e.get('wall_seconds', 0.0)) for e in ran))} s over {len(ran)} "
              f"invocation(s)" if ran else "wall time not recorded"),
             (f"CPU {_seconds(sum(cpu))} s in the runs' own processes (ns-3 worker processes not included)"
              if len(cpu) == len(infos) and cpu else "CPU time not recorded")]
    return "Stamp: " + "; ".join(parts) + "."


def _seconds(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"
