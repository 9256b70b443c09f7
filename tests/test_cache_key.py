"""Cache keys: stable across processes and hash seeds; questions that differ only in which racks,
machines and GPUs were picked share a key (the graphs are relabelled onto canonical GPUs), anything
that changes the answer (graph content, link parameters, backend identity) does not."""

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from artist.jsonkey import canonical_json
from artist.network.analytical import AnalyticalModel, StartupLatency
from artist.network.cache import Cached, LatencyStore, cache_key, canonical_gpu_map, graphs_key_material
from artist.parallel.ddp import ddp_step
from artist.parallel.graph import Node, StepGraph
from artist.perf.compute import ComputeModel
from artist.perf.model import PerfModel
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
    """A FabricModel whose identity is whatever the test says (transport, calibration, versions)."""

    name = "fake"

    def __init__(self, **identity):
        self._identity = {"backend": "fake", "version": "1", **identity}

    def identity(self):
        return dict(self._identity)


def gpus_on(topo, rack, machine, local):
    base = (rack * topo.machines_per_rack + machine) * topo.gpus_per_machine
    return [base + i for i in local]


def step_graph(model, placement):
    """One DDP step of `model` laid on the very GPUs of `placement` (not on its canonical shape),
    its compute set by the placement's GPU speeds."""
    return ddp_step(model, placement, ComputeModel(placement.topology).step_seconds(model, placement))


def graphs_key(inner, graphs, topology):
    return cache_key(graphs_key_material(inner, graphs, topology)[0])


def key(inner, model, placement):
    return graphs_key(inner, {"job": step_graph(model, placement)}, placement.topology)


def timing_of(inner, graph):
    return inner.time({"job": graph})["job"]


def same_timeline(a, b):
    """Two GraphTimings with bit-identical numbers (their provenance may differ)."""
    return (a.node_seconds, a.node_end, a.comm_seconds, a.step_seconds) == \
           (b.node_seconds, b.node_end, b.comm_seconds, b.step_seconds)


# --------------------------------------------------------------------------- stability

