"""Shared fixtures: small hand-specified topologies whose figures the tests can
use in hand-written formulas."""

from __future__ import annotations

from pathlib import Path

import pytest

from artist.topology import Topology

REPO = Path(__file__).resolve().parent.parent

# Round figures so that expected times are easy to write by hand.
NVSWITCH_GBPS = 2400.0  # 300 GB/s per direction
NIC_GBPS = 400.0  # 50 GB/s
SPINE_GBPS = 800.0
MACHINE_LINK_US, MACHINE_SWITCH_US = 0.005, 0.1
RACK_LINK_US, RACK_SWITCH_US = 0.01, 0.13
SPINE_LINK_US, SPINE_SWITCH_US = 0.15, 0.5


def small_topology_mapping(racks=2, machines_per_rack=2, gpus_per_machine=4, oversubscription=1.0, **extra):
    def tier(gbps, link, switch):
        return {"bandwidth_gbps": gbps, "link_latency_us": link, "switch_latency_us": switch, "source": "test figures"}

    data = {
        "name": "test", "racks": racks, "machines_per_rack": machines_per_rack,
        "gpus_per_machine": gpus_per_machine, "gpu_type": "A100",
        "tiers": {
            "machine": tier(NVSWITCH_GBPS, MACHINE_LINK_US, MACHINE_SWITCH_US),
            "rack": tier(NIC_GBPS, RACK_LINK_US, RACK_SWITCH_US),
            "spine": {**tier(SPINE_GBPS, SPINE_LINK_US, SPINE_SWITCH_US), "oversubscription": oversubscription},
        },
    }
    data.update(extra)
    return data


def make_topology(**kw) -> Topology:
    return Topology.from_mapping(small_topology_mapping(**kw), "<test>")


@pytest.fixture
def topo_2x2x4():
    return make_topology()


@pytest.fixture
def topo_8gpu_machines():
    """2 racks x 2 machines x 8 GPUs: room for the 8- and 16-GPU hand-computed cases."""
    return make_topology(gpus_per_machine=8)


@pytest.fixture(autouse=True, scope="session")
def _isolated_latency_cache(tmp_path_factory):
    """Every test session gets an empty latency cache of its own: an answer a user's earlier run left in
    ~/.cache/artist (or in $ARTIST_CACHE_DIR) must not stand in for a simulation a test expects to run."""
    patch = pytest.MonkeyPatch()
    patch.setenv("ARTIST_CACHE_DIR", str(tmp_path_factory.mktemp("artist-cache")))
    yield
    patch.undo()
