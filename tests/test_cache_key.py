"""Cache keys: stable across processes and hash seeds; symmetric placements share a key,
anything that changes the answer does not."""

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from artist.network.analytical import AnalyticalModel, StartupLatency
from artist.jsonkey import canonical_json
from artist.network.cache import cache_key, key_material
from artist.placement import Placement, placement_from_shape
from artist.topology import GpuType, load_topology
from artist.workload import ModelProfile

REPO = Path(__file__).resolve().parent.parent
TOPOLOGY = REPO / "topologies" / "dally-3tier.yaml"


@pytest.fixture(scope="module")
def topo():
    return load_topology(TOPOLOGY, racks=4)  # 4 racks x 8 machines x 8 GPUs


@pytest.fixture(scope="module")
def model():
    return ModelProfile("m", (30_000_000, 10_000_000, 5_000_000), 0.1, "A100")


class FakeIdentity:
    """A CommModel whose identity is whatever the test says (transport, calibration, versions)."""

    name = "fake"

    def __init__(self, **identity):
        self._identity = {"backend": "fake", "version": "1", **identity}

    def identity(self):
        return dict(self._identity)


def gpus_on(topo, rack, machine, local):
    base = (rack * topo.machines_per_rack + machine) * topo.gpus_per_machine
    return [base + i for i in local]


def key(inner, model, placement):
    return cache_key(key_material(inner, model, placement))


# --------------------------------------------------------------------------- stability

KEY_SCRIPT = """
import sys
from artist.network.analytical import AnalyticalModel
from artist.network.cache import cache_key, key_material
from artist.placement import placement_from_shape
from artist.topology import load_topology
from artist.workload import ModelProfile
topo = load_topology(sys.argv[1], racks=4)
model = ModelProfile("m", (30_000_000, 10_000_000, 5_000_000), 0.1, "A100")
for shape in ([[8]], [[4, 4], [8]], [[1, 1, 1, 1], [1, 1, 1, 1]]):
    print(cache_key(key_material(AnalyticalModel(topo, channels=2), model, placement_from_shape(topo, shape))))
"""


def test_key_is_the_same_in_other_processes_and_hash_seeds(topo, model):
    expected = [key(AnalyticalModel(topo, channels=2), model, placement_from_shape(topo, s))
                for s in ([[8]], [[4, 4], [8]], [[1, 1, 1, 1], [1, 1, 1, 1]])]
    assert len(set(expected)) == 3
    for seed in ("0", "1", "4242424242", "random"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
        out = subprocess.run([sys.executable, "-c", KEY_SCRIPT, str(TOPOLOGY)], env=env, capture_output=True,
                             text=True, check=True).stdout.split()
        assert out == expected, f"PYTHONHASHSEED={seed}"


def test_key_is_sha256_of_sorted_compact_json(topo, model):
    import hashlib

    material = key_material(AnalyticalModel(topo), model, placement_from_shape(topo, [[8]]))
    text = canonical_json(material)
    assert " " not in text and text.startswith('{"backend":')  # sorted keys, no whitespace
    assert cache_key(material) == hashlib.sha256(text.encode()).hexdigest()
    assert canonical_json({"b": 1, "a": [1.5, {"d": 2, "c": 3}]}) == '{"a":[1.5,{"c":3,"d":2}],"b":1}'


def test_canonical_json_refuses_nan():
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})


# --------------------------------------------------------------------------- symmetry: same key


def test_same_canonical_shape_from_different_racks_machines_and_gpus_share_a_key(topo, model):
    inner = AnalyticalModel(topo)
    # [[4],[4]]: four GPUs on one machine in each of two racks, picked in different places.
    a = Placement(topo, tuple(gpus_on(topo, 0, 0, range(4)) + gpus_on(topo, 2, 5, range(4))))
    b = Placement(topo, tuple(gpus_on(topo, 3, 1, range(4, 8)) + gpus_on(topo, 1, 7, (0, 2, 4, 6))))
    c = placement_from_shape(topo, [[4], [4]], first_rack=2)
    assert a.gpus != b.gpus != c.gpus
    assert key(inner, model, a) == key(inner, model, b) == key(inner, model, c)
    # And the answer really is the same (the symmetry is true of the model, not just of the key).
    assert inner.iteration_comm_time(model, a) == inner.iteration_comm_time(model, b)


