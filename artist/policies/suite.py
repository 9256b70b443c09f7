"""Every policy of the suite with the kinds of jobs it schedules, for `artist list policies`.

One event loop (artist/simulator.py) runs them all; what still differs is the kind of jobs
(docs/pages/explanation/design.md): rigid jobs (artist/policies/registry.py: `artist simulate`, rigid sweep
specs), elastic jobs (the allocators of artist/policies/pollux/registry.py, deciding every 60 s round: specs
with `loop: elastic`, artist/elastic/exact.py) and Crius' jobs (artist/policies/crius/registry.py, 300 s
rounds: specs of `crius:` workloads, artist/crius/). `artist simulate --policy P` runs any of them
(artist/commands/simulate_jobs.py) and a sweep spec reads the kind off its policies (sweep/spec.py
kind_of_jobs). Each kind keeps its own table of constructors, because what a policy is built from differs
with what a job is; this module is the one name space over them. A name in several kinds is one algorithm
with an adapter per kind: the rigid policies schedule elastic jobs through policies/rigid_in_elastic.py,
Crius' scheduler and baselines (policies/crius/scheduler.py, baselines.py) schedule data-parallel elastic
jobs through policies/crius/elastic.py, and Gavel's LP and round leases (policies/gavel/) serve both its
elastic jobs and Crius' (policies/crius/gavel.py). The Pollux artifact's Tiresias and Crius' reading of
Gandiva are other algorithms and have names of their own (tiresias-pollux, gandiva-crius).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

# the kinds of jobs a policy schedules (each with its registry and spec dialect; one event loop runs all)
EXACT, ELASTIC, CRIUS = "rigid", "elastic", "crius"


@dataclass(frozen=True)
class PolicyListing:
    name: str
    loops: tuple[str, ...]  # EXACT, ELASTIC, CRIUS: the kinds of jobs it schedules (one implementation each)
    summary: str  # one line: what it is, what its jobs need


def _first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0].rstrip(".") if (text or "").strip() else ""


def all_policies() -> list[PolicyListing]:
    """Every policy name of every loop, sorted by name; plugins loaded in this process included."""
    from artist.policies import registry
    from artist.policies.crius.registry import POLICIES as CRIUS_POLICIES, SUMMARIES
    from artist.policies.pollux.registry import ELASTIC_POLICIES, RIGID_IN_ELASTIC

    loops: dict[str, list[str]] = {}
    summary: dict[str, list[str]] = {}
    for name in registry.policy_names():
        cls = registry._REGISTRY[name]
        loops.setdefault(name, []).append(EXACT)
        module = sys.modules.get(cls.__module__)
        line = _first_line(cls.__doc__) or _first_line(getattr(module, "__doc__", None))
        summary.setdefault(name, []).append(line or "(no description)")
    for name, entry in ELASTIC_POLICIES.items():
        loops.setdefault(name, []).append(ELASTIC)
        if name not in RIGID_IN_ELASTIC:  # the rigid ones are the exact loop's, described there
            summary.setdefault(name, []).append(f"elastic jobs: {entry.summary}" if EXACT in loops[name]
                                                 else entry.summary)
    for name in CRIUS_POLICIES:
        loops.setdefault(name, []).append(CRIUS)
        text = SUMMARIES[name]
        summary.setdefault(name, []).append(f"Crius' jobs: {text}" if len(loops[name]) > 1 else text)
    return [PolicyListing(name, tuple(loops[name]), "; ".join(summary[name])) for name in sorted(loops)]
