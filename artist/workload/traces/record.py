"""What a trace reader yields per job (TraceRecord) and what a load tells the user (LoadReport).

A TraceRecord is the trace's own view of a job before it becomes an ArtISt Job: times in the trace's
seconds, the GPU count it asked for (0: a CPU-only job), the run time it logged (None when the trace has
none), and the model or application name and iterations when the trace states them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

# Outcome classes of the states traces record (Helios/Acme: COMPLETED, FAILED, CANCELLED, TIMEOUT,
# NODE_FAIL; Philly: Pass, Failed, Killed; PAI: Terminated, Failed, Running, Waiting).
COMPLETED, FAILED, CANCELLED, UNFINISHED = "completed", "failed", "cancelled", "unfinished"
STATE_CLASS = {
    "COMPLETED": COMPLETED, "PASS": COMPLETED, "TERMINATED": COMPLETED,
    "FAILED": FAILED, "TIMEOUT": FAILED, "NODE_FAIL": FAILED,  # HeliosData README: TIMEOUT, NODE_FAIL count as failed
    "CANCELLED": CANCELLED, "KILLED": CANCELLED,  # Philly 'Killed': ended by the user or operator
    "RUNNING": UNFINISHED, "WAITING": UNFINISHED, "PENDING": UNFINISHED,
}


def state_class(state: str) -> str:
    """completed, failed, cancelled or unfinished; '' (a workload file without states) counts as completed;
    an unknown state as failed (it did not say it completed)."""
    if not state:
        return COMPLETED
    return STATE_CLASS.get(state.strip().upper(), FAILED)


@dataclass(slots=True)
class TraceRecord:
    job_id: str
    submit: float  # seconds on the trace's clock
    gpus: int  # GPUs asked for; 0 = CPU-only
    where: str  # 'line N' of the job in its file, for later errors
    duration: float | None = None  # logged run time, seconds; None = not in the trace
    model: str = ""  # the trace's model or application name; '' = none
    iterations: int | None = None  # work stated by the trace (workload files)
    batch_size: int = 0
    gpu_type: str = ""
    state: str = ""
    user: str = ""
    vc: str = ""


@dataclass
class LoadReport:
    """Counts of what a load read, kept, dropped and assumed; `lines()` says it to the user."""

    source: str
    format: str
    rows: int = 0  # jobs (rows, objects) read
    bad_rows: int = 0  # skipped as malformed (skip_bad_rows)
    first_bad: str = ""  # the first skipped row's error
    dropped: Counter = field(default_factory=Counter)  # reason -> jobs
    flagged: Counter = field(default_factory=Counter)  # reason -> jobs kept but flagged
    flagged_ids: dict = field(default_factory=dict)  # reason -> first few job ids
    notes: list = field(default_factory=list)  # assumptions made (once each)
    kept: int = 0

    def drop(self, reason: str) -> None:
        self.dropped[reason] += 1

    def flag(self, reason: str, job_id: str) -> None:
        self.flagged[reason] += 1
        ids = self.flagged_ids.setdefault(reason, [])
        if len(ids) < 5:
            ids.append(job_id)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def lines(self) -> list[str]:
        out = [f"{self.source}: {self.format} trace, {self.rows} jobs read, {self.kept} kept"]
        if self.bad_rows:
            out.append(f"  skipped {self.bad_rows} malformed row(s); the first: {self.first_bad}")
        for reason, n in sorted(self.dropped.items()):
            out.append(f"  dropped {n}: {reason}")
        for reason, n in sorted(self.flagged.items()):
            out.append(f"  flagged (kept) {n}: {reason}, e.g. {', '.join(self.flagged_ids[reason])}")
        out.extend(f"  note: {n}" for n in self.notes)
        return out

    def as_dict(self) -> dict:
        return {"rows": self.rows, "kept": self.kept, "bad_rows": self.bad_rows, "dropped": dict(self.dropped),
                "flagged": dict(self.flagged), "notes": list(self.notes)}
