"""Profiles: YAML round trip, id, the Calibrated wrapper on any FabricModel, and the shipped profile."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from artist.calibration import CalibrationProfile, TierCorrection, load_profile
from artist.calibration.correction import KINDS, SizeRegime, SizeRegimes
from artist.errors import InputError
from artist.network.analytical import AnalyticalModel
from artist.network.base import CommResult, time_node_by_node
from artist.network.calibrated import Calibrated
from artist.parallel.ddp import ddp_step
from artist.parallel.graph import Node, StepGraph
from artist.perf.model import as_perf_model
from artist.placement import Placement, placement_from_shape
from artist.topology import load_topology
from artist.workload import ModelProfile

REPO = Path(__file__).resolve().parent.parent
MIB = 1 << 20


@pytest.fixture(scope="module")
def h100():
    return load_topology(REPO / "topologies" / "h100-dgx.yaml")


def _step(model, placement, compute_seconds=1.0):
    """The DDP step graph of `model` on `placement` (compute_seconds only moves the bucket ready times)."""
    return ddp_step(model, placement, compute_seconds)


def _timing(fabric, model, placement, compute_seconds=1.0):
    """(the step's GraphTiming, the graph) of `model` alone on `placement`."""
    graph = _step(model, placement, compute_seconds)
    return fabric.time({"job": graph})["job"], graph


def _bucket_seconds(timing, graph):
    """The all-reduce nodes' durations, in bucket order."""
    return tuple(timing.node_seconds[n.id] for n in graph.nodes if n.kind == "all_reduce")


class FixedBuckets:
    """A FabricModel that is not one of ours, without collective_seconds: every communication node
    takes a fixed time."""

    name = "fixed"

    def __init__(self, topology, seconds):
        self.topology, self.seconds = topology, seconds

    def identity(self):
        return {"backend": "fixed", "seconds": self.seconds}

    def _node_seconds(self, node):
        return self.seconds

    def time(self, graphs):
        return {job: time_node_by_node(g, self._node_seconds, CommResult(self.name)) for job, g in graphs.items()}


class Affine(FixedBuckets):
    """A FabricModel that is not one of ours: a collective of n bytes takes base_s + n x per_byte_s on any
    placement, so the correction's t0 (1 byte per rank) is base_s + ranks x per_byte_s, by hand."""

    name = "affine"

    def __init__(self, topology, base_s, per_byte_s):
        self.topology, self.base_s, self.per_byte_s = topology, base_s, per_byte_s
        self.calls = []

    def identity(self):
        return {"backend": "affine", "base_s": self.base_s, "per_byte_s": self.per_byte_s}

    def collective_seconds(self, group, nbytes, kind="all_reduce"):
        self.calls.append(nbytes)
        return self.base_s + nbytes * self.per_byte_s

    def _node_seconds(self, node):
        return self.base_s + node.nbytes * self.per_byte_s


PER_BYTE = 0.4 / (25 * MIB)  # a 25 MiB bucket takes 0.4 s + base_s


def _t0(inner, ranks):
    return inner.base_s + ranks * inner.per_byte_s


def _profile(topology, backend, machine=TierCorrection(2.0, 1e-6), rack=TierCorrection(0.5, 1e-5),
             kind_sources=None):
    """machine / rack: a correction (or SizeRegimes) of all_reduce, a {kind: correction} mapping,
    or None (the tier stays uncalibrated); the network tier reuses the rack's."""
    def as_regimes(c):
        return c if isinstance(c, SizeRegimes) else SizeRegimes.single(c)

    def kinds(c):
        return {k: as_regimes(v) for k, v in c.items()} if isinstance(c, dict) else {"all_reduce": as_regimes(c)}

    corrections = {t: kinds(c) for t, c in (("machine", machine), ("rack", rack)) if c is not None}
    return CalibrationProfile(name="t", topology_name=topology.name, link_parameters=topology.link_parameters(),
                              backend=backend, corrections=corrections, kind_sources=kind_sources or {},
                              inherited={"network": "rack"} if "rack" in corrections else {})


def _model():
    # Two 25 MiB tensors -> two DDP buckets (cap 25 MiB); compute 1 s, backward from 1/3 of it.
    return ModelProfile("two-buckets", (25 * MIB, 25 * MIB), 1.0, "H100")


def test_calibrated_recomputes_exposed_time_by_hand(h100):
    inner = Affine(h100, 1e-3, PER_BYTE)
    cal = Calibrated(inner, _profile(h100, inner.identity()))
    model = _model()
    (b1, r1), (b2, r2) = model.buckets
    assert (r1, r2) == (pytest.approx(2 / 3), 1.0)
    # [[4,4]]: rack tier; t = 1 ms + 0.4 s, t0 = 1 ms + 8 bytes;
    # t' = t0 + 10 us (per call) + (t - t0) / 0.5 ~ 0.80101 s per bucket.
    p = placement_from_shape(h100, [[4, 4]])
    perf = as_perf_model(cal, h100)
    step = perf.estimate(model, p)
    graph, compute = perf.graph(model, p)
    timing = cal.time({"job": graph})["job"]
    t0 = _t0(inner, 8)
    t = t0 + 1e-5 + (1e-3 + 0.4 - t0) / 0.5
    assert _bucket_seconds(timing, graph) == pytest.approx((t, t))
    # bucket 1 runs 2/3 .. 2/3 + t, bucket 2 follows at once; compute ends at 1 (H100 speed 2 -> 0.5 s)
    assert compute == 1.0 / 2.0
    end = max(max(0.0, r1 * compute) + t, r2 * compute) + t
    assert step.exposed_comm_seconds == pytest.approx(end - compute)
    assert step.step_seconds == pytest.approx(end) and timing.step_seconds == pytest.approx(end)
    assert step.comm.calibrated and step.comm_seconds == pytest.approx(2 * t)
    assert step.comm.details["calibration_tier"] == "rack"
    # The inner model's own timeline is not the calibrated one: the correction recomputed it.
    raw = inner.time({"job": graph})["job"]
    assert not raw.result.calibrated and raw.step_seconds < timing.step_seconds


def test_a_kind_the_profile_lacks_passes_uncorrected_and_is_named(h100):
    # A hand-made profile that corrects all_reduce only, with no kind carried to the others.
    inner = Affine(h100, 1e-3, PER_BYTE)
    cal = Calibrated(inner, _profile(h100, inner.identity()))
    assert cal.profile.correction("rack", "all_gather") is None
    group = placement_from_shape(h100, [[4, 4]]).gpus
    graph = StepGraph((Node(0, "compute", seconds=0.1, group=group),
                       Node(1, "all_gather", deps=(0,), group=group, nbytes=25 * MIB),
                       Node(2, "all_reduce", deps=(1,), group=group, nbytes=25 * MIB)))
    timing = cal.time({"job": graph})["job"]
    raw = 1e-3 + 25 * MIB * PER_BYTE
    t0 = _t0(inner, 8)
    t = t0 + 1e-5 + (raw - t0) / 0.5
    assert timing.node_seconds == pytest.approx((0.1, raw, t), rel=1e-12)
    assert timing.step_seconds == pytest.approx(0.1 + raw + t, rel=1e-12)
    assert timing.result.details["uncalibrated_kinds"] == ["all_gather"]
    p = placement_from_shape(h100, [[4, 4]])
    assert cal.collective_seconds(p, 25 * MIB, "all_gather") == raw  # corrects all_reduce only


# The rack tier as a fit of the 2 x 1 xxrjun log leaves it: all_reduce and send_recv measured,
# the other kinds carried from all_reduce. The hop latency is set by hand (as a fit on two node
# counts would) so that each kind's hop count shows.
RACK_KINDS = {"all_reduce": TierCorrection(0.5, 1e-5, 2e-6), "send_recv": TierCorrection(0.8, 3e-5)}
CARRIED = {"rack": {"all_gather": "all_reduce", "reduce_scatter": "all_reduce", "all_to_all": "all_reduce"}}


def test_a_kind_without_a_log_reuses_the_tiers_fitted_kind(h100, tmp_path):
    inner = Affine(h100, 1e-3, PER_BYTE)
    profile = _profile(h100, inner.identity(), rack=RACK_KINDS, kind_sources=CARRIED)
    cal = Calibrated(inner, profile)
    p = placement_from_shape(h100, [[4, 4, 4, 4]])  # rack tier, 4 machines
    pair = Placement(h100, (p.gpus[0], p.gpus[4]))  # a send/recv between the first two machines
    assert pair.tier == "rack" and pair.gpus[1] == 8  # precondition
    raw, t0, t0_pair = 1e-3 + 25 * MIB * PER_BYTE, _t0(inner, 16), _t0(inner, 2)
    # By hand: all_reduce 2(m-1) = 6 NIC crossings, all_gather / reduce_scatter m-1 = 3, all_to_all 1
    # (all with all_reduce's terms); send_recv its own terms.
    by_hand = {"all_reduce": t0 + 1e-5 + 6 * 2e-6 + (raw - t0) / 0.5,
               "all_gather": t0 + 1e-5 + 3 * 2e-6 + (raw - t0) / 0.5,
               "reduce_scatter": t0 + 1e-5 + 3 * 2e-6 + (raw - t0) / 0.5,
               "all_to_all": t0 + 1e-5 + 1 * 2e-6 + (raw - t0) / 0.5,
               "send_recv": t0_pair + 3e-5 + (raw - t0_pair) / 0.8}
    for kind, expected in by_hand.items():
        group = pair if kind == "send_recv" else p
        assert cal.collective_seconds(group, 25 * MIB, kind) == pytest.approx(expected, rel=1e-12), kind
        assert profile.source_of("rack", kind) == ("rack", "send_recv" if kind == "send_recv" else "all_reduce")
        assert profile.source_of("network", kind) == profile.source_of("rack", kind)  # the other NIC tier
    # In a step graph every kind is corrected; none is left.
    nodes = [Node(0, "compute", seconds=0.1, group=p.gpus)]
    for i, kind in enumerate(KINDS, start=1):
        group = pair.gpus if kind == "send_recv" else p.gpus
        nodes.append(Node(i, kind, deps=(i - 1,), group=group, nbytes=25 * MIB))
    timing = cal.time({"job": StepGraph(tuple(nodes))})["job"]
    assert timing.node_seconds == pytest.approx((0.1, *(by_hand[k] for k in KINDS)), rel=1e-12)
    assert "uncalibrated_kinds" not in timing.result.details
    # The YAML says which kind a carried one reuses, and reads it back.
    profile.save(tmp_path / "p.yaml")
    loaded = load_profile(tmp_path / "p.yaml")
    assert {t: k for t, k in loaded.kind_sources.items() if k} == CARRIED  # (a tier carrying none may read as {})
    assert loaded.corrections == profile.corrections and loaded.id == profile.id


def test_the_machine_tier_without_a_log_stays_uncalibrated(h100, tmp_path):
    # A profile fitted on NIC logs only: an NVLink correction is never guessed from a NIC one.
    inner = Affine(h100, 1e-3, PER_BYTE)
    profile = _profile(h100, inner.identity(), machine=None, rack=RACK_KINDS, kind_sources=CARRIED)
    assert all(profile.correction("machine", k) is None for k in KINDS)
    assert profile.uncalibrated() == [("machine", k) for k in KINDS]
    cal = Calibrated(inner, profile)
    raw = 1e-3 + 25 * MIB * PER_BYTE
    one_machine = placement_from_shape(h100, [[8]])
    assert all(cal.collective_seconds(one_machine, 25 * MIB, k) == raw for k in KINDS)
    timing, graph = _timing(cal, _model(), one_machine)
    assert _bucket_seconds(timing, graph) == (raw, raw)
    assert timing.result.details["uncalibrated_kinds"] == ["all_reduce"]
    path = tmp_path / "p.yaml"
    profile.save(path)
    data = yaml.safe_load(path.read_text())
    assert set(data["tiers"]["machine"]) == {"uncalibrated"} and data["tiers"]["network"]["same_as"] == "rack"
    assert data["uncalibrated"] == [f"machine {k}" for k in KINDS]
    assert load_profile(path).id == profile.id
    # Nor may a file make the machine tier borrow a NIC tier's corrections.
    data["tiers"]["machine"] = {"same_as": "rack"}
    del data["id"]
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(InputError, match=r"field 'tiers.machine.same_as': must name the other NIC tier"):
        load_profile(path)


def test_a_fit_on_a_two_node_log_leaves_the_machine_tier_uncalibrated(h100):
    from artist.calibration.build import collect_points, fit_profile

    model = AnalyticalModel(h100, channels=8)
    logs = collect_points(model, h100, [REPO / "calibration" / "data" / "xxrjun_2node_2xH100_1gpn_smoke.txt"])
    profile, _ = fit_profile("two-nodes", h100, model.identity(), logs)
    assert set(profile.corrections) == {"rack"} and profile.inherited == {"network": "rack"}
    assert sorted(profile.corrections["rack"]) == ["all_reduce", "send_recv"]  # the log's two collectives
    assert profile.kind_sources == CARRIED
    assert profile.uncalibrated() == [("machine", k) for k in KINDS]


def test_a_kind_carried_from_an_unfitted_kind_is_refused(h100, tmp_path):
    path = tmp_path / "p.yaml"
    _profile(h100, {"backend": "fixed"}, rack=RACK_KINDS, kind_sources=CARRIED).save(path)
    data = yaml.safe_load(path.read_text())
    data["tiers"]["rack"]["kinds"]["all_gather"]["same_as"] = "reduce_scatter"  # itself carried, not fitted
    del data["id"]
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(InputError, match=r"field 'tiers.rack.kinds.all_gather.same_as': must name a fitted "
                                         r"collective kind of this tier \(all_reduce, send_recv\)"):
        load_profile(path)


def test_machine_and_network_tiers_use_their_corrections(h100):
    inner = Affine(h100, 1e-3, PER_BYTE)
    cal = Calibrated(inner, _profile(h100, inner.identity()))
    t = 1e-3 + 0.4  # a 25 MiB bucket
    m, graph = _timing(cal, _model(), placement_from_shape(h100, [[8]]))
    assert m.result.details["calibration_tier"] == "machine"
    assert _bucket_seconds(m, graph)[0] == pytest.approx(_t0(inner, 8) + 1e-6 + (t - _t0(inner, 8)) / 2.0,
                                                         rel=1e-12)
    assert h100.racks == 2
    n, graph = _timing(cal, _model(), placement_from_shape(h100, [[8], [8]]))
    assert n.result.details["calibration_tier"] == "network"
    t0 = _t0(inner, 16)
    assert _bucket_seconds(n, graph)[0] == pytest.approx(t0 + 1e-5 + (t - t0) / 0.5, rel=1e-12)  # reuses rack


def test_a_backend_without_collective_seconds_is_refused(h100):
    inner = FixedBuckets(h100, 0.4)
    with pytest.raises(ValueError, match="collective_seconds"):
        Calibrated(inner, _profile(h100, inner.identity()))


def test_t0_is_asked_once_per_canonical_shape(h100):
    inner = Affine(h100, 1e-3, PER_BYTE)
    cal = Calibrated(inner, _profile(h100, inner.identity()))
    # Two placements of the same shape [[4,4]] on different GPUs, several sizes: one probe of 8 bytes.
    first = placement_from_shape(h100, [[4, 4]])
    second = placement_from_shape(h100, [[4, 4]], first_rack=1)
    assert second.gpus != first.gpus and second.canonical_shape == first.canonical_shape
    for p in (first, second):
        for nbytes in (MIB, 64 * MIB):
            cal.collective_seconds(p, nbytes)
        cal.time({"job": _step(_model(), p)})  # a step's all-reduce nodes on either placement: no new probe
    assert inner.calls.count(8) == 1


def test_analytical_collective_seconds_are_corrected(h100):
    inner = AnalyticalModel(h100)
    cal = Calibrated(inner, _profile(h100, inner.identity()))
    p = placement_from_shape(h100, [[1, 1]])
    t, t0 = inner.collective_seconds(p, 64 * MIB), inner.collective_seconds(p, 2)  # t0: 1 byte per rank
    assert 0 < t0 < t / 10
    assert cal.collective_seconds(p, 64 * MIB) == pytest.approx(t0 + 1e-5 + (t - t0) / 0.5, rel=1e-12)


def test_identity_carries_the_profile_id(h100):
    inner = AnalyticalModel(h100)
    a = Calibrated(inner, _profile(h100, inner.identity()))
    b = Calibrated(inner, _profile(h100, inner.identity(), rack=TierCorrection(0.6, 1e-5)))
    assert a.identity() != b.identity() != inner.identity()
    assert a.identity()["calibration_profile"] == a.profile.id


def test_wrong_backend_or_topology_is_refused(h100, tmp_path):
    inner = AnalyticalModel(h100)
    with pytest.raises(ValueError, match="fitted for backend"):
        Calibrated(inner, _profile(h100, {"backend": "analytical", "channels": 8}))
    dally = load_topology(REPO / "topologies" / "dally-3tier.yaml")
    cal = Calibrated(AnalyticalModel(dally), _profile(h100, AnalyticalModel(dally).identity()))
    with pytest.raises(ValueError, match="machine.bps"):
        cal.time({"job": _step(_model(), placement_from_shape(dally, [[8]]))})
    with pytest.raises(ValueError, match="machine.bps"):
        cal.collective_seconds(placement_from_shape(dally, [[8]]), 64 * MIB)


def test_yaml_round_trip_keeps_id_and_corrections(h100, tmp_path):
    inner = AnalyticalModel(h100)
    profile = _profile(h100, inner.identity())
    path = tmp_path / "p.yaml"
    profile.save(path)
    loaded = load_profile(path)
    assert loaded.id == profile.id
    assert loaded.corrections == profile.corrections and loaded.inherited == {"network": "rack"}
    assert loaded.correction("network") == profile.correction("rack") == SizeRegimes.single(TierCorrection(0.5, 1e-5))
    Calibrated(inner, loaded)  # identity survives YAML


# Two regimes on the rack tier: NCCL switches at 16 MiB (as the gcp A3 Mega log does).
SWITCH = 16 * MIB
TWO_REGIMES = SizeRegimes((SizeRegime(MIB, TierCorrection(0.25, 3e-4)), SizeRegime(SWITCH, TierCorrection(2.0, 4e-4))))


class PerSize(FixedBuckets):
    """Every collective takes 1 ms whatever its size (t0 = 0 at the 1-byte-per-rank probe, which is
    below any bucket), so the corrected time shows the regime alone."""

    def collective_seconds(self, group, nbytes, kind="all_reduce"):
        return 0.0 if nbytes <= group.size else self.seconds


# By hand, t0 = 0: the first regime 1 ms / 0.25 + 0.3 ms, the second 1 ms / 2 + 0.4 ms; below the
# first measured size (1 MiB) the first regime's factor only: 1 ms / 0.25.
LOW, HIGH, BELOW = 1e-3 / 0.25 + 3e-4, 1e-3 / 2.0 + 4e-4, 1e-3 / 0.25


def test_calibrated_picks_each_buckets_regime_by_its_size(h100):
    inner = PerSize(h100, 1e-3)
    cal = Calibrated(inner, _profile(h100, inner.identity(), rack=TWO_REGIMES))
    # Buckets of 8 MiB and 25 MiB (cap 25 MiB): the first in the 1-16 MiB regime, the second above.
    model = ModelProfile("mixed", (25 * MIB, 8 * MIB), 1.0, "H100")
    assert sorted(b for b, _ in model.buckets) == [8 * MIB, 25 * MIB]
    p = placement_from_shape(h100, [[4, 4]])  # rack tier
    res, graph = _timing(cal, model, p)
    assert [n.nbytes for n in graph.nodes if n.kind == "all_reduce"] == [b for b, _ in model.buckets]
    assert _bucket_seconds(res, graph) == pytest.approx(tuple(LOW if b < SWITCH else HIGH for b, _ in model.buckets),
                                                         rel=1e-12)
    assert res.comm_seconds == pytest.approx(LOW + HIGH)


@pytest.mark.parametrize("nbytes, expected", [
    (SWITCH - 1, LOW), (SWITCH, HIGH), (SWITCH + 1, HIGH),  # the boundary belongs to the upper regime
    (MIB, LOW),  # the first measured size: the first regime, latency included
    (1024, BELOW), (MIB - 1, BELOW),  # below the first measured size: the first regime's factor, no latency
    (64 << 30, HIGH),  # beyond the measured range: the last regime (nearest)
])
def test_regime_boundary_and_sizes_outside_the_measured_range(h100, nbytes, expected):
    inner = PerSize(h100, 1e-3)
    cal = Calibrated(inner, _profile(h100, inner.identity(), rack=TWO_REGIMES))
    assert cal.collective_seconds(placement_from_shape(h100, [[4, 4]]), nbytes) == pytest.approx(expected, rel=1e-12)
    # The machine tier has one regime from 0 B: every size gets it, latency included.
    assert cal.collective_seconds(placement_from_shape(h100, [[8]]), nbytes) == pytest.approx(1e-3 / 2.0 + 1e-6)


def test_regimes_round_trip_and_enter_the_id(h100, tmp_path):
    inner = PerSize(h100, 1e-3)
    profile = _profile(h100, inner.identity(), rack=TWO_REGIMES)
    path = tmp_path / "p.yaml"
    profile.save(path)
    data = yaml.safe_load(path.read_text())
    assert data["profile_format"] == 4
    assert ([(r["from_bytes"], r["to_bytes"]) for r in data["tiers"]["rack"]["kinds"]["all_reduce"]["regimes"]]
            == [(MIB, SWITCH), (SWITCH, None)])
    loaded = load_profile(path)
    assert loaded.id == profile.id and loaded.correction("rack") == TWO_REGIMES
    moved = SizeRegimes((TWO_REGIMES.regimes[0], SizeRegime(32 * MIB, TWO_REGIMES.regimes[1].correction)))
    assert _profile(h100, inner.identity(), rack=moved).id != profile.id  # the boundary is part of the id
    # So is the first regime's from_bytes: below it only the bandwidth factor applies, so moving it
    # changes answers (512 KiB: 1 ms / 0.25 with it at 1 MiB, + 0.3 ms with it at 0).
    first = SizeRegimes((SizeRegime(0, TWO_REGIMES.regimes[0].correction), TWO_REGIMES.regimes[1]))
    from_zero = _profile(h100, inner.identity(), rack=first)
    p = placement_from_shape(h100, [[4, 4]])
    assert Calibrated(inner, from_zero).collective_seconds(p, 512 << 10) == pytest.approx(LOW, rel=1e-12)
    assert Calibrated(inner, profile).collective_seconds(p, 512 << 10) == pytest.approx(BELOW, rel=1e-12)
    assert from_zero.id != profile.id


def test_regimes_that_do_not_chain_are_refused(h100, tmp_path):
    path = tmp_path / "p.yaml"
    _profile(h100, {"backend": "fixed"}, rack=TWO_REGIMES).save(path)
    data = yaml.safe_load(path.read_text())
    data["tiers"]["rack"]["kinds"]["all_reduce"]["regimes"][0]["to_bytes"] = 8 * MIB
    del data["id"]
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(InputError, match=r"field 'tiers.rack.kinds.all_reduce.regimes\[0\].to_bytes'.*next regime's "
                                         r"from_bytes"):
        load_profile(path)


def _format3_mapping(h100):
    """A profile as format 3 wrote it (one regime list per tier, all-reduce only, a latency per hop)."""
    return {"profile_format": 3, "name": "old", "id": "0123456789abcdef",
            "topology": {"name": h100.name, "path": "topologies/h100-dgx.yaml",
                         "link_parameters": h100.link_parameters()},
            "backend": {"backend": "analytical", "algorithm": "ring", "channels": 8},
            "tiers": {"machine": {"regimes": [{"from_bytes": 33554432, "to_bytes": None, "bandwidth_factor": 1.05,
                                               "hop_latency_s": 3e-6}]},
                      "rack": {"regimes": [{"from_bytes": 33554432, "to_bytes": None, "bandwidth_factor": 0.93,
                                            "hop_latency_s": 4.4e-5}]},
                      "network": {"same_as": "rack"}}}


@pytest.mark.parametrize("old", [1, 2, 3])
def test_old_formats_are_refused_with_a_re_fit_message(h100, tmp_path, old):
    # Formats 1 and 2 divided the whole backend time by the factor, format 3 charged its latency per
    # hop: the same numbers mean another correction, so the file is refused, not re-read.
    data = _format3_mapping(h100)
    data["profile_format"] = old
    path = tmp_path / "old.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(InputError, match=rf"old.yaml: field 'profile_format': profile format {old} is no longer "
                                         rf"read.*re-fit with `artist calibrate`") as err:
        load_profile(path)
    assert "\n" not in str(err.value)
    if old == 3:
        assert "once per hop" in str(err.value)