def test_machine_order_within_racks_and_rack_order_do_not_matter(topo, model):
    inner = AnalyticalModel(topo)
    # rack 1: machines with 2 and 6 GPUs; rack 3: one machine with 8. Listed the other way round too.
    a = Placement(topo, tuple(gpus_on(topo, 1, 0, range(2)) + gpus_on(topo, 1, 4, range(6))
                              + gpus_on(topo, 3, 2, range(8))))
    b = Placement(topo, tuple(gpus_on(topo, 0, 6, range(8)) + gpus_on(topo, 2, 1, range(6))
                              + gpus_on(topo, 2, 3, range(2))))
    assert a.canonical_shape == b.canonical_shape == ((8,), (6, 2))
    assert key(inner, model, a) == key(inner, model, b)


def test_model_name_and_topology_rack_count_do_not_enter_the_key(topo, model):
    inner = AnalyticalModel(topo)
    renamed = dataclasses.replace(model, name="other-name", source="elsewhere")
    p = placement_from_shape(topo, [[8, 8]])
    assert key(inner, model, p) == key(inner, renamed, p)
    bigger = topo.with_racks(16)
    assert key(inner, model, p) == key(AnalyticalModel(bigger), model, placement_from_shape(bigger, [[8, 8]]))


def _with_tier(topo, tier, **changes):
    return dataclasses.replace(topo, **{tier: dataclasses.replace(getattr(topo, tier), **changes)})


@pytest.mark.parametrize("shape, untouched", [
    ([[8]], ["rack", "spine"]),
    ([[4, 4]], ["spine"]),
])
def test_links_of_untouched_tiers_do_not_split_keys(topo, model, shape, untouched):
    """A placement inside a rack never crosses the spine: its key ignores the spine, and
    (independent check) the analytical answer indeed does not change."""
    base = placement_from_shape(topo, shape)
    for tier in untouched:
        other = _with_tier(topo, tier, bandwidth_bps=1e9, link_latency_s=1e-3, switch_latency_s=1e-3)
        if tier == "spine":
            other = dataclasses.replace(other, oversubscription=8.0)
        p = placement_from_shape(other, shape)
        assert key(AnalyticalModel(topo), model, base) == key(AnalyticalModel(other), model, p)
        assert (AnalyticalModel(topo).iteration_comm_time(model, base)
                == AnalyticalModel(other).iteration_comm_time(model, p))


# --------------------------------------------------------------------------- any change: another key


def test_every_shape_gets_its_own_key(topo, model):
    inner = AnalyticalModel(topo)
    shapes = [[[8]], [[4]], [[4, 4]], [[4], [4]], [[8, 8]], [[8], [8]], [[2, 2], [4]], [[4, 2], [2]],
              [[1] * 8], [[1] * 4, [1] * 4], [[6, 2]], [[5, 3]]]
    keys = {key(inner, model, placement_from_shape(topo, s)) for s in shapes}
    assert len(keys) == len(shapes)


def test_every_model_parameter_that_changes_the_answer_changes_the_key(topo, model):
    inner = AnalyticalModel(topo)
    p = placement_from_shape(topo, [[8], [8]])
    variants = [
        model,
        dataclasses.replace(model, tensor_bytes=(30_000_000, 10_000_000, 5_000_001)),
        dataclasses.replace(model, tensor_bytes=(10_000_000, 30_000_000, 5_000_000)),  # same total, other order
        dataclasses.replace(model, compute_seconds=0.1000001),
        dataclasses.replace(model, forward_fraction=0.5),
        dataclasses.replace(model, bucket_cap_bytes=10_000_000),
    ]
    keys = [key(inner, m, p) for m in variants]
    assert len(set(keys)) == len(variants)


