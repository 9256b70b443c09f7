"""Crius (artist/policies/crius/): stage cuts, the pipeline formula, the memory filter, the ground truth,
the search depth and determinism, each against a hand computation or an independent count."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from artist.crius.simulation import crius_fabrics
from artist.crius.truth import GroundTruth, true_step_seconds
from artist.network.analytical import AnalyticalModel
from artist.placement import Placement
from artist.policies.crius.catalogue import stage_counts
from artist.policies.crius.cells import (
    Cell, CellModel, StagePlan, estimate_cell_model, pipeline_latency,
)
from artist.policies.crius.cluster import GIB, PoolAllocator, crius_cluster
from artist.policies.crius.commtable import CommTable
from artist.policies.crius.jobs import JobRun, JobSpec
from artist.policies.crius.scheduler import CriusScheduler
from artist.policies.crius.stages import OperatorChain, cut_points, cut_stages, power_of_two_gpus
from artist.policies.crius.tuning import half_space
from artist.workload.zoo import zoo_model


@pytest.fixture(scope="module")
def testbed():
    pools = crius_cluster("crius-testbed")
    fabrics = {t: AnalyticalModel(p.topology) for t, p in pools.items()}
    tables = {t: CommTable(p.topology, fabrics[t]) for t, p in pools.items()}
    return pools, fabrics, tables


# ---- stage cuts ---------------------------------------------------------------------------------------

def test_cuts_go_to_the_smallest_traffic_boundaries():
    # 6 equal operators; boundaries carry 5, 1, 5, 1, 5 bytes: 3 stages cut at the two 1-byte boundaries.
    chain = OperatorChain((1.0,) * 6, (5.0, 1.0, 5.0, 1.0, 5.0))
    assert cut_points(chain, 3) == (1, 3)
    stages = cut_stages(chain, gpus=4, stages=3)
    assert [(s.first, s.last) for s in stages] == [(0, 1), (2, 3), (4, 5)]
    # shares 4/3 each: start 1,1,1; the one GPU left doubles the first (ties: lowest index)
    assert [s.gpus for s in stages] == [2, 1, 1]
    assert [s.share for s in stages] == pytest.approx([4 / 3] * 3)


def test_traffic_beats_balance_and_balance_breaks_ties():
    # cutting after operator 0 moves 1 byte and leaves 1 | 3 FLOPs; any other cut moves 9 bytes
    assert cut_points(OperatorChain((1.0,) * 4, (1.0, 9.0, 9.0)), 2) == (0,)
    # all boundaries equal: the cut whose largest stage is smallest: 4 | 1+1+1+1
    assert cut_points(OperatorChain((4.0, 1.0, 1.0, 1.0, 1.0), (2.0,) * 4), 2) == (0,)


def test_every_stage_holds_flops():
    # an embedding-like 0-FLOP operator cannot be a stage alone
    chain = OperatorChain((0.0, 1.0, 1.0), (1.0, 5.0))
    assert cut_points(chain, 2) == (1,)
    with pytest.raises(ValueError, match="cannot make 3 stages"):
        cut_points(chain, 3)


def test_power_of_two_rounding_by_hand():
    # shares 0.5, 5.5, 2 of 8: 1,1,1 -> 1,2,1 -> 1,4,1 -> 1,4,2 -> the last GPU fits only a 1-GPU stage: 2,4,2
    assert power_of_two_gpus((0.5, 5.5, 2.0), 8) == (2, 4, 2)
    with pytest.raises(ValueError, match="power of two"):
        power_of_two_gpus((1.0, 1.0), 6)


def test_stage_counts_are_powers_of_two_up_to_n_g():
    assert stage_counts(8, 16, 32) == [1, 2, 4, 8]
    assert stage_counts(8, 4, 32) == [1, 2, 4]  # never more stages than GPUs
    assert stage_counts(16, 16, 8) == [1, 2, 4, 8]  # nor than blocks


# ---- the formula and the estimate ----------------------------------------------------------------------

def test_pipeline_latency_formula_by_hand():
    # T = 2, 3, 1 with boundary comm 0, 0.5, 0.2; B = 12: 6 + 11 x (3 - 0.5) = 33.5
    assert pipeline_latency([2.0, 3.0, 1.0], [0.0, 0.5, 0.2], 12) == pytest.approx(33.5)
    # one stage: B x T
    assert pipeline_latency([1.5], [0.0], 4) == pytest.approx(6.0)


def test_one_stage_dp_cell_by_hand(testbed):
    pools, fabrics, tables = testbed
    pool = pools["A40"]
    config = zoo_model("bert-0.76b")
    cm = CellModel(config, pool, tables["A40"], gpus=2, stages=1, global_batch=128)
    assert cm.microbatches == 4 and cm.micro_batch == 32
    flops = sum(layer.forward_flops for layer in config.layers_list())
    params = sum(layer.params for layer in config.layers_list())
    per_mb = 4 * flops * 16 / pool.gpu.achieved_flops  # fwd + 2 x bwd + recompute, 32 / 2 samples per GPU
    allreduce = tables["A40"].seconds("all_reduce", 2, params * 2)
    timing = cm.time((StagePlan(2, 1),))
    assert timing.latency_s == pytest.approx(4 * per_mb + allreduce, rel=1e-12)


def test_estimate_is_the_best_of_the_assembled_plans(testbed):
    pools, _, tables = testbed
    cm = CellModel(zoo_model("bert-1.3b"), pools["A40"], tables["A40"], gpus=8, stages=2, global_batch=256)
    est = estimate_cell_model(Cell("bert-1.3b", "A40", 8, 2), cm)
    assert est.assembled == 4 and est.profiles == 2
    plans = [(StagePlan(a, 4 // a), StagePlan(b, 4 // b)) for a in (1, 4) for b in (1, 4)]
    fitting = [cm.time(p).latency_s for p in plans if cm.time(p).fits]
    assert est.latency_s == pytest.approx(min(fitting))
    assert est.samples_per_s == pytest.approx(256 / min(fitting))


def test_memory_filter_refuses_what_the_weights_alone_do_not_fit(testbed):
    pools, _, tables = testbed
    config = zoo_model("bert-6.7b")
    # hand computation: mixed-precision Adam keeps 16 bytes per parameter (ZeRO sec. 3.1); 4-way TP holds
    # a quarter of them; that alone exceeds the A10's 24 GiB, before any activation
    params = config.total_params()
    assert params * 16 / 4 > 24 * GIB
    cm = CellModel(config, pools["A10"], tables["A10"], gpus=4, stages=1, global_batch=128)
    for plan in ((StagePlan(4, 1),), (StagePlan(1, 4),)):
        assert not cm.time(plan).fits
    assert not estimate_cell_model(Cell("bert-6.7b", "A10", 4, 1), cm).feasible
    # the same model on 32 A10 in 4 stages of 8-way TP: weights 16 x params / 32 fit
    big = CellModel(config, pools["A10"], tables["A10"], gpus=32, stages=4, global_batch=128)
    assert params * 16 / 32 < 24 * GIB
    assert estimate_cell_model(Cell("bert-6.7b", "A10", 32, 4), big).feasible


# ---- ground truth -------------------------------------------------------------------------------------

def test_ground_truth_of_one_dp_stage_by_hand(testbed):
    """One stage, d = 2 on one machine: 1F1B alternates forward (1 x) and backward (3 x) of 4 micro-batches
    on the same GPUs, then the gradient all-reduce, timed by the fabric on the real pair."""
    pools, fabrics, tables = testbed
    pool = pools["A10"]
    config = zoo_model("bert-0.76b")
    cm = CellModel(config, pool, tables["A10"], gpus=2, stages=1, global_batch=128)
    flops = sum(layer.forward_flops for layer in config.layers_list())
    params = sum(layer.params for layer in config.layers_list())
    gpus = (6, 7)
    allreduce = fabrics["A10"].collective_seconds(Placement(pool.topology, gpus), params * 2, "all_reduce")
    expected = 4 * 4 * flops * 16 / pool.gpu.achieved_flops + allreduce
    assert true_step_seconds(cm, (StagePlan(2, 1),), gpus, fabrics["A10"]) == pytest.approx(expected, rel=1e-9)


def test_ground_truth_pays_for_a_fragmented_placement(testbed):
    pools, fabrics, tables = testbed
    cm = CellModel(zoo_model("bert-1.3b"), pools["A40"], tables["A40"], gpus=4, stages=1, global_batch=128)
    plan = (StagePlan(1, 4),)  # 4-way TP: 96 all-reduces per micro-batch on the critical path
    packed = true_step_seconds(cm, plan, (0, 1, 2, 3), fabrics["A40"])
    spread = true_step_seconds(cm, plan, (0, 2, 4, 6), fabrics["A40"])  # one GPU per machine: all over IB
    assert spread > packed


# ---- tuning ---------------------------------------------------------------------------------------------

def test_half_space_keeps_the_estimate_side_of_sqrt_g(testbed):
    pools, _, tables = testbed
    cm = CellModel(zoo_model("bert-1.3b"), pools["A40"], tables["A40"], gpus=16, stages=1, global_batch=256)
    dp_half = {(p.d, p.t) for p in half_space(cm, 0, StagePlan(16, 1))}
    tp_half = {(p.d, p.t) for p in half_space(cm, 0, StagePlan(1, 16))}
    assert dp_half == {(16, 1), (8, 2), (4, 4)}
    assert tp_half == {(4, 4), (2, 8), (1, 16)}


# ---- scheduler: search depth -----------------------------------------------------------------------------

class _FakeCatalogue:
    """Every allocation fits; samples/s = G^0.9 (so shrinking a 2-GPU job to 1 loses 1 - 2^-0.9 of it)."""

    def crius_view(self, model, batch, n_g, gpu_type, gpus):
        return SimpleNamespace(samples_per_s=gpus ** 0.9)


def _running(job_id, n_g, alloc, arrival=0.0):
    return JobRun(JobSpec(job_id, arrival, "m", 128, n_g, "A", 100), alloc=alloc)


def _scenario():
    # 8 GPUs, four 2-GPU jobs running; a 4-GPU job arrives: its smallest option (2 GPUs) needs two
    # shrink moves (each frees one GPU), its larger ones more
    jobs = [_running(f"r{k}", 2, ("A", 2)) for k in range(4)]
    jobs.append(JobRun(JobSpec("new", 1.0, "m", 128, 4, "A", 100)))
    return jobs


@pytest.mark.parametrize("depth,placed", [(0, False), (1, False), (2, True), (3, True)])
def test_search_depth_bounds_the_scaling_moves(depth, placed):
    sched = CriusScheduler(_FakeCatalogue(), {"A": 8}, depth=depth)
    state = sched.decide(_scenario())
    assert ("new" in state) == placed
    assert all(n <= depth for n in sched.moves_made)
    assert sum(g for _, g in state.values()) <= 8
    if placed:
        shrunk = [j for j, a in state.items() if j != "new" and a == ("A", 1)]
        # the 4 GPUs the new job gets come from exactly as many 1-GPU shrinks as moves made
        assert len(shrunk) == sched.moves_made[0] == state["new"][1] - 0
        assert state["new"][1] == sched.moves_made[0]


def test_opportunistic_job_is_suspended_for_the_blocked_one():
    sched = CriusScheduler(_FakeCatalogue(), {"A": 8}, depth=1)
    # 8 GPUs, a 4-GPU job running; the head job (N_G 16: at least 8 GPUs) needs 4 more, which one move
    # cannot free (shrinking the runner frees 2): it waits, and a later 2-GPU job runs opportunistically
    runner = _running("runner", 4, ("A", 4))
    head = JobRun(JobSpec("head", 0.0, "m", 128, 16, "A", 100))
    late = JobRun(JobSpec("late", 1.0, "m", 128, 2, "A", 100))
    state = sched.decide([runner, head, late])
    assert "head" not in state and "late" in state and late.opportunistic
    # the runner leaves: the head job suspends the opportunistic one (one move) and takes all 8 GPUs
    late.alloc = state["late"]
    state = sched.decide([head, late])
    assert state == {"head": ("A", 8)}
    assert not late.opportunistic


# ---- simulation: determinism and costs ---------------------------------------------------------------------

def _small_run(policy):
    from artist.policies.crius.catalogue import Catalogue
    from artist.crius.simulation import simulate
    from artist.crius.workload import crius_jobs

    pools = crius_cluster("crius-testbed")
    cat = Catalogue(pools, crius_fabrics(pools))
    jobs = crius_jobs(pools, cat, count=6, seed=3, arrivals_per_hour=12)
    return jobs, simulate(pools, jobs, policy, catalogue=cat)


def _outcome(result):
    return ([(j.spec.job_id, j.start, j.finish, j.restarts, j.alloc) for j in result.jobs], result.throughput,
            result.accuracy)


@pytest.mark.parametrize("policy", ["crius", "elasticflow-ls"])
def test_simulation_is_deterministic_and_finishes_every_job(policy):
    jobs_a, a = _small_run(policy)
    jobs_b, b = _small_run(policy)
    assert jobs_a == jobs_b
    assert _outcome(a) == _outcome(b)
    assert all(j.finish is not None and j.finish >= j.spec.arrival for j in a.jobs)
    # work conservation: every job did exactly its iterations
    assert all(j.done == j.spec.iterations for j in a.jobs)


def test_unknown_cluster_and_policy_are_refused():
    with pytest.raises(KeyError, match="neither a Crius cluster"):
        crius_cluster("nope")
    from artist.crius.simulation import make_policy
    with pytest.raises(ValueError, match="unknown policy"):
        make_policy("nope", None, {})


def test_allocator_packs_small_jobs_and_gives_back():
    pools = crius_cluster("crius-testbed")
    alloc = PoolAllocator(pools["A40"].topology)
    one = alloc.take(1)
    two = alloc.take(1)
    assert pools["A40"].topology.machine_of(one[0]) == pools["A40"].topology.machine_of(two[0])  # best fit
    assert alloc.take(33) is None
    alloc.give(one)
    with pytest.raises(ValueError, match="twice"):
        alloc.give(one)
    assert alloc.free_gpus == 31
    assert math.isclose(alloc.free_gpus + 1, 32)


def test_schedulers_never_see_the_network():
    """Crius and the baselines decide from the catalogue's estimates only: their modules import nothing
    of artist.network (the estimator's offline tables and the ground truth live in commtable.py / truth.py)."""
    import ast
    from pathlib import Path

    import artist.policies.crius as pkg

    root = Path(pkg.__file__).parent
    for name in ("scheduler.py", "baselines.py", "jobs.py"):
        tree = ast.parse((root / name).read_text())
        modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        modules |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert not any(m.startswith("artist.network") for m in modules), name
        assert not any(m.endswith(("truth", "commtable", "simulation")) for m in modules), name


CRIUS_WORKLOADS = "workloads: ['crius:jobs=5,arrivals_per_hour=10']\n"


@pytest.mark.parametrize("text,field", [
    ("name: x\ntopology: nope\n" + CRIUS_WORKLOADS + "seeds: [1]\npolicies: [crius]\n", "topology"),
    ("name: x\ntopology: crius-testbed\n" + CRIUS_WORKLOADS + "seeds: [1]\npolicies: [nope]\n", "policies"),
    ("name: x\ntopology: crius-testbed\nworkloads: ['crius:jobs=-1']\nseeds: [1]\npolicies: [crius]\n", "workloads"),
    ("name: x\ntopology: crius-testbed\n" + CRIUS_WORKLOADS + "seeds: []\npolicies: [crius]\n", "seeds"),
    ("name: x\ntopology: crius-testbed\n" + CRIUS_WORKLOADS + "seeds: [1]\npolicies: [crius]\nextra: 1\n", "extra"),
    ("name: x\ncluster: crius-testbed\njobs: 5\nseeds: [1]\npolicies: [crius]\n", "cluster"),
])
def test_sweep_spec_errors_name_file_and_field(tmp_path, capsys, text, field):
    """A spec of Crius' jobs (read as one by its workloads, no `loop:` written) with a bad field: one line,
    non-zero exit; a field of the older dialect says where it went."""
    from artist.cli import main

    path = tmp_path / "spec.yaml"
    path.write_text(text)
    assert main(["sweep", str(path), "--dry-run"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and f"field '{field}" in err


def test_gavel_baseline_places_jobs_at_their_own_count_within_capacity():
    """Gavel (artist/policies/gavel/) places jobs at their own N_G on any type, within every type's GPUs."""
    from artist.policies.crius.catalogue import Catalogue
    from artist.crius.simulation import make_policy
    from artist.crius.workload import crius_jobs

    pools = crius_cluster("crius-testbed")
    capacity = {t: p.gpus for t, p in pools.items()}
    cat = Catalogue(pools, crius_fabrics(pools))
    gavel = make_policy("gavel", cat, capacity)
    jobs = [JobRun(s) for s in crius_jobs(pools, cat, count=12, seed=5, arrivals_per_hour=100)]
    state = gavel.decide(jobs, 0.0)
    assert state
    assert all(g == next(j.spec.n_g for j in jobs if j.spec.job_id == jid) for jid, (_, g) in state.items())
    for t in capacity:
        assert sum(g for tt, g in state.values() if tt == t) <= capacity[t]


def test_philly_derived_jobs_keep_the_logs_arrivals_and_run_times():
    import json
    from datetime import datetime
    from pathlib import Path

    from artist.policies.crius.catalogue import Catalogue
    from artist.crius.workload import philly_jobs

    path = Path(__file__).resolve().parent / "data" / "traces" / "philly_cluster_job_log.json"
    log = json.loads(path.read_text())
    stamp = "%Y-%m-%d %H:%M:%S"
    # by hand from the log: jobs with a GPU attempt whose first start and last end are both logged
    done = {}
    for job in log:
        attempts = job.get("attempts") or []
        if attempts and attempts[0].get("start_time") and attempts[-1].get("end_time") and \
                any(d.get("gpus") for d in attempts[0].get("detail", [])):
            run = (datetime.strptime(attempts[-1]["end_time"], stamp)
                   - datetime.strptime(attempts[0]["start_time"], stamp)).total_seconds()
            done[job["jobid"]] = (datetime.strptime(job["submitted_time"], stamp), run)
    first = min(t for t, _ in done.values())
    pools = crius_cluster("crius-testbed")
    cat = Catalogue(pools, crius_fabrics(pools))
    jobs = philly_jobs(path, pools, cat, count=100, seed=2)
    assert len(jobs) == len(done)
    for spec in jobs:
        submitted, run = done[spec.job_id.split("-", 1)[1]]
        assert spec.arrival == pytest.approx((submitted - first).total_seconds())
        # iterations = run time / the true step on the packed request: within one step of the log's run time
        plan = cat.run_plan(spec.model, spec.global_batch, spec.n_g, spec.gpu_type, spec.n_g, False)
        step = GroundTruth(cat.fabrics).seconds(plan, PoolAllocator(pools[spec.gpu_type].topology).take(spec.n_g))
        assert spec.iterations * step <= run + 1e-6 and (spec.iterations + 1) * step > run or spec.iterations == 1


# ---- baselines (hand cases on a fake catalogue) --------------------------------------------------------------

class _DPCatalogue:
    """Every allocation runs; DP throughput = G^0.9 for model 'm', G^0.5 for model 'flat' (scales badly)."""

    def run_plan(self, model, batch, n_g, gpu_type, gpus, tuned):
        return object()

    def dp_view(self, model, batch, gpu_type, gpus):
        return gpus ** (0.5 if model == "flat" else 0.9)


def _job(job_id, n_g, arrival, alloc=None, model="m"):
    return JobRun(JobSpec(job_id, arrival, model, 128, n_g, "A", 100), alloc=alloc)


def test_fcfs_blocks_behind_its_head():
    from artist.policies.crius.baselines import FCFS

    jobs = [_job("run", 4, 0.0, ("A", 4)), _job("head", 8, 1.0), _job("small", 1, 2.0)]
    state = FCFS(_DPCatalogue(), {"A": 8}).decide(jobs)
    assert state == {"run": ("A", 4)}  # 4 free GPUs: the 8-GPU head waits and so does the 1-GPU job behind it


def test_gandiva_grows_into_idle_gpus_and_shrinks_back_for_a_newcomer():
    from artist.policies.crius.baselines import Gandiva

    g = Gandiva(_DPCatalogue(), {"A": 8})
    state = g.decide([_job("a", 2, 0.0, ("A", 2))])
    assert state == {"a": ("A", 4)}  # 2 -> 2 N_G = 4: 4^0.9 > 2^0.9
    state = g.decide([_job("a", 2, 0.0, ("A", 4)), _job("b", 4, 1.0), _job("c", 2, 2.0)])
    # b (4 GPUs) fits in the 4 free; c needs 2 more: a shrinks back to its N_G of 2 and c takes them
    assert state == {"a": ("A", 2), "b": ("A", 4), "c": ("A", 2)}


def test_elasticflow_ls_admits_at_the_minimum_then_doubles_the_best_marginal_gain():
    from artist.policies.crius.baselines import ElasticFlowLS

    jobs = [_job("steep", 2, 0.0), _job("flat", 2, 1.0, model="flat")]
    state = ElasticFlowLS(_DPCatalogue(), {"A": 6}).decide(jobs)
    # both admitted at N_G / 2 = 1 (4 GPUs left). Gains per added GPU, normalised by the N_G = 2 throughput:
    # steep 1 -> 2: (2^0.9 - 1) / 2^0.9 = 0.464; flat 1 -> 2: (2^0.5 - 1) / 2^0.5 = 0.293 -> steep to 2 (3 left);
    # steep 2 -> 4: (4^0.9 - 2^0.9) / 2^0.9 / 2 = 0.433 > flat's 0.293 -> steep to 4 (1 left); flat 1 -> 2 fits.
    assert state == {"steep": ("A", 4), "flat": ("A", 2)}


def test_crius_pools_of_any_fabric_with_datasheet_gpus():
    """Crius' jobs on the Dally cluster: one A100 pool, memory per GPU the datasheet's (A100-SXM4-80GB);
    T4 (no datasheet figures here) is refused naming the file."""
    pools = crius_cluster("dally-3tier")
    assert list(pools) == ["A100"] and pools["A100"].memory_bytes == 80e9 and pools["A100"].gpus == 2 * 8 * 8
    assert crius_cluster("crius-testbed")["A10"].memory_bytes == 24 * GIB  # a cluster file's stated memory wins
    with pytest.raises(KeyError, match="pollux-t4.yaml: pool T4"):
        crius_cluster("pollux-t4")
    mixed = crius_cluster("hetero-a100-v100")  # racks of two types: a pool of each
    assert {t: (p.gpus, p.memory_bytes) for t, p in mixed.items()} == {"A100": (64, 80e9), "V100": (64, 32e9)}