def test_unknown_format_is_refused(h100, tmp_path):
    data = _profile(h100, {"backend": "fixed"}).to_mapping()
    data["profile_format"] = 5
    path = tmp_path / "new.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(InputError, match="unsupported profile format 5"):
        load_profile(path)


def test_the_id_names_the_correction_formula(h100):
    # The id hashed by hand: format 4, every tier's every kind (None where uncalibrated), the link
    # parameters and the backend. The same numbers under format 3 had another meaning: another id.
    import hashlib
    import json

    profile = _profile(h100, {"backend": "fixed"})

    def regimes(c):
        return [{"from_bytes": 0, "bandwidth_factor": c.bandwidth_factor, "latency_s": c.latency_s,
                 "hop_latency_s": c.hop_latency_s}]

    machine, rack = TierCorrection(2.0, 1e-6), TierCorrection(0.5, 1e-5)
    tiers = {t: {k: (regimes(c) if k == "all_reduce" else None) for k in KINDS}
             for t, c in (("machine", machine), ("rack", rack), ("network", rack))}
    payload = {"format": 4, "tiers": tiers, "link_parameters": h100.link_parameters(), "backend": {"backend": "fixed"}}
    assert profile.id == hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]
    payload["format"] = 3
    assert profile.id != hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def test_edited_profile_is_detected(h100, tmp_path):
    path = tmp_path / "p.yaml"
    _profile(h100, {"backend": "analytical"}).save(path)
    data = yaml.safe_load(path.read_text())
    data["tiers"]["rack"]["kinds"]["all_reduce"]["regimes"][0]["bandwidth_factor"] = 0.7
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(InputError, match="field 'id'"):
        load_profile(path)


