"""Cell-guided tuning (Crius sec. 5.2; digest 3.2 (c)) and the full search the baselines run.

    tuned = tune_cell(cell_model, estimate.plan)      # -> Tuned(plan, latency_s, trials)
    full = full_search(cell_models)                   # every stage count, every (d, t) per stage

After a Cell is scheduled, each stage's (d, t) space (d t = G_s) is split at the half-hybrid point
d = t = sqrt(G_s): a stage the estimate ran DP-only searches only d >= sqrt(G_s), a TP-only stage only
t >= sqrt(G_s); the other half is pruned. Our search inside the kept halves (Crius builds on Alpa's, not
described): coordinate descent, stage by stage in order, each stage taking the fastest fitting option of
its half with the others fixed, by the estimator's formula (cells.py). Every (stage, option) timed is one
tuning trial of TUNE_TRIAL_SECONDS (a compile + profile, as a Cell profile: Crius sec. 6.1's ~30 s);
the trials' sum is the tuning time a (re)started job waits before it trains.

full_search is the same descent over every option of every stage (not only the kept half), for every
stage count the caller gives, from the same start as Crius (each count's best assembled plan): what the
baselines' Alpa-style "best plan" search costs (they run with the best plan, Crius sec. 8.1). It is also
the reference for Crius' tuning accuracy, 1 - (T_c - T_o) / T_o (a descent, so not a proven optimum).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from artist.policies.crius.cells import PROFILE_SECONDS, CellModel, StagePlan

TUNE_TRIAL_SECONDS = PROFILE_SECONDS


@dataclass(frozen=True)
class Tuned:
    model: CellModel
    plan: tuple[StagePlan, ...]
    latency_s: float
    trials: int

    @property
    def tuning_seconds(self) -> float:
        return self.trials * TUNE_TRIAL_SECONDS


def half_space(model: CellModel, s: int, estimated: StagePlan) -> list[StagePlan]:
    """The kept half of stage s's (d, t) space (module docstring); both halves hold the half-hybrid."""
    root = math.sqrt(model.cuts[s].gpus)
    options = model.options(s)
    if estimated.t == 1:
        return [p for p in options if p.d >= root]
    return [p for p in options if p.t >= root]


def _descend(model: CellModel, start: Sequence[StagePlan], spaces: Sequence[Sequence[StagePlan]]):
    plan, trials = list(start), 0
    seen = set()
    for s, space in enumerate(spaces):
        best, best_latency = plan[s], None
        for option in space:
            if (s, option) not in seen:
                seen.add((s, option))
                trials += 1
            timing = model.time(tuple(plan[:s]) + (option,) + tuple(plan[s + 1:]))
            if timing.fits and (best_latency is None or timing.latency_s < best_latency):
                best, best_latency = option, timing.latency_s
        plan[s] = best
    timing = model.time(tuple(plan))
    return tuple(plan), (timing.latency_s if timing.fits else math.inf), trials


def tune_cell(model: CellModel, estimated: Sequence[StagePlan]) -> Tuned:
    spaces = [half_space(model, s, p) for s, p in enumerate(estimated)]
    plan, latency, trials = _descend(model, estimated, spaces)
    return Tuned(model, plan, latency, trials)


def full_search(models: Sequence[CellModel], starts: Sequence[Sequence[StagePlan] | None]) -> Tuned | None:
    """The fastest fitting plan over every given stage count, every option per stage (None: none fits),
    each descent starting from `starts` (the best assembled plan of that stage count, else the first
    option of every stage), so it never ends behind Crius' half-space descent from the same start."""
    best, trials = None, 0
    for model, first in zip(models, starts):
        spaces = [model.options(s) for s in range(model.stages)]
        if any(not space for space in spaces):
            continue
        start = list(first) if first is not None else [space[0] for space in spaces]
        plan, latency, n = _descend(model, start, spaces)
        trials += n
        if latency < math.inf and (best is None or latency < best.latency_s):
            best = Tuned(model, plan, latency, 0)
    return None if best is None else Tuned(best.model, best.plan, best.latency_s, trials)
