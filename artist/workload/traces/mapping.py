"""Trace jobs -> ArtISt models and iterations.

Traces without models (Philly, PAI, Helios, Acme) get one by the job's GPU time, gpus x logged run time,
in Pollux's categories (Qiao et al., OSDI'21, sec. 5: S 0-1, M 1-10, L 10-100, XL > 100 GPU-hours; Sia,
SOSP'23, uses the same): `category` draws uniformly, with the seed, among the shipped profiles that stand
for that category's Pollux models (Pollux Table 1: S = ResNet-18 on CIFAR-10 and NeuMF, M = BERT
fine-tuning and DeepSpeech2, L = YOLOv3, XL = ResNet-50 on ImageNet), CATEGORY_MODELS below; `size`
ranks the available profiles by gradient bytes and splits them into four groups, smallest for S. Their
iterations make the job, alone and communication ignored, run for its logged time on the GPU type the
trace names (or gpu_type=): iterations = max(1, round(run time / (compute_seconds / speed))).
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from artist.errors import InputError
from artist.workload.model import ModelProfile

CATEGORIES = ("S", "M", "L", "XL")
CATEGORY_UPPER_GPU_HOURS = (1.0, 10.0, 100.0, math.inf)  # Pollux/Sia: S 0-1, M 1-10, L 10-100, XL > 100
CATEGORY_MODELS = {
    "S": ("resnet18", "mobilenet_v3_large"),  # ResNet-18 (name match); NeuMF -> the smallest profile
    "M": ("alexnet", "bert_large"),  # BERT fine-tuning -> bert_large; DeepSpeech2 -> alexnet (stand-in)
    "L": ("vgg11",),  # YOLOv3 -> vgg11 (stand-in)
    "XL": ("resnet50",),  # ResNet-50 (name match)
}

# Compute speed relative to the model profiles' reference GPU (A100-SXM4-80GB, AMP).
GPU_SPEEDS = {
    "A100": (1.0, "the profiles' reference GPU: 1 by definition"),
    # As topologies/hetero-a100-v100.yaml: DLE ResNet-50 v1.5 training, 1 GPU AMP, V100 16GB 1200 img/s /
    # A100 80GB 2470 img/s (NVIDIA/DeepLearningExamples); PAI's V100M32 is the 32 GB V100, same chip.
    "V100": (0.485830, "DLE ResNet-50 v1.5, 1 GPU AMP: 1200 / 2470 img/s (real, as topologies/hetero-a100-v100.yaml)"),
    # As topologies/dgx-h100.yaml: an ESTIMATE (~2x A100 for vision models, Lambda's H100 analysis).
    "H100": (2.0, "ESTIMATE ~2x A100 for vision models (as topologies/dgx-h100.yaml)"),
}


def category(gpu_hours: float) -> str:
    for name, upper in zip(CATEGORIES, CATEGORY_UPPER_GPU_HOURS):
        if gpu_hours <= upper:
            return name
    return CATEGORIES[-1]


def category_choices(rule: str, models: Mapping[str, ModelProfile], source: str) -> dict[str, tuple[str, ...]]:
    """Category -> the model names a job of that category is drawn from."""
    if rule == "category":
        missing = sorted({m for names in CATEGORY_MODELS.values() for m in names} - set(models))
        if missing:
            raise InputError(source, "parameter 'assign'",
                             f"the category table needs the shipped profiles {', '.join(missing)}, not among the "
                             f"models given; use assign=size")
        return dict(CATEGORY_MODELS)
    ranked = sorted(models, key=lambda name: (models[name].total_bytes, name))
    groups = [tuple(ranked[i] for i in idx) for idx in np.array_split(np.arange(len(ranked)), len(CATEGORIES))]
    out, last = {}, groups[0] or (ranked[0],)
    for name, group in zip(CATEGORIES, groups):
        last = group or last  # fewer than four profiles: a category without its own takes the one below
        out[name] = last
    return out


def normalise_gpu_type(name: str) -> str:
    """'V100M32' -> 'V100', 'a100' -> 'A100', 'A100-SXM4-80GB' -> 'A100' (a known type's name as a prefix)."""
    upper = name.strip().upper()
    for known in GPU_SPEEDS:
        if upper.startswith(known):
            return known
    return upper


def gpu_speed(gpu_type: str, extra: Sequence[tuple[str, float]]) -> float | None:
    """Speed of a GPU type relative to the profiles' GPU; gpu_speed= entries first; None when unknown."""
    for name, speed in extra:
        if name.strip().upper() == gpu_type.strip().upper():
            return speed
    known = GPU_SPEEDS.get(normalise_gpu_type(gpu_type))
    return known[0] if known else None


def iterations_for(duration: float, model: ModelProfile, speed: float) -> int:
    """Iterations that take `duration` seconds alone on a GPU of `speed`, communication ignored (>= 1)."""
    return max(1, int(round(duration / (model.compute_seconds / speed))))
