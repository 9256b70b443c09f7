"""Large language models from their published configurations (every entry cites its table).

    zoo_model("gpt3-13b") -> TransformerConfig;  ZOO: name -> TransformerConfig

Families:
- gpt3-*: Brown et al. 2020, "Language Models are Few-Shot Learners", Table 2.1 (n_layers,
  d_model, n_heads, context 2048); GPT-2 BPE vocabulary of 50257 (Radford et al. 2019);
  feed-forward 4 x d_model (sec. 2.1: "the same model and architecture as GPT-2").
- llama2-*: Touvron et al. 2023, "Llama 2: Open Foundation and Fine-Tuned Chat Models",
  Table 1 (sizes, context 4096, GQA for 70B) with the dimensions of LLaMA-1 Table 2 (Touvron
  et al. 2023a: dim, heads, layers) for 7B/13B; the feed-forward widths (11008, 13824, 28672),
  70B's dimensions (8192, 64 heads, 80 layers) and its 8 key-value heads are from the released
  model configuration (meta-llama params.json / Hugging Face config.json), not the paper text.
- bert-*: the BERT sizes Crius runs (Xue et al., Crius, Table 2: 0.76, 1.3, 2.6, 6.7 B), with
  the dimensions of the same-sized models in Alpa's benchmark suite (alpa-projects/alpa,
  benchmark/alpa/paper_manual_gpt_suite.py, gpt_specs: sequence 1024, vocabulary 51200), which
  Crius says it reuses ("same models as Alpa").
- moe-*: GShard-style mixture of experts at Crius' sizes (Table 2: 0.69, 1.3, 2.4, 10, 27 B),
  dimensions from Alpa's suite (benchmark/alpa/paper_manual_moe_suite.py, moe_specs: S, H, L,
  heads, V, E) with Alpa's feed-forward factor 8 (compute_moe_parameter_count, mlp_factor=8),
  an MoE layer in every other block and top-2 routing (GShard, Lepikhin et al. 2021, sec. 2).
- megatron-*: Narayanan et al. 2021 (SC'21), "Efficient Large-Scale Language Model Training on
  GPU Clusters Using Megatron-LM", Table 1 (heads, hidden, layers; vocabulary 51200, sequence
  2048): the configurations whose measured throughput tests/test_hybrid_mfu.py compares.
- gpt2-1.5b: Radford et al. 2019, Table 2 (48 layers, d_model 1600; 25 heads and context 1024
  from the released config), the model whose memory ZeRO (Rajbhandari et al. 2020) quotes.

All are real published dimensions. GPT-3 13B's d_model is printed as 5140 in Table 2.1, which
is not n_heads x d_head = 40 x 128 = 5120; 5120 is used (as every reimplementation does).
GPT-3 XL (1.3B) is printed with 24 heads of d_head 128, i.e. 3072 != d_model 2048; 16 heads of
128 are used (d_model / d_head). Heads change only the attention-score activation memory.
"""

from __future__ import annotations

from artist.workload.transformer import TransformerConfig

_GPT3 = "Brown et al. 2020 (GPT-3), Table 2.1"
_LLAMA2 = ("Touvron et al. 2023 (Llama 2), Table 1; dims from LLaMA-1 Table 2 and the released "
           "params.json (feed-forward width, GQA heads)")
_ALPA_GPT = "Crius Table 2 (BERT sizes); dims from Alpa benchmark/alpa/paper_manual_gpt_suite.py gpt_specs"
_ALPA_MOE = ("Crius Table 2 (GShard MoE sizes); dims from Alpa benchmark/alpa/paper_manual_moe_suite.py "
             "moe_specs, mlp_factor 8, MoE every other block, top-2")
_MEGATRON = "Narayanan et al. 2021 (Megatron-LM, SC'21), Table 1"


def _gpt3(name, layers, hidden, heads, published):
    return TransformerConfig(name, layers, hidden, heads, 4 * hidden, 50257, 2048,
                             published_params=published, source=_GPT3)


def _llama2(name, layers, hidden, heads, ffn, kv_heads, published):
    return TransformerConfig(name, layers, hidden, heads, ffn, 32000, 4096, kv_heads=kv_heads, gated_mlp=True,
                             biases=False, rms_norm=True, learned_positions=False, tied_embeddings=False,
                             published_params=published, source=_LLAMA2)


def _bert(name, layers, hidden, heads, published):
    return TransformerConfig(name, layers, hidden, heads, 4 * hidden, 51200, 1024, encoder=True,
                             published_params=published, source=_ALPA_GPT)


def _moe(name, layers, hidden, heads, experts, published):
    return TransformerConfig(name, layers, hidden, heads, 8 * hidden, 32000, 1024, moe_experts=experts,
                             published_params=published, source=_ALPA_MOE)


def _megatron(name, layers, hidden, heads, published):
    return TransformerConfig(name, layers, hidden, heads, 4 * hidden, 51200, 2048,
                             published_params=published, source=_MEGATRON)


_MODELS = (
    _gpt3("gpt3-1.3b", 24, 2048, 16, 1.3e9),  # GPT-3 XL: 16 heads of 128 (see the module docstring)
    _gpt3("gpt3-2.7b", 32, 2560, 32, 2.7e9),
    _gpt3("gpt3-6.7b", 32, 4096, 32, 6.7e9),
    _gpt3("gpt3-13b", 40, 5120, 40, 13.0e9),
    _gpt3("gpt3-175b", 96, 12288, 96, 175.0e9),
    _llama2("llama2-7b", 32, 4096, 32, 11008, 0, 7e9),
    _llama2("llama2-13b", 40, 5120, 40, 13824, 0, 13e9),
    _llama2("llama2-70b", 80, 8192, 64, 28672, 8, 70e9),
    _bert("bert-0.76b", 24, 1536, 16, 0.76e9),
    _bert("bert-1.3b", 24, 2048, 32, 1.3e9),
    _bert("bert-2.6b", 32, 2560, 32, 2.6e9),
    _bert("bert-6.7b", 32, 4096, 32, 6.7e9),
    _moe("moe-0.69b", 8, 768, 16, 16, 0.69e9),
    _moe("moe-1.3b", 16, 768, 16, 16, 1.3e9),
    _moe("moe-2.4b", 16, 1024, 16, 16, 2.4e9),
    _moe("moe-10b", 16, 1536, 16, 32, 10e9),
    _moe("moe-27b", 16, 2048, 16, 48, 27e9),
    _megatron("megatron-1.7b", 24, 2304, 24, 1.7e9),
    _megatron("megatron-3.6b", 30, 3072, 32, 3.6e9),
    _megatron("megatron-7.5b", 36, 4096, 32, 7.5e9),
    _megatron("megatron-18.4b", 40, 6144, 48, 18.4e9),
    _megatron("megatron-39.1b", 48, 8192, 64, 39.1e9),
    _megatron("megatron-76.1b", 60, 10240, 80, 76.1e9),
    _megatron("megatron-145.6b", 80, 12288, 96, 145.6e9),
    _megatron("megatron-310.1b", 96, 16384, 128, 310.1e9),
    TransformerConfig("gpt2-1.5b", 48, 1600, 25, 6400, 50257, 1024, published_params=1.5e9,
                      source="Radford et al. 2019 (GPT-2), Table 2; heads and context from the released config"),
)

ZOO: dict[str, TransformerConfig] = {m.name: m for m in _MODELS}


def zoo_model(name: str) -> TransformerConfig:
    try:
        return ZOO[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; the LLM zoo has: {', '.join(ZOO)}") from None
