"""Every policy of the suite, in whichever loop runs it today, for `artist list policies` and for the one
line `artist simulate` gives a policy it cannot run.

Policies are listed by where they run today (README "Design notes"): the exact event loop's rigid-job
policies (artist/simulator.py: `artist simulate`, rigid sweep specs), the allocators of elastic jobs (specs
with `loop: elastic`; the event loop runs them, deciding every 60 s round: artist/elastic/exact.py) and
Crius' schedulers (specs with `loop: crius`; the event loop again, 300 s rounds: artist/crius/). Each
keeps its own registry; this module only reads them. A name in several places is a different
implementation in each (gandiva, tiresias, gavel, crius), and the listing says so.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

EXACT, ELASTIC, CRIUS = "exact", "elastic", "crius"
WHERE = {EXACT: "artist simulate; sweep specs", ELASTIC: "sweep specs with loop: elastic, elastic jobs",
         CRIUS: "sweep specs with loop: crius"}


@dataclass(frozen=True)
class PolicyListing:
    name: str
    loops: tuple[str, ...]  # EXACT, ELASTIC, CRIUS: where it runs
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
            summary.setdefault(name, []).append(f"elastic loop: {entry.summary}" if EXACT in loops[name]
                                                 else entry.summary)
    for name in CRIUS_POLICIES:
        loops.setdefault(name, []).append(CRIUS)
        text = SUMMARIES[name]
        summary.setdefault(name, []).append(f"crius loop: {text}" if len(loops[name]) > 1 else text)
    return [PolicyListing(name, tuple(loops[name]), "; ".join(summary[name])) for name in sorted(loops)]


def not_in_exact_loop(name: str) -> str | None:
    """Why `artist simulate` cannot run `name`, in one line naming where it runs; None if it can or the
    name is unknown everywhere."""
    for listing in all_policies():
        if listing.name == name and EXACT not in listing.loops:
            where = " or ".join(f"the {loop} loop ({WHERE[loop]})" for loop in listing.loops)
            return (f"policy {name!r} runs in {where}, not in the exact loop that `artist simulate` runs "
                    f"(README: 'Elastic jobs and Pollux', 'Crius')")
    return None
