"""Write the model profiles in workloads/models/*.yaml from the published architectures.

Every parameter tensor's shape is computed here in plain Python from the
architecture definitions (torchvision for the CNNs, HuggingFace
BertForPreTraining for BERT-large), so that neither torch nor the model
weights are needed. The tensors are written in backward order: the reverse of
``model.parameters()``, which is the order PyTorch DDP assigns gradients to
buckets (torch.nn.parallel.DistributedDataParallel docs, "bucket_cap_mb").

Compute times come from cited public throughput tables; the derivation of
each is spelt out in the ``compute.source`` field it produces.

    python workloads/generate_profiles.py            # rewrite workloads/models/
    python workloads/generate_profiles.py --check    # exit 1 if the shipped files differ
    python workloads/generate_profiles.py --out DIR  # write somewhere else
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from math import prod
from pathlib import Path

Shape = tuple[int, ...]
Params = list[tuple[str, Shape]]

MODELS_DIR = Path(__file__).resolve().parent / "models"

# --------------------------------------------------------------------------- layer helpers
# Each returns the parameters one torch.nn module registers, in registration order.


def conv(prefix: str, cin: int, cout: int, k: int, bias: bool, groups: int = 1) -> Params:
    out: Params = [(f"{prefix}.weight", (cout, cin // groups, k, k))]
    if bias:
        out.append((f"{prefix}.bias", (cout,)))
    return out


def batchnorm(prefix: str, c: int) -> Params:
    # running_mean / running_var are buffers, not parameters: they have no gradient.
    return [(f"{prefix}.weight", (c,)), (f"{prefix}.bias", (c,))]


def linear(prefix: str, fin: int, fout: int, bias: bool = True) -> Params:
    out: Params = [(f"{prefix}.weight", (fout, fin))]
    if bias:
        out.append((f"{prefix}.bias", (fout,)))
    return out


def layernorm(prefix: str, c: int) -> Params:
    return [(f"{prefix}.weight", (c,)), (f"{prefix}.bias", (c,))]


# --------------------------------------------------------------------------- torchvision CNNs


def alexnet(num_classes: int = 1000) -> Params:
    """torchvision.models.alexnet: five conv layers with bias, three linear layers."""
    p: Params = []
    p += conv("features.0", 3, 64, 11, bias=True)
    p += conv("features.3", 64, 192, 5, bias=True)
    p += conv("features.6", 192, 384, 3, bias=True)
    p += conv("features.8", 384, 256, 3, bias=True)
    p += conv("features.10", 256, 256, 3, bias=True)
    p += linear("classifier.1", 256 * 6 * 6, 4096)  # after AdaptiveAvgPool2d((6, 6))
    p += linear("classifier.4", 4096, 4096)
    p += linear("classifier.6", 4096, num_classes)
    return p


VGG11_CFG = (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M")  # torchvision cfgs["A"]


def vgg11(num_classes: int = 1000) -> Params:
    """torchvision.models.vgg11 (no batch norm): conv3x3+bias, ReLU, max-pools; three linear layers."""
    p: Params = []
    index, cin = 0, 3
    for v in VGG11_CFG:
        if v == "M":
            index += 1  # MaxPool2d occupies one Sequential slot
            continue
        p += conv(f"features.{index}", cin, v, 3, bias=True)
        index += 2  # Conv2d and its ReLU
        cin = v
    p += linear("classifier.0", 512 * 7 * 7, 4096)
    p += linear("classifier.3", 4096, 4096)
    p += linear("classifier.6", 4096, num_classes)
    return p


def resnet(block: str, layers: tuple[int, int, int, int], num_classes: int = 1000) -> Params:
    """torchvision.models.resnet (v1.5: stride in the 3x3 conv); convs have no bias."""
    expansion = 1 if block == "basic" else 4
    p: Params = []
    p += conv("conv1", 3, 64, 7, bias=False)
    p += batchnorm("bn1", 64)
    inplanes = 64
    for stage, (planes, blocks, stride) in enumerate(zip((64, 128, 256, 512), layers, (1, 2, 2, 2)), start=1):
        for b in range(blocks):
            pre = f"layer{stage}.{b}"
            s = stride if b == 0 else 1
            if block == "basic":
                p += conv(f"{pre}.conv1", inplanes, planes, 3, bias=False)
                p += batchnorm(f"{pre}.bn1", planes)
                p += conv(f"{pre}.conv2", planes, planes, 3, bias=False)
                p += batchnorm(f"{pre}.bn2", planes)
            else:
                width = planes  # groups=1, width_per_group=64
                p += conv(f"{pre}.conv1", inplanes, width, 1, bias=False)
                p += batchnorm(f"{pre}.bn1", width)
                p += conv(f"{pre}.conv2", width, width, 3, bias=False)
                p += batchnorm(f"{pre}.bn2", width)
                p += conv(f"{pre}.conv3", width, planes * expansion, 1, bias=False)
                p += batchnorm(f"{pre}.bn3", planes * expansion)
            if b == 0 and (s != 1 or inplanes != planes * expansion):
                p += conv(f"{pre}.downsample.0", inplanes, planes * expansion, 1, bias=False)
                p += batchnorm(f"{pre}.downsample.1", planes * expansion)
            inplanes = planes * expansion
    p += linear("fc", 512 * expansion, num_classes)
    return p


def make_divisible(v: float, divisor: int = 8) -> int:
    """torchvision.models._utils._make_divisible (from the TF MobileNet code)."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