@pytest.mark.parametrize("field, value, where", [
    ("bandwidth_factor", -1, "bandwidth_factor"),
    ("hop_latency_s", -1e-6, "hop_latency_s"),
])
def test_profile_errors_name_the_field(tmp_path, field, value, where):
    regime = {"from_bytes": 0, "to_bytes": None, "bandwidth_factor": 1.0, "latency_s": 0.0, "hop_latency_s": 0.0,
              field: value}
    data = {"profile_format": 4, "name": "x", "topology": {"name": "t", "link_parameters": {"a": 1}},
            "backend": {"backend": "analytical"},
            "tiers": {"machine": {"kinds": {"all_reduce": {"regimes": [regime]}}},
                      "rack": {"uncalibrated": "no log"}, "network": {"uncalibrated": "no log"}}}
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(InputError, match=rf"field 'tiers.machine.kinds.all_reduce.regimes\[0\].{where}'"):
        load_profile(path)


class IdentityOf:
    """A stand-in for the backend a shipped profile was fitted with: it reports that backend's
    identity and answers every collective with a known time, so the correction can be checked by
    hand without running the backend (ns-3 included)."""

    def __init__(self, identity, topology, base_s=1e-4, per_byte_s=1e-11):
        self._identity, self.base_s, self.per_byte_s, self.name = identity, base_s, per_byte_s, identity["backend"]
        self.topology = topology

    def identity(self):
        return dict(self._identity)

    def collective_seconds(self, group, nbytes, kind="all_reduce"):
        return self.base_s + nbytes * self.per_byte_s

    def time(self, graphs):
        def seconds_of(node):
            return self.base_s + node.nbytes * self.per_byte_s

        return {job: time_node_by_node(g, seconds_of, CommResult(self.name)) for job, g in graphs.items()}


