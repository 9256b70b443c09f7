"""The shipped model profiles (workloads/models/*.yaml) against published figures.

Expected parameter counts are the published ones, written here independently of
the generator: torchvision's documented ``num_params`` and, for BERT-large, a
closed-form count from the bert-large-uncased config checked against the
published BertModel figure.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import yaml

from artist.workload import DEFAULT_MODELS_DIR, ModelProfile, load_models

REPO = Path(__file__).resolve().parent.parent
GENERATOR = REPO / "workloads" / "generate_profiles.py"

# torchvision model docs, "num_params" of the IMAGENET1K_V1 weights
# (https://pytorch.org/vision/stable/models/generated/torchvision.models.<name>.html).
TORCHVISION_NUM_PARAMS = {
    "resnet18": 11_689_512,
    "resnet50": 25_557_032,
    "alexnet": 61_100_840,
    "vgg11": 132_863_336,
    "mobilenet_v3_large": 5_483_032,
}

# bert-large-uncased config (google-research/bert; HuggingFace hub config.json).
V, H, L, INTER, P, T = 30522, 1024, 24, 4096, 512, 2


def bert_model_params(v, h, layers, inter, pos, types) -> int:
    """BertModel (with pooler), counted by hand per module."""
    embeddings = v * h + pos * h + types * h + 2 * h  # three tables + LayerNorm
    attention = 4 * (h * h + h) + 2 * h  # Q, K, V, output dense + LayerNorm
    ffn = (h * inter + inter) + (inter * h + h) + 2 * h  # intermediate, output + LayerNorm
    pooler = h * h + h
    return embeddings + layers * (attention + ffn) + pooler


def pretraining_heads(v, h) -> int:
    """Masked-LM head (decoder weight tied to the embeddings) + next-sentence head."""
    mlm = v + (h * h + h) + 2 * h  # output bias, transform dense, transform LayerNorm
    nsp = 2 * h + 2
    return mlm + nsp


def test_bert_formula_reproduces_published_bert_model_counts():
    # Independent anchors for the formula: BertModel bert-base-uncased 109482240 and
    # bert-large-uncased 335141888 (HuggingFace BertModel; KerasNLP bert presets' metadata).
    assert bert_model_params(30522, 768, 12, 3072, 512, 2) == 109_482_240
    assert bert_model_params(V, H, L, INTER, P, T) == 335_141_888


@pytest.fixture(scope="module")
def models() -> dict[str, ModelProfile]:
    return load_models()


@pytest.fixture(scope="module")
def generator():
    spec = importlib.util.spec_from_file_location("generate_profiles", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_six_dally_models_are_shipped(models):
    assert set(models) == set(TORCHVISION_NUM_PARAMS) | {"bert_large"}


@pytest.mark.parametrize("name", sorted(TORCHVISION_NUM_PARAMS))
def test_torchvision_totals_match_published_num_params(models, name):
    m = models[name]
    assert m.total_bytes == 4 * TORCHVISION_NUM_PARAMS[name]  # fp32 gradients


def test_bert_large_total_is_bert_for_pretraining(models):
    expected = bert_model_params(V, H, L, INTER, P, T) + pretraining_heads(V, H)
    assert expected == 336_226_108
    assert models["bert_large"].total_bytes == 4 * expected


# Largest tensors, known from the architectures (shape products computed by hand).
@pytest.mark.parametrize("name, tensor, numel", [
    ("vgg11", "classifier.0.weight", 4096 * 512 * 7 * 7),
    ("alexnet", "classifier.1.weight", 4096 * 256 * 6 * 6),
    ("resnet50", "layer4.0.conv2.weight", 512 * 512 * 3 * 3),
    ("resnet18", "layer4.1.conv2.weight", 512 * 512 * 3 * 3),
    ("mobilenet_v3_large", "classifier.3.weight", 1000 * 1280),
    ("bert_large", "bert.embeddings.word_embeddings.weight", V * H),
])
def test_largest_tensor_is_the_known_layer(models, name, tensor, numel):
    m = models[name]
    i = m.tensor_names.index(tensor)
    assert m.tensor_bytes[i] == 4 * numel
    assert max(m.tensor_bytes) == 4 * numel


@pytest.mark.parametrize("name, first, last", [
    ("resnet18", "fc.bias", "conv1.weight"),
    ("resnet50", "fc.bias", "conv1.weight"),
    ("alexnet", "classifier.6.bias", "features.0.weight"),
    ("vgg11", "classifier.6.bias", "features.0.weight"),
    ("mobilenet_v3_large", "classifier.3.bias", "features.0.0.weight"),
    ("bert_large", "cls.seq_relationship.bias", "bert.embeddings.word_embeddings.weight"),
])
def test_tensors_are_in_backward_order(models, name, first, last):
    # DDP buckets in reverse parameter order: the output layer's gradient first, the input layer's last.
    names = models[name].tensor_names
    assert names[0] == first and names[-1] == last
    assert len(set(names)) == len(names)


def test_tied_bert_decoder_is_not_counted_twice(models):
    names = models["bert_large"].tensor_names
    assert "cls.predictions.decoder.weight" not in names
    assert "cls.predictions.bias" in names


def test_bn_running_statistics_are_not_gradients(models):
    assert not any("running_" in n or "num_batches" in n for m in models.values() for n in m.tensor_names)


# ------------------------------------------------------------------ compute times
# Recomputed here from the cited throughput figures (see each profile's compute.source).

A100_RESNET50_AMP_IMG_S = 2470  # DLE resnet50v1.5 README, DGX A100 80GB, 1 GPU, mixed precision
TIMM_NHWC = {"resnet50": 1218.01, "resnet18": 3481.78, "mobilenet_v3_large": 2732.43, "vgg11": 954.03}
TF_P100 = {"resnet50": 219, "alexnet": 2987}


@pytest.mark.parametrize("name, seconds", [
    ("resnet50", 256 / 2470),
    ("bert_large", 256 / 580),  # DLE BERT README, DGX A100 80GB, 1 GPU, phase 1, batch 256, AMP
    ("resnet18", 256 / A100_RESNET50_AMP_IMG_S * TIMM_NHWC["resnet50"] / TIMM_NHWC["resnet18"]),
    ("mobilenet_v3_large", 256 / A100_RESNET50_AMP_IMG_S * TIMM_NHWC["resnet50"] / TIMM_NHWC["mobilenet_v3_large"]),
    ("vgg11", 256 / A100_RESNET50_AMP_IMG_S * TIMM_NHWC["resnet50"] / TIMM_NHWC["vgg11"]),
    ("alexnet", 256 / A100_RESNET50_AMP_IMG_S * TF_P100["resnet50"] / TF_P100["alexnet"]),
])
def test_compute_time_follows_from_cited_throughput(models, name, seconds):
    m = models[name]
    assert m.batch_size == 256
    assert m.compute_seconds == pytest.approx(seconds, abs=1e-6)


def test_one_reference_gpu_and_every_compute_time_says_measured_or_derived():
    for path in sorted(DEFAULT_MODELS_DIR.glob("*.yaml")):
        compute = yaml.safe_load(path.read_text())["compute"]
        assert compute["reference_gpu"] == "A100-SXM4-80GB", path
        assert compute["source"].startswith(("Measured (published):", "Derived (estimate):")), path


# ------------------------------------------------------------------ reproducibility


def test_generator_reproduces_shipped_files_byte_for_byte(generator, tmp_path):
    written = generator.write_all(tmp_path)
    shipped = sorted(p.name for p in DEFAULT_MODELS_DIR.glob("*.yaml"))
    assert sorted(p.name for p in written) == shipped
    for p in written:
        assert p.read_bytes() == (DEFAULT_MODELS_DIR / p.name).read_bytes(), p.name


def test_generator_check_flags_an_edited_file(generator, tmp_path):
    generator.write_all(tmp_path)
    assert generator.check(tmp_path) == []
    target = tmp_path / "resnet18.yaml"
    target.write_text(target.read_text().replace("seconds_per_iteration: ", "seconds_per_iteration: 1"))
    assert generator.check(tmp_path) == [str(target)]
    assert generator.main(["--check", "--out", str(tmp_path)]) == 1
