"""Model profiles: a model's gradients and the compute time of one iteration.

A ModelProfile lists gradient tensors in backward order (the first listed is
the first whose gradient is ready in the backward pass) and the compute time
of one iteration (forward + backward) on a named reference GPU. Gradients are
grouped into buckets the way PyTorch DDP does (fill up to a byte cap in
backward order); every bucket is all-reduced as soon as its last gradient is
ready, which is what the network models overlap with the backward pass.

Two per-model options change the grouping:
- `first_bucket_bytes`: the cap of the first bucket only. PyTorch DDP closes its
  first bucket at `dist._DEFAULT_FIRST_BUCKET_BYTES` = 1 MiB so the last layers'
  gradients start all-reducing early (torch/nn/parallel/distributed.py passes
  `[dist._DEFAULT_FIRST_BUCKET_BYTES, self.bucket_bytes_cap]` to
  `_compute_bucket_assignment_by_size`, comment "Experiments showed 1MB is a
  reasonable value"; the constant is `kDefaultFirstBucketBytes = 1024 * 1024` in
  torch/csrc/distributed/c10d/reducer.hpp). ArtISt's default is the old
  behaviour (first bucket = `bucket_cap_bytes`), so shipped answers are unchanged;
  set 1048576 to be PyTorch-faithful.
- `synchronisation: layer-wise`: no bucketing; every tensor is all-reduced as
  soon as its gradient is ready (the Dally paper's "layer-wise model
  synchronization", sec. III-A), one after another on one communicator.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from artist import shipped
from artist.errors import InputError
from artist.limits import MAX_ITERATION_SECONDS, MAX_TENSOR_ELEMENTS
from artist.yamlio import Fields, load_yaml_mapping


# PyTorch DDP's default bucket_cap_mb=25 (MiB), torch.nn.parallel.DistributedDataParallel docs.
DDP_BUCKET_CAP_BYTES = 25 * 1024 * 1024
# PyTorch DDP's first bucket cap, dist._DEFAULT_FIRST_BUCKET_BYTES (kDefaultFirstBucketBytes = 1024 * 1024,
# torch/csrc/distributed/c10d/reducer.hpp); opt-in here (see the module docstring).
PYTORCH_FIRST_BUCKET_BYTES = 1024 * 1024
SYNCHRONISATIONS = ("ddp", "layer-wise")
# Backward costs about twice the forward FLOPs (6N = 2N forward + 4N backward per token,
# Kaplan et al. 2020, "Scaling Laws for Neural Language Models", sec. 2.1), so the
# backward pass starts after one third of an iteration's compute.
DEFAULT_FORWARD_FRACTION = 1.0 / 3.0


@dataclass(frozen=True)
class ModelProfile:
    name: str
    tensor_bytes: tuple[int, ...]  # gradient bytes per tensor, backward order
    compute_seconds: float  # forward + backward of one iteration on reference_gpu
    reference_gpu: str
    batch_size: int = 0  # per GPU; 0 when the source does not state it
    forward_fraction: float = DEFAULT_FORWARD_FRACTION
    bucket_cap_bytes: int = DDP_BUCKET_CAP_BYTES
    first_bucket_bytes: int | None = None  # None: the first bucket has bucket_cap_bytes too
    synchronisation: str = "ddp"  # or "layer-wise": one all-reduce per tensor
    tensor_names: tuple[str, ...] = field(default=(), compare=False)
    source: str = field(default="", compare=False)

    def __post_init__(self):
        if not self.tensor_bytes or any(b <= 0 for b in self.tensor_bytes):
            raise ValueError(f"model {self.name}: tensor sizes must be positive and non-empty")
        if not self.compute_seconds > 0:
            raise ValueError(f"model {self.name}: compute_seconds must be > 0")
        if not 0.0 <= self.forward_fraction < 1.0:
            raise ValueError(f"model {self.name}: forward_fraction must be in [0, 1)")
        if self.synchronisation not in SYNCHRONISATIONS:
            raise ValueError(f"model {self.name}: synchronisation must be one of {', '.join(SYNCHRONISATIONS)}")
        if self.bucket_cap_bytes < 1 or (self.first_bucket_bytes is not None and self.first_bucket_bytes < 1):
            raise ValueError(f"model {self.name}: bucket caps must be >= 1 byte")

    @cached_property
    def total_bytes(self) -> int:
        return int(sum(self.tensor_bytes))

    @cached_property
    def skew(self) -> float:
        """Largest tensor / model size (Tiresias, NSDI'19, sec. 4.2; Tiresias asks it at every decision)."""
        return max(self.tensor_bytes) / self.total_bytes

    @cached_property
    def buckets(self) -> tuple[tuple[int, float], ...]:
        """(bytes, ready fraction of the iteration's compute) per bucket, in send order.

        A tensor's gradient is taken to be ready after a share of the backward
        pass proportional to the bytes of gradient produced so far (an
        assumption: backward time per layer is not in the profiles).

        A bucket closes once it holds at least its cap (the tensor that crosses
        the cap stays in it, as in PyTorch's _compute_bucket_assignment_by_size);
        the first bucket's cap is first_bucket_bytes, every later one's
        bucket_cap_bytes. Layer-wise synchronisation makes every tensor a bucket."""
        total = self.total_bytes
        backward = 1.0 - self.forward_fraction
        layer_wise = self.synchronisation == "layer-wise"
        cap = self.bucket_cap_bytes if self.first_bucket_bytes is None else self.first_bucket_bytes
        out: list[tuple[int, float]] = []
        filled = 0
        produced = 0
        for b in self.tensor_bytes:
            filled += b
            produced += b
            if layer_wise or filled >= cap:
                out.append((filled, self.forward_fraction + backward * produced / total))
                filled = 0
                cap = self.bucket_cap_bytes
        if filled:
            out.append((filled, 1.0))
        return tuple(out)

    def comm_signature(self) -> str:
        """Stable digest of everything about the model a network model's answer depends on."""
        payload = json.dumps(
            {"buckets": [[b, round(r, 12)] for b, r in self.buckets], "compute_s": repr(self.compute_seconds)},
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    @classmethod
    def from_yaml(cls, path: str | Path) -> "ModelProfile":
        path = Path(path)
        f = Fields(load_yaml_mapping(path), str(path))
        f.unknown_keys({"name", "source", "params_total", "params_source", "gradient_dtype_bytes",
                        "tensors", "compute", "forward_fraction", "bucket_cap_bytes", "first_bucket_bytes",
                        "synchronisation", "notes"})
        dtype = f.integer("gradient_dtype_bytes", 4, minimum=1, maximum=8)  # fp8 .. fp64
        raw_tensors = f.raw("tensors")
        if not isinstance(raw_tensors, list) or not raw_tensors:
            raise f.error("tensors", "expected a non-empty list of [name, numel] pairs")
        names, sizes = [], []
        for i, item in enumerate(raw_tensors):
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)
                    and isinstance(item[1], int) and not isinstance(item[1], bool) and item[1] > 0):
                raise f.error(f"tensors[{i}]", f"expected [name, positive numel], got {item!r}")
            if item[1] > MAX_TENSOR_ELEMENTS:
                raise f.error(f"tensors[{i}]", f"numel must be <= {MAX_TENSOR_ELEMENTS:.0e} (artist.limits), "
                                               f"got {item[1]}")
            names.append(item[0])
            sizes.append(item[1] * dtype)
        if f.has("params_total"):
            declared = f.integer("params_total", minimum=1)
            if declared != sum(sizes) // dtype:
                raise f.error("params_total",
                              f"declares {declared} parameters but tensors sum to {sum(sizes) // dtype}")
        c = f.sub("compute")
        c.unknown_keys({"reference_gpu", "batch_size", "seconds_per_iteration", "source", "notes"})
        if not c.has("source"):
            raise c.error("source", "compute time must cite where it comes from")
        return cls(
            name=f.string("name"),
            tensor_bytes=tuple(sizes),
            compute_seconds=c.number("seconds_per_iteration", positive=True, maximum=MAX_ITERATION_SECONDS),
            reference_gpu=c.string("reference_gpu"),
            batch_size=c.integer("batch_size", 0, minimum=0),
            forward_fraction=_forward_fraction(f),
            bucket_cap_bytes=f.integer("bucket_cap_bytes", DDP_BUCKET_CAP_BYTES, minimum=1),
            first_bucket_bytes=f.integer("first_bucket_bytes", minimum=1) if f.has("first_bucket_bytes") else None,
            synchronisation=_synchronisation(f),
            tensor_names=tuple(names),
            source=f.string("source", ""),
        )


def _forward_fraction(f: Fields) -> float:
    value = f.number("forward_fraction", DEFAULT_FORWARD_FRACTION, minimum=0.0)
    if value >= 1.0:
        raise f.error("forward_fraction", f"must be < 1 (the backward pass takes the rest), got {value:g}")
    return value


def _synchronisation(f: Fields) -> str:
    value = f.string("synchronisation", "ddp")
    if value not in SYNCHRONISATIONS:
        raise f.error("synchronisation", f"expected one of {', '.join(SYNCHRONISATIONS)}, got {value!r}")
    return value


DEFAULT_MODELS_DIR = shipped.MODELS_DIR


def load_models(directory: str | Path | None = None) -> dict[str, ModelProfile]:
    directory = Path(directory) if directory else DEFAULT_MODELS_DIR
    models = {}
    for path in sorted(directory.glob("*.yaml")):
        m = ModelProfile.from_yaml(path)
        if m.name in models:
            raise InputError(str(path), "field 'name'", f"model {m.name!r} is defined twice")
        models[m.name] = m
    if not models:
        raise InputError(str(directory), None, "no model profiles (*.yaml) found")
    return models
