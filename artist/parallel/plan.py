"""A hybrid-parallel plan and the rank grid that lays it on GPUs (Megatron-LM order).

    plan = ParallelPlan(dp=4, tp=8, pp=2, microbatches=8)      # or parse_plan("dp=4,tp=8,pp=2")
    grid = rank_grid(plan, gpus)                                 # gpus: one per rank, in rank order

Rank r holds tensor-parallel index t = r % tp, pipeline stage p = (r // tp) % pp and
data-parallel replica d = r // (tp * pp): TP varies fastest, then PP, then DP, so that with
the GPUs listed machine by machine a TP group sits inside a machine, consecutive stages on
neighbouring machines and replicas further apart (Megatron-LM's initialize_model_parallel;
Narayanan et al. 2021, sec. 3.3). Expert parallelism (ep) shards the experts of MoE layers over
ep consecutive replicas (DeepSpeed-MoE / GShard style): ep divides dp, replicas d and d' share
an EP group when d // ep == d' // ep.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

PLAN_KEYS = ("dp", "tp", "pp", "ep", "microbatches")
# Sequences per step where a plan states no micro-batches: the smallest batch of Megatron-LM's Table 1
# (Narayanan et al. 2021). One default for `artist plans`, `comm --plan`, `latency-table --plan`, trace rows
# with a plan and the llm generator, so a plan means the same step wherever it is written.
DEFAULT_GLOBAL_BATCH = 512


@dataclass(frozen=True)
class ParallelPlan:
    dp: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1
    microbatches: int = 1  # micro-batches per replica per step (the pipeline's m)

    def __post_init__(self):
        for key in PLAN_KEYS:
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"plan {key} must be a whole number >= 1, got {value!r}")
        if self.dp % self.ep:
            raise ValueError(f"plan ep={self.ep} must divide dp={self.dp} (experts are sharded over replicas)")

    @property
    def gpus(self) -> int:
        return self.dp * self.tp * self.pp

    def text(self) -> str:
        return f"dp={self.dp},tp={self.tp},pp={self.pp},ep={self.ep},microbatches={self.microbatches}"


def parse_plan(text: str, microbatches: int | None = None) -> ParallelPlan:
    """'dp=4,tp=8,pp=2[,ep=2][,microbatches=16]' -> ParallelPlan; ValueError naming the bad part."""
    values: dict[str, int] = {}
    for part in text.split(","):
        key, sep, value = part.strip().partition("=")
        key = key.strip().lower()
        if not sep or key not in PLAN_KEYS:
            raise ValueError(f"expected key=value pairs with keys {', '.join(PLAN_KEYS)}, got {part.strip()!r}")
        if key in values:
            raise ValueError(f"{key} is given twice")
        try:
            values[key] = int(value)
        except ValueError:
            raise ValueError(f"{key} must be a whole number, got {value.strip()!r}") from None
    if microbatches is not None:
        values.setdefault("microbatches", microbatches)
    return ParallelPlan(**values)


@dataclass(frozen=True)
class RankGrid:
    plan: ParallelPlan
    gpus: tuple[int, ...]  # global GPU of rank r

    def __post_init__(self):
        if len(self.gpus) != self.plan.gpus:
            raise ValueError(f"plan {self.plan.text()} needs {self.plan.gpus} GPUs, got {len(self.gpus)}")
        if len(set(self.gpus)) != len(self.gpus):
            raise ValueError("a GPU is listed twice in the rank grid")

    def gpu(self, d: int, p: int, t: int) -> int:
        return self.gpus[t + self.plan.tp * (p + self.plan.pp * d)]

    def tp_group(self, d: int, p: int) -> tuple[int, ...]:
        """The GPUs of stage p of replica d, in TP order."""
        return tuple(self.gpu(d, p, t) for t in range(self.plan.tp))

    def dp_group(self, p: int, t: int) -> tuple[int, ...]:
        return tuple(self.gpu(d, p, t) for d in range(self.plan.dp))

    def ep_group(self, d: int, p: int, t: int) -> tuple[int, ...]:
        """The replicas that share d's experts (at stage p, TP index t)."""
        first = d // self.plan.ep * self.plan.ep
        return tuple(self.gpu(e, p, t) for e in range(first, first + self.plan.ep))

    def expert_dp_group(self, d: int, p: int, t: int) -> tuple[int, ...]:
        """The replicas holding copies of the same experts as d (their gradients are all-reduced together)."""
        return tuple(self.gpu(e, p, t) for e in range(d % self.plan.ep, self.plan.dp, self.plan.ep))


def rank_grid(plan: ParallelPlan, gpus: Sequence[int]) -> RankGrid:
    return RankGrid(plan, tuple(int(g) for g in gpus))


def with_microbatches(text: str, global_batch: int = 0, micro_batch_size: int = 1) -> ParallelPlan:
    """The plan `text` as parse_plan reads it (';' may stand for ','), its micro-batches as stated or
    from the global batch: global_batch / (dp x micro-batch size), which must be whole and agree with a
    stated microbatches; neither given: DEFAULT_GLOBAL_BATCH. ValueError naming the mismatch."""
    plan = parse_plan(text.replace(";", ","))
    stated = "microbatches" in text
    if stated and not global_batch:
        return plan
    batch = global_batch or DEFAULT_GLOBAL_BATCH
    per_step = plan.dp * micro_batch_size
    if batch % per_step:
        raise ValueError(f"global batch {batch} is not a whole number of micro-batches of {micro_batch_size} "
                         f"over dp={plan.dp} replicas (give microbatches=M in the plan, or another global batch)")
    m = batch // per_step
    if stated and plan.microbatches != m:
        raise ValueError(f"microbatches={plan.microbatches} but global batch {batch} / (dp={plan.dp} x "
                         f"micro-batch {micro_batch_size}) = {m}")
    return ParallelPlan(plan.dp, plan.tp, plan.pp, plan.ep, m)


def plan_for_job(text: str, gpus: int, global_batch: int = 0, micro_batch_size: int = 1) -> ParallelPlan:
    """A trace row's plan (with_microbatches: as stated, else from the row's global batch or the
    default one); dp x tp x pp must be the job's GPUs. ValueError naming the mismatch."""
    plan = with_microbatches(text, global_batch, micro_batch_size)
    if plan.gpus != gpus:
        raise ValueError(f"plan {plan.text()} uses dp x tp x pp = {plan.gpus} GPUs; the job asks {gpus}")
    return plan
