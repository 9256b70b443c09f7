"""sweeps/all-policies.yaml runs every policy of the elastic loop's registry (the suite but Crius) on one
cluster that every rigid policy can see as one fabric."""

from __future__ import annotations

from pathlib import Path

import yaml

from artist.elastic.cluster import load_cluster
from artist.policies.pollux.registry import ELASTIC_POLICIES, make_elastic_policy
from artist.sweep.spec import load_sweep_spec

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "sweeps" / "all-policies.yaml"


def test_every_elastic_policy_is_in_the_sweep_and_its_reduced_version():
    data = yaml.safe_load(SPEC.read_text())
    for section in (data, data["reduced"]):
        names = {p["name"] if isinstance(p, dict) else p for p in section["policies"]}
        assert names == set(ELASTIC_POLICIES)


def test_the_sweep_loads_with_packet_level_answers_and_its_reduced_version_is_small():
    full = load_sweep_spec(SPEC)
    assert {run.comm.backend for run in full.runs} == {"ns3"}
    assert len(full.runs) == len(ELASTIC_POLICIES) and all(len(run.jobs) == 160 for run in full.runs)
    reduced = load_sweep_spec(SPEC, reduced=True)
    assert len(reduced.runs) == len(ELASTIC_POLICIES) and all(len(run.jobs) == 8 for run in reduced.runs)


def test_the_congested_cluster_has_three_types_on_an_oversubscribed_ecmp_spine():
    cluster = load_cluster(ROOT / "topologies" / "clusters" / "dally-hetero-congested.yaml")
    assert cluster.gpu_types == ["a100", "rtx", "t4"] and cluster.gpus == 96
    for pool in cluster.pools:
        topo = pool.topology
        assert topo.spine_model == "ecmp" and topo.oversubscription == 4.0 and topo.racks == 2
        # ports x port speed = the rack's NIC capacity / 4
        assert topo.spine_ports * topo.spine.bandwidth_bps == topo.nics_per_rack * topo.rack.bandwidth_bps / 4
    for name in ("fifo", "gandiva", "dally"):  # every pool of one machine shape: the rigid policies accept it
        make_elastic_policy(name, {}, cluster, 0, None)
