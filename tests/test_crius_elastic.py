"""Crius' scheduler in the elastic loop (artist/policies/crius/elastic.py): Cell estimates from what Crius may
observe (the jobs' 1-GPU profiles, its CommTable), decisions hand-checked on a tiny two-type cluster with a
network of constant all-reduce time, packing within capacity, determinism, and the registry's bad values."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from artist.elastic.cluster import CLUSTERS_DIR, ElasticCluster, Pool, PooledStepTimer, load_cluster
from artist.elastic.exact import simulate_elastic
from artist.elastic.jobs import ElasticJobSpec
from artist.elastic.spec import ElasticSpec, LocalBatchLimit
from artist.errors import InputError
from artist.network.analytical import AnalyticalModel
from artist.policies.crius.elastic import CriusElastic, pack
from artist.policies.pollux.registry import PolicyContext, make_elastic_policy
from artist.policies.pollux.scheduler import JobView
from artist.sweep.spec import load_sweep_spec
from artist.topology import Topology

ROOT = Path(__file__).resolve().parents[1]
ALL_REDUCE_S = 0.08  # the tiny cluster's network: every all-reduce of 2+ GPUs takes 80 ms, whatever its bytes


class ConstantFabric:
    """A network model whose all-reduce of any group and size takes ALL_REDUCE_S (the CommTable's offline
    profile then reads ALL_REDUCE_S at every size)."""

    def collective_seconds(self, group, nbytes, kind):
        return ALL_REDUCE_S


def _topology(name: str, machines: int, gpus: int) -> Topology:
    tier = {"bandwidth_gbps": 100, "link_latency_us": 1, "switch_latency_us": 1, "source": "test"}
    return Topology.from_mapping({"name": name, "source": "test", "racks": 1, "machines_per_rack": machines,
                                  "gpus_per_machine": gpus, "gpu_type": name,
                                  "tiers": {"machine": tier, "rack": tier, "spine": tier}}, "test")


def tiny_cluster(a100_machines=2, t4_machines=1) -> ElasticCluster:
    """a100: machines x 4 GPUs, t4: machines x 4 GPUs (one rack each)."""
    return ElasticCluster.of("tiny", [Pool("a100", _topology("a100", a100_machines, 4)),
                                      Pool("t4", _topology("t4", t4_machines, 4))])


# a100 runs a local batch m in 0.01 m s, t4 in 0.04 m s (the profiles the loop would measure)
PROFILE = {"a100": {1: 0.01, 16: 0.16, 64: 0.64}, "t4": {1: 0.04, 16: 0.64, 64: 2.56}}
APPS = {
    # runs on both types at local batches 1..64
    "both": (None, ElasticSpec(64, 4096, {"a100": LocalBatchLimit(1, 64), "t4": LocalBatchLimit(1, 64)})),
    # at a global batch of 64 it fits no t4 count: the t4 needs local batches of 128 (the memory filter's other side)
    "a100only": (None, ElasticSpec(64, 4096, {"a100": LocalBatchLimit(1, 64), "t4": LocalBatchLimit(128, 128)})),
}


def _never(_cluster):
    raise AssertionError("crius asked for the loop's step timer")


def _policy(jobs, cluster=None, depth=3, name="crius"):
    ctx = PolicyContext(APPS, jobs, _never, {a: SimpleNamespace(total_bytes=1e8) for a in APPS},
                        {"a100": ConstantFabric(), "t4": ConstantFabric()})
    return CriusElastic(cluster or tiny_cluster(), ctx, depth=depth, policy=name)


def _view(job: ElasticJobSpec, current) -> JobView:
    return JobView(job.job_id, None, np.asarray(current, dtype=int), 0.0, 0, 0.0, job.arrival,
                   gpus_wanted=job.gpus, batch_wanted=job.batch, profile=PROFILE)


def _round(policy, jobs, held):
    out = policy.allocate([_view(j, held.get(j.job_id, np.zeros(3, int))) for j in jobs])
    held.clear()
    held.update(out)
    return out


def test_dp_cell_is_profiled_compute_plus_the_commtable_all_reduce():
    job = ElasticJobSpec("a", 0, "both", gpus=2, batch=64)
    cat = _policy([job]).catalogue
    cat.observe("both", PROFILE)
    one = cat.crius_view("both", 64, 2, "a100", 1)   # 64 samples on one GPU: the profiled 0.64 s, no all-reduce
    assert one.latency_s == pytest.approx(0.64) and one.samples_per_s == pytest.approx(100)
    four = cat.crius_view("both", 64, 2, "a100", 4)  # local batch 16: 0.16 s + 80 ms
    assert (four.local_batch, four.accum_steps) == (16, 0)
    assert four.latency_s == pytest.approx(0.16 + ALL_REDUCE_S)
    t4 = cat.crius_view("both", 64, 2, "t4", 2)       # local 32, between profiled 16 and 64: 0.04 x 32 + 80 ms
    assert t4.latency_s == pytest.approx(1.28 + ALL_REDUCE_S)
    assert cat.crius_view("a100only", 64, 2, "t4", 1) is None  # local 64 < the t4's 128: not a Cell
    assert cat.crius_view("both", 64, 2, "t4", 8) is None       # more GPUs than the pool


def test_job_lands_on_the_type_its_estimate_prefers():
    """Alone on the tiny cluster a job of request 2 takes the a100 pool's best Cell, a100 x 4 (266.7 samples/s
    against 160 on 2 a100 and 88.9 on 4 t4), packed on one machine."""
    job = ElasticJobSpec("a", 0, "both", gpus=2, batch=64)
    out = _round(_policy([job]), [job], {})
    assert out["a"].tolist() == [4, 0, 0]


def test_full_type_shrinks_a_running_job_then_regrows_it():
    """Hand-checked (normalised throughput: a100 x 1, 2, 4 = 100, 160, 266.7 samples/s -> 0.375, 0.6, 1; t4
    x 1 = 25 -> 0.094). a100only jobs A (request 2) and B (request 2), a100 pool of 4 GPUs. A alone: a100 x 4.
    B arrives: the best candidate is B on 2 a100 after shrinking A to 2 (gain 0.6 - 0.4 = 0.2; B on 1 GPU
    after the same move: -0.025; B on 4 after shrinking A to 1: impossible, A must keep one). B leaves: A
    regrows to 4 (upscale, gain 0.4)."""
    a = ElasticJobSpec("a", 0, "a100only", gpus=2, batch=64)
    b = ElasticJobSpec("b", 60, "a100only", gpus=2, batch=64)
    policy, held = _policy([a, b], tiny_cluster(a100_machines=1)), {}
    assert _round(policy, [a], held)["a"].tolist() == [4, 0]
    out = _round(policy, [a, b], held)
    assert out["a"].tolist() == [2, 0] and out["b"].tolist() == [2, 0]
    assert policy.scheduler.moves_made == [0, 1]
    assert _round(policy, [a], held)["a"].tolist() == [4, 0]


def test_opportunistic_job_is_suspended_for_the_earlier_one():
    """a100 pool of 8 GPUs, every job a100only at batch 64. A (request 2) takes 4. B (request 16: 8 GPUs or
    more) cannot start: A can free at most 3 and is not opportunistic. C (request 2) arrives after B and takes
    the 4 free GPUs while B waits: it is opportunistic. When A leaves, B's search suspends C (C may not be
    shrunk far enough: 4 + 3 < 8) and B takes all 8; C waits, no longer opportunistic."""
    a = ElasticJobSpec("a", 0, "a100only", gpus=2, batch=64)
    b = ElasticJobSpec("b", 60, "a100only", gpus=16, batch=64)
    c = ElasticJobSpec("c", 120, "a100only", gpus=2, batch=64)
    policy, held = _policy([a, b, c]), {}
    _round(policy, [a], held)
    out = _round(policy, [a, b], held)
    assert out["a"].sum() == 4 and out["b"].sum() == 0
    out = _round(policy, [a, b, c], held)
    assert out["c"].sum() == 4 and out["b"].sum() == 0 and policy.runs["c"].opportunistic
    kept = out["a"].copy()
    assert _round(policy, [a, b, c], held)["a"].tolist() == kept.tolist()  # no event: nobody moves
    out = _round(policy, [b, c], held)
    assert out["b"].tolist() == [4, 4, 0] and out["c"].sum() == 0 and not policy.runs["c"].opportunistic


def test_a_job_no_cell_fits_is_refused_in_one_line():
    job = ElasticJobSpec("huge", 0, "both", gpus=64, batch=64)
    with pytest.raises(ValueError, match="job huge: no Cell of it fits"):
        _round(_policy([job]), [job], {})


def test_placement_respects_capacity_and_keeps_unchanged_jobs():
    """Property over random decisions: every node within capacity, each job's count on its type's nodes, a job
    whose (type, count) did not change keeps its GPUs, and the same decisions give the same placements."""
    cluster = tiny_cluster(a100_machines=3, t4_machines=2)
    types = {"a100": 12, "t4": 8}
    node_types = np.array(cluster.node_types)

    def run(seed):
        rng = np.random.default_rng(seed)
        jobs = [ElasticJobSpec(f"j{k}", k, "both", gpus=2, batch=64) for k in range(8)]
        policy = _policy(jobs, cluster)

        class Random:
            def decide(self, runs):
                left, out = dict(types), {}
                for r in runs:
                    t = str(rng.choice(sorted(types)))
                    g = int(rng.integers(1, 6))
                    if rng.random() < 0.8 and g <= left[t]:
                        out[r.spec.job_id] = (t, g)
                        left[t] -= g
                return out

        policy.scheduler = Random()
        placements, held = [], {}
        for step in range(40):
            present = [j for j in jobs if rng.random() < 0.7] or jobs[:1]
            before = {k: v.copy() for k, v in held.items()}
            old = {k: policy.runs[k].alloc for k in policy.runs}
            out = policy.allocate([_view(j, held.get(j.job_id, np.zeros(5, int))) for j in present])
            held = {k: v for k, v in out.items() if v.sum()}
            total = sum(out.values())
            assert (total <= np.array(cluster.capacity)).all()
            for k, v in out.items():
                alloc = policy.runs[k].alloc
                if alloc is None:
                    assert v.sum() == 0
                    continue
                assert v.sum() == alloc[1] and set(node_types[v > 0]) == {alloc[0]}
                if old.get(k) == alloc and k in before:
                    assert v.tolist() == before[k].tolist()
            placements.append({k: v.tolist() for k, v in out.items()})
        return placements

    assert run(3) == run(3)


def test_pack_takes_the_fewest_machines_then_one_rack():
    free = np.array([3, 4, 2, 4, 4])
    racks = [0, 0, 0, 1, 1]
    assert pack(2, range(5), free, racks) == {2: 2}                  # best fit on one machine
    assert pack(7, range(5), free, racks) == {1: 4, 0: 3}            # two machines of rack 0 (rack 1 holds 8 too)
    assert pack(8, range(5), free, racks) == {3: 4, 4: 4}            # only rack 1 holds 8 on two machines
    assert sum(pack(13, range(5), free, racks).values()) == 13       # no rack holds 13: fewest of the pool
    with pytest.raises(ValueError):
        pack(18, range(5), free, racks)


class _Raising:
    def __getattr__(self, name):
        raise AssertionError(f"crius touched the loop's step timer ({name})")


@pytest.fixture(scope="module")
def philly_run():
    """The first 16 jobs of Sia's Philly workload 1 on the congested three-type cluster, twice: the policy's
    context hands out a timer that raises if touched (the loop's own timer is the real one)."""
    from artist.elastic.applications import heterogeneous_applications
    from artist.elastic.hetero_runs import read_jobs
    from artist.workload import load_models
    from artist.workload.traces.pollux import APPLICATIONS

    cluster = load_cluster(CLUSTERS_DIR / "dally-hetero-congested.yaml")
    apps = heterogeneous_applications()
    models = load_models()
    profiles = {k: models[APPLICATIONS[k][0]] for k in apps}
    jobs = read_jobs(ROOT / "workloads/sia/workloads/philly/workload-1.csv", "both", limit=16)
    out = []
    for _ in range(2):
        ctx = PolicyContext(apps, jobs, lambda _c: _Raising(), profiles,
                            {p.gpu_type: AnalyticalModel(p.topology) for p in cluster.pools})
        policy, seen = make_elastic_policy("crius", {}, cluster, 0, ctx)
        timer = PooledStepTimer(seen, {k: a for k, (a, _) in apps.items()}, profiles)
        out.append((simulate_elastic(seen, jobs, apps, timer, policy), policy))
    return out


def test_philly_run_finishes_deterministically_without_the_timer(philly_run):
    (first, policy), (second, _) = philly_run
    assert len(first.jobs) == 16 and all(j.finish is not None for j in first.jobs)
    assert [(j.spec.job_id, j.finish, j.progress.restarts) for j in first.jobs] == \
        [(j.spec.job_id, j.finish, j.progress.restarts) for j in second.jobs]
    # decisions only on events: at most one per arrival and one per departure (plus none on quiet rounds)
    assert policy.decisions <= 2 * 16 and first.rounds > policy.decisions
    for j in first.jobs:  # never more than 2 N_G GPUs, never fewer than N_G / 2, one type at a time
        counts = {g for _, g, _, _ in j.gpu_rounds}
        assert counts <= {max(1, j.spec.gpus // 2), j.spec.gpus, 2 * j.spec.gpus}


def test_profiles_are_charged_and_the_placement_is_one_pool(philly_run):
    (result, policy), _ = philly_run
    assert all(j.profile_gpu_seconds > 0 for j in result.jobs)  # wants_profiles: the loop measured them
    assert set(policy.catalogue.tables) <= {"a100", "rtx", "t4"}


@pytest.mark.parametrize("params, message", [
    ("{depth: -1}", "rejected by policy 'crius': depth must be a whole number >= 0"),
    ("{deep: 3}", "has no parameter 'deep'"),
])
def test_bad_crius_params_name_the_field(tmp_path, params, message):
    (tmp_path / "jobs.csv").write_text("name,time,application,num_replicas,batch_size\ncifar10-0,53,cifar10,2,256\n")
    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\nloop: elastic\ntopology: {CLUSTERS_DIR / 'sia-hetero-64.yaml'}\n"
                    f"elastic: {{applications: {ROOT / 'workloads/sia'}}}\n"
                    f"policies: [{{name: crius, params: {params}}}]\nworkloads: [{{spec: jobs.csv, label: w}}]\n")
    with pytest.raises(InputError) as exc:
        load_sweep_spec(path)
    text = str(exc.value)
    assert "\n" not in text and str(path) in text and "policies[0].params" in text and message in text



def test_fcfs_runs_the_request_on_its_fastest_type_and_blocks_behind_the_head():
    """Crius' FCFS baseline over the loop's jobs: each job's N_G on the type where N_G GPUs are fastest
    (a100 x 2: 160 samples/s against t4 x 2: 45.7), strictly in arrival order. a100 pool of 4: A (3 GPUs)
    runs, B (2) does not fit and C (1), though one a100 is free, waits behind it; on t4 nothing runs."""
    a, b, c = (ElasticJobSpec(k, t, "both", gpus=g, batch=64) for k, t, g in (("a", 0, 3), ("b", 60, 2), ("c", 120, 1)))
    out = _round(_policy([a, b, c], tiny_cluster(a100_machines=1), name="fcfs"), [a, b, c], {})
    assert out["a"].tolist() == [3, 0] and out["b"].tolist() == [0, 0] and out["c"].tolist() == [0, 0]


def test_elasticflow_admits_past_the_head_then_scales_out():
    """ElasticFlow-LS over the same jobs: admission in arrival order at the smallest runnable count (N_G / 2:
    A 1, B 1, C 1 on the a100 pool of 4), then the free GPU goes to the largest DP-throughput gain per GPU
    relative to the job's N_G throughput: A 1 -> 3 needs 2 GPUs (only 1 free), B 1 -> 2 gains (160 - 100)
    / 160 = 0.375, C 1 -> 2 gains (160 - 100) / 100 = 0.6: C grows."""
    a, b, c = (ElasticJobSpec(k, t, "both", gpus=g, batch=64) for k, t, g in (("a", 0, 3), ("b", 60, 2), ("c", 120, 1)))
    out = _round(_policy([a, b, c], tiny_cluster(a100_machines=1), name="elasticflow-ls"), [a, b, c], {})
    assert {k: int(v.sum()) for k, v in out.items()} == {"a": 1, "b": 1, "c": 2}
    assert all(v[1] == 0 for v in out.values())  # all on the a100 pool (their fastest type at N_G)
