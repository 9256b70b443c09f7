"""Build a CommModel from a backend name and options (CLI, sweeps, latency tables)."""

from __future__ import annotations

from artist.topology import Topology

BACKENDS = ("analytical", "ns3")


def make_comm_model(backend: str, topology: Topology, *, algorithm: str = "ring", channels: int = 1, **options):
    if backend == "analytical":
        from artist.network.analytical import AnalyticalModel

        return AnalyticalModel(topology, algorithm=algorithm, channels=channels, **options)
    if backend == "ns3":
        from artist.network.ns3 import Ns3Model

        return Ns3Model(topology, algorithm=algorithm, channels=channels, **options)
    raise ValueError(f"unknown comm backend {backend!r}; known: {', '.join(BACKENDS)}")


def build_comm_stack(backend: str, topology: Topology, *, algorithm: str = "ring", channels: int = 1,
                     options: dict | None = None, store=None, profile=None):
    """Calibrated(Cached(backend)) as DESIGN.md composes them; returns (model, the Cached layer or None).
    store: a LatencyStore (None: no cache); profile: a CalibrationProfile (None: uncalibrated).

    The cache sits inside the calibration so it keeps raw backend answers, valid for every
    profile and after a re-fit; the correction is cheap to re-apply."""
    model = make_comm_model(backend, topology, algorithm=algorithm, channels=channels, **(options or {}))
    cached = None
    if store is not None:
        from artist.network.cache import Cached

        model = cached = Cached(model, store)
    if profile is not None:
        from artist.network.calibrated import Calibrated

        model = Calibrated(model, profile)
    return model, cached
