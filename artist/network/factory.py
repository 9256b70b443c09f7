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
