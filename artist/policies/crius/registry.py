"""The policies of Crius' jobs (run by artist/crius/simulation.py in the event loop) by name: Crius and its
paper's baselines (baselines.py), Gavel through the Gavel module (gavel.py)."""

from __future__ import annotations

from artist.policies.crius.baselines import BASELINES
from artist.policies.crius.scheduler import SEARCH_DEPTH, CriusScheduler

POLICIES = ("crius",) + tuple(BASELINES) + ("gavel",)  # gavel: through the Gavel module (gavel.py)
# one line each for `artist list policies` (artist/policies/suite.py)
SUMMARIES = {
    "crius": "Crius (arXiv 2024): Cells (GPU type, count, pipeline stages) estimated and tuned per LLM job",
    "fcfs": "first come first served on data-parallel profiles (Crius' baseline)",
    "gandiva-crius": "Gandiva as Crius evaluates it: grow-shrink on data-parallel profiles, the user's GPU type",
    "elasticflow-ls": "ElasticFlow with loose SLOs (Crius' baseline): minimum-share admission, then scale-out",
    "gavel": "Gavel's LP over the Cells' data-parallel throughputs (Crius' baseline)",
}


def make_policy(name: str, catalogue, capacity: dict, depth: int = SEARCH_DEPTH):
    if name == "crius":
        return CriusScheduler(catalogue, capacity, depth)
    if name == "gavel":
        from artist.policies.crius.gavel import Gavel
        return Gavel(catalogue, capacity)
    try:
        return BASELINES[name](catalogue, capacity)
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; known: {', '.join(POLICIES)}") from None
