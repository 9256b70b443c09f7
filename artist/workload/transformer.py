"""A transformer's architecture as a layer list: what hybrid parallelism needs to know.

TransformerConfig holds the published dimensions of one model (layers, hidden size, heads,
feed-forward width, vocabulary, sequence length, and for a mixture of experts the experts per
MoE layer and the top-k routing). ``layers()`` turns it into LayerSpecs, in forward order:
the embedding, one entry per transformer block, the output head. Every figure is per *sample*
(one sequence of ``seq_len`` tokens) so a plan scales it by its micro-batch size:

- parameters (``params``; ``expert_params`` the part held by experts, sharded by EP);
- forward FLOPs: 2 x (matmul weights active per token) x tokens, plus the attention scores
  4 s^2 h (Q K^T and scores x V, 2 s^2 h each), as Narayanan et al. 2021 (SC'21, sec. 5.1)
  count them; the backward pass is twice the forward (same source);
- activation bytes handed to the next layer (s x h x 2 bytes, bf16);
- tensor-parallel all-reduces per forward pass and their bytes (Megatron-LM: one after
  self-attention, one after the MLP, of the s x h activation; Shoeybi et al. 2019, sec. 3);
- expert-parallel all-to-alls per forward pass (dispatch and combine, k x s x h x 2 bytes:
  GShard, Lepikhin et al. 2021, sec. 2.2);
- activation memory: Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
  Transformer Models", Table 2): s b h (10 + 24/t + 5 a s / (h t)) bytes per layer with t-way
  tensor parallelism, split here into the part every TP rank keeps (10 s h) and the part
  sharded by t. The 24 s h term is 8 s h of attention and 16 s h of a 4h-wide GeLU MLP; a
  feed-forward of width f counts 4 s f (6 s f when gated, as LLaMA's SwiGLU keeps two
  projections and their product), which reproduces 16 s h at f = 4h (an extension, estimated).

The mixed-precision dtype is bf16/fp16 throughout (2 bytes), as the cited training runs used.
"""

from __future__ import annotations

from dataclasses import dataclass

DTYPE_BYTES = 2  # bf16 / fp16 activations, weights and gradients on the wire


@dataclass(frozen=True)
class LayerSpec:
    name: str
    kind: str  # "embedding" | "transformer" | "moe" | "head"
    params: int  # parameters held by this layer (experts included)
    forward_flops: float  # per sample (one sequence)
    output_bytes: int  # activation handed to the next layer, per sample
    tp_all_reduces: int = 0  # per forward pass (the backward pass has as many)
    tp_bytes: int = 0  # per all-reduce, per sample
    ep_all_to_alls: int = 0  # per forward pass (as many in the backward pass)
    ep_bytes: int = 0  # per all-to-all send buffer, per sample
    expert_params: int = 0  # the part of params that expert parallelism shards
    activation_replicated_bytes: float = 0.0  # per sample, kept whole by every TP rank
    activation_sharded_bytes: float = 0.0  # per sample, divided by the TP degree
    input_bytes: int = 0  # per sample: what full recomputation keeps (the layer's input)
    tied_params: int = 0  # head: the word embedding it shares; a copy on the last stage when pp > 1

    def activation_bytes(self, tp: int) -> float:
        """Activation memory of one sample through this layer on one of tp ranks (no recomputation)."""
        return self.activation_replicated_bytes + self.activation_sharded_bytes / tp


