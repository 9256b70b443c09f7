"""Profiles: YAML round trip, id, the Calibrated wrapper on any CommModel, and the shipped profile."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from artist.calibration import Calibrated, CalibrationProfile, TierCorrection, load_profile
from artist.errors import InputError
from artist.network.analytical import AnalyticalModel
from artist.network.base import CommResult
from artist.placement import placement_from_shape
from artist.topology import load_topology
from artist.workload import ModelProfile

REPO = Path(__file__).resolve().parent.parent
MIB = 1 << 20


@pytest.fixture(scope="module")
def h100():
    return load_topology(REPO / "topologies" / "h100-dgx.yaml")


class FixedBuckets:
    """A CommModel that is not one of ours: every bucket takes a fixed time."""

    name = "fixed"

    def __init__(self, seconds):
        self.seconds = seconds

    def identity(self):
        return {"backend": "fixed", "seconds": self.seconds}

    def iteration_comm_time(self, model, placement):
        buckets = tuple(self.seconds for _ in model.buckets)
        return CommResult(exposed_seconds=-1.0, collective_seconds=sum(buckets), backend=self.name, bucket_seconds=buckets)


def _profile(topology, backend, machine=TierCorrection(2.0, 1e-6), rack=TierCorrection(0.5, 1e-5)):
    return CalibrationProfile(name="t", topology_name=topology.name, link_parameters=topology.link_parameters(),
                              backend=backend, corrections={"machine": machine, "rack": rack},
                              inherited={"network": "rack"})


def _model():
    # Two 25 MiB tensors -> two DDP buckets (cap 25 MiB); compute 1 s, backward from 1/3 of it.
    return ModelProfile("two-buckets", (25 * MIB, 25 * MIB), 1.0, "H100")


def test_calibrated_recomputes_exposed_time_by_hand(h100):
    inner = FixedBuckets(0.4)
    cal = Calibrated(inner, _profile(h100, inner.identity()))
    model = _model()
    (b1, r1), (b2, r2) = model.buckets
    assert (r1, r2) == (pytest.approx(2 / 3), 1.0)
    # [[4,4]]: rack tier, 2 hops; t' = 0.4 / 0.5 + 2 x 10 us = 0.80002 s per bucket.
    p = placement_from_shape(h100, [[4, 4]])
    res = cal.iteration_comm_time(model, p)
    t = 0.4 / 0.5 + 2 * 1e-5
    assert res.bucket_seconds == pytest.approx((t, t))
    # bucket 1 runs 2/3 .. 2/3 + t, bucket 2 follows at once; compute ends at 1 (H100 speed 2 -> 0.5 s)
    compute = 1.0 / 2.0
    end = max(max(0.0, r1 * compute) + t, r2 * compute) + t
    assert res.exposed_seconds == pytest.approx(end - compute)
    assert res.calibrated and res.collective_seconds == pytest.approx(2 * t)
    assert res.details["calibration_tier"] == "rack"


def test_machine_and_network_tiers_use_their_corrections(h100):
    inner = FixedBuckets(0.4)
    cal = Calibrated(inner, _profile(h100, inner.identity()))
    m = cal.iteration_comm_time(_model(), placement_from_shape(h100, [[8]]))
    assert m.bucket_seconds[0] == pytest.approx(0.4 / 2.0 + 14 * 1e-6)
    topo = h100.with_racks(2)
    n = cal.iteration_comm_time(_model(), placement_from_shape(topo, [[8], [8]]))
    assert n.bucket_seconds[0] == pytest.approx(0.4 / 0.5 + 2 * 1e-5)  # network reuses rack


def test_analytical_collective_seconds_are_corrected(h100):
    inner = AnalyticalModel(h100)
    cal = Calibrated(inner, _profile(h100, inner.identity()))
    p = placement_from_shape(h100, [[1, 1]])
    assert cal.collective_seconds(p, 64 * MIB) == pytest.approx(inner.collective_seconds(p, 64 * MIB) / 0.5 + 2e-5)


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
        cal.iteration_comm_time(_model(), placement_from_shape(dally, [[8]]))


def test_yaml_round_trip_keeps_id_and_corrections(h100, tmp_path):
    inner = AnalyticalModel(h100)
    profile = _profile(h100, inner.identity())
    path = tmp_path / "p.yaml"
    profile.save(path)
    loaded = load_profile(path)
    assert loaded.id == profile.id
    assert loaded.correction("network") == profile.correction("rack")
    Calibrated(inner, loaded)  # identity survives YAML


def test_edited_profile_is_detected(h100, tmp_path):
    path = tmp_path / "p.yaml"
    _profile(h100, {"backend": "analytical"}).save(path)
    data = yaml.safe_load(path.read_text())
    data["tiers"]["rack"]["bandwidth_factor"] = 0.7
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(InputError, match="field 'id'"):
        load_profile(path)


def test_profile_errors_name_the_field(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("profile_format: 1\nname: x\ntopology: {name: t, link_parameters: {a: 1}}\n"
                    "backend: {backend: analytical}\ntiers: {machine: {bandwidth_factor: -1, hop_latency_s: 0}}\n")
    with pytest.raises(InputError, match="field 'tiers.machine.bandwidth_factor'"):
        load_profile(path)


class IdentityOf:
    """A stand-in for the backend a shipped profile was fitted with: it reports that backend's
    identity and answers every all-reduce with a known time, so the correction can be checked by
    hand without running the backend (ns-3 included)."""

    def __init__(self, identity, seconds=0.01):
        self._identity, self.seconds, self.name = identity, seconds, identity["backend"]

    def identity(self):
        return dict(self._identity)

    def collective_seconds(self, placement, nbytes):
        return self.seconds

    def iteration_comm_time(self, model, placement):
        b = tuple(self.seconds for _ in model.buckets)
        return CommResult(exposed_seconds=0.0, collective_seconds=sum(b), backend=self.name, bucket_seconds=b)


SHIPPED = sorted((REPO / "calibration" / "profiles").glob("*.yaml"))


def test_the_h100_profiles_are_shipped():
    assert {"h100-analytical.yaml", "h100-ns3.yaml"} <= {p.name for p in SHIPPED}


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_profile_loads_and_is_applied_as_fitted(path):
    profile = load_profile(path)
    topology = load_topology(REPO / profile.topology_path)
    profile.check_topology(topology)
    inner = IdentityOf(profile.backend, seconds=0.01)
    cal = Calibrated(inner, profile)
    assert cal.identity()["calibration_profile"] == profile.id and cal.identity()["inner"] == profile.backend
    # Hand-applied correction: t / f + hops x h, hops = 2(N-1) on one machine, 2(m-1) NIC crossings over m machines.
    for shape, tier, hops in (([[8]], "machine", 14), ([[8, 8]], "rack", 2), ([[4, 4, 4, 4]], "rack", 6)):
        c = profile.correction(tier)
        expected = 0.01 / c.bandwidth_factor + hops * c.hop_latency_s
        assert cal.collective_seconds(placement_from_shape(topology, shape), 64 * MIB) == pytest.approx(expected, rel=1e-12)
        res = cal.iteration_comm_time(_model(), placement_from_shape(topology, shape))
        assert res.calibrated and res.bucket_seconds == pytest.approx((expected, expected), rel=1e-12)
    # Every fitted tier met the acceptance figure on its held-out sizes when it was fitted.
    for tier, stats in profile.fit["tiers"].items():
        if "held_out_median_abs_error" in stats and stats["held_out_points"]:
            assert stats["held_out_median_abs_error"] <= 0.05, (path.name, tier)
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
        assert {l["file"] for l in profile.logs} == {"xxrjun_1node_8xH100_allcoll.txt", "xxrjun_2node_2xH100_1gpn_smoke.txt"}
        assert set(profile.corrections) == {"machine", "rack"}


def test_analytical_h100_profile_corrects_the_real_backend(h100):
    profile = load_profile(REPO / "calibration" / "profiles" / "h100-analytical.yaml")
    inner = AnalyticalModel(h100, channels=8)
    cal = Calibrated(inner, profile)
    p = placement_from_shape(h100, [[8, 8]])
    c = profile.correction("rack")
    assert cal.collective_seconds(p, 256 * MIB) == pytest.approx(
        inner.collective_seconds(p, 256 * MIB) / c.bandwidth_factor + 2 * c.hop_latency_s, rel=1e-12)
    with pytest.raises(ValueError, match="fitted for backend"):
        Calibrated(AnalyticalModel(h100, channels=1), profile)  # another channel count is another backend
