"""One bar chart per claim: the claim's metric per policy (and judged value), one bar per network
configuration, so the ablation is visible at a glance. PNGs carry no software tag (same table, same
bytes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from artist.report.evaluate import Verdict, judged_values

_PNG_META = {"Software": None}


def claim_figure(verdicts: list[Verdict], path: Path) -> Path:
    """verdicts: one claim's verdicts, one per network configuration."""
    claim = verdicts[0].claim
    ats = judged_values(verdicts)
    policies = claim.policies
    groups = [(p, a) for a in ats for p in policies]
    labels = [p if a is None else f"{p}\n{claim.per or claim.over}={a}" for p, a in groups]
    fig = Figure(figsize=(max(5.0, 0.9 * len(groups) * max(1, len(verdicts)) ** 0.5 + 2), 3.6))
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(verdicts))
    x = np.arange(len(groups))
    for i, v in enumerate(verdicts):
        heights = [v.means.get(g, np.nan) for g in groups]
        ax.bar(x + (i - (len(verdicts) - 1) / 2) * width, heights, width, label=f"{v.config.label} ({v.status})")
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylabel(f"{claim.metric}" + (f" [{claim.unit}]" if claim.unit else ""))
    ax.set_title(claim.text, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, metadata=_PNG_META)
    return path
