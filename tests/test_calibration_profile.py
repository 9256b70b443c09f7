"""Profiles: YAML round trip, id, the Calibrated wrapper on any FabricModel, and the shipped profile."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from artist.calibration import CalibrationProfile, TierCorrection, load_profile
from artist.calibration.correction import SizeRegime, SizeRegimes
from artist.errors import InputError
from artist.network.analytical import AnalyticalModel
from artist.network.base import CommResult, time_node_by_node
from artist.network.calibrated import Calibrated
from artist.parallel.ddp import ddp_step
from artist.parallel.graph import Node, StepGraph
from artist.perf.model import as_perf_model
from artist.placement import placement_from_shape
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


def _profile(topology, backend, machine=TierCorrection(2.0, 1e-6), rack=TierCorrection(0.5, 1e-5)):
    def as_regimes(c):
        return c if isinstance(c, SizeRegimes) else SizeRegimes.single(c)

    return CalibrationProfile(name="t", topology_name=topology.name, link_parameters=topology.link_parameters(),
                              backend=backend, corrections={"machine": as_regimes(machine), "rack": as_regimes(rack)},
                              inherited={"network": "rack"})


def _model():
    # Two 25 MiB tensors -> two DDP buckets (cap 25 MiB); compute 1 s, backward from 1/3 of it.
    return ModelProfile("two-buckets", (25 * MIB, 25 * MIB), 1.0, "H100")


def test_calibrated_recomputes_exposed_time_by_hand(h100):
    inner = Affine(h100, 1e-3, PER_BYTE)
    cal = Calibrated(inner, _profile(h100, inner.identity()))
    model = _model()
    (b1, r1), (b2, r2) = model.buckets
    assert (r1, r2) == (pytest.approx(2 / 3), 1.0)
    # [[4,4]]: rack tier, 2 hops; t = 1 ms + 0.4 s, t0 = 1 ms + 8 bytes;
    # t' = t0 + (t - t0) / 0.5 + 2 x 10 us ~ 0.80102 s per bucket.
    p = placement_from_shape(h100, [[4, 4]])
    perf = as_perf_model(cal, h100)
    step = perf.estimate(model, p)
    graph, compute = perf.graph(model, p)
    timing = cal.time({"job": graph})["job"]
    t0 = _t0(inner, 8)
    t = t0 + (1e-3 + 0.4 - t0) / 0.5 + 2 * 1e-5
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


def test_other_kinds_pass_uncorrected_and_are_named(h100):
    inner = Affine(h100, 1e-3, PER_BYTE)
    cal = Calibrated(inner, _profile(h100, inner.identity()))
    group = placement_from_shape(h100, [[4, 4]]).gpus
    graph = StepGraph((Node(0, "compute", seconds=0.1, group=group),
                       Node(1, "all_gather", deps=(0,), group=group, nbytes=25 * MIB),
                       Node(2, "all_reduce", deps=(1,), group=group, nbytes=25 * MIB)))
    timing = cal.time({"job": graph})["job"]
    raw = 1e-3 + 25 * MIB * PER_BYTE
    t0 = _t0(inner, 8)
    t = t0 + (raw - t0) / 0.5 + 2 * 1e-5
    assert timing.node_seconds == pytest.approx((0.1, raw, t), rel=1e-12)
    assert timing.step_seconds == pytest.approx(0.1 + raw + t, rel=1e-12)
    assert timing.result.details["uncalibrated_kinds"] == ["all_gather"]
    p = placement_from_shape(h100, [[4, 4]])
    assert cal.collective_seconds(p, 25 * MIB, "all_gather") == raw  # corrects all_reduce only


def test_machine_and_network_tiers_use_their_corrections(h100):
    inner = Affine(h100, 1e-3, PER_BYTE)
    cal = Calibrated(inner, _profile(h100, inner.identity()))
    t = 1e-3 + 0.4  # a 25 MiB bucket
    m, graph = _timing(cal, _model(), placement_from_shape(h100, [[8]]))
    assert m.result.details["calibration_tier"] == "machine"
    assert _bucket_seconds(m, graph)[0] == pytest.approx(_t0(inner, 8) + (t - _t0(inner, 8)) / 2.0 + 14 * 1e-6,
                                                         rel=1e-12)
    assert h100.racks == 2
    n, graph = _timing(cal, _model(), placement_from_shape(h100, [[8], [8]]))
    assert n.result.details["calibration_tier"] == "network"
    t0 = _t0(inner, 16)
    assert _bucket_seconds(n, graph)[0] == pytest.approx(t0 + (t - t0) / 0.5 + 2 * 1e-5, rel=1e-12)  # reuses rack


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
    assert cal.collective_seconds(p, 64 * MIB) == pytest.approx(t0 + (t - t0) / 0.5 + 2e-5, rel=1e-12)


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
    assert loaded.correction("network") == profile.correction("rack")
    Calibrated(inner, loaded)  # identity survives YAML


# Two regimes on the rack tier: NCCL switches at 16 MiB (as the gcp A3 Mega log does).
SWITCH = 16 * MIB
TWO_REGIMES = SizeRegimes((SizeRegime(MIB, TierCorrection(0.25, 0.0)), SizeRegime(SWITCH, TierCorrection(2.0, 4e-4))))


class PerSize(FixedBuckets):
    """Every all-reduce takes 1 ms whatever its size (t0 = 0 at the 1-byte-per-rank probe, which is
    below any bucket), so the corrected time shows the regime alone."""

    def collective_seconds(self, group, nbytes, kind="all_reduce"):
        return 0.0 if nbytes <= group.size else self.seconds


def test_calibrated_picks_each_buckets_regime_by_its_size(h100):
    inner = PerSize(h100, 1e-3)
    cal = Calibrated(inner, _profile(h100, inner.identity(), rack=TWO_REGIMES))
    # Buckets of 8 MiB and 25 MiB (cap 25 MiB): the first in the 1-16 MiB regime, the second above.
    model = ModelProfile("mixed", (25 * MIB, 8 * MIB), 1.0, "H100")
    assert [b for b, _ in model.buckets] == [25 * MIB, 8 * MIB] or [b for b, _ in model.buckets] == [8 * MIB, 25 * MIB]
    p = placement_from_shape(h100, [[4, 4]])  # rack tier, 2 hops
    low, high = 1e-3 / 0.25 + 2 * 0.0, 1e-3 / 2.0 + 2 * 4e-4  # 4 ms and 1.3 ms, by hand
    res, graph = _timing(cal, model, p)
    assert [n.nbytes for n in graph.nodes if n.kind == "all_reduce"] == [b for b, _ in model.buckets]
    assert _bucket_seconds(res, graph) == pytest.approx(tuple(low if b < SWITCH else high for b, _ in model.buckets),
                                                         rel=1e-12)
    assert res.comm_seconds == pytest.approx(low + high)


@pytest.mark.parametrize("nbytes, which", [
    (SWITCH - 1, "low"), (SWITCH, "high"), (SWITCH + 1, "high"),  # the boundary belongs to the upper regime
    (1024, "low"),  # below the first measured size: the first regime (nearest)
    (64 << 30, "high"),  # beyond the measured range: the last regime (nearest)
])
def test_regime_boundary_and_sizes_outside_the_measured_range(h100, nbytes, which):
    inner = PerSize(h100, 1e-3)
    cal = Calibrated(inner, _profile(h100, inner.identity(), rack=TWO_REGIMES))
    expected = {"low": 1e-3 / 0.25, "high": 1e-3 / 2.0 + 2 * 4e-4}[which]
    assert cal.collective_seconds(placement_from_shape(h100, [[4, 4]]), nbytes) == pytest.approx(expected, rel=1e-12)
    # The machine tier has one regime: every size gets it.
    assert cal.collective_seconds(placement_from_shape(h100, [[8]]), nbytes) == pytest.approx(1e-3 / 2.0 + 14 * 1e-6)


def test_regimes_round_trip_and_enter_the_id(h100, tmp_path):
    inner = PerSize(h100, 1e-3)
    profile = _profile(h100, inner.identity(), rack=TWO_REGIMES)
    path = tmp_path / "p.yaml"
    profile.save(path)
    data = yaml.safe_load(path.read_text())
    assert data["profile_format"] == 3
    assert ([(r["from_bytes"], r["to_bytes"]) for r in data["tiers"]["rack"]["regimes"]]
            == [(MIB, SWITCH), (SWITCH, None)])
    loaded = load_profile(path)
    assert loaded.id == profile.id and loaded.correction("rack") == TWO_REGIMES
    moved = SizeRegimes((TWO_REGIMES.regimes[0], SizeRegime(32 * MIB, TWO_REGIMES.regimes[1].correction)))
    assert _profile(h100, inner.identity(), rack=moved).id != profile.id  # the boundary is part of the id
    # ... but not the first regime's from_bytes: the first regime covers every smaller size anyway.
    first = SizeRegimes((SizeRegime(0, TWO_REGIMES.regimes[0].correction), TWO_REGIMES.regimes[1]))
    assert _profile(h100, inner.identity(), rack=first).id == profile.id


def test_regimes_that_do_not_chain_are_refused(h100, tmp_path):
    path = tmp_path / "p.yaml"
    _profile(h100, {"backend": "fixed"}, rack=TWO_REGIMES).save(path)
    data = yaml.safe_load(path.read_text())
    data["tiers"]["rack"]["regimes"][0]["to_bytes"] = 8 * MIB
    del data["id"]
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(InputError, match=r"field 'tiers.rack.regimes\[0\].to_bytes'.*next regime's from_bytes"):
        load_profile(path)


@pytest.mark.parametrize("old", [1, 2])
def test_whole_time_formats_are_refused_with_a_re_fit_message(h100, tmp_path, old):
    # Formats 1 and 2 divided the whole backend time by the factor: the same numbers mean another correction.
    data = _profile(h100, {"backend": "fixed"}).to_mapping()
    data["profile_format"] = old
    del data["id"]
    path = tmp_path / "old.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(InputError, match=rf"field 'profile_format': profile format {old} is no longer read.*re-fit"):
        load_profile(path)


def test_unknown_format_is_refused(h100, tmp_path):
    data = _profile(h100, {"backend": "fixed"}).to_mapping()
    data["profile_format"] = 4
    path = tmp_path / "new.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(InputError, match="unsupported profile format 4"):
        load_profile(path)


def test_the_id_names_the_correction_formula(h100):
    # Same numbers, same backend: the id still differs from the format-2 id of those numbers (the meaning changed).
    import hashlib
    import json

    profile = _profile(h100, {"backend": "fixed"})
    tiers = {t: [{"from_bytes": 0, "bandwidth_factor": c.bandwidth_factor, "hop_latency_s": c.hop_latency_s}]
             for t, c in (("machine", TierCorrection(2.0, 1e-6)), ("rack", TierCorrection(0.5, 1e-5)),
                          ("network", TierCorrection(0.5, 1e-5)))}
    payload = {"format": 3, "tiers": tiers, "link_parameters": h100.link_parameters(), "backend": {"backend": "fixed"}}
    assert profile.id == hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]
    payload["format"] = 2
    assert profile.id != hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def test_edited_profile_is_detected(h100, tmp_path):
    path = tmp_path / "p.yaml"
    _profile(h100, {"backend": "analytical"}).save(path)
    data = yaml.safe_load(path.read_text())
    data["tiers"]["rack"]["regimes"][0]["bandwidth_factor"] = 0.7
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(InputError, match="field 'id'"):
        load_profile(path)


def test_profile_errors_name_the_field(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("profile_format: 3\nname: x\ntopology: {name: t, link_parameters: {a: 1}}\n"
                    "backend: {backend: analytical}\ntiers: {machine: {regimes: [{from_bytes: 0, to_bytes: null, "
                    "bandwidth_factor: -1, hop_latency_s: 0}]}}\n")
    with pytest.raises(InputError, match=r"field 'tiers.machine.regimes\[0\].bandwidth_factor'"):
        load_profile(path)


class IdentityOf:
    """A stand-in for the backend a shipped profile was fitted with: it reports that backend's
    identity and answers every all-reduce with a known time, so the correction can be checked by
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


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_profile_loads_and_is_applied_as_fitted(path):
    profile = load_profile(path)
    topology = load_topology(REPO / profile.topology_path)
    profile.check_topology(topology)
    inner = IdentityOf(profile.backend, topology)  # t = 100 us + S / 100 GB/s
    cal = Calibrated(inner, profile)
    assert cal.identity()["calibration_profile"] == profile.id and cal.identity()["inner"] == profile.backend
    # Hand-applied correction: t0 + (t - t0) / f + hops x h, t0 = the backend's time at 1 byte per rank,
    # hops = 2(N-1) on one machine, 2(m-1) NIC crossings over m machines,
    # with f and h of the regime whose [from_bytes, to_bytes) holds the size (as written in the YAML).
    raw = yaml.safe_load(path.read_text())["tiers"]

    def regime_of(tier, nbytes):
        entry = raw[tier] if "same_as" not in raw[tier] else raw[raw[tier]["same_as"]]
        regimes = entry["regimes"]
        for k, r in enumerate(regimes):
            if (k == 0 or nbytes >= r["from_bytes"]) and (r["to_bytes"] is None or nbytes < r["to_bytes"]):
                return r
        raise AssertionError((tier, nbytes))

    def by_hand(r, nbytes, ranks, hops):
        t, t0 = 1e-4 + nbytes * 1e-11, 1e-4 + ranks * 1e-11
        return t0 + (t - t0) / r["bandwidth_factor"] + hops * r["hop_latency_s"]

    for shape, tier, hops, ranks in (([[8]], "machine", 14, 8), ([[8, 8]], "rack", 2, 16),
                                     ([[4, 4, 4, 4]], "rack", 6, 16)):
        for nbytes in (MIB, 8 * MIB, 25 * MIB, 64 * MIB, 1 << 30):
            r = regime_of(tier, nbytes)
            expected = by_hand(r, nbytes, ranks, hops)
            got = cal.collective_seconds(placement_from_shape(topology, shape), nbytes)
            assert got == pytest.approx(expected, rel=1e-12), (tier, nbytes)
        r = regime_of(tier, 25 * MIB)  # _model(): two 25 MiB buckets
        expected = by_hand(r, 25 * MIB, ranks, hops)
        res, graph = _timing(cal, _model(), placement_from_shape(topology, shape))
        assert res.result.calibrated and res.result.details["calibration_tier"] == tier
        assert _bucket_seconds(res, graph) == pytest.approx((expected, expected), rel=1e-12)
    # Every fitted tier covered each of its regimes with held-out sizes when it was fitted.
    for tier, stats in profile.fit["tiers"].items():
        for regime in stats.get("regimes", []):
            assert regime["fit_points"] >= 2 and regime["held_out_points"] >= 1, (path.name, tier, regime)
    # The cache key of a calibrated answer carries the profile id (cache.key_material_parts).
    from artist.network.cache import collective_key_material

    material = collective_key_material(cal, placement_from_shape(topology, [[8]]), 64 * MIB)
    assert profile.id in repr(material)