SHIPPED = sorted((REPO / "calibration" / "profiles").glob("*.yaml"))


def test_the_h100_profiles_are_shipped():
    assert {"h100-analytical.yaml", "h100-ns3.yaml"} <= {p.name for p in SHIPPED}


# Hops of each kind by hand (correction.latency_hops: NCCL's step counts), and ranks, per test shape.
SHAPES = (([[8]], "machine", 8, {"all_reduce": 14, "all_gather": 7, "reduce_scatter": 7, "all_to_all": 1,
                                 "send_recv": 1}),
          ([[8, 8]], "rack", 16, {"all_reduce": 2, "all_gather": 1, "reduce_scatter": 1, "all_to_all": 1,
                                  "send_recv": 1}),
          ([[4, 4, 4, 4]], "rack", 16, {"all_reduce": 6, "all_gather": 3, "reduce_scatter": 3, "all_to_all": 1,
                                        "send_recv": 1}),
          ([[8], [8]], "network", 16, {"all_reduce": 2, "all_gather": 1, "reduce_scatter": 1, "all_to_all": 1,
                                       "send_recv": 1}))


def _regimes_in_yaml(raw, tier, kind):
    """The regime list a tier's kind uses, read from the YAML as written (same_as followed), or None."""
    entry = raw[tier]
    if "same_as" in entry:
        entry = raw[entry["same_as"]]
    if "uncalibrated" in entry or kind not in entry["kinds"]:
        return None
    one = entry["kinds"][kind]
    return entry["kinds"][one["same_as"]]["regimes"] if "same_as" in one else one["regimes"]


