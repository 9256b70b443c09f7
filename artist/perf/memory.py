"""Memory of one GPU under a hybrid-parallel plan: weights, gradients, optimizer state, activations.

Model states: mixed-precision Adam keeps 16 bytes per parameter (fp16/bf16 weights 2 and
gradients 2; fp32 master weights, momentum and variance 4 each): Rajbhandari et al. 2020
(ZeRO), sec. 3.1. A GPU holds its stage's parameters divided by the TP degree, expert
parameters further divided by the EP degree.

Activations: under 1F1B, stage p keeps the activations of min(pp - p, m) micro-batches in
flight (Narayanan et al. 2021, sec. 2.2.1), so the first stage holds the most. Per micro-batch
and layer: LayerSpec.activation_bytes(tp) (Korthikanti et al. 2022, Table 2); with full
activation recomputation only each layer's input is kept (2 s b h bytes, same source) plus one
layer's full activations while it is recomputed and back-propagated. With sequence parallelism
the part every TP rank kept whole is sharded too: s b h (34 + 5 a s / h) / t per layer, and the
kept input 2 s b h / t (same Table 2).

With pp > 1 the last stage also holds its copy of a tied word embedding.

Not modelled: temporary buffers, NCCL workspaces, memory fragmentation, the CUDA context
(~1 GiB per GPU in practice); they make real footprints somewhat larger.
"""

from __future__ import annotations

from dataclasses import dataclass

BYTES_PER_PARAM_MIXED_ADAM = 16  # ZeRO sec. 3.1: 2 + 2 + (4 + 4 + 4)
GIB = 1 << 30


class PlanDoesNotFit(ValueError):
    """A plan whose busiest GPU needs more memory than the GPU has (the message gives the numbers)."""


@dataclass(frozen=True)
class MemoryUse:
    stage: int  # the stage whose GPUs need the most
    params: float  # parameters held by one GPU of that stage
    model_state_bytes: float
    activation_bytes: float

    @property
    def total_bytes(self) -> float:
        return self.model_state_bytes + self.activation_bytes

    @property
    def gib(self) -> float:
        return self.total_bytes / GIB


def stage_memory(stage_layers, stage: int, pp: int, tp: int, ep: int, microbatches: int, micro_batch_size: int,
                 recompute: bool, sequence_parallel: bool = False) -> MemoryUse:
    params = sum((layer.params - layer.expert_params) / tp + layer.expert_params / (tp * ep)
                 for layer in stage_layers)
    if pp > 1 and stage == pp - 1:  # the output layer's copy of a tied word embedding (Megatron-LM)
        params += sum(layer.tied_params for layer in stage_layers) / tp
    in_flight = min(pp - stage, microbatches)
    shard = tp if sequence_parallel else 1  # what sequence parallelism further divides
    full = [(layer.activation_bytes(tp) if not sequence_parallel else
             (layer.activation_replicated_bytes + layer.activation_sharded_bytes) / tp) * micro_batch_size
            for layer in stage_layers]
    if recompute:
        kept = sum(layer.input_bytes for layer in stage_layers) * micro_batch_size / shard
        activations = in_flight * kept + max(full, default=0.0)
    else:
        activations = in_flight * sum(full)
    return MemoryUse(stage, params, params * BYTES_PER_PARAM_MIXED_ADAM, activations)


def check_fits(use: MemoryUse, capacity_bytes: float, gpu_type: str, what: str) -> None:
    if use.total_bytes > capacity_bytes:
        raise PlanDoesNotFit(
            f"{what} does not fit on a {gpu_type}: stage {use.stage} needs {use.gib:.1f} GiB per GPU "
            f"({use.model_state_bytes / GIB:.1f} GiB weights, gradients and Adam state for "
            f"{use.params / 1e9:.3f} B parameters + {use.activation_bytes / GIB:.1f} GiB activations), "
            f"the GPU has {capacity_bytes / GIB:.1f} GiB")