def test_h100_profiles_apply_to_both_h100_topologies(h100):
    for name in ("h100-analytical", "h100-ns3"):
        profile = load_profile(REPO / "calibration" / "profiles" / f"{name}.yaml")
        profile.check_topology(h100)
        profile.check_topology(load_topology(REPO / "topologies" / "dgx-h100.yaml"))
        # NCCL-matching settings: one ring per NIC (8 per DGX H100), fitted on both xxrjun logs.
        assert profile.backend["channels"] == 8 and profile.backend["algorithm"] == "ring"
        assert {log["file"] for log in profile.logs} == {"xxrjun_1node_8xH100_allcoll.txt",
                                                         "xxrjun_2node_2xH100_1gpn_smoke.txt"}
        assert set(profile.corrections) == {"machine", "rack"}


def test_analytical_h100_profile_corrects_the_real_backend(h100):
    profile = load_profile(REPO / "calibration" / "profiles" / "h100-analytical.yaml")
    inner = AnalyticalModel(h100, channels=8)
    cal = Calibrated(inner, profile)
    p = placement_from_shape(h100, [[8, 8]])
    c = profile.correction("rack").at(256 * MIB)
    t, t0 = inner.collective_seconds(p, 256 * MIB), inner.collective_seconds(p, 16)  # t0: 1 byte per rank
    expected = t0 + (t - t0) / c.bandwidth_factor + 2 * c.hop_latency_s
    assert cal.collective_seconds(p, 256 * MIB) == pytest.approx(expected, rel=1e-12)
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
    # xxrjun logs: 1 x 8 all_reduce 32 MiB - 16 GiB (machine), 2 x 1 32 - 512 MiB (rack); the ns-3
    # profile was fitted up to 2 GiB (calibration/refit.py --max-bytes); the network tier reuses rack's.
    mib = 1 << 20
    analytical = load_profile(REPO / "calibration" / "profiles" / "h100-analytical.yaml")
    ns3 = load_profile(REPO / "calibration" / "profiles" / "h100-ns3.yaml")
    assert analytical.fitted_range("machine") == (32 * mib, 16 << 30)
    assert ns3.fitted_range("machine") == (32 * mib, 2 << 30)
    assert ns3.fitted_range("rack") == ns3.fitted_range("network") == (32 * mib, 512 * mib)


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
    (tier, regime index, field)."""
    import dataclasses

    def scale(value):
        if isinstance(value, bool) or not isinstance(value, float):
            return {k: scale(v) for k, v in value.items()} if isinstance(value, dict) else value
        return value * factor

    corrections = {}
    for tier, regimes in profile.corrections.items():
        out = []
        for k, g in enumerate(regimes.regimes):
            c = g.correction
            if only is None:
                c = TierCorrection(scale(c.bandwidth_factor), scale(c.hop_latency_s))
            elif only[:2] == (tier, k):
                c = dataclasses.replace(c, **{only[2]: getattr(c, only[2]) * factor})
            out.append(SizeRegime(g.from_bytes, c))
        corrections[tier] = SizeRegimes(tuple(out))
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
    tier = sorted(profile.corrections)[0]
    for field in ("bandwidth_factor", "hop_latency_s"):
        if getattr(profile.corrections[tier].regimes[0].correction, field) == 0.0:
            continue  # 0 x (1 + 1e-6) is still 0
        assert _scaled(profile, 1 + 1e-6, (tier, 0, field)).id != stored, field