# (input, kernel, expanded, out, use_se, activation, stride): torchvision _mobilenet_v3_conf("mobilenet_v3_large"),
# width_mult 1.0, no reduced tail, no dilation.
MOBILENET_V3_LARGE = (
    (16, 3, 16, 16, False, "RE", 1),
    (16, 3, 64, 24, False, "RE", 2),
    (24, 3, 72, 24, False, "RE", 1),
    (24, 5, 72, 40, True, "RE", 2),
    (40, 5, 120, 40, True, "RE", 1),
    (40, 5, 120, 40, True, "RE", 1),
    (40, 3, 240, 80, False, "HS", 2),
    (80, 3, 200, 80, False, "HS", 1),
    (80, 3, 184, 80, False, "HS", 1),
    (80, 3, 184, 80, False, "HS", 1),
    (80, 3, 480, 112, True, "HS", 1),
    (112, 3, 672, 112, True, "HS", 1),
    (112, 5, 672, 160, True, "HS", 2),
    (160, 5, 960, 160, True, "HS", 1),
    (160, 5, 960, 160, True, "HS", 1),
)
MOBILENET_V3_LARGE_LAST_CHANNEL = 1280


def conv_bn(prefix: str, cin: int, cout: int, k: int, groups: int = 1) -> Params:
    """torchvision Conv2dNormActivation: Sequential(Conv2d(bias=False), BatchNorm2d, activation)."""
    return conv(f"{prefix}.0", cin, cout, k, bias=False, groups=groups) + batchnorm(f"{prefix}.1", cout)


