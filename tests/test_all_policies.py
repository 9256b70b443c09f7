"""sweeps/all-policies.yaml runs every policy of the elastic loop's registry (the whole suite, Crius included) on one
cluster that every rigid policy can see as one fabric."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from artist.elastic.cluster import load_cluster
from artist.errors import InputError
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
    # shared contention (jobs meeting on spine ports co-simulated by ns-3): the first 24 jobs (the header says why)
    assert {run.elastic.contention for run in full.runs} == {"shared"}
    assert len(full.runs) == len(ELASTIC_POLICIES) and all(len(run.jobs) == 24 for run in full.runs)
    reduced = load_sweep_spec(SPEC, reduced=True)
    assert len(reduced.runs) == len(ELASTIC_POLICIES) and all(len(run.jobs) == 8 for run in reduced.runs)


def test_the_congested_cluster_has_three_types_on_an_oversubscribed_ecmp_spine():
    cluster = load_cluster(ROOT / "topologies" / "clusters" / "dally-hetero-congested.yaml")
    assert cluster.gpu_types == ["a100", "rtx", "t4"] and cluster.gpus == 72
    for pool in cluster.pools:
        topo = pool.topology
        # one machine per rack: every job of more than one machine crosses the spine
        assert topo.spine_model == "ecmp" and topo.oversubscription == 4.0 and topo.racks == 3
        assert topo.machines_per_rack == 1
        # ports x port speed = the rack's NIC capacity / 4, in 2 ports each of one GPU's NIC share: a ring alone
        # never waits on a port, two rings hashed onto one port halve each other
        assert topo.spine_ports * topo.spine.bandwidth_bps == topo.nics_per_rack * topo.rack.bandwidth_bps / 4
        assert topo.spine_ports == 2 and topo.spine.bandwidth_bps == topo.rack.bandwidth_bps
    for name in ("fifo", "gandiva", "dally"):  # every pool of one machine shape: the rigid policies accept it
        make_elastic_policy(name, {}, cluster, 0, None)


def _spec_with(tmp_path, policy: str) -> Path:
    path = tmp_path / "spec.yaml"
    cluster = ROOT / "topologies" / "clusters" / "dally-hetero-congested.yaml"
    path.write_text(f"name: t\nloop: elastic\ntopology: {cluster}\n"
                    f"elastic: {{applications: {ROOT / 'workloads' / 'sia'}}}\npolicies: [{policy}]\n"
                    f"workloads: [{{spec: {ROOT / 'workloads' / 'sia' / 'workloads' / 'philly' / 'workload-1.csv'}, "
                    f"first: 2}}]\n")
    return path


@pytest.mark.parametrize("policy, message", [
    ("{name: gandiva, params: {migrate_often: true}}", "no parameter 'migrate_often'"),
    ("{name: dally-manual, params: {rack_timer_s: -1}}", "timers must be >= 0"),
    ("{name: fifo, params: {tuned_jobs: maybe}}", "tuned_jobs must be true or false"),
])
def test_bad_rigid_policy_params_in_an_elastic_spec_name_the_field(tmp_path, policy, message):
    path = _spec_with(tmp_path, policy)
    with pytest.raises(InputError) as exc:
        load_sweep_spec(path)
    assert "policies[0].params" in str(exc.value) and message in str(exc.value) and str(path) in str(exc.value)


def test_a_rigid_policy_on_a_cluster_of_several_machine_shapes_loads(tmp_path):
    """Sia's cluster mixes 4- and 8-GPU machines: the rigid policies see it as one fabric of the larger
    shape with the missing GPUs never free (rigid_in_elastic.py), so the spec loads and expands
    (tests/test_rigid_elastic.py runs such policies to the end)."""
    path = _spec_with(tmp_path, "dally")
    path.write_text(path.read_text().replace("dally-hetero-congested.yaml", "sia-hetero-64.yaml"))
    spec = load_sweep_spec(path)
    assert spec.runs and {run.policy.name for run in spec.runs} == {"dally"}
