"""Compute tables for GPU types nobody measured, modelled from one that was.

    apps, described = with_modelled_types(apps, cluster, reference_memory)

The elastic applications' compute per (GPU type, local batch) is measured (the Pollux and Sia artifacts'
tables: t4, rtx, a100, quad). A cluster may hold other types (Crius' A40, A10, V100). For those, every
application gets the reference type's measured curve scaled by the accelerators' achieved throughput
(artist/perf/accelerators.py: peak dense tensor FLOP/s x efficiency, the same figures Crius' ground truth
computes with), and the reference's largest local batch scaled by memory per GPU (the pool's memory_gib,
else the datasheet's), never beyond what the reference measured. The reference is the one measured type
the accelerator table knows (a100: Sia's DGX-A100 40 GB). A type of the reference's accelerator is the
reference's table itself (Crius' "A100" is the measured "a100").

This is an estimate, not a measurement: a small model is less compute-bound than the FLOP ratio assumes.
One check against published measurements: the V100 / A100 peak ratio (125 / 312 = 0.40) lies between the
single-GPU training speed ratios of NVIDIA's DeepLearningExamples, 0.486 for ResNet-50 and 0.386 for
BERT-large (topologies/hetero-a100-v100.yaml cites both).
Every modelled table says so in its source, carries no measured step (rules step_time: measured refuses
it), and the run's identity records each modelled type's factor and limit.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Mapping

from artist.elastic.measured import ComputeTable, MeasuredApplication
from artist.elastic.spec import LocalBatchLimit
from artist.perf.accelerators import accelerator
from artist.perf.memory import GIB


def _accelerator_or_none(gpu_type: str):
    try:
        return accelerator(gpu_type)
    except KeyError:
        return None


def _measured_types(apps: Mapping[str, tuple[MeasuredApplication, object]]) -> set[str]:
    """The GPU types every application has a table of."""
    return set.intersection(*(set(app.compute) for app, _ in apps.values())) if apps else set()


def measured_type(apps: Mapping[str, tuple[MeasuredApplication, object]], gpu_type: str) -> str | None:
    """The measured type every application has that names this GPU: the same name, ignoring case (a
    topology's "T4" is Pollux's "t4"), else the same accelerator (Crius' "A100" is Sia's "a100"); None."""
    measured = _measured_types(apps)
    if gpu_type in measured:
        return gpu_type
    same_name = sorted(t for t in measured if t.lower() == gpu_type.lower())
    if same_name:
        return same_name[0]
    gpu = _accelerator_or_none(gpu_type)
    same_gpu = sorted(t for t in measured if gpu is not None and _accelerator_or_none(t) == gpu)
    return same_gpu[0] if same_gpu else None


def reference_type(apps: Mapping[str, tuple[MeasuredApplication, object]]) -> str | None:
    """The measured type every application has and the accelerator table knows (None: no such type)."""
    known = sorted(t for t in _measured_types(apps) if _accelerator_or_none(t) is not None)
    return known[0] if known else None


def with_modelled_types(apps: Mapping[str, tuple[MeasuredApplication, object]], pools,
                        reference_memory_gib: Mapping[str, float]) -> tuple[dict, dict]:
    """(apps with a compute table for every pool's GPU type, {type given another's table: how}); pools: the
    cluster's Pool objects (gpu_type, memory_gib). A type that names a measured one (measured_type) takes its
    table and limits as they are; any other is modelled from the reference. ValueError naming the type
    where neither applies."""
    missing = [p for p in pools if any(p.gpu_type not in app.compute for app, _ in apps.values())]
    if not missing:
        return apps, {}
    described, factors, aliases = {}, {}, set()  # factors: exact (described rounds them for run ids)
    ref = ref_gpu = ref_memory = None
    for pool in missing:
        alias = measured_type(apps, pool.gpu_type)
        if alias is not None:  # the same GPU measured under another name: its table, unscaled
            factors[pool.gpu_type] = 1.0
            aliases.add(pool.gpu_type)
            described[pool.gpu_type] = {"from": alias, "compute_factor": 1.0}
            continue
        if ref is None:
            ref = reference_type(apps)
            if ref is None or ref not in reference_memory_gib:
                raise ValueError(f"no measured compute for GPU type {pool.gpu_type}, and no measured type with "
                                 "datasheet figures and a stated memory to model it from")
            ref_gpu, ref_memory = accelerator(ref), float(reference_memory_gib[ref])
        gpu = _accelerator_or_none(pool.gpu_type)
        if gpu is None:
            raise ValueError(f"GPU type {pool.gpu_type!r} has neither measured compute tables nor datasheet "
                             "figures (artist/perf/accelerators.py) to model them from")
        factor = factors[pool.gpu_type] = ref_gpu.achieved_flops / gpu.achieved_flops
        memory = pool.memory_gib if pool.memory_gib is not None else gpu.memory_bytes / GIB
        described[pool.gpu_type] = {"from": ref, "compute_factor": round(factor, 6), "memory_gib": memory}  # (ids)
    out = {}
    for name, (app, spec) in apps.items():
        compute, limits = dict(app.compute), dict(app.limits)
        for pool in missing:
            if pool.gpu_type in compute:
                continue
            how = described[pool.gpu_type]
            table, limit = app.compute[how["from"]], app.limits[how["from"]]
            if pool.gpu_type in aliases:  # the measured table and limits as they are
                compute[pool.gpu_type], limits[pool.gpu_type] = table, limit
                continue
            largest = min(limit.max_local, math.floor(limit.max_local * how["memory_gib"] / ref_memory))
            if largest < limit.min_local:
                raise ValueError(f"{name}: {pool.gpu_type} ({how['memory_gib']:g} GiB) holds less than the smallest "
                                 f"measured local batch {limit.min_local} of {ref} ({ref_memory:g} GiB)")
            compute[pool.gpu_type] = ComputeTable(
                pool.gpu_type, table.local_batches, table.seconds * factors[pool.gpu_type],
                f"modelled: {table.source} x {how['compute_factor']:.4g} ({ref} / {pool.gpu_type} achieved FLOP/s, "
                "artist/perf/accelerators.py)", None)
            limits[pool.gpu_type] = LocalBatchLimit(limit.min_local, largest)
            how.setdefault("max_local_batch", {})[name] = largest
        app = dataclasses.replace(app, compute=compute, limits=limits)
        out[name] = (app, dataclasses.replace(spec, local_batch=app.limits))
    return out, described
