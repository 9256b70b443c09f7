"""Which path answered a run's network questions, counted: a results row says how its numbers were made.

    counts = AnswerCounts()
    counts.record(timing.result)          # every answer the network stack gives (a CommResult)
    counts.columns()                      # {"answers_analytical": 0, ..., "packets_simulated": 0, ...}

An answer's path (answer_path) is where its number came from: the analytical model, the flow engine, an
ns-3 packet-level run, ns-3's message-level fast path (no link shared, network/fastpath), exact reuse of
packet runs of each collective alone composed into the timeline (network/ns3/reuse.py), ns-3's steady-state
skipping (`accelerate`: a ring's first steps run and the rest extrapolated, a large all-to-all extrapolated
from two smaller runs; within 1 %), the phase
contention model (network/phase), nothing at all (no traffic crosses a link: one GPU), or the `none`
backend (communication free). An answer read from the latency cache counts under the path that computed it
(so a run's results row is the same whatever the cache held) and in `answers_from_cache` too (run.json,
with the packets this run simulated: what the answers cost depends on the cache). Calibration: answers
corrected by a profile, the tiers corrected, and every tier:collective the profile left uncalibrated.

Counted where questions reach the network stack (the performance model's memo misses, the elastic step
timers'), once per distinct question a run asks in its process, not once per use of the answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# every path a shipped backend answers by, in the order the results columns list them
ANSWER_PATHS = ("analytical", "flow", "ns3_packet", "ns3_message_level", "ns3_reuse", "ns3_steady_state", "phase",
                "no_traffic", "none")
OTHER = "other"  # a backend from outside the suite (its own name is in the answers' CommResult)


def answer_path(result) -> str:
    """The path a CommResult's answer came from (module docstring)."""
    details = result.details or {}
    if details.get("contention_model") == "phase":
        return "phase"
    backend = result.backend
    if backend == "ns3":
        path = details.get("path")
        if path == "none":
            return "no_traffic"
        if details.get("accelerated"):  # the outer shortcut: its simulated steps may be message-level or packets
            return "ns3_steady_state"
        if path == "ns3-message-level":
            return "ns3_message_level"
        return "ns3_reuse" if "composed_from" in details else "ns3_packet"
    return backend if backend in ANSWER_PATHS else OTHER


@dataclass
class AnswerCounts:
    paths: dict = field(default_factory=dict)  # path -> answers
    from_cache: int = 0
    calibrated: int = 0
    packets: int = 0  # packets simulated by the answers computed in this run (0 for cache hits)
    calibrated_tiers: set = field(default_factory=set)
    uncalibrated: set = field(default_factory=set)  # "tier:collective" a profile left as the backend gave it

    def record(self, result) -> None:
        path = answer_path(result)
        self.paths[path] = self.paths.get(path, 0) + 1
        self.from_cache += bool(result.cache_hit)
        self.packets += int(result.packets or 0)
        if result.calibrated:
            details = result.details or {}
            self.calibrated += 1
            self.calibrated_tiers.update(t for t in str(details.get("calibration_tier", "")).split(",") if t)
            self.uncalibrated.update(details.get("uncalibrated", ()))

    def merge(self, other: "AnswerCounts") -> None:
        for path, n in other.paths.items():
            self.paths[path] = self.paths.get(path, 0) + n
        self.from_cache += other.from_cache
        self.calibrated += other.calibrated
        self.packets += other.packets
        self.calibrated_tiers |= other.calibrated_tiers
        self.uncalibrated |= other.uncalibrated

    def columns(self) -> dict:
        """The results columns (README "results.csv"): answers per path and calibrated (counts), the tiers
        calibrated and the tier:collective pairs left uncalibrated (text, ';'-separated; "none", or "all" when
        no profile corrected any answer). The same for a run whatever the cache held (cost() is not)."""
        out = {f"answers_{path}": self.paths.get(path, 0) for path in ANSWER_PATHS}
        out["answers_other"] = sum(n for p, n in self.paths.items() if p not in ANSWER_PATHS)
        out["answers_calibrated"] = self.calibrated
        total = sum(self.paths.values())
        if self.calibrated:
            out["calibrated_tiers"] = ";".join(sorted(self.calibrated_tiers)) or "none"
            out["uncalibrated"] = ";".join(sorted(self.uncalibrated)) or "none"
        else:  # no profile corrected anything: every answer is the backend's own
            out["calibrated_tiers"] = "none"
            out["uncalibrated"] = "all" if total else "none"
        return out

    def cost(self) -> dict:
        """What this run's answers cost, which depends on what the cache held (run.json, not results.csv):
        answers read from the cache and packets simulated by the others."""
        return {"answers_from_cache": self.from_cache, "packets_simulated": self.packets}

    def summary_line(self) -> str:
        """One line for a sweep's summary: the paths that answered, the share from the cache."""
        total = sum(self.paths.values())
        if not total:
            return "network answers: none asked"
        parts = [f"{n} {path.replace('_', ' ')}" for path, n in sorted(self.paths.items(), key=lambda i: -i[1])]
        line = f"network answers: {total} ({', '.join(parts)}); {self.from_cache} of them from the cache"
        if self.packets:
            line += f"; {self.packets} packets simulated"
        if self.calibrated:
            line += f"; {self.calibrated} calibrated"
        if self.uncalibrated:
            line += f" (left uncalibrated: {', '.join(sorted(self.uncalibrated))})"
        return line
