"""Crius stage determination (Xue et al., Crius sec. 4.2, Fig. 7): cut an operator chain into pipeline stages.

    chain = operator_chain(zoo_model("bert-1.3b"))            # or OperatorChain(flops, boundary_bytes)
    stages = cut_stages(chain, gpus=8, stages=3)               # -> [StageCut(first, last, flops, gpus)]

The paper's rule: give operator l the fractional GPU share g_l = G f_l / sum f, so every operator's ideal
time f_l / g_l is the same and *any* contiguous grouping is compute-balanced; then cut at the N_S - 1
inter-operator boundaries with the smallest communication volume. Stage GPUs G_s = sum of its g_l, which
"approximates a power of 2" (the rounding rule is not given). Our choices where the paper is silent:

- Ties (a transformer's block boundaries all carry the same s x h activation) are broken towards balance:
  among the cut sets of least total boundary traffic, the one whose largest stage holds the fewest FLOPs
  (then the earliest cuts). Found exactly by dynamic programming over (cuts made, boundary), not greedily.
- Every stage must hold FLOPs (an embedding lookup alone would get zero GPUs).
- Rounding: stage GPUs are powers of two summing to G (G a power of two, N_S <= G): start every stage
  at 1 GPU and double, while GPUs remain, the stage whose fractional share g_s most exceeds what it
  holds (ratio g_s / G_s), among those whose doubling still fits. The leftover is always a multiple of the
  smallest stage, so the loop ends with every GPU given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from artist.workload.transformer import TransformerConfig


@dataclass(frozen=True)
class OperatorChain:
    """A model as a chain of operators: per operator its forward FLOPs per sample, and per boundary
    (between operator l and l + 1) the bytes per sample that cross it."""
    flops: tuple[float, ...]
    boundary_bytes: tuple[float, ...]  # len(flops) - 1 entries

    def __post_init__(self):
        if not self.flops:
            raise ValueError("an operator chain needs at least one operator")
        if len(self.boundary_bytes) != len(self.flops) - 1:
            raise ValueError(f"{len(self.flops)} operators need {len(self.flops) - 1} boundaries, "
                             f"got {len(self.boundary_bytes)}")
        if any(f < 0 for f in self.flops) or any(b < 0 for b in self.boundary_bytes) or sum(self.flops) <= 0:
            raise ValueError("operator FLOPs and boundary bytes must be >= 0, with some FLOPs")


@dataclass(frozen=True)
class StageCut:
    first: int  # first operator (inclusive)
    last: int  # last operator (inclusive)
    flops: float  # forward FLOPs per sample of the stage's operators
    share: float  # fractional GPUs: G x flops / total
    gpus: int  # the power of two it gets


def operator_chain(model: TransformerConfig) -> OperatorChain:
    """The zoo model's layers as operators (embedding, blocks, head): a block is Crius' operator
    granularity here (an Alpa 'layer' after its auto-layer clustering is of that size)."""
    layers = model.layers_list()
    return OperatorChain(tuple(float(layer.forward_flops) for layer in layers),
                         tuple(float(layer.output_bytes) for layer in layers[:-1]))


def _is_power_of_two(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def cut_points(chain: OperatorChain, stages: int) -> tuple[int, ...]:
    """The boundaries cut (boundary b lies after operator b): least total traffic, then the least
    largest-stage FLOPs, then the earliest cuts (module docstring). ValueError if impossible."""
    n = len(chain.flops)
    if stages < 1:
        raise ValueError(f"stages must be >= 1, got {stages}")
    prefix = [0.0]
    for f in chain.flops:
        prefix.append(prefix[-1] + f)

    def seg(i, j):  # FLOPs of operators i..j-1
        return prefix[j] - prefix[i]

    # best[k][j]: best (traffic, max stage flops, cuts) for operators 0..j-1 split into k stages
    inf = (float("inf"), float("inf"), ())
    best = [[inf] * (n + 1) for _ in range(stages + 1)]
    best[0][0] = (0.0, 0.0, ())
    for k in range(1, stages + 1):
        for j in range(k, n + 1):
            found = inf
            for i in range(k - 1, j):
                prev = best[k - 1][i]
                if prev[0] == float("inf") or seg(i, j) <= 0:
                    continue
                traffic = prev[0] + (chain.boundary_bytes[i - 1] if i > 0 else 0.0)
                cand = (traffic, max(prev[1], seg(i, j)), prev[2] + ((i - 1,) if i > 0 else ()))
                if cand < found:
                    found = cand
            best[k][j] = found
    if best[stages][n][0] == float("inf"):
        raise ValueError(f"{n} operators cannot make {stages} stages that each hold FLOPs")
    return best[stages][n][2]


def power_of_two_gpus(shares: Sequence[float], gpus: int) -> tuple[int, ...]:
    """Powers of two summing to gpus, one per share, grown where share / held is largest (docstring)."""
    if not _is_power_of_two(gpus):
        raise ValueError(f"a Cell's GPU count must be a power of two, got {gpus}")
    if len(shares) > gpus:
        raise ValueError(f"{len(shares)} stages need at least as many GPUs, got {gpus}")
    held = [1] * len(shares)
    left = gpus - len(shares)
    while left > 0:
        fits = [s for s in range(len(held)) if held[s] <= left]
        s = max(fits, key=lambda i: (shares[i] / held[i], -i))
        left -= held[s]
        held[s] *= 2
    return tuple(held)


def cut_stages(chain: OperatorChain, gpus: int, stages: int) -> list[StageCut]:
    cuts = cut_points(chain, stages)
    bounds = [-1, *cuts, len(chain.flops) - 1]
    total = sum(chain.flops)
    flops = [sum(chain.flops[bounds[k] + 1:bounds[k + 1] + 1]) for k in range(stages)]
    shares = [gpus * f / total for f in flops]
    held = power_of_two_gpus(shares, gpus)
    return [StageCut(bounds[k] + 1, bounds[k + 1], flops[k], shares[k], held[k]) for k in range(stages)]
