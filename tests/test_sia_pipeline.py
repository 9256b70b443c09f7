"""Sia's pipeline (scale-unit) jobs (artist/policies/sia/pipeline.py): the GPipe step by hand, the shipped
GPT table by hand, options only in whole replicas worth P at the row minimum, the ILP with a scale-unit job
against brute force, and the placer never splitting a replica contrary to the rule."""

from types import SimpleNamespace

import numpy as np
import pytest

from artist.errors import InputError
from artist.policies.sia.configs import TypeShape, configurations, type_shapes
from artist.policies.sia.ilp import LAMBDA, P, objective, solve
from artist.policies.sia.matrix import Option, job_options
from artist.policies.sia.pipeline import (PipelineJob, PipelineType, check_type, gpipe_iteration_seconds,
                                          gpt_pmp_job, read_pipeline_table, replicas_on_nodes, throughput)
from artist.policies.sia.placer import Placer, Request
from artist.policies.sia.scheduler import SiaScheduler
from tests.test_sia import _brute_force, _check_rules


def _pview(job, current=None, gpu_type="", age=0.0, restarts=0):
    return SimpleNamespace(job_id="pp", pipeline=job, agents={}, current=np.zeros(0) if current is None else current,
                           gpu_type=gpu_type, age=age, restarts=restarts, restart_seconds=30.0, category="adaptive",
                           min_gpus=0, gpus_wanted=0, profile=None, restarting=False)


def test_gpipe_iteration_by_hand():
    # 4 stages, 3 micro-batches, forward 0.5 s per micro-batch per stage, backward 2 x forward:
    # fill (P - 1) + steady n_micro forward slots, times 3 for forward + backward: 3 x (3 + 3) x 0.5 = 9 s
    assert gpipe_iteration_seconds(4, 3, 0.5, 0.2) == pytest.approx(9.2)
    pt = PipelineType(4, {2: 0.5}, {(1, 8): 0.2, (2, 16): 0.7})
    job = PipelineJob({"x": pt}, microbatches=3, micro_batch_size=2)
    # 2 replicas x 2 samples x 3 micro-batches per 9.2 s
    assert throughput(job, "x", 1, 8) == pytest.approx(12 / 9.2)
    assert throughput(job, "x", 2, 16) == pytest.approx(4 * 2 * 3 / 9.7)
    assert throughput(job, "x", 1, 6) == 0.0     # not a whole number of replicas
    assert throughput(job, "x", 1, 4) == 0.0     # one replica on one node: not in the table, not valid


def test_shipped_gpt_tables_by_hand():
    job = gpt_pmp_job()
    assert {t: pt.stages for t, pt in job.types.items()} == {"a100": 2, "rtx": 8}
    # artifact row "1,0.144,0.01617,1,2": one 2-stage replica on A100, 48 micro-batches of 1
    assert throughput(job, "a100", 1, 2) == pytest.approx(48 / (3 * (1 + 48) * 0.144 + 0.01617))
    # "1,0.099,0.435,2,16": two 8-stage replicas on two RTX nodes
    assert throughput(job, "rtx", 2, 16) == pytest.approx(2 * 48 / (3 * (7 + 48) * 0.099 + 0.435))


def test_options_are_whole_replicas_and_the_row_minimum_is_worth_p():
    shapes = type_shapes([8, 8, 8, 8], ["a100", "a100", "rtx", "rtx"])
    configs = configurations(shapes)
    job = gpt_pmp_job()
    opts = job_options(0, _pview(job), shapes, configs, P)
    got = {(o.config.gpu_type, o.config.gpus) for o in opts}
    # a100: 2 stages -> (1,2),(1,4),(1,8),(2,16); rtx: 8 stages -> (1,8),(2,16); no (1,1) anywhere
    assert got == {("a100", 2), ("a100", 4), ("a100", 8), ("a100", 16), ("rtx", 8), ("rtx", 16)}
    raw = {(o.config.gpu_type, o.config.gpus): throughput(job, o.config.gpu_type, o.config.nodes, o.config.gpus)
           for o in opts}
    low = min(raw, key=raw.get)
    assert low == ("a100", 2)                       # one A100 replica is the slowest option
    for o in opts:   # G = P_min x raw / raw_min (P_min = 2 GPUs of the weakest option), then ** p, 2 decimals
        key = (o.config.gpu_type, o.config.gpus)
        assert o.value == pytest.approx(round((2 * raw[key] / raw[low]) ** P, 2))
    with pytest.raises(ValueError, match="neither divides"):
        check_type("t4", 3, 4)


