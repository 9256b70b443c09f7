"""The LLM zoo against its published configurations: parameter counts, FLOPs and the
per-layer communication volumes, each written out from the papers' formulas, not read back."""

from __future__ import annotations

import pytest

from artist.workload.transformer import TransformerConfig
from artist.workload.zoo import ZOO, zoo_model


@pytest.mark.parametrize("name", sorted(ZOO))
def test_parameter_count_within_4_percent_of_the_published_size(name):
    model = ZOO[name]
    assert model.source
    assert model.total_params() == pytest.approx(model.published_params, rel=0.04)


def test_llama2_parameter_counts_are_exact():
    # The released checkpoints' exact sizes (Hugging Face model cards / safetensors metadata).
    assert zoo_model("llama2-7b").total_params() == 6_738_415_616
    assert zoo_model("llama2-70b").total_params() == 68_976_648_192


def test_gpt3_dimensions_follow_table_2_1():
    for name, layers, d_model in [("gpt3-1.3b", 24, 2048), ("gpt3-2.7b", 32, 2560), ("gpt3-6.7b", 32, 4096),
                                  ("gpt3-13b", 40, 5120), ("gpt3-175b", 96, 12288)]:
        m = zoo_model(name)
        assert (m.layers, m.hidden, m.seq_len, m.ffn_hidden) == (layers, d_model, 2048, 4 * d_model)


def test_gpt_block_flops_follow_narayanan_et_al():
    # Narayanan et al. 2021 sec. 5.1: forward FLOPs of one block per sequence 24 s h^2 (1 + s / (6h)),
    # the logit layer 2 s h V.
    m = zoo_model("gpt3-175b")
    s, h, v = 2048, 12288, 50257
    layers = m.layers_list()
    block = layers[1]
    assert block.kind == "transformer"
    assert block.forward_flops == pytest.approx(24 * s * h * h * (1 + s / (6 * h)), rel=1e-12)
    assert layers[-1].forward_flops == pytest.approx(2 * s * h * v, rel=1e-12)
    assert layers[0].forward_flops == 0.0
    assert len(layers) == 96 + 2


def test_activation_and_tensor_parallel_bytes_per_sample():
    m = zoo_model("gpt3-13b")
    block = m.layers_list()[5]
    act = 2048 * 5120 * 2  # s x h in bf16
    assert block.output_bytes == act
    assert block.tp_all_reduces == 2 and block.tp_bytes == act  # Megatron: after attention and after the MLP
    # Korthikanti et al. 2022 Table 2, tensor parallel t: s b h (10 + 24/t + 5 a s / (h t)) bytes per layer.
    s, h, a, t = 2048, 5120, 40, 8
    assert block.activation_bytes(t) == pytest.approx(s * h * (10 + 24 / t + 5 * a * s / (h * t)), rel=1e-12)


def test_moe_blocks_alternate_and_carry_all_to_alls():
    m = zoo_model("moe-0.69b")
    blocks = m.layers_list()[1:-1]
    assert [b.kind for b in blocks] == ["transformer", "moe"] * 4
    moe = blocks[1]
    h, experts = 768, 16
    # Alpa's MoE feed-forward: two h x 8h matrices (+ biases) per expert, 16 experts, and an h x E router.
    assert moe.expert_params == experts * (2 * h * 8 * h + 8 * h + h)
    assert moe.ep_all_to_alls == 2
    assert moe.ep_bytes == 2 * 1024 * h * 2  # top-2: every token goes to two experts
    # Active FLOPs count two experts per token, not sixteen.
    dense = blocks[0]
    assert moe.forward_flops == pytest.approx(dense.forward_flops + 2 * 1024 * (2 * h * 8 * h + h * experts))


def test_unknown_model_names_the_zoo():
    with pytest.raises(KeyError, match="gpt3-13b"):
        zoo_model("gpt-5")


def test_inconsistent_heads_are_refused():
    with pytest.raises(ValueError, match="multiple of heads"):
        TransformerConfig("bad", 2, 100, 3, 400, 10, 8)
