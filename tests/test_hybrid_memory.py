"""Memory per GPU under a plan, and the compute figures per GPU type, against published numbers."""

from __future__ import annotations

import pytest

from artist.parallel.hybrid import split_stages
from artist.perf.accelerators import accelerator
from artist.perf.hybrid import plan_memory
from artist.perf.memory import GIB, PlanDoesNotFit, check_fits
from artist.parallel.plan import ParallelPlan
from artist.workload.zoo import zoo_model


def _memory(name, plan, mbs=1, recompute=True):
    model = zoo_model(name)
    return plan_memory(model, plan, mbs, recompute, split_stages(model.layers_list(), plan.pp))


def test_gpt2_model_states_match_zero_published_24_gb():
    # Rajbhandari et al. 2020 (ZeRO), sec. 3.1: "a GPT-2 model with 1.5B parameters ... requires at least
    # 24 GB of memory" for fp16 weights and gradients and fp32 Adam states (16 bytes per parameter).
    use = _memory("gpt2-1.5b", ParallelPlan())
    assert use.model_state_bytes == pytest.approx(24e9, rel=0.10)


def test_korthikanti_activation_memory_first_stage_holds_pp_microbatches():
    # Korthikanti et al. 2022, Table 2 and sec. 4.2: with t-way TP, no recomputation, each layer keeps
    # s b h (10 + 24/t + 5 a s / (h t)) bytes per micro-batch; under 1F1B the first stage holds pp of them.
    s, h, a, t, b, pp = 2048, 5120, 40, 8, 2, 4
    use = _memory("gpt3-13b", ParallelPlan(tp=t, pp=pp, microbatches=16), mbs=b, recompute=False)
    assert use.stage == 0
    per_layer = s * b * h * (10 + 24 / t + 5 * a * s / (h * t))
    embedding = s * b * h * 2  # the embedding's output, kept whole
    assert use.activation_bytes == pytest.approx(pp * (40 // pp * per_layer + embedding), rel=1e-12)


def test_full_recomputation_keeps_only_layer_inputs():
    # Korthikanti et al. 2022 Table 2: full recomputation stores 2 s b h bytes per layer (its input),
    # plus one layer's activations while it is recomputed.
    s, h, a, t, b = 2048, 12288, 96, 8, 1
    use = _memory("gpt3-175b", ParallelPlan(tp=t, pp=8, microbatches=32), mbs=b, recompute=True)
    per_layer_full = s * b * h * (10 + 24 / t + 5 * a * s / (h * t))
    kept = 8 * 12 * 2 * s * b * h  # 8 micro-batches in flight x 12 block inputs (the embedding's input is token ids)
    assert use.activation_bytes == pytest.approx(kept + per_layer_full, rel=1e-12)


def test_model_states_divide_by_tp_and_experts_by_ep():
    model = zoo_model("moe-2.4b")
    dense = ParallelPlan(dp=4)
    sharded = ParallelPlan(dp=4, tp=2, ep=4)
    layers = model.layers_list()
    experts = sum(layer.expert_params for layer in layers)
    total = sum(layer.params for layer in layers)
    assert _memory("moe-2.4b", dense).params == total
    assert _memory("moe-2.4b", sharded).params == pytest.approx((total - experts) / 2 + experts / 8)


def test_a_plan_that_does_not_fit_is_refused_with_the_numbers():
    use = _memory("gpt3-175b", ParallelPlan(dp=8))
    with pytest.raises(PlanDoesNotFit) as info:
        check_fits(use, accelerator("A100").memory_bytes, "A100", "gpt3-175b dp=8")
    text = str(info.value)
    params = zoo_model("gpt3-175b").total_params()
    assert f"{params * 16 / GIB:.1f} GiB weights" in text
    assert "74.5 GiB" in text  # 80 GB of the A100-SXM4-80GB


def test_accelerator_figures_are_the_datasheets():
    assert accelerator("A100").peak_flops == 312e12  # A100 datasheet, dense BF16
    assert accelerator("nvidia-h100").peak_flops == 989e12  # H100 SXM datasheet, dense BF16
    assert accelerator("V100").memory_bytes == 32e9
    with pytest.raises(KeyError, match="A100"):
        accelerator("generic")


def test_sequence_parallel_shards_every_activation_by_t():
    # Korthikanti et al. 2022 Table 2, tensor + sequence parallel: s b h (34/t + 5 a s / (h t)) per layer.
    s, h, a, t, b = 2048, 5120, 40, 8, 1
    model = zoo_model("gpt3-13b")
    plan = ParallelPlan(tp=t, microbatches=4)
    use = plan_memory(model, plan, b, False, split_stages(model.layers_list(), 1), sequence_parallel=True)
    per_layer = s * b * h * (34 / t + 5 * a * s / (h * t))
    head = (s * b * h * 2 + 4 * s * b * 50257) / t
    embedding = s * b * h * 2 / t
    assert use.activation_bytes == pytest.approx(40 * per_layer + head + embedding, rel=1e-12)


def test_last_stage_holds_a_copy_of_the_tied_word_embedding():
    from artist.perf.memory import stage_memory

    model = zoo_model("gpt3-13b")
    layers = model.layers_list()
    stages = split_stages(layers, 2)
    last = stage_memory([layers[i] for i in stages[1]], 1, 2, 8, 1, 4, 1, True)
    blocks_and_head = sum(layers[i].params for i in stages[1])
    assert last.params == pytest.approx((blocks_and_head + 50257 * 5120) / 8)
    alone = stage_memory([layers[i] for i in stages[1]], 0, 1, 8, 1, 4, 1, True)  # pp = 1: the one embedding
    assert alone.params == pytest.approx(blocks_and_head / 8)