@pytest.mark.parametrize("seed", range(8))
def test_ilp_with_a_scale_unit_job_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    shapes = {"A": TypeShape(int(rng.integers(1, 3)), 4), "B": TypeShape(int(rng.integers(1, 3)), 8)}
    configs = configurations(shapes)
    # the pipeline job: 2 stages on A, 8 on B, sync growing with nodes (invented numbers)
    sync = {(n, g): 0.01 * g + 0.3 * (n - 1) for n in range(1, 3) for g in range(1, 17)}
    job = PipelineJob({"A": PipelineType(2, {1: float(rng.uniform(0.05, 0.2))}, sync),
                       "B": PipelineType(8, {1: float(rng.uniform(0.05, 0.2))}, sync)}, microbatches=8)
    jobs = int(rng.integers(2, 6))
    options = list(job_options(0, _pview(job), shapes, configs, P))
    assert options and all(o.config.gpus % job.types[o.config.gpu_type].stages == 0 for o in options)
    for i in range(1, jobs):
        take = rng.choice(len(configs), size=int(rng.integers(1, 5)), replace=False)
        for k in sorted(take):
            options.append(Option(i, configs[k], configs[k].gpus, round(float(rng.uniform(1, 12)) ** P, 2)))
    free = {t: s.gpus for t, s in shapes.items()}
    chosen = solve(options, jobs, free, P, LAMBDA)
    assert objective(options, chosen, jobs, P, LAMBDA) == pytest.approx(_brute_force(options, jobs, free, P, LAMBDA))
    for k in chosen:
        if options[k].job == 0:
            assert options[k].config.gpus % job.types[options[k].config.gpu_type].stages == 0


def _check_replicas(row, stages, capacity):
    per = capacity[int(np.flatnonzero(row)[0])]
    for nodes in replicas_on_nodes(row, stages):
        if stages <= per:
            assert len(nodes) == 1, f"replica split over nodes {nodes}"
        else:
            assert len(nodes) == stages // per and all(row[i] == capacity[i] for i in nodes)


@pytest.mark.parametrize("seed", range(15))
def test_placer_never_splits_a_replica(seed):
    rng = np.random.default_rng(seed)
    shapes = {"t4": TypeShape(int(rng.integers(2, 5)), 4), "a100": TypeShape(int(rng.integers(1, 4)), 8)}
    capacity = [s.gpus_per_node for t, s in shapes.items() for _ in range(s.nodes)]
    node_types = [t for t, s in shapes.items() for _ in range(s.nodes)]
    configs = configurations(shapes)
    stages = {"t4": int(rng.choice([2, 4, 8])), "a100": int(rng.choice([2, 4, 8]))}
    placer = Placer(capacity, node_types)
    current: dict = {}
    for rnd in range(5):
        free = {t: s.gpus for t, s in shapes.items()}
        requests, kinds = [], {}
        for job in sorted(current):
            c, row, kind = current[job]
            if rng.random() < 0.6 and free[c.gpu_type] >= c.gpus:
                free[c.gpu_type] -= c.gpus
                requests.append(Request(job, c, row, c.gpu_type))
                kinds[job] = kind
        for k in range(int(rng.integers(1, 7))):
            pipeline = rng.random() < 0.5
            pool = [c for c in configs if not pipeline or c.gpus % stages[c.gpu_type] == 0]
            c = pool[int(rng.integers(len(pool)))]
            if free[c.gpu_type] >= c.gpus:
                free[c.gpu_type] -= c.gpus
                job = f"r{rnd}j{k}"
                requests.append(Request(job, c))
                kinds[job] = "pp" if pipeline else "dp"
        placed, _ = placer.place(requests)
        _check_rules(capacity, node_types, requests, placed)
        for r in requests:
            if kinds[r.job_id] == "pp" and placed[r.job_id].any():
                _check_replicas(placed[r.job_id], stages[r.config.gpu_type], capacity)
        current = {r.job_id: (r.config, placed[r.job_id], kinds[r.job_id]) for r in requests if placed[r.job_id].any()}


