"""Where a report's calibrated numbers come from: per calibration profile of the results, the logs it was
fitted on, the topology it was fitted with, the topologies the runs applied it to, and what it leaves
uncalibrated, read from the shipped profile of that name (calibration/profiles/) and checked against the id
the runs recorded (params.json)."""

from __future__ import annotations

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