def _by_hand(regimes, nbytes, ranks, hops):
    """IdentityOf's time corrected as the YAML's correction text says."""
    t, t0 = 1e-4 + nbytes * 1e-11, 1e-4 + ranks * 1e-11
    if regimes is None:
        return t
    if nbytes < regimes[0]["from_bytes"]:
        return t0 + (t - t0) / regimes[0]["bandwidth_factor"]
    (r,) = [r for r in regimes if r["from_bytes"] <= nbytes and (r["to_bytes"] is None or nbytes < r["to_bytes"])]
    return max(0.0, t0 + r["latency_s"] + hops * r["hop_latency_s"]) + (t - t0) / r["bandwidth_factor"]


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_profile_loads_and_is_applied_as_fitted(path):
    profile = load_profile(path)
    topology = load_topology(REPO / profile.topology_path)
    profile.check_topology(topology)
    inner = IdentityOf(profile.backend, topology)  # t = 100 us + S / 100 GB/s
    cal = Calibrated(inner, profile)
    assert cal.identity()["calibration_profile"] == profile.id and cal.identity()["inner"] == profile.backend
    # Hand-applied correction: max(0, t0 + latency_s + hops x hop_latency_s) + (t - t0) / f, t0 = the
    # backend's time at 1 byte per rank, with the terms of the regime whose [from_bytes, to_bytes) holds
    # the size (as written in the YAML); below the first regime t0 + (t - t0) / f of the first regime.
    raw = yaml.safe_load(path.read_text())["tiers"]
    wide = topology if topology.racks >= 2 else topology.with_racks(2)  # the rack count is no link parameter
    for shape, tier, ranks, hops in SHAPES:
        group = placement_from_shape(wide, shape)
        assert group.tier == tier  # precondition
        pair = Placement(wide, tuple(group.ranks_in_ring_order()[:1] + group.ranks_in_ring_order()[-1:]))
        for kind in KINDS:
            regimes = _regimes_in_yaml(raw, tier, kind)
            assert (regimes is None) == (profile.correction(tier, kind) is None), (tier, kind)
            for nbytes in (64 << 10, MIB, 8 * MIB, 25 * MIB, 64 * MIB, 1 << 30):
                if kind == "send_recv":  # a pair of GPUs in the shape's tier
                    expected = _by_hand(regimes, nbytes, 2, 1)
                    got = cal.collective_seconds(pair, nbytes, kind)
                else:
                    expected = _by_hand(regimes, nbytes, ranks, hops[kind])
                    got = cal.collective_seconds(group, nbytes, kind)
                assert got == pytest.approx(expected, rel=1e-12), (tier, kind, nbytes)
        if tier == "network":
            continue  # the step graph below runs on the topology as shipped
        expected = _by_hand(_regimes_in_yaml(raw, tier, "all_reduce"), 25 * MIB, ranks, hops["all_reduce"])
        res, graph = _timing(cal, _model(), placement_from_shape(topology, shape))  # two 25 MiB buckets
        assert res.result.calibrated
        assert res.result.details["calibration_tier"] == ("" if profile.correction(tier) is None else tier)
        assert _bucket_seconds(res, graph) == pytest.approx((expected, expected), rel=1e-12)
    # Every fitted kind covered each of its regimes with held-out sizes when it was fitted.
    for tier, stats in profile.fit["tiers"].items():
        for kind, kstats in stats.get("kinds", {}).items():
            if kind not in profile.corrections.get(tier, {}):
                assert "same_as" in raw[tier]["kinds"][kind], (path.name, tier, kind)
                continue
            assert len(kstats["regimes"]) == len(profile.corrections[tier][kind].regimes)
            for regime in kstats["regimes"]:
                assert regime["fit_points"] >= 2 and regime["held_out_points"] >= 1, (path.name, tier, kind, regime)
    # The cache key of a calibrated answer carries the profile id (cache.key_material_parts).
    from artist.network.cache import collective_key_material

    material = collective_key_material(cal, placement_from_shape(topology, [[8]]), 64 * MIB)
    assert profile.id in repr(material)