KEY_SCRIPT = """
import sys
from artist.network.analytical import AnalyticalModel
from artist.network.cache import cache_key, graphs_key_material
from artist.parallel.ddp import ddp_step
from artist.perf.compute import ComputeModel
from artist.placement import placement_from_shape
from artist.topology import load_topology
from artist.workload import ModelProfile
topo = load_topology(sys.argv[1], racks=4)
model = ModelProfile("m", (30_000_000, 10_000_000, 5_000_000), 0.1, "A100")
for shape in ([[8]], [[4, 4], [8]], [[1, 1, 1, 1], [1, 1, 1, 1]]):
    p = placement_from_shape(topo, shape)
    graph = ddp_step(model, p, ComputeModel(topo).step_seconds(model, p))
    print(cache_key(graphs_key_material(AnalyticalModel(topo, channels=2), {"job": graph}, topo)[0]))
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

    p = placement_from_shape(topo, [[8]])
    material, order, _ = graphs_key_material(AnalyticalModel(topo), {"job": step_graph(model, p)}, topo)
    text = canonical_json(material)
    assert " " not in text and text.startswith('{"backend":')  # sorted keys, no whitespace
    assert cache_key(material) == hashlib.sha256(text.encode()).hexdigest()
    assert order == ["job"]
    assert canonical_json({"b": 1, "a": [1.5, {"d": 2, "c": 3}]}) == '{"a":[1.5,{"c":3,"d":2}],"b":1}'


def test_canonical_json_refuses_nan():
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})


# --------------------------------------------------------------------------- relabelling: same key


def test_same_canonical_shape_from_different_racks_machines_and_gpus_share_a_key(topo, model):
    inner = AnalyticalModel(topo)
    # [[4],[4]]: four GPUs on one machine in each of two racks, picked in different places.
    a = Placement(topo, tuple(gpus_on(topo, 0, 0, range(4)) + gpus_on(topo, 2, 5, range(4))))
    b = Placement(topo, tuple(gpus_on(topo, 3, 1, range(4, 8)) + gpus_on(topo, 1, 7, (0, 2, 4, 6))))
    c = placement_from_shape(topo, [[4], [4]], first_rack=2)
    assert a.gpus != b.gpus != c.gpus
    graphs = [step_graph(model, p) for p in (a, b, c)]
    assert graphs[0] != graphs[1] != graphs[2]  # the graphs name other GPUs ...
    assert key(inner, model, a) == key(inner, model, b) == key(inner, model, c)  # ... but are one question
    # And the answer really is the same (the symmetry is true of the model, not just of the key).
    assert same_timeline(timing_of(inner, graphs[0]), timing_of(inner, graphs[1]))


def test_two_placements_of_one_shape_on_different_racks_share_a_key_and_its_relabelled_graph(topo, model, tmp_path):
    inner = AnalyticalModel(topo)
    shape = [[8, 4], [2]]
    placements = [placement_from_shape(topo, shape, first_rack=r) for r in (0, 1, 2)]
    materials = [graphs_key_material(inner, {"job": step_graph(model, p)}, topo) for p in placements]
    assert len({cache_key(m) for m, _, _ in materials}) == 1
    # Every one is relabelled onto the GPUs of the canonical placement of its shape.
    canonical = placement_from_shape(topo, shape).gpus
    for (_, _, relabelled), p in zip(materials, placements):
        assert relabelled["job"].gpus == canonical
        assert relabelled["job"] == step_graph(model, placement_from_shape(topo, shape))
    # Cached.key_for says the same.
    cached = Cached(inner, LatencyStore(tmp_path / "c.sqlite"))
    assert {cached.key_for({"job": step_graph(model, p)}) for p in placements} == {cache_key(materials[0][0])}


def test_canonical_gpu_map_keeps_machines_and_racks_together(topo):
    gpus = gpus_on(topo, 3, 6, (1, 5)) + gpus_on(topo, 3, 2, range(5)) + gpus_on(topo, 1, 4, range(8))
    mapping = canonical_gpu_map(topo, gpus)
    assert sorted(mapping) == sorted(gpus)
    target = placement_from_shape(topo, Placement(topo, tuple(gpus)).canonical_shape)
    assert sorted(mapping.values()) == list(target.gpus)  # a bijection onto the canonical placement
    for a in gpus:
        for b in gpus:
            same_machine = topo.machine_of(a) == topo.machine_of(b)
            assert same_machine == (topo.machine_of(mapping[a]) == topo.machine_of(mapping[b]))
            same_rack = topo.rack_of_machine(topo.machine_of(a)) == topo.rack_of_machine(topo.machine_of(b))
            assert same_rack == (topo.rack_of_machine(topo.machine_of(mapping[a]))
                                 == topo.rack_of_machine(topo.machine_of(mapping[b])))


def test_machine_order_within_racks_and_rack_order_do_not_matter(topo, model):
    inner = AnalyticalModel(topo)
    # rack 1: machines with 2 and 6 GPUs; rack 3: one machine with 8. Listed the other way round too.
    a = Placement(topo, tuple(gpus_on(topo, 1, 0, range(2)) + gpus_on(topo, 1, 4, range(6))
                              + gpus_on(topo, 3, 2, range(8))))
    b = Placement(topo, tuple(gpus_on(topo, 0, 6, range(8)) + gpus_on(topo, 2, 1, range(6))
                              + gpus_on(topo, 2, 3, range(2))))
    assert a.canonical_shape == b.canonical_shape == ((8,), (6, 2))
    assert key(inner, model, a) == key(inner, model, b)


def two_jobs_two_ways(topo, model):
    """Two jobs' steps, and the same two steps listed the other way round, on other racks and
    machines, under other names."""
    small = ModelProfile("s", (4_000_000,), 0.05, "A100")
    first = {"a": step_graph(model, placement_from_shape(topo, [[8]], first_rack=0)),
             "b": step_graph(small, Placement(topo, tuple(gpus_on(topo, 1, 0, range(4)))))}
    second = {"x": step_graph(small, Placement(topo, tuple(gpus_on(topo, 2, 5, range(4, 8))))),
              "y": step_graph(model, Placement(topo, tuple(gpus_on(topo, 3, 7, range(8)))))}
    return first, second


def test_several_jobs_share_a_key_wherever_they_sit_and_whatever_they_are_called(topo, model):
    inner = AnalyticalModel(topo)
    first, second = two_jobs_two_ways(topo, model)
    assert graphs_key(inner, first, topo) == graphs_key(inner, second, topo)
    _, order_first, _ = graphs_key_material(inner, first, topo)
    _, order_second, _ = graphs_key_material(inner, second, topo)
    assert (order_first.index("a"), order_first.index("b")) == (order_second.index("y"), order_second.index("x"))


def test_model_name_and_topology_rack_count_do_not_enter_the_key(topo, model):
    inner = AnalyticalModel(topo)
    renamed = dataclasses.replace(model, name="other-name", source="elsewhere")
    p = placement_from_shape(topo, [[8, 8]])
    assert key(inner, model, p) == key(inner, renamed, p)
    bigger = topo.with_racks(16)
    assert key(inner, model, p) == key(AnalyticalModel(bigger), model, placement_from_shape(bigger, [[8, 8]]))


def test_durations_are_keyed_at_nine_significant_digits(topo, model):
    """Last-bit noise in a compute duration (another platform, another library version) keeps the key."""
    inner = AnalyticalModel(topo)
    p = placement_from_shape(topo, [[8], [8]])
    graph = ddp_step(model, p, 0.1)
    noisy = ddp_step(model, p, 0.1 * (1 + 1e-14))
    assert graph != noisy
    assert graphs_key(inner, {"j": graph}, topo) == graphs_key(inner, {"j": noisy}, topo)
    assert graphs_key(inner, {"j": graph}, topo) != graphs_key(inner, {"j": ddp_step(model, p, 0.1000001)}, topo)


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
        assert same_timeline(timing_of(AnalyticalModel(topo), step_graph(model, base)),
                             timing_of(AnalyticalModel(other), step_graph(model, p)))


# --------------------------------------------------------------------------- any change: another key


def test_every_shape_gets_its_own_key(topo, model):
    inner = AnalyticalModel(topo)
    shapes = [[[8]], [[4]], [[4, 4]], [[4], [4]], [[8, 8]], [[8], [8]], [[2, 2], [4]], [[4, 2], [2]],
              [[1] * 8], [[1] * 4, [1] * 4], [[6, 2]], [[5, 3]]]
    keys = {key(inner, model, placement_from_shape(topo, s)) for s in shapes}
    assert len(keys) == len(shapes)


def test_every_model_parameter_that_changes_the_graph_changes_the_key(topo, model):
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
    graphs = [step_graph(m, p) for m in variants]
    assert len(set(graphs)) == len(variants)
    keys = [key(inner, m, p) for m in variants]
    assert len(set(keys)) == len(variants)


def test_two_different_graphs_never_share_a_key(topo):
    """Same GPUs and bytes, other structure: other groups, kinds, dependencies, jobs, or GPUs shared."""
    inner = AnalyticalModel(topo)
    two_machines = placement_from_shape(topo, [[8], [8]])
    everyone = two_machines.gpus
    first, second = everyone[:8], everyone[8:]
    nbytes = 8_000_000

    def graph(*comms, compute=0.05):
        nodes = [Node(0, "compute", seconds=compute, group=everyone)]
        for kind, group, size, deps in comms:
            nodes.append(Node(len(nodes), kind, deps=deps, group=group, nbytes=size))
        return StepGraph(tuple(nodes))

    questions = {
        "one group of 16": {"j": graph(("all_reduce", everyone, 2 * nbytes, (0,)))},
        "two groups of 8, in parallel": {"j": graph(("all_reduce", first, nbytes, (0,)),
                                                    ("all_reduce", second, nbytes, (0,)))},
        "two groups of 8, one after the other": {"j": graph(("all_reduce", first, nbytes, (0,)),
                                                            ("all_reduce", second, nbytes, (1,)))},
        "one group of 16, twice": {"j": graph(("all_reduce", everyone, nbytes, (0,)),
                                              ("all_reduce", everyone, nbytes, (1,)))},
        "all-gather": {"j": graph(("all_gather", everyone, 2 * nbytes, (0,)))},
        "reduce-scatter": {"j": graph(("reduce_scatter", everyone, 2 * nbytes, (0,)))},
        "all-to-all": {"j": graph(("all_to_all", everyone, 2 * nbytes, (0,)))},
        "no dependency": {"j": graph(("all_reduce", everyone, 2 * nbytes, ()))},
        "other compute": {"j": graph(("all_reduce", everyone, 2 * nbytes, (0,)), compute=0.06)},
        "send across racks": {"j": graph(("send_recv", (first[0], second[0]), nbytes, (0,)))},
        "send inside a machine": {"j": graph(("send_recv", (first[0], first[1]), nbytes, (0,)))},
        # Two jobs at once, on their own machines or sharing the GPUs of one machine set.
        "two jobs apart": {"a": graph(("all_reduce", first, nbytes, (0,))),
                           "b": graph(("all_reduce", second, nbytes, (0,)))},
        "two jobs on the same GPUs": {"a": graph(("all_reduce", first, nbytes, (0,))),
                                      "b": graph(("all_reduce", first, nbytes, (0,)))},
    }
    keys = {name: graphs_key(inner, q, topo) for name, q in questions.items()}
    assert len(set(keys.values())) == len(questions), keys


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


def test_compute_durations_set_by_gpu_speeds_change_the_key(topo, model):
    hetero = dataclasses.replace(topo, rack_gpu_types=("A100", "H100"),
                                 gpu_types={"A100": GpuType("A100", 1.0), "H100": GpuType("H100", 2.0)})
    inner = AnalyticalModel(hetero)
    mixed = placement_from_shape(hetero, [[4], [4]], first_rack=0)  # racks 0, 1: A100 + H100
    p_a100 = Placement(hetero, tuple(gpus_on(hetero, 0, 0, range(4)) + gpus_on(hetero, 2, 0, range(4))))  # A100 only
    p_h100 = Placement(hetero, tuple(gpus_on(hetero, 1, 0, range(4)) + gpus_on(hetero, 3, 0, range(4))))  # H100 only
    assert mixed.canonical_shape == p_a100.canonical_shape == p_h100.canonical_shape
    compute = ComputeModel(hetero)
    # A synchronous step waits for its slowest GPU: the mixed placement computes as long as the A100 one,
    # so its step graph, relabelled, is the same question; the H100 one computes faster: another question.
    assert compute.step_seconds(model, mixed) == compute.step_seconds(model, p_a100) == 0.1
    assert compute.step_seconds(model, p_h100) == 0.05
    assert key(inner, model, mixed) == key(inner, model, p_a100) != key(inner, model, p_h100)
    # Same type names, another relative speed: another compute time, another key.
    faster = dataclasses.replace(hetero, gpu_types={"A100": GpuType("A100", 1.0), "H100": GpuType("H100", 3.0)})
    p_h100_faster = Placement(faster, p_h100.gpus)
    assert key(AnalyticalModel(faster), model, p_h100_faster) != key(inner, model, p_h100)
    # Only the compute durations differ between those graphs: they alone split the key.
    a100_graph, h100_graph = step_graph(model, p_a100), step_graph(model, p_h100)
    _, _, relabelled_a = graphs_key_material(inner, {"j": a100_graph}, hetero)
    _, _, relabelled_h = graphs_key_material(inner, {"j": h100_graph}, hetero)
    assert [(n.kind, n.deps, n.group, n.nbytes) for n in relabelled_a["j"].nodes] == \
           [(n.kind, n.deps, n.group, n.nbytes) for n in relabelled_h["j"].nodes]
    assert [n.seconds for n in relabelled_a["j"].nodes] != [n.seconds for n in relabelled_h["j"].nodes]
    # The answers differ indeed when communication is not hidden (short compute): the split is needed.
    short = dataclasses.replace(model, compute_seconds=0.002)
    perf = PerfModel(inner, compute)
    assert perf.estimate(short, p_a100).exposed_comm_seconds != perf.estimate(short, p_h100).exposed_comm_seconds


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


# --------------------------------------------------------------------------- the answer behind a key


def test_a_graph_answer_from_the_cache_is_the_inner_models_timing_bit_for_bit(topo, model, tmp_path):
    """Asked about graphs on any GPUs, the cache answers with what the inner model says of those very
    graphs: every node's duration and end, the communication seconds and the step, to the last bit;
    on a miss, on a hit from memory and on a hit read back from the file."""
    inner = AnalyticalModel(topo, channels=2)
    placements = [Placement(topo, tuple(gpus_on(topo, 3, 5, range(2, 8)) + gpus_on(topo, 1, 2, range(3)))),
                  Placement(topo, tuple(gpus_on(topo, 0, 1, range(3)) + gpus_on(topo, 2, 7, range(6)))),
                  placement_from_shape(topo, [[8, 8], [8, 4]])]
    path = tmp_path / "c.sqlite"
    cached = Cached(AnalyticalModel(topo, channels=2), LatencyStore(path))
    for p in placements:
        graph = step_graph(model, p)
        want = timing_of(inner, graph)
        assert want.comm_seconds > 0 and want.step_seconds > 0
        for reader in (cached, cached, Cached(AnalyticalModel(topo, channels=2), LatencyStore(path), memo=False)):
            got = reader.time({"job": graph})["job"]
            assert same_timeline(got, want)
            assert got.result.backend == "analytical"
    assert cached.session.misses == 2  # the first two placements have one shape


def test_several_jobs_get_their_own_answers_from_a_shared_entry(topo, model, tmp_path):
    """A question of two jobs is stored once under graphs in key order; a later question of the same
    two steps under other names, on other GPUs, listed the other way round, gets each its own timing."""
    inner = AnalyticalModel(topo)
    first, second = two_jobs_two_ways(topo, model)
    cached = Cached(AnalyticalModel(topo), LatencyStore(tmp_path / "c.sqlite"))
    for question in (first, second):
        answers = cached.time(question)
        assert set(answers) == set(question)
        for job, graph in question.items():
            assert same_timeline(answers[job], timing_of(inner, graph)), job
    assert (cached.session.misses, cached.session.hits) == (1, 1)
    assert timing_of(inner, first["a"]).step_seconds != timing_of(inner, first["b"]).step_seconds


def test_a_mapping_composed_from_encoded_parts_has_the_text_json_gives_it():
    from artist.jsonkey import canonical_json, encoded_mapping

    value = {"z": [1, 2.5, "é"], "graphs": [["compute", [0], 1.0, [3, 4], 0]], "a": {"y": None, "b": True}}
    parts = {"graphs": '[["compute",[0],1.0,[3,4],0]]'}
    expected = '{"a":{"b":true,"y":null},"graphs":[["compute",[0],1.0,[3,4],0]],"z":[1,2.5,"\\u00e9"]}'
    assert canonical_json(encoded_mapping(value, parts)) == expected == canonical_json(dict(value))
