"""Calibrated(inner, profile): a CommModel whose all-reduce times a calibration profile corrects.

It lives in network (not calibration) because it is a layer of the network stack,
Calibrated(Cached(backend)) (stack.py); calibration itself only reads profiles and
fits against a backend passed in, so it never imports network.
"""

from __future__ import annotations

from artist.calibration.correction import base_seconds, latency_hops
from artist.calibration.profile import CalibrationProfile
from artist.network.base import CommResult, compute_seconds_on, overlap_with_backward
from artist.placement import Placement
from artist.workload import ModelProfile


def _identity_matches(wanted: dict, identity: dict) -> bool:
    """The profile's backend identity is found in the model's identity, at the top level or in a
    wrapper's 'inner' identity (e.g. a cache around the backend)."""
    if all(identity.get(k) == v for k, v in wanted.items()):
        return True
    inner = identity.get("inner")
    return isinstance(inner, dict) and _identity_matches(wanted, inner)


class Calibrated:
    """A CommModel whose all-reduce times are corrected by a calibration profile.

    Works on any CommModel with collective_seconds(placement, nbytes): it reads the
    inner result's per-bucket all-reduce times, corrects each with the correction
    of the tier the placement spans (t0 from the inner model at 1 byte per rank,
    once per canonical shape), and recomputes the exposed time with the same
    overlap rule as the backends."""

    def __init__(self, inner, profile: CalibrationProfile):
        identity = inner.identity()
        if not _identity_matches(profile.backend, identity):
            raise ValueError(f"calibration profile {profile.name!r} was fitted for backend {profile.backend}, "
                             f"but the model is {identity}; fit a profile with these settings (artist calibrate)")
        if not callable(getattr(inner, "collective_seconds", None)):
            raise ValueError(f"backend {getattr(inner, 'name', inner)!r} has no collective_seconds(placement, nbytes): "
                             f"calibration needs it for the backend's own fixed time t0 (correction.base_seconds)")
        self.inner = inner
        self.profile = profile
        self.name = f"{inner.name}+calibrated"
        self._base: dict = {}  # canonical shape -> t0 (the topology's link parameters are the profile's)

    def identity(self) -> dict:
        return {"calibrated": True, "calibration_profile": self.profile.id, "inner": self.inner.identity()}

    def _correct(self, placement: Placement, seconds: list[float], sizes: list[int]) -> tuple[list[float], str]:
        self.profile.check_topology(placement.topology)
        tier = placement.tier
        regimes = self.profile.correction(tier)
        hops = latency_hops(placement)
        t0 = self._base_seconds(placement) if any(seconds) else 0.0  # nothing to correct: no probe
        return [regimes.apply(s, hops, n, t0) for s, n in zip(seconds, sizes)], tier

    def _base_seconds(self, placement: Placement) -> float:
        """t0 of the correction, once per canonical shape: by the topology's symmetry every
        placement of a shape has the same backend times (the backends' own memo key)."""
        key = placement.canonical_shape
        if key not in self._base:
            self._base[key] = base_seconds(self.inner, placement)
        return self._base[key]

    def collective_seconds(self, placement: Placement, nbytes: int) -> float:
        if placement.size < 2:
            return float(self.inner.collective_seconds(placement, nbytes))
        return self._correct(placement, [float(self.inner.collective_seconds(placement, nbytes))], [int(nbytes)])[0][0]

    def iteration_comm_time(self, model: ModelProfile, placement: Placement) -> CommResult:
        result = self.inner.iteration_comm_time(model, placement)
        if len(result.bucket_seconds) != len(model.buckets):
            raise ValueError(f"backend {self.inner.name!r} returned {len(result.bucket_seconds)} bucket times for "
                             f"{len(model.buckets)} buckets; calibration needs the per-bucket all-reduce times")
        # Each bucket is corrected by the regime of its own size: NCCL picks algorithm and protocol per call.
        buckets, tier = self._correct(placement, list(result.bucket_seconds), [b for b, _ in model.buckets])
        exposed = overlap_with_backward(buckets, [r for _, r in model.buckets], compute_seconds_on(model, placement))
        return result.replace(exposed_seconds=exposed, collective_seconds=float(sum(buckets)),
                              bucket_seconds=tuple(buckets), calibrated=True,
                              details={**result.details, "calibration_profile": self.profile.id,
                                       "calibration_tier": tier})
