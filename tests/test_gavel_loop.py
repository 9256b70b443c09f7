"""Gavel+TunedJobs in the elastic loop (artist/policies/gavel/policy.py, artist/elastic/profiling.py):
profiled throughputs by hand, the loop's (m, s), a lone job by hand, a small run within capacity and
repeatable, several GPU types, and refusals."""

from types import SimpleNamespace

import numpy as np
import pytest
from elastic_helpers import csv_rows, measured_compute, t4_cluster, t4_step_timer

from artist.elastic.applications import POLLUX_DIR, pollux_applications
from artist.elastic.profiling import IsolatedProfiler
from artist.elastic.spec import fixed_batch_config
from artist.elastic.exact import simulate_elastic
from artist.elastic.jobs import ElasticJobSpec
from artist.policies.gavel.policy import GavelPolicy
from artist.policies.gavel.rounds import GAVEL_ROUND_SECONDS



@pytest.fixture(scope="module")
def timer():
    return t4_step_timer()


def _gavel(capacity, jobs, timer, **kw):
    profiler = IsolatedProfiler(timer, pollux_applications(), jobs, {"t4": 4})
    return GavelPolicy(capacity, ["t4"] * len(capacity), profiler, **kw)


def test_profiled_throughput_is_the_batch_over_the_measured_step_by_hand(timer):
    """cifar10 on 1 T4 at batch 128 = M0: m = 128, s = 0, one GPU so no sync: 128 / compute(128)."""
    jobs = [ElasticJobSpec("j", 0.0, "cifar10", gpus=1, batch=128)]
    profiler = IsolatedProfiler(timer, pollux_applications(), jobs, {"t4": 4})
    c91, c129 = measured_compute("cifar10", 91), measured_compute("cifar10", 129)
    c128 = c91 + 37 / 38 * (c129 - c91)
    assert profiler.throughput("j", "t4", 1) == pytest.approx(128 / c128, rel=1e-9)
    # the Pollux applications carry T4 tables only: no compute measured on rtx, so the job cannot run there
    assert IsolatedProfiler(timer, pollux_applications(), jobs, {"rtx": 8}).throughput("j", "rtx", 1) == 0.0
    with pytest.raises(ValueError, match="GPUs per node unknown"):
        profiler.throughput("j", "a100", 1)


def test_a_lone_job_under_gavel_takes_its_hand_time(timer):
    """The Tiresias hand case (tests/test_elastic_simulation.py) under Gavel in 360 s rounds: picked in
    the first round, kept every round after, so (total progress) x compute(128), no restart."""
    jobs = [ElasticJobSpec("j", 0.0, "cifar10", gpus=1, batch=128)]
    job = simulate_elastic(t4_cluster(1, 2), jobs, {"cifar10": pollux_applications()["cifar10"]}, timer,
                           _gavel([2], jobs, timer), round_seconds=GAVEL_ROUND_SECONDS).jobs[0]
    total = min(float(csv_rows(p)[-1]["progress"]) for p in sorted((POLLUX_DIR / "cifar10").glob("validation-*.csv")))
    c91, c129 = measured_compute("cifar10", 91), measured_compute("cifar10", 129)
    c128 = c91 + 37 / 38 * (c129 - c91)
    assert job.finish == pytest.approx(total * c128, rel=1e-9)
    assert job.progress.restarts == 0 and {g for _, g, _, _ in job.gpu_rounds} == {1}


def _workload(n):
    rows = csv_rows(POLLUX_DIR / "workloads" / "workload-6.csv")[:n]
    return [ElasticJobSpec(r["name"], float(r["time"]), r["application"], gpus=int(r["num_replicas"]),
                           batch=int(r["batch_size"])) for r in rows]


def _small_run(timer, objective):
    jobs = _workload(14)
    capacity = [4, 4, 4, 4]
    policy = _gavel(capacity, jobs, timer, objective=objective)
    return simulate_elastic(t4_cluster(4), jobs, pollux_applications(), timer, policy,
                            round_seconds=GAVEL_ROUND_SECONDS), policy


@pytest.mark.parametrize("objective", ["max_sum_throughput", "max_min_fairness"])
def test_a_small_workload_finishes_within_capacity_repeatably(timer, objective):
    result, policy = _small_run(timer, objective)
    per_round = {}
    for job in result.jobs:
        assert job.progress.progress == pytest.approx(job.app.replay.total_progress)
        assert {g for _, g, _, _ in job.gpu_rounds} == {job.spec.gpus}   # always its own GPU count
        # the loop ran the (m, s) the profiler measured
        spec = pollux_applications()[job.spec.app][1]
        assert (job.local_batch, job.accum_steps) == fixed_batch_config(job.spec.batch, job.spec.gpus, spec, "t4")
        for t, gpus, *_ in job.gpu_rounds:
            assert t % GAVEL_ROUND_SECONDS == 0
            per_round[t] = per_round.get(t, 0) + gpus
    assert max(per_round.values()) <= 16
    assert policy.lp_seconds and all(s >= 0 for s in policy.lp_seconds)
    again, _ = _small_run(timer, objective)
    assert [(j.spec.job_id, j.finish, j.progress.restarts) for j in result.jobs] == \
        [(j.spec.job_id, j.finish, j.progress.restarts) for j in again.jobs]


class _TableProfiler:
    def __init__(self, table):
        self.table, self.calls = table, []

    def throughput(self, job_id, gpu_type, gpus):
        self.calls.append((job_id, gpu_type, gpus))
        return self.table[job_id][gpu_type]


