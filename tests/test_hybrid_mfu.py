"""Predicted throughput of published Megatron-LM runs (Narayanan et al. 2021, Table 1) on the
Selene-like dgx-a100 topology, analytical backend: the A100 efficiency is calibrated on the
first row only; the others are predictions (table in workloads/README.md)."""

from __future__ import annotations

import dataclasses

import pytest

from artist.network.analytical import AnalyticalModel
from artist.perf import accelerators
from artist.perf.hybrid import estimate_plan
from artist.perf.memory import PlanDoesNotFit
from artist.topology import load_topology
from artist.workload.published_throughput import MEGATRON_TABLE1
from artist.workload.zoo import zoo_model
from conftest import REPO

TOPO = load_topology(REPO / "topologies" / "dgx-a100.yaml")


def predict(run, fabric):
    """Achieved TFLOP/s per GPU (the paper's count) for the first candidate plan that fits."""
    for plan, mbs in run.plans():
        try:
            return estimate_plan(fabric, TOPO, zoo_model(run.model), plan, range(run.gpus), mbs,
                                 overlap_dp=False, first_replicas_only=True)
        except PlanDoesNotFit:
            continue
    raise AssertionError(f"no plan of {run} fits")


def test_a100_efficiency_reproduces_its_calibration_row(monkeypatch):
    """Re-derive A100_EFFICIENCY: the efficiency at which row 1 (1.7B, 32 GPUs, 137 TFLOP/s) comes out."""
    fabric = AnalyticalModel(TOPO)
    run = MEGATRON_TABLE1[0]
    base = accelerators.ACCELERATORS["A100"]

    def at(efficiency):
        monkeypatch.setitem(accelerators.ACCELERATORS, "A100", dataclasses.replace(base, efficiency=efficiency))
        return predict(run, fabric).tflops_per_gpu

    lo, hi = 0.2, 0.9
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if at(mid) < run.tflops_per_gpu else (lo, mid)
    assert accelerators.A100_EFFICIENCY == pytest.approx(lo, abs=5e-4)


@pytest.mark.parametrize("run", MEGATRON_TABLE1[1:6], ids=lambda r: r.model)
def test_predicted_throughput_within_15_percent_of_published(run):
    estimate = predict(run, AnalyticalModel(TOPO))
    assert estimate.tflops_per_gpu == pytest.approx(run.tflops_per_gpu, rel=0.15)
    # MFU counts no recomputation: 3/4 of the blocks' share of the paper's figure.
    assert estimate.mfu < estimate.tflops_per_gpu * 1e12 / 312e12
