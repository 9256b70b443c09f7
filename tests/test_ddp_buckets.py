"""Gradient bucketing options (issue 14 item 5): PyTorch's 1 MiB first bucket and layer-wise
synchronisation (one all-reduce per tensor), against hand-computed buckets and step times."""

from __future__ import annotations

import pytest

from artist.errors import InputError
from artist.network.analytical import AnalyticalModel
from artist.perf.model import as_perf_model
from artist.placement import placement_from_shape
from artist.workload import ModelProfile
from artist.workload.model import PYTORCH_FIRST_BUCKET_BYTES, load_models

from conftest import MACHINE_LINK_US, MACHINE_SWITCH_US, NVSWITCH_GBPS

MIB = 1024 * 1024
# backward order: 0.5, 0.75, 10, 20, 5 MiB (36.25 MiB in all)
TENSORS = (MIB // 2, 3 * MIB // 4, 10 * MIB, 20 * MIB, 5 * MIB)
TOTAL = 36.25 * MIB
FF = 1 / 3  # default forward fraction: backward is the remaining 2/3


def test_default_bucketing_is_unchanged_25_mib_caps():
    # 0.5 + 0.75 + 10 + 20 = 31.25 MiB crosses 25 MiB at the 20 MiB tensor; 5 MiB is the rest.
    buckets = ModelProfile("m", TENSORS, 1.0, "A100").buckets
    assert [b for b, _ in buckets] == [31.25 * MIB, 5 * MIB]
    assert buckets[0][1] == pytest.approx(FF + (1 - FF) * 31.25 / 36.25)
    assert buckets[1][1] == 1.0


def test_pytorch_first_bucket_closes_at_1_mib():
    assert PYTORCH_FIRST_BUCKET_BYTES == 1048576  # dist._DEFAULT_FIRST_BUCKET_BYTES
    model = ModelProfile("m", TENSORS, 1.0, "A100", first_bucket_bytes=PYTORCH_FIRST_BUCKET_BYTES)
    # first bucket: 0.5 + 0.75 = 1.25 MiB >= 1 MiB; then 10 + 20 = 30 MiB >= 25 MiB; then 5 MiB.
    assert [b for b, _ in model.buckets] == [1.25 * MIB, 30 * MIB, 5 * MIB]
    assert [r for _, r in model.buckets] == pytest.approx(
        [FF + (1 - FF) * 1.25 / 36.25, FF + (1 - FF) * 31.25 / 36.25, 1.0])


def test_layer_wise_sends_every_tensor_alone_when_ready():
    model = ModelProfile("m", TENSORS, 1.0, "A100", synchronisation="layer-wise")
    assert [b for b, _ in model.buckets] == list(TENSORS)
    produced = [0.5, 1.25, 11.25, 31.25, 36.25]
    assert [r for _, r in model.buckets] == pytest.approx([FF + (1 - FF) * p / 36.25 for p in produced])
    # layer-wise ignores the caps
    assert model.buckets == ModelProfile("m", TENSORS, 1.0, "A100", bucket_cap_bytes=1, first_bucket_bytes=1).buckets


def test_the_options_change_the_comm_signature():
    signatures = {ModelProfile("m", TENSORS, 1.0, "A100", **kw).comm_signature()
                  for kw in ({}, {"first_bucket_bytes": MIB}, {"synchronisation": "layer-wise"})}
    assert len(signatures) == 3


def test_layer_wise_step_time_hand_computed(topo_8gpu_machines):
    # Two 100 MB tensors on one 8-GPU machine (300 GB/s NVSwitch ports), compute C = 1 ms,
    # forward 1/3: the first tensor is ready at 1/3 + 2/3 x 1/2 = 2/3 C (0.667 ms) and its ring
    # all-reduce (t = 0.641 ms) runs past compute; the second, ready at C, waits for it.
    # Layer-wise: exposed = 2/3 C + 2t - C = 0.948 ms. One 200 MB DDP bucket ready at the end:
    # exposed = t(200 MB) = 1.224 ms. With C = 2 ms the first tensor ends before C: exposed = t.
    s, compute, n = 100_000_000, 0.001, 8
    nv_bytes_per_s = NVSWITCH_GBPS * 1e9 / 8
    hop = 3.4e-6 + (2 * MACHINE_LINK_US + MACHINE_SWITCH_US) * 1e-6

    def ring(nbytes):
        return 8.4e-6 + 2 * (n - 1) * (hop + nbytes / n / nv_bytes_per_s)

    placement = placement_from_shape(topo_8gpu_machines, [[8]])
    perf = as_perf_model(AnalyticalModel(topo_8gpu_machines), topo_8gpu_machines)
    layer_wise = perf.estimate(ModelProfile("lw", (s, s), compute, "A100", synchronisation="layer-wise"), placement)
    assert layer_wise.exposed_comm_seconds == pytest.approx(2 / 3 * compute + 2 * ring(s) - compute, rel=1e-9)
    bucketed = perf.estimate(ModelProfile("ddp", (s, s), compute, "A100", bucket_cap_bytes=2 * s), placement)
    assert bucketed.exposed_comm_seconds == pytest.approx(ring(2 * s), rel=1e-9)
    assert ring(s) == pytest.approx(0.641e-3, rel=1e-3) and ring(2 * s) == pytest.approx(1.224e-3, rel=1e-3)
    longer = perf.estimate(ModelProfile("lw", (s, s), 2 * compute, "A100", synchronisation="layer-wise"), placement)
    assert longer.exposed_comm_seconds == pytest.approx(ring(s), rel=1e-9)


def test_shipped_models_conserve_bytes_under_every_option():
    import dataclasses

    for model in load_models().values():
        for kw in ({"first_bucket_bytes": PYTORCH_FIRST_BUCKET_BYTES}, {"synchronisation": "layer-wise"}):
            variant = dataclasses.replace(model, **kw)
            assert sum(b for b, _ in variant.buckets) == model.total_bytes
            ready = [r for _, r in variant.buckets]
            assert ready == sorted(ready) and ready[-1] == 1.0
        first = dataclasses.replace(model, first_bucket_bytes=MIB).buckets[0][0]
        # the first bucket holds >= 1 MiB, minus at most the tensor that crossed the cap
        assert first >= min(MIB, model.total_bytes) and first - max(model.tensor_bytes) < MIB


def _profile_yaml(tmp_path, extra: str):
    path = tmp_path / "m.yaml"
    path.write_text("name: m\ntensors: [[a, 10], [b, 20]]\n"
                    "compute: {reference_gpu: A100, seconds_per_iteration: 0.1, source: test}\n" + extra)
    return path


def test_yaml_options_and_their_errors(tmp_path):
    loaded = ModelProfile.from_yaml(_profile_yaml(tmp_path, "synchronisation: layer-wise\nfirst_bucket_bytes: 40\n"))
    assert loaded.synchronisation == "layer-wise" and loaded.first_bucket_bytes == 40
    assert ModelProfile.from_yaml(_profile_yaml(tmp_path, "")).first_bucket_bytes is None
    with pytest.raises(InputError, match=r"m.yaml.*synchronisation.*ddp, layer-wise"):
        ModelProfile.from_yaml(_profile_yaml(tmp_path, "synchronisation: layerwise\n"))
    with pytest.raises(InputError, match=r"m.yaml.*first_bucket_bytes.*>= 1"):
        ModelProfile.from_yaml(_profile_yaml(tmp_path, "first_bucket_bytes: 0\n"))
    with pytest.raises(ValueError, match="synchronisation"):
        ModelProfile("m", (1,), 1.0, "A100", synchronisation="bogus")
