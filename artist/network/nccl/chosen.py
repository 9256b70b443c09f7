"""A collective timed as NCCL's tuner predicts it, for the algorithm, protocol and channels it picks at
each size: the analytical backend's `nccl` algorithm (artist/network/analytical.py).

NCCL picks per call by its own cost model (model.choose); within one pick the time is affine in the size,
and the picks change at a handful of sizes, so each size's answer is memoised (a bound keeps memory flat).
NCCL's tuner covers all-reduce, all-gather and reduce-scatter; all-to-all and send/recv are point-to-point
in NCCL (no algorithm choice), so the backend times those by their schedules as before.
"""

from __future__ import annotations

from artist.memo import memoised
from artist.network.nccl.fabric import inputs_of
from artist.network.nccl.inputs import Choice, TunerInputs
from artist.network.nccl.model import choose
from artist.placement import Placement

TUNED_KINDS = ("all_reduce", "all_gather", "reduce_scatter")  # the collectives NCCL chooses an algorithm for
MAX_SIZES = 10_000  # sizes one collective keeps its pick for (a bound on memory, not a tuning)


class NcclChosen:
    """One collective kind on one communicator: seconds(nbytes) and choice(nbytes), nccl-tests' size."""

    def __init__(self, inputs: TunerInputs, kind: str):
        if kind not in TUNED_KINDS:
            raise ValueError(f"NCCL's tuner chooses for {', '.join(TUNED_KINDS)}, not {kind}")
        self.inputs = inputs
        self.kind = kind
        self._picks: dict[int, Choice] = {}

    def choice(self, nbytes: float) -> Choice:
        size = int(nbytes)
        return memoised(self._picks, size, lambda: choose(self.inputs, self.kind, size), MAX_SIZES)

    def seconds(self, nbytes: float) -> float:
        return self.choice(nbytes).seconds if nbytes > 0 else 0.0


def choice_on(placement: Placement, kind: str, nbytes: int) -> Choice | None:
    """The algorithm, protocol and channels NCCL picks for one collective on these GPUs (None for a
    point-to-point kind, or one GPU, where it picks nothing)."""
    if kind not in TUNED_KINDS or placement.size < 2:
        return None
    return choose(inputs_of(placement), kind, int(nbytes))