def mobilenet_v3_large(num_classes: int = 1000) -> Params:
    """torchvision.models.mobilenet_v3_large (MobileNetV3-Large, width 1.0)."""
    p: Params = []
    p += conv_bn("features.0", 3, MOBILENET_V3_LARGE[0][0], 3)
    for n, (cin, k, exp, cout, use_se, _act, _stride) in enumerate(MOBILENET_V3_LARGE, start=1):
        i = 0
        if exp != cin:
            p += conv_bn(f"features.{n}.block.{i}", cin, exp, 1)
            i += 1
        p += conv_bn(f"features.{n}.block.{i}", exp, exp, k, groups=exp)  # depthwise
        i += 1
        if use_se:
            squeeze = make_divisible(exp // 4, 8)
            p += conv(f"features.{n}.block.{i}.fc1", exp, squeeze, 1, bias=True)
            p += conv(f"features.{n}.block.{i}.fc2", squeeze, exp, 1, bias=True)
            i += 1
        p += conv_bn(f"features.{n}.block.{i}", exp, cout, 1)  # projection, no activation
    last_in = MOBILENET_V3_LARGE[-1][3]
    n_last = len(MOBILENET_V3_LARGE) + 1
    p += conv_bn(f"features.{n_last}", last_in, 6 * last_in, 1)
    p += linear("classifier.0", 6 * last_in, MOBILENET_V3_LARGE_LAST_CHANNEL)
    p += linear("classifier.3", MOBILENET_V3_LARGE_LAST_CHANNEL, num_classes)
    return p


# --------------------------------------------------------------------------- BERT-large


@dataclass(frozen=True)
class BertConfig:
    # bert-large-uncased config.json (google-research/bert, HuggingFace hub).
    vocab_size: int = 30522
    hidden: int = 1024
    layers: int = 24
    heads: int = 16  # does not change parameter shapes (heads split the hidden dimension)
    intermediate: int = 4096
    max_positions: int = 512
    type_vocab: int = 2


def bert_for_pretraining(cfg: BertConfig = BertConfig()) -> Params:
    """HuggingFace BertForPreTraining: BertModel (with pooler) + masked-LM and next-sentence heads.

    The masked-LM decoder weight is tied to the word embeddings and its bias is
    ``cls.predictions.bias``, so neither is a separate parameter (as in
    ``model.parameters()``)."""
    h, i = cfg.hidden, cfg.intermediate
    p: Params = [
        ("bert.embeddings.word_embeddings.weight", (cfg.vocab_size, h)),
        ("bert.embeddings.position_embeddings.weight", (cfg.max_positions, h)),
        ("bert.embeddings.token_type_embeddings.weight", (cfg.type_vocab, h)),
    ]
    p += layernorm("bert.embeddings.LayerNorm", h)
    for n in range(cfg.layers):
        pre = f"bert.encoder.layer.{n}"
        for proj in ("query", "key", "value"):
            p += linear(f"{pre}.attention.self.{proj}", h, h)
        p += linear(f"{pre}.attention.output.dense", h, h)
        p += layernorm(f"{pre}.attention.output.LayerNorm", h)
        p += linear(f"{pre}.intermediate.dense", h, i)
        p += linear(f"{pre}.output.dense", i, h)
        p += layernorm(f"{pre}.output.LayerNorm", h)
    p += linear("bert.pooler.dense", h, h)
    p += [("cls.predictions.bias", (cfg.vocab_size,))]
    p += linear("cls.predictions.transform.dense", h, h)
    p += layernorm("cls.predictions.transform.LayerNorm", h)
    p += linear("cls.seq_relationship", h, 2)
    return p


# --------------------------------------------------------------------------- compute times
# Reference GPU for every profile: one NVIDIA A100-SXM4-80GB, mixed precision (AMP).

REFERENCE_GPU = "A100-SXM4-80GB"
DLE = "NVIDIA/DeepLearningExamples"

# DLE PyTorch/Classification/ConvNets/resnet50v1.5/README.md, "Training performance: NVIDIA DGX A100
# (8x A100 80GB)", 1 GPU, mixed precision, pytorch-21.03 container: 2470 img/s.
RESNET50_A100_AMP_IMG_S = 2470.0
# DLE PyTorch/Classification/ConvNets/configs.yml: resnet50 / DGXA100 / AMP: batch_size 256, memory_format nhwc.
IMAGE_BATCH = 256

# huggingface/pytorch-image-models results/benchmark-train-amp-nhwc-pt112-cu113-rtx3090.csv
# (timm train benchmark: AMP, channels-last, PyTorch 1.12, CUDA 11.3, one RTX 3090, batch 512, 224 px).
TIMM_RTX3090_NHWC_IMG_S = {
    "resnet50": 1218.01,
    "resnet18": 3481.78,
    "mobilenetv3_large_100": 2732.43,  # timm's MobileNetV3-Large 1.0, 5.48 M parameters like torchvision's
    "vgg11": 954.03,
}
TIMM_FILE = "huggingface/pytorch-image-models results/benchmark-train-amp-nhwc-pt112-cu113-rtx3090.csv"

# tensorflow/tensorflow tensorflow/docs_src/performance/benchmarks.md, "Details for NVIDIA DGX-1 (NVIDIA
# Tesla P100)", training, synthetic data, 1 GPU (FP32, tf_cnn_benchmarks, May 2017): ResNet-50 219 img/s at
# batch 64, AlexNet 2987 img/s at batch 512.
TF_P100_RESNET50_IMG_S = 219.0
TF_P100_ALEXNET_IMG_S = 2987.0

# DLE PyTorch/LanguageModeling/BERT/README.md, "Pre-training NVIDIA DGX A100 (8x A100 80GB)", pytorch:21.11
# container, 1 GPU, phase 1 (sequence length 128), batch 256 per GPU with mixed precision: 580 sequences/s.
BERT_A100_AMP_SEQ_S = 580.0
BERT_BATCH = 256


@dataclass(frozen=True)
class Compute:
    batch_size: int
    seconds: float
    source: str


def _round(seconds: float) -> float:
    return round(seconds, 6)  # to the microsecond; the inputs carry 3-4 significant digits


def resnet50_compute() -> Compute:
    s = IMAGE_BATCH / RESNET50_A100_AMP_IMG_S
    return Compute(IMAGE_BATCH, _round(s), (
        f"Measured (published): {DLE} PyTorch/Classification/ConvNets/resnet50v1.5/README.md, Training "
        f"performance NVIDIA DGX A100 (8x A100 80GB), 1 GPU, mixed precision: {RESNET50_A100_AMP_IMG_S:g} img/s "
        f"(pytorch-21.03 NGC container); batch {IMAGE_BATCH} per GPU from {DLE} "
        f"PyTorch/Classification/ConvNets/configs.yml (resnet50, DGXA100, AMP). "
        f"seconds/iteration = {IMAGE_BATCH} / {RESNET50_A100_AMP_IMG_S:g} = {s:.6f}."))


def _scaled_from_resnet50(ratio: float, relative_time: str, assumptions: str) -> Compute:
    """ResNet-50's measured A100 time times a published training-time ratio to ResNet-50."""
    s = IMAGE_BATCH / RESNET50_A100_AMP_IMG_S * ratio
    return Compute(IMAGE_BATCH, _round(s), (
        f"Derived (estimate): the measured A100 ResNet-50 time ({IMAGE_BATCH} / {RESNET50_A100_AMP_IMG_S:g} img/s, "
        f"{DLE} resnet50v1.5 README, DGX A100 1 GPU mixed precision) times {relative_time}, ratio {ratio:.4f}. "
        f"seconds/iteration = {IMAGE_BATCH} / {RESNET50_A100_AMP_IMG_S:g} x {ratio:.4f} = {s:.6f}. {assumptions}"))


def timm_scaled_compute(timm_name: str) -> Compute:
    """ResNet-50's measured A100 time scaled by the model's speed relative to ResNet-50 in timm's benchmark."""
    return _scaled_from_resnet50(
        TIMM_RTX3090_NHWC_IMG_S["resnet50"] / TIMM_RTX3090_NHWC_IMG_S[timm_name],
        f"this model's training time relative to ResNet-50 measured on one RTX 3090 in {TIMM_FILE} (AMP, "
        f"channels-last, batch 512): resnet50 {TIMM_RTX3090_NHWC_IMG_S['resnet50']:g} img/s vs {timm_name} "
        f"{TIMM_RTX3090_NHWC_IMG_S[timm_name]:g} img/s",
        "Assumes the model's speed relative to ResNet-50 is the same on an A100 as on an RTX 3090 and that time "
        "per image does not depend on the batch size at these batch sizes; no published A100 figure was found.")


def alexnet_compute() -> Compute:
    return _scaled_from_resnet50(
        TF_P100_RESNET50_IMG_S / TF_P100_ALEXNET_IMG_S,
        f"AlexNet's training time relative to ResNet-50 in the TensorFlow benchmarks (tensorflow/tensorflow "
        f"tensorflow/docs_src/performance/benchmarks.md, DGX-1 P100, 1 GPU, synthetic data, FP32): ResNet-50 "
        f"{TF_P100_RESNET50_IMG_S:g} img/s (batch 64) vs AlexNet {TF_P100_ALEXNET_IMG_S:g} img/s (batch 512)",
        "Assumes the P100/FP32/TensorFlow speed ratio carries over to an A100 with AMP in PyTorch; AlexNet is absent "
        "from timm and no published A100 figure was found. Real AlexNet training is often input-pipeline bound; "
        "this is GPU compute only.")


def bert_compute() -> Compute:
    s = BERT_BATCH / BERT_A100_AMP_SEQ_S
    return Compute(BERT_BATCH, _round(s), (
        f"Measured (published): {DLE} PyTorch/LanguageModeling/BERT/README.md, Pre-training NVIDIA DGX A100 "
        f"(8x A100 80GB), pytorch:21.11 NGC container, 1 GPU, phase 1 (sequence length 128), batch {BERT_BATCH} per "
        f"GPU, mixed precision: {BERT_A100_AMP_SEQ_S:g} sequences/s. seconds/iteration = {BERT_BATCH} / "
        f"{BERT_A100_AMP_SEQ_S:g} = {s:.6f}. One iteration here is one micro-batch followed by a gradient "
        f"all-reduce; DLE itself accumulates 32 micro-batches before each all-reduce (LAMB, global batch 65536)."))


# --------------------------------------------------------------------------- profiles


@dataclass(frozen=True)
class ProfileSpec:
    name: str
    architecture: str
    params: Params
    params_source: str
    compute: Compute


TV_DOCS = "https://pytorch.org/vision/stable/models/generated/torchvision.models.{}.html"


def profiles() -> list[ProfileSpec]:
    return [
        ProfileSpec("alexnet", "torchvision.models.alexnet (num_classes=1000)", alexnet(),
                    "torchvision docs num_params 61100840 (" + TV_DOCS.format("alexnet") + ")",
                    alexnet_compute()),
        ProfileSpec("vgg11", "torchvision.models.vgg11, configuration A without batch norm (num_classes=1000)",
                    vgg11(), "torchvision docs num_params 132863336 (" + TV_DOCS.format("vgg11") + ")",
                    timm_scaled_compute("vgg11")),
        ProfileSpec("mobilenet_v3_large", "torchvision.models.mobilenet_v3_large, MobileNetV3-Large width 1.0 "
                    "(num_classes=1000)", mobilenet_v3_large(),
                    "torchvision docs num_params 5483032 (" + TV_DOCS.format("mobilenet_v3_large") + ")",
                    timm_scaled_compute("mobilenetv3_large_100")),
        ProfileSpec("resnet18", "torchvision.models.resnet18 (num_classes=1000)", resnet("basic", (2, 2, 2, 2)),
                    "torchvision docs num_params 11689512 (" + TV_DOCS.format("resnet18") + ")",
                    timm_scaled_compute("resnet18")),
        ProfileSpec("resnet50", "torchvision.models.resnet50, ResNet-50 v1.5 (num_classes=1000)",
                    resnet("bottleneck", (3, 4, 6, 3)),
                    "torchvision docs num_params 25557032 (" + TV_DOCS.format("resnet50") + ")",
                    resnet50_compute()),
        ProfileSpec("bert_large", "HuggingFace transformers BertForPreTraining with the bert-large-uncased config "
                    "(vocab 30522, hidden 1024, 24 layers, 16 heads, intermediate 4096, 512 positions, 2 token "
                    "types): BertModel with pooler (335141888 parameters) plus the masked-LM head (transform "
                    "dense + LayerNorm + output bias; decoder weight tied to the word embeddings) and the "
                    "next-sentence head", bert_for_pretraining(),
                    "google-research/bert README: BERT-Large 24-layer, 1024-hidden, 16-heads, 340M parameters "
                    "(rounded); exact count computed from the config here. The BertModel part, 335141888, matches "
                    "the published KerasNLP bert_large_en_uncased preset metadata. NVIDIA's DLE BERT pads the "
                    "vocabulary to 30528 (a multiple of 8), 6150 parameters more; not modelled.",
                    bert_compute()),
    ]


# --------------------------------------------------------------------------- YAML output


def _q(text: str) -> str:
    # A JSON string (ASCII, escaped) is a valid YAML double-quoted scalar.
    return json.dumps(text, ensure_ascii=True)


def render(spec: ProfileSpec) -> str:
    forward = spec.params
    names = [n for n, _ in forward]
    if len(set(names)) != len(names):
        raise ValueError(f"{spec.name}: duplicate parameter names")
    backward = list(reversed(forward))
    total = sum(prod(shape) for _, shape in forward)
    c = spec.compute
    source = ("Architecture: " + spec.architecture + ". Parameter shapes computed in workloads/generate_profiles.py; "
              "tensors in backward order (reverse of model.parameters(), the order PyTorch DDP buckets gradients).")
    lines = [
        "# Generated by workloads/generate_profiles.py; do not edit by hand (re-run the script).",
        f"name: {spec.name}",
        f"source: {_q(source)}",
        f"params_total: {total}",
        f"params_source: {_q(spec.params_source)}",
        "# fp32 gradients: torch.cuda.amp keeps fp32 parameters, and DDP all-reduces param.grad in the parameter "
        "dtype.",
        "gradient_dtype_bytes: 4",
        "compute:",
        f"  reference_gpu: {REFERENCE_GPU}",
        f"  batch_size: {c.batch_size}",
        f"  seconds_per_iteration: {c.seconds!r}",
        f"  source: {_q(c.source)}",
        "# [parameter name, number of elements]; shape noted in the comment.",
        "tensors:",
    ]
    for name, shape in backward:
        lines.append(f"  - [{_q(name)}, {prod(shape)}]  # {'x'.join(map(str, shape))}")
    return "\n".join(lines) + "\n"


def write_all(out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for spec in profiles():
        path = out_dir / f"{spec.name}.yaml"
        path.write_text(render(spec))
        written.append(path)
    return written


def check(out_dir: Path) -> list[str]:
    """Names of the profiles whose shipped file differs from what this script writes."""
    stale = []
    for spec in profiles():
        path = out_dir / f"{spec.name}.yaml"
        if not path.exists() or path.read_text() != render(spec):
            stale.append(str(path))
    return stale


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=MODELS_DIR, help="output directory (default: workloads/models)")
    ap.add_argument("--check", action="store_true", help="compare with the files in --out instead of writing")
    args = ap.parse_args(argv)
    if args.check:
        stale = check(args.out)
        for path in stale:
            print(f"out of date: {path}", file=sys.stderr)
        return 1 if stale else 0
    for path in write_all(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
