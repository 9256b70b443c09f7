"""Sia's heterogeneous finish-time fairness (artist/elastic/fairness_hetero.py) on a tiny case by hand."""

from types import SimpleNamespace

import numpy as np
import pytest

from artist.elastic.fairness_hetero import IsolatedTimes, contention, fairness_fields, hetero_rho, job_rhos
from artist.elastic.spec import ElasticSpec, LocalBatchLimit
from artist.perf.efficiency import EpochCurve, GradientNoiseReplay

T = {"A": 1.0, "B": 2.0}           # seconds per sample of local batch on one GPU of each type (invented)
WORK = 10.0                        # M0-equivalent steps to finish (one epoch)


class LinearTimer:
    """Compute only: t_g x m per pass, (s + 1) passes; records the placements asked."""

    def __init__(self):
        self.shapes = []

    def seconds(self, app, gpu_type, per_node, m, s):
        self.shapes.append((gpu_type, tuple(per_node)))
        return T[gpu_type] * m * (s + 1), T[gpu_type] * m


def _job(job_id, arrival, finish, category="strong", gpus=0):
    # one measured batch (M0 = 12) with no gradient signal: efficiency 1, one step at batch 12 = 1 M0-step
    curve = EpochCurve(12, np.array([WORK]), np.array([0.0]), np.array([0.0]), np.array([1.0]))
    replay = GradientNoiseReplay({12: curve})
    limits = {t: LocalBatchLimit(1, 12) for t in T}
    return SimpleNamespace(spec=SimpleNamespace(job_id=job_id, arrival=arrival, app="x", gpus=gpus), finish=finish,
                           elastic=ElasticSpec(12, 12, limits, fixed_batch=12), app=SimpleNamespace(replay=replay),
                           category=category)


def test_contention_is_the_exact_mean_number_of_jobs_in_the_system():
    # job 1 [0, 100), job 2 [50, 130): job 1 sees 1 job for 50 s then 2 for 50 s -> 1.5; job 2 sees 2 for
    # 50 s then 1 for 30 s -> 130 / 80 = 1.625
    assert contention([0, 50], [100, 130]).tolist() == pytest.approx([1.5, 1.625])
    with pytest.raises(ValueError):
        contention([0], [0])


def test_hetero_rho_by_hand_on_two_types():
    # cluster: 4 GPUs of A (one machine) + 2 of B (one machine), N = 6. A fixed batch of 12 on k GPUs takes
    # 12 t_g / k seconds per step (m = 12 / k), so the rate alone is share / (12 t_g) also between whole
    # GPU counts (linear interpolation) and T_iso_g = WORK x 12 t_g / share_g, share_g = N_g / N_avg.
    timer = LinearTimer()
    iso = IsolatedTimes(timer, {"A": 4, "B": 2}, {"A": 4, "B": 2})
    jobs = [_job("j1", 0.0, 100.0), _job("j2", 50.0, 130.0)]
    result = SimpleNamespace(jobs=jobs, isolated=iso)
    rhos = job_rhos(result, iso)
    # j1: N_avg 1.5 -> shares A 8/3, B 4/3; T_iso A = 120 / (8/3) = 45 s, B = 240 / (4/3) = 180 s;
    # rho = 4/6 x 100/45 + 2/6 x 100/180 = 1.6667
    assert rhos["j1"] == pytest.approx(4 / 6 * 100 / 45 + 2 / 6 * 100 / 180)
    # j2: JCT 80, N_avg 1.625 -> shares A 4/1.625, B 2/1.625
    t_a, t_b = 120 / (4 / 1.625), 240 / (2 / 1.625)
    assert rhos["j2"] == pytest.approx(4 / 6 * 80 / t_a + 2 / 6 * 80 / t_b)
    assert ("A", (2,)) in timer.shapes and ("A", (3,)) in timer.shapes   # consolidated on one machine
    fields = fairness_fields(result)
    assert fields["ftf_hetero_worst"] == pytest.approx(max(rhos.values()))
    assert fields["ftf_hetero_unfair_fraction"] == 1.0                    # both rho > 1
    assert fairness_fields(SimpleNamespace(jobs=jobs)) == {}              # no IsolatedTimes: no fields


def test_share_below_one_gpu_and_rigid_jobs_time_share():
    iso = IsolatedTimes(LinearTimer(), {"A": 4, "B": 2}, {"A": 4, "B": 2})
    job = _job("s", 0.0, 10.0)
    # share 0.5 of B: half of one GPU -> 2 x (WORK x 12 x 2) = 480 s
    assert iso.seconds(job, "B", 0.5) == pytest.approx(480.0)
    rigid = _job("r", 0.0, 10.0, category="rigid", gpus=3)
    # rigid on its 3 GPUs of A: 4 s per step -> 40 s; with a share of 1.5 it gets half the time: 80 s
    assert iso.seconds(rigid, "A", 4.0) == pytest.approx(40.0)
    assert iso.seconds(rigid, "A", 1.5) == pytest.approx(80.0)
    assert iso.seconds(rigid, "B", 2.0) is None                            # B has only 2 GPUs
    # its rho then weighs A alone: JCT 10 over T_iso A
    assert hetero_rho(10.0, {"A": 40.0}, {"A": 4, "B": 2}) == pytest.approx(0.25)


def test_the_summary_of_a_multi_type_run_reports_hetero_ftf():
    from artist.elastic.applications import heterogeneous_applications
    from artist.elastic.exact import simulate_elastic
    from artist.elastic.jobs import ElasticJobSpec
    from artist.policies.sia.scheduler import SiaScheduler
    from tests.sia_helpers import small_cluster, timer_for

    cluster = small_cluster()
    apps = {k: v for k, v in heterogeneous_applications().items() if k == "ncf"}
    jobs = [ElasticJobSpec("a", 0.0, "ncf"), ElasticJobSpec("b", 0.0, "ncf")]
    timer = timer_for(cluster, apps)
    result = simulate_elastic(cluster, jobs, apps, timer, SiaScheduler(cluster.capacity, cluster.node_types))
    assert "ftf_hetero_worst" not in result.summary()
    result.isolated = IsolatedTimes(timer, {p.gpu_type: p.topology.gpus for p in cluster.pools},
                                    {p.gpu_type: p.topology.gpus_per_machine for p in cluster.pools})
    summary = result.summary()
    rhos = job_rhos(result, result.isolated)
    assert set(rhos) == {"a", "b"}
    assert summary["ftf_hetero_worst"] == pytest.approx(max(rhos.values()))
    assert summary["ftf_hetero_unfair_fraction"] == pytest.approx(np.mean([r > 1 for r in rhos.values()]))
    # two identical jobs arriving together, finishing together: the same contention, the same rho
    assert rhos["a"] == pytest.approx(rhos["b"]) and 0 < rhos["a"] < 100