H100_FIT = {"xxrjun_1node_8xH100_allcoll.txt", "xxrjun_2node_2xH100_1gpn_smoke.txt"}
H100_HOLDOUT = "xxrjun_10node_10xH100_1gpn_allcoll.txt"


# Sizes >= 1 MiB of the 10 x 1 log each hold-out row covers: 32 MiB - 16 GiB, 10 sizes; the ns-3 fit
# simulates up to 2 GiB only (calibration/refit.py --max-bytes): 32 MiB - 2 GiB, 7 sizes.
@pytest.mark.parametrize("name, holdout_sizes", [("h100-analytical", 10), ("h100-ns3", 7)])
def test_h100_profiles_apply_to_both_h100_topologies(h100, name, holdout_sizes):
    profile = load_profile(REPO / "calibration" / "profiles" / f"{name}.yaml")
    profile.check_topology(h100)
    profile.check_topology(load_topology(REPO / "topologies" / "dgx-h100.yaml"))
    # NCCL-matching settings: one ring per NIC (8 per DGX H100), fitted on the 1 x 8 and 2 x 1 xxrjun
    # logs and checked on the 10 x 1 one (issue 13).
    assert profile.backend["channels"] == 8 and profile.backend["algorithm"] == "ring"
    assert {log["file"] for log in profile.logs if log["role"] == "fit"} == H100_FIT
    assert [log["file"] for log in profile.logs if log["role"] == "holdout"] == [H100_HOLDOUT]
    # The 1 x 8 log holds all five collectives (machine tier); the 2 x 1 log all_reduce and sendrecv
    # (rack tier), whose network terms carry to the rack's other kinds; the network tier reuses the rack's.
    assert set(profile.corrections) == {"machine", "rack"} and profile.inherited == {"network": "rack"}
    assert sorted(profile.corrections["machine"]) == sorted(KINDS)
    assert sorted(profile.corrections["rack"]) == ["all_reduce", "send_recv"]
    assert profile.kind_sources["rack"] == {"all_gather": "all_reduce", "reduce_scatter": "all_reduce",
                                            "all_to_all": "all_reduce"}
    assert profile.uncalibrated() == []
    # Each tier was fitted on one node count: no latency may grow with the node count.
    assert all(r.correction.hop_latency_s == 0.0 for kinds in profile.corrections.values()
               for regimes in kinds.values() for r in regimes.regimes)
    # The hold-out rows cover every collective of the 10 x 1 log; a row worse than uncalibrated
    # means the profile was written with --force, and its warning names the log.
    rows = profile.fit["holdout"]["rows"]
    assert {r["log"] for r in rows} == {H100_HOLDOUT} and sorted(r["collective"] for r in rows) == sorted(KINDS)
    assert all(r["sizes"] == holdout_sizes for r in rows)
    worse = [r for r in rows if r["median_err_calibrated_pct"] > r["median_err_uncalibrated_pct"]]
    assert bool(profile.warnings) == bool(worse)
    for r in worse:
        assert any(f"{H100_HOLDOUT} {r['collective']}" in w for w in profile.warnings), r