def test_sia_scheduler_places_pipeline_jobs_in_whole_replicas():
    capacity, types = [8, 8, 8, 8], ["a100", "a100", "rtx", "rtx"]
    sched = SiaScheduler(capacity, types)
    views = [SimpleNamespace(**{**vars(_pview(gpt_pmp_job())), "job_id": f"g{i}", "current": np.zeros(4, int)})
             for i in range(3)]
    out = sched.allocate(views)
    assert sum(int(r.sum()) > 0 for r in out.values()) == 3      # p < 0: every job that fits is placed
    for r in out.values():
        kinds = {types[i] for i in np.flatnonzero(r)}
        assert len(kinds) == 1
        _check_replicas(r, gpt_pmp_job().types[kinds.pop()].stages, capacity)
    assert np.all(sum(out.values()) <= np.array(capacity))
    again = SiaScheduler(capacity, types).allocate(views)
    assert all(np.array_equal(out[k], again[k]) for k in out)    # deterministic


def test_bad_pipeline_table_is_one_clear_line(tmp_path):
    bad = tmp_path / "t.csv"
    bad.write_text("local_bsz,step_time,sync_time,num_nodes,num_replicas\n1,0.1,0.2,1,3\n")
    with pytest.raises(InputError, match=r"line 2.*not a multiple of 2 stages"):
        read_pipeline_table(bad, 2)
    bad.write_text("local_bsz,step_time\n1,0.1\n")
    with pytest.raises(InputError, match="header"):
        read_pipeline_table(bad, 2)


# ---- ArtISt's own 1F1B step as the time model -------------------------------------------------------
class _ZeroComm:
    """A fabric whose communication is free: only the compute nodes take time."""

    def time(self, graphs):
        from artist.network.base import CommResult, GraphTiming
        return {k: GraphTiming.of(g, [n.seconds if n.kind == "compute" else 0.0 for n in g.nodes], CommResult("zero"))
                for k, g in graphs.items()}


def _a100_pool():
    from artist.elastic.cluster import CLUSTERS_DIR, load_cluster
    return load_cluster(CLUSTERS_DIR / "sia-hetero-64.yaml")


@pytest.mark.parametrize("nodes,gpus", [(1, 2), (1, 4), (2, 16)])
def test_one_f_one_b_with_free_communication_is_gpipe_without_the_all_reduce(nodes, gpus):
    from artist.elastic.pipeline_step import OneFOneBPipeline
    from artist.workload.zoo import zoo_model
    pool = _a100_pool().pools[_a100_pool().pool_of("a100")]
    pipe = OneFOneBPipeline(zoo_model("gpt3-2.7b"), 2, {1: 0.144}, pool.topology, _ZeroComm())
    # 1F1B and GPipe share the bubble: 3 x (n_micro + P - 1) x t_fwd = 3 x (8 + 1) x 0.144
    assert pipe.iteration_seconds(8, 1, nodes, gpus) == pytest.approx(3 * 9 * 0.144, rel=1e-9)
    assert pipe.iteration_seconds(8, 1, 1, 3) is None          # not whole replicas
    assert pipe.iteration_seconds(8, 2, 1, 2) is None          # no measured forward at micro-batch 2


def test_one_f_one_b_gpt_job_on_the_network_and_in_sia():
    from artist.elastic.pipeline_step import gpt_pmp_1f1b_job
    cluster = _a100_pool()
    job = gpt_pmp_1f1b_job(cluster, microbatches=8)
    assert set(job.types) == {"a100", "rtx"}                   # t4: no measured forward, not a type of the job
    free = 3 * (8 + 1) * 0.144
    one, two = job.types["a100"].iteration_seconds(8, 1, 1, 2), job.types["a100"].iteration_seconds(8, 1, 2, 16)
    assert free < one < two            # sends cost something; the all-reduce over 2 DGX nodes more
    sched = SiaScheduler(cluster.capacity, cluster.node_types)
    empty = np.zeros(len(cluster.capacity), int)
    views = [SimpleNamespace(**{**vars(_pview(job)), "job_id": f"g{i}", "current": empty}) for i in range(2)]
    out = sched.allocate(views)
    for r in out.values():
        kinds = {cluster.node_types[i] for i in np.flatnonzero(r)}
        assert len(kinds) == 1 and kinds <= {"a100", "rtx"}
        _check_replicas(r, job.types[kinds.pop()].stages, cluster.capacity)
