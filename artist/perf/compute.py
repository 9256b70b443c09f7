"""How long a GPU takes for one step's forward + backward (compute only).

ComputeModel.seconds(model, gpu_type, local_batch) answers per (model, GPU type,
local batch): from a measured entry where one is given (ComputeEntry: the
seconds at a local batch, and the largest local batch that fits in the GPU's
memory), else by today's rule, the model profile's reference time divided by
the GPU type's relative speed (topology.gpu_types). A batch other than the
measured or profile batch scales the time linearly (a first-order model: it
ignores the fixed per-step overheads that make small batches less efficient).
A synchronous data-parallel step waits for its slowest GPU (step_seconds).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from artist.placement import Placement
from artist.topology import Topology
from artist.workload import ModelProfile


class OutOfMemory(ValueError):
    """A local batch larger than the GPU type can hold for this model."""


@dataclass(frozen=True)
class ComputeEntry:
    model: str
    gpu_type: str
    local_batch: int
    seconds: float  # forward + backward of one step at local_batch
    max_local_batch: int | None = None  # memory limit; None: not known
    source: str = ""


class ComputeModel:
    def __init__(self, topology: Topology, entries: Iterable[ComputeEntry] = ()):
        self.topology = topology
        self._entries: dict[tuple[str, str], ComputeEntry] = {}
        for e in entries:
            if (e.model, e.gpu_type) in self._entries:
                raise ValueError(f"two compute entries for model {e.model!r} on GPU type {e.gpu_type!r}")
            if e.local_batch < 1 or not e.seconds > 0:
                raise ValueError(f"compute entry {e}: local_batch and seconds must be positive")
            self._entries[(e.model, e.gpu_type)] = e

    def max_local_batch(self, model: ModelProfile, gpu_type: str) -> int | None:
        entry = self._entries.get((model.name, gpu_type))
        return entry.max_local_batch if entry is not None else None

    def seconds(self, model: ModelProfile, gpu_type: str, local_batch: int | None = None) -> float:
        """Forward + backward of one step on one GPU of this type (local_batch None: the profile's batch)."""
        entry = self._entries.get((model.name, gpu_type))
        if entry is not None:
            batch = entry.local_batch if local_batch is None else local_batch
            if entry.max_local_batch is not None and batch > entry.max_local_batch:
                raise OutOfMemory(f"model {model.name} at local batch {batch} does not fit on a {gpu_type} "
                                  f"(at most {entry.max_local_batch}; {entry.source or 'no source'})")
            return entry.seconds if batch == entry.local_batch else entry.seconds * batch / entry.local_batch
        seconds = model.compute_seconds / self.topology.gpu_type(gpu_type).relative_speed
        if local_batch is None or local_batch == model.batch_size:
            return seconds
        if model.batch_size <= 0:
            raise ValueError(f"model {model.name}: its profile states no batch size, so a local batch of "
                             f"{local_batch} cannot be scaled from it")
        return seconds * local_batch / model.batch_size

    def step_seconds(self, model: ModelProfile, placement: Placement, local_batch: int | None = None) -> float:
        """A synchronous step on this placement: the slowest of its GPU types."""
        return max(self.seconds(model, gpu_type, local_batch) for gpu_type, _ in placement.gpu_type_counts)