@dataclass(frozen=True)
class TransformerConfig:
    name: str
    layers: int
    hidden: int
    heads: int
    ffn_hidden: int
    vocab: int
    seq_len: int
    kv_heads: int = 0  # grouped-query attention (0: as many as heads)
    gated_mlp: bool = False  # SwiGLU: three h x f matrices instead of two
    biases: bool = True
    rms_norm: bool = False  # one scale vector per norm instead of scale and bias
    learned_positions: bool = True
    tied_embeddings: bool = True
    encoder: bool = False  # bidirectional (BERT-like); same costs per layer
    moe_experts: int = 0  # experts per MoE layer (0: dense)
    moe_every: int = 2  # every n-th block is an MoE block (GShard: every other)
    moe_top_k: int = 2  # experts per token (GShard: top-2)
    published_params: float = 0.0  # the source's parameter count, for the check in tests
    source: str = ""

    def __post_init__(self):
        for field_name in ("layers", "hidden", "heads", "ffn_hidden", "vocab", "seq_len"):
            if getattr(self, field_name) < 1:
                raise ValueError(f"model {self.name}: {field_name} must be >= 1")
        if self.hidden % self.heads:
            raise ValueError(f"model {self.name}: hidden {self.hidden} is not a multiple of heads {self.heads}")

    @property
    def is_moe(self) -> bool:
        return self.moe_experts > 0

    def _is_moe_block(self, index: int) -> bool:
        # GShard / Alpa: the MoE layer replaces the feed-forward of every other block (the second of each pair)
        return self.is_moe and index % self.moe_every == self.moe_every - 1

    def layers_list(self) -> tuple[LayerSpec, ...]:
        return (self._embedding(),) + tuple(self._block(i) for i in range(self.layers)) + (self._head(),)

    def total_params(self) -> int:
        return sum(layer.params for layer in self.layers_list())

    # ---- pieces -------------------------------------------------------------------------------
    def _norm_params(self) -> int:
        return self.hidden if self.rms_norm else 2 * self.hidden

    def _embedding(self) -> LayerSpec:
        s, h = self.seq_len, self.hidden
        params = self.vocab * h + (s * h if self.learned_positions else 0)
        return LayerSpec("embedding", "embedding", params, 0.0, s * h * DTYPE_BYTES,
                         activation_replicated_bytes=float(s * h * DTYPE_BYTES))

    def _block(self, index: int) -> LayerSpec:
        s, h, f, a = self.seq_len, self.hidden, self.ffn_hidden, self.heads
        kv_dim = h // self.heads * (self.kv_heads or self.heads)
        attn_weights = h * (h + 2 * kv_dim) + h * h  # QKV projection + output projection
        attn_biases = (h + 2 * kv_dim + h) if self.biases else 0
        mlp_matrices = 3 if self.gated_mlp else 2
        mlp_weights = mlp_matrices * h * f
        mlp_biases = (f + h) if self.biases else 0
        norms = 2 * self._norm_params()
        moe = self._is_moe_block(index)
        experts = self.moe_experts if moe else 1
        active = self.moe_top_k if moe else 1  # experts each token goes through
        router = h * self.moe_experts if moe else 0
        expert_params = experts * (mlp_weights + mlp_biases) if moe else 0
        params = attn_weights + attn_biases + norms + router + experts * (mlp_weights + mlp_biases)
        flops = 2.0 * s * (attn_weights + active * mlp_weights + router) + 4.0 * s * s * h
        act = s * h * DTYPE_BYTES
        mlp_act = (6 if self.gated_mlp else 4) * s * f * active
        return LayerSpec(
            name=f"block{index}", kind="moe" if moe else "transformer", params=params, forward_flops=flops,
            output_bytes=act, tp_all_reduces=2, tp_bytes=act,
            ep_all_to_alls=2 if moe else 0, ep_bytes=active * act if moe else 0, expert_params=expert_params,
            activation_replicated_bytes=10.0 * s * h,
            activation_sharded_bytes=8.0 * s * h + mlp_act + 5.0 * a * s * s,
            input_bytes=act)

    def _head(self) -> LayerSpec:
        s, h, v = self.seq_len, self.hidden, self.vocab
        params = self._norm_params() + (0 if self.tied_embeddings else v * h)
        # logits (2 s h V FLOPs); the loss is negligible. Logits in fp32 for the loss: 4 bytes per entry,
        # sharded by TP (Megatron's vocabulary-parallel cross entropy).
        return LayerSpec("head", "head", params, 2.0 * s * h * v, 0,
                         activation_replicated_bytes=float(s * h * DTYPE_BYTES),
                         activation_sharded_bytes=4.0 * s * v, input_bytes=s * h * DTYPE_BYTES,
                         tied_params=v * h if self.tied_embeddings else 0)