def _view(job_id, gpus, current, submitted=0.0, age=0.0):
    return SimpleNamespace(job_id=job_id, gpus_wanted=gpus, current=np.asarray(current), submitted=submitted,
                           age=age)


def test_several_gpu_types_each_job_on_nodes_of_one_type():
    """Two 4-GPU slow nodes and one 8-GPU fast node; max-sum puts the job with the larger relative
    speed-up (a: 5x) on the fast type and b (1.2x) on the slow one; placements are kept next round;
    each job is profiled once per type that can hold it."""
    table = {"a": {"slow": 1.0, "fast": 5.0}, "b": {"slow": 10.0, "fast": 12.0}, "c": {"slow": 2.0, "fast": 0.0}}
    profiler = _TableProfiler(table)
    policy = GavelPolicy([4, 4, 8], ["slow", "slow", "fast"], profiler)
    zeros = [0, 0, 0]
    views = [_view("a", 8, zeros), _view("b", 4, zeros, submitted=1.0), _view("c", 4, zeros, submitted=2.0)]
    out = policy.allocate(views)
    assert out["a"].tolist() == [0, 0, 8]
    assert sorted([out["b"].tolist(), out["c"].tolist()]) == [[0, 4, 0], [4, 0, 0]]
    assert policy.allocation[0].tolist() == pytest.approx([0, 1])
    again = policy.allocate([_view(v.job_id, v.gpus_wanted, out[v.job_id], v.submitted, 360.0) for v in views])
    assert all(again[k].tolist() == out[k].tolist() for k in out)
    assert sorted(profiler.calls) == [("a", "fast", 8), ("a", "slow", 8), ("b", "fast", 4), ("b", "slow", 4),
                                      ("c", "fast", 4), ("c", "slow", 4)]
    assert len(policy.lp_seconds) == 1                    # same jobs: X not recomputed


def test_jobs_gavel_cannot_run_are_refused(timer):
    policy = GavelPolicy([4], ["t4"], _TableProfiler({"x": {"t4": 1.0}, "z": {"t4": 0.0}}))
    with pytest.raises(ValueError, match="job y: it can run on no GPU type"):
        policy.allocate([_view("y", 8, [0])])
    with pytest.raises(ValueError, match="job z: it can run on no GPU type"):
        policy.allocate([_view("z", 1, [0])])
    with pytest.raises(ValueError, match="gpus_wanted"):
        policy.allocate([_view("x", 0, [0])])
    with pytest.raises(ValueError, match="objective must be one of"):
        GavelPolicy([4], ["t4"], policy.profiler, objective="fifo")
    with pytest.raises(ValueError, match="node types"):
        GavelPolicy([4, 4], ["t4"], policy.profiler)
    assert policy.allocate([]) == {}


def test_a_bad_profiled_value_is_refused_and_gavel_never_imports_the_network():
    import ast
    from pathlib import Path

    from artist.policies.gavel.throughputs import throughput_matrix
    with pytest.raises(ValueError, match="job q on t4: profiled throughput must be finite"):
        throughput_matrix([("q", 1)], ["t4"], [4], _TableProfiler({"q": {"t4": float("nan")}}))
    package = Path(__file__).resolve().parent.parent / "artist" / "policies" / "gavel"
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not [n for n in names if n.startswith(("artist.network", "artist.elastic.steptime"))], path.name


def test_profiles_in_iterations_and_under_a_goodput_slowdown_by_hand(timer):
    """The Sia artifact's Gavel reads iterations per second, each divided by its application's slowdown: the
    same step, 1 / step and 1 / (step x 1.8) for cifar10 (rules.SIA_SLOWDOWNS)."""
    jobs = [ElasticJobSpec("j", 0.0, "cifar10", gpus=1, batch=128)]
    samples = IsolatedProfiler(timer, pollux_applications(), jobs, {"t4": 4}).throughput("j", "t4", 1)
    per_iteration = IsolatedProfiler(timer, pollux_applications(), jobs, {"t4": 4}, unit="iterations",
                                     slowdowns={"cifar10": 1.8}).throughput("j", "t4", 1)
    assert per_iteration == pytest.approx(samples / 128 / 1.8, rel=1e-12)
    with pytest.raises(ValueError, match="unit"):
        IsolatedProfiler(timer, pollux_applications(), jobs, {"t4": 4}, unit="bytes")


@pytest.mark.parametrize("param, value", [("solver", "magic"), ("leases", "nope"), ("throughput", "bytes"),
                                          ("normalise", "maybe")])
def test_a_bad_gavel_setting_is_one_line_naming_the_field(tmp_path, param, value):
    from pathlib import Path

    from artist.errors import InputError
    from artist.sweep.spec import load_sweep_spec

    root = Path(__file__).resolve().parents[1]
    spec = {"name": "g", "topology": str(root / "topologies/clusters/sia-hetero-64.yaml"),
            "elastic": {"applications": str(root / "workloads/sia")},
            "policies": [{"name": "gavel", "params": {"tuned_jobs": True, param: value}}],
            "workloads": [{"spec": str(root / "workloads/sia/workloads/philly/workload-1.csv"), "label": "p",
                           "first": 4}], "comm": "analytical"}
    with pytest.raises(InputError) as exc:
        load_sweep_spec(tmp_path / "g.yaml", data=spec)
    assert "field 'policies[0].params'" in str(exc.value) and param.rstrip("e") in str(exc.value)
    assert "\n" not in str(exc.value)
