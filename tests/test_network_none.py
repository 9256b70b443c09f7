"""The `none` backend: communication is free, so a step is its compute alone."""

import pytest

from artist.network.stack import CommSpec
from artist.perf.compute import ComputeModel
from artist.perf.model import PerfModel
from artist.placement import Placement
from artist.topology import load_topology
from artist.workload import load_models


def _topology():
    return load_topology("topologies/dally-3tier.yaml")


def test_collectives_cost_nothing():
    topo = _topology()
    comm = CommSpec("none").build(topo)
    group = Placement(topo, tuple(range(16)))
    for kind in ("all_reduce", "all_gather", "reduce_scatter"):
        assert comm.collective_seconds(group, 1 << 30, kind) == 0.0
    assert CommSpec("analytical").build(topo).collective_seconds(group, 1 << 30) > 0.0


def test_a_step_is_its_compute_alone():
    topo = _topology()
    compute = ComputeModel(topo)
    model = load_models()["resnet50"]
    placement = Placement(topo, tuple(range(0, 64, 4)))  # 16 GPUs over several machines
    step = PerfModel(CommSpec("none").build(topo), compute).estimate(model, placement)
    assert step.step_seconds == pytest.approx(compute.step_seconds(model, placement), rel=1e-12)
    assert step.comm_seconds == 0.0
    real = PerfModel(CommSpec("analytical").build(topo), compute).estimate(model, placement)
    assert real.comm_seconds > 0.0


def test_calibration_profile_refused():
    with pytest.raises(ValueError, match="none"):
        CommSpec("none", calibration="calibration/profiles/h100-analytical.yaml").build(_topology())