LINK_CHANGES = [
    ("machine", "bandwidth_bps"), ("machine", "link_latency_s"), ("machine", "switch_latency_s"),
    ("rack", "bandwidth_bps"), ("rack", "link_latency_s"), ("rack", "switch_latency_s"),
    ("spine", "bandwidth_bps"), ("spine", "link_latency_s"), ("spine", "switch_latency_s"),
]


def test_every_link_parameter_of_a_network_placement_changes_the_key(topo, model):
    shape = [[4, 4], [8]]
    base = key(AnalyticalModel(topo), model, placement_from_shape(topo, shape))
    variants = [_with_tier(topo, tier, **{field: getattr(getattr(topo, tier), field) * 1.5 + 1e-9})
                for tier, field in LINK_CHANGES]
    variants += [dataclasses.replace(topo, oversubscription=2.0),
                 dataclasses.replace(topo, gpus_per_machine=16),
                 dataclasses.replace(topo, machines_per_rack=4)]
    keys = {base}
    for other in variants:
        keys.add(key(AnalyticalModel(other), model, placement_from_shape(other, shape)))
    assert len(keys) == len(variants) + 1


def test_gpu_types_and_their_speeds_change_the_key(topo, model):
    hetero = dataclasses.replace(topo, rack_gpu_types=("A100", "H100"),
                                 gpu_types={"A100": GpuType("A100", 1.0), "H100": GpuType("H100", 2.0)})
    inner = AnalyticalModel(hetero)
    same_type = placement_from_shape(hetero, [[4], [4]], first_rack=0)  # racks 0, 1: A100 + H100
    p_a100 = Placement(hetero, tuple(gpus_on(hetero, 0, 0, range(4)) + gpus_on(hetero, 2, 0, range(4))))  # A100 only
    p_h100 = Placement(hetero, tuple(gpus_on(hetero, 1, 0, range(4)) + gpus_on(hetero, 3, 0, range(4))))  # H100 only
    assert same_type.canonical_shape == p_a100.canonical_shape == p_h100.canonical_shape
    keys = {key(inner, model, p) for p in (same_type, p_a100, p_h100)}
    assert len(keys) == 3
    # Same type names, another relative speed: another compute time, another key.
    faster = dataclasses.replace(hetero, gpu_types={"A100": GpuType("A100", 1.0), "H100": GpuType("H100", 3.0)})
    p_h100_faster = Placement(faster, p_h100.gpus)
    assert key(AnalyticalModel(faster), model, p_h100_faster) != key(inner, model, p_h100)
    # The answers differ indeed when communication is not hidden (short compute): the split is needed.
    short = dataclasses.replace(model, compute_seconds=0.002)
    assert (inner.iteration_comm_time(short, p_a100).exposed_seconds
            != inner.iteration_comm_time(short, p_h100).exposed_seconds)


def test_every_backend_setting_changes_the_key(topo, model):
    p = placement_from_shape(topo, [[8], [8]])
    inners = [
        AnalyticalModel(topo),
        AnalyticalModel(topo, algorithm="hierarchical"),
        AnalyticalModel(topo, channels=2),
        AnalyticalModel(topo, latency=StartupLatency(base_s=9e-6)),
        AnalyticalModel(topo, latency=StartupLatency(net_step_s=15e-6)),
        FakeIdentity(),
        FakeIdentity(version="2"),
        FakeIdentity(ns3_version="3.44"),
        FakeIdentity(ns3_version="3.45"),
        FakeIdentity(transport={"mtu": 4096}),
        FakeIdentity(transport={"mtu": 9000}),
        FakeIdentity(calibration_profile="abc123"),
        FakeIdentity(calibration_profile="abc124"),
    ]
    keys = [key(i, model, p) for i in inners]
    assert len(set(keys)) == len(inners)