def test_analytical_h100_profile_corrects_the_real_backend(h100):
    profile = load_profile(REPO / "calibration" / "profiles" / "h100-analytical.yaml")
    inner = AnalyticalModel(h100, channels=8)
    cal = Calibrated(inner, profile)
    p = placement_from_shape(h100, [[8, 8]])
    for kind, hops in (("all_reduce", 2), ("all_gather", 1)):  # all_gather: the rack's all_reduce terms
        c = profile.correction("rack", kind).at(256 * MIB)
        t, t0 = inner.collective_seconds(p, 256 * MIB, kind), inner.collective_seconds(p, 16, kind)  # 1 B per rank
        expected = max(0.0, t0 + c.latency_s + hops * c.hop_latency_s) + (t - t0) / c.bandwidth_factor
        assert cal.collective_seconds(p, 256 * MIB, kind) == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="fitted for backend"):
        Calibrated(AnalyticalModel(h100, channels=1), profile)  # another channel count is another backend


def test_h100_profile_predicts_multi_node_busbw_in_nvidias_published_ndr_range():
    """The multi-node prediction of issue 5, checked against a figure the fit never saw: fitted on
    one DGX H100 (NVLink) and two single-GPU nodes (one NDR NIC), the profile predicts 2, 4 and 8
    DGX H100 all-reduces. NCCL runs one ring per NIC, so at large sizes a ring's busbw over m
    machines is the 8 NICs' bandwidth whatever m (ring algebra: every byte crosses each machine's
    NICs 2(N-1)/N times); NVIDIA quotes 46-48 GB/s per NDR 400 Gb/s NIC (nccl-tests issue #290,
    ../shared/nccl-logs/headline_numbers.md), i.e. 368-384 GB/s for 8."""
    topology = load_topology(REPO / "topologies" / "h100-dgx.yaml")
    model = Calibrated(AnalyticalModel(topology, algorithm="ring", channels=8),
                       load_profile(REPO / "calibration" / "profiles" / "h100-analytical.yaml"))
    size = 64 * 2 ** 30  # large enough that the fixed start-up part is < 1 % of the time
    busbw = {}
    for machines in (2, 4, 8):
        n = 8 * machines
        seconds = model.collective_seconds(placement_from_shape(topology, [[8] * machines]), size)
        busbw[machines] = size / seconds * 2 * (n - 1) / n / 1e9
    assert all(8 * 46 <= b <= 8 * 48 for b in busbw.values()), busbw
    assert max(busbw.values()) / min(busbw.values()) < 1.01, busbw  # busbw does not depend on the node count


def test_fitted_range_per_tier_is_what_the_logs_cover():
    # xxrjun logs: 1 x 8, every collective 32 MiB - 16 GiB (machine), 2 x 1 all_reduce and sendrecv
    # 32 - 512 MiB (rack); the ns-3 profile was fitted up to 2 GiB (calibration/refit.py --max-bytes);
    # the network tier reuses rack's, the rack's all_gather its all_reduce; the 10 x 1 hold-out log
    # is never a fitted range.
    mib = 1 << 20
    analytical = load_profile(REPO / "calibration" / "profiles" / "h100-analytical.yaml")
    ns3 = load_profile(REPO / "calibration" / "profiles" / "h100-ns3.yaml")
    assert analytical.fitted_range("machine") == analytical.fitted_range("machine", "send_recv") == (32 * mib, 16 << 30)
    assert ns3.fitted_range("machine") == (32 * mib, 2 << 30)
    for profile in (analytical, ns3):
        for kind in KINDS:
            assert profile.fitted_range("rack", kind) == profile.fitted_range("network", kind) == (32 * mib, 512 * mib)


def test_coverage_note_says_when_sizes_are_extrapolated():
    mib = 1 << 20
    profile = load_profile(REPO / "calibration" / "profiles" / "h100-analytical.yaml")
    assert profile.coverage_note([64 * mib, 256 * mib]) is None  # inside every tier's range
    note = profile.coverage_note([25 * mib, 64 * mib, 1 << 30])
    # 25 MiB (DDP's default bucket cap) is below every tier's 32 MiB; 1 GiB is beyond the rack's 512 MiB.
    assert "machine tier (fitted on 32 MiB-16 GiB): 1 of 3 distinct sizes outside" in note
    assert "rack tier (fitted on 32 MiB-512 MiB): 2 of 3 distinct sizes outside" in note
    assert "network tier, reusing rack's" in note and "extrapolated" in note


def test_id_canonical_form_rounds_floats_to_nine_significant_digits():
    from artist.calibration.profile import canonical_for_id

    # Hand-rounded: 0.363193921|78770915 -> 0.363193922 (aws p4de's fitted factor), 7.34636956|9e-05 -> 7.34636957e-05.
    assert canonical_for_id(0.36319392178770915) == 0.363193922
    assert canonical_for_id({"h": [7.346369569234214e-05]}) == {"h": [7.34636957e-05]}
    # Integers (byte sizes beyond 9 digits), strings and booleans are left alone; -0.0 is 0.0.
    assert canonical_for_id([17179869184, "ring", True, -0.0]) == [17179869184, "ring", True, 0.0]
    assert str(canonical_for_id(-0.0)) == "0.0"


def _scaled(profile, factor, only=None):
    """The profile with floats multiplied by `factor`: every float of the corrections, link
    parameters and backend identity (only=None), or just the correction number `only`
    (tier, kind, regime index, field)."""
    import dataclasses

    def scale(value):
        if isinstance(value, bool) or not isinstance(value, float):
            return {k: scale(v) for k, v in value.items()} if isinstance(value, dict) else value
        return value * factor

    corrections = {}
    for tier, kinds in profile.corrections.items():
        corrections[tier] = {}
        for kind, regimes in kinds.items():
            out = []
            for k, g in enumerate(regimes.regimes):
                c = g.correction
                if only is None:
                    c = TierCorrection(scale(c.bandwidth_factor), scale(c.latency_s), scale(c.hop_latency_s))
                elif only[:3] == (tier, kind, k):
                    c = dataclasses.replace(c, **{only[3]: getattr(c, only[3]) * factor})
                out.append(SizeRegime(g.from_bytes, c))
            corrections[tier][kind] = SizeRegimes(tuple(out))
    if only is not None:
        return dataclasses.replace(profile, corrections=corrections)
    return dataclasses.replace(profile, corrections=corrections, link_parameters=scale(profile.link_parameters),
                               backend=scale(profile.backend))


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_id_survives_last_digit_noise_but_not_a_real_change(path):
    """A re-fit with another numpy / scipy moves fitted numbers by ~1e-15 relative (2.6e-15 at most
    on the shipped analytical fits, numpy 2.4.6 / scipy 1.17.1): the id must not move. A change of
    1e-6 in one correction is a different profile: the id must move."""
    stored = yaml.safe_load(path.read_text())["id"]
    profile = load_profile(path)
    noisy = _scaled(profile, 1 + 1e-13)
    assert noisy.corrections != profile.corrections  # precondition: the numbers really differ
    assert noisy.id == stored
    changed = 0
    for tier, kinds in profile.corrections.items():
        for kind, regimes in kinds.items():
            for field in ("bandwidth_factor", "latency_s", "hop_latency_s"):
                if getattr(regimes.regimes[0].correction, field) == 0.0:
                    continue  # 0 x (1 + 1e-6) is still 0
                assert _scaled(profile, 1 + 1e-6, (tier, kind, 0, field)).id != stored, (tier, kind, field)
                changed += 1
    assert changed >= 2 * sum(len(kinds) for kinds in profile.corrections.values())  # factor and latency at least
