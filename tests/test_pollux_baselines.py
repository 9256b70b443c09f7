"""Optimus+Oracle against a brute-force optimum, Tiresias's placement, the oracle's remaining work by a
law (at M0 one iteration is one M0-equivalent step), and finish-time fairness by hand and by scaling."""

import numpy as np
import pytest

from artist.elastic.applications import pollux_applications
from artist.elastic.metrics import IsolatedRates, heterogeneous_rho
from artist.elastic.oracle import remaining_iterations
from artist.elastic.spec import ElasticSpec, LocalBatchLimit
from artist.policies.pollux.agent import PolluxAgent
from artist.policies.pollux.baselines import OptimusOracle, TiresiasRigid
from artist.policies.pollux.scheduler import JobView
from artist.policies.pollux.throughput import ThroughputParams

SPEC = ElasticSpec(initial_batch=64, max_batch=4096, local_batch={"t4": LocalBatchLimit(16, 256)})


def _job(i, rng, batch, remaining, most_gpus=8):
    agent = PolluxAgent(SPEC, "t4")
    agent.params = ThroughputParams(alpha_grad=rng.uniform(0.01, 0.1), beta_grad=rng.uniform(1e-4, 1e-3),
                                    alpha_local=rng.uniform(0.01, 0.05), beta_local=rng.uniform(1e-4, 5e-3),
                                    alpha_node=rng.uniform(0.05, 0.2), beta_node=rng.uniform(1e-3, 1e-2),
                                    gamma=rng.uniform(1, 3))
    agent.most_gpus = most_gpus
    return JobView(f"j{i}", agent, np.zeros(4, dtype=int), age=0.0, restarts=0, attained=0.0, submitted=float(i),
                   batch_wanted=batch, remaining_iterations=remaining)


class _TablePolicy(OptimusOracle):
    """Optimus's allocation over given step-time curves (the fitted model's part replaced by a table)."""

    def __init__(self, capacity, curves):
        super().__init__(capacity)
        self.curves = curves

    def step_seconds(self, job, replicas):
        return self.curves[job.job_id](replicas)

    def cap(self, job):
        return 8


def test_optimus_allocation_by_hand_and_brute_force():
    """T_a(k) = 10 / k, T_b(k) = 10 / k + 0.5 (k - 1), 100 iterations each, 5 GPUs. By hand: one GPU
    each; gains a 500, b 450 -> a; then a 166.7, b 450 -> b; then a 166.7, b 116.7 -> a: (3, 2), which
    is also the brute-force minimum of the summed remaining times (883.3 s)."""
    curves = {"j0": lambda k: 10 / k, "j1": lambda k: 10 / k + 0.5 * (k - 1)}
    rng = np.random.default_rng(0)
    jobs = [_job(0, rng, 1024, 100.0), _job(1, rng, 1024, 100.0)]
    out = _TablePolicy([5], curves).allocate(jobs)
    assert (int(out["j0"].sum()), int(out["j1"].sum())) == (3, 2)
    best = min(((100 * curves["j0"](a) + 100 * curves["j1"](5 - a)), a) for a in range(1, 5))
    assert best[1] == 3


def test_optimus_first_gpus_in_arrival_order_and_no_model_no_more():
    rng = np.random.default_rng(0)
    policy = OptimusOracle([2, 2])
    jobs = [_job(i, rng, 1024, 1e4) for i in range(6)]
    jobs[1].agent.params = None  # nothing observed yet: one GPU, no more
    out = policy.allocate(jobs)
    counts = [int(out[j.job_id].sum()) for j in jobs]
    assert counts[:4] == [1, 1, 1, 1] and counts[4:] == [0, 0]  # 4 GPUs: the 4 earliest get one each


def test_tiresias_keeps_running_jobs_and_packs_new_ones():
    rng = np.random.default_rng(0)
    policy = TiresiasRigid([4, 4, 4])
    a = _job(0, rng, 256, 0.0)
    a.gpus_wanted, a.current = 2, np.array([0, 2, 0])
    b = _job(1, rng, 256, 0.0)
    b.gpus_wanted = 6
    out = policy.allocate([a, b])
    assert out["j0"].tolist() == [0, 2, 0]       # unchanged count: keeps its GPUs
    assert out["j1"].tolist() == [4, 0, 2]       # most free first (4 on node 0), then node 2 (4 free > 2)


def test_remaining_iterations_at_m0_are_m0_equivalent_steps():
    app, _ = pollux_applications()["cifar10"]
    replay = app.replay
    m0 = replay.initial_batch
    total = replay.total_progress
    for progress in (0.0, total / 3, replay.epoch_end_progress[5], total - 1.0):
        # at M0 the efficiency is 1 and the gain is M0 / M0 = 1: one iteration, one M0-equivalent step
        assert remaining_iterations(replay, progress, m0) == pytest.approx(total - progress, rel=1e-9)
    assert remaining_iterations(replay, total, m0) == 0.0
    # a larger batch makes fewer iterations, never more than the steps left
    assert remaining_iterations(replay, 0.0, 4 * m0) < total


def test_vectorised_gains_equal_the_per_epoch_gain_exactly():
    for app, _ in pollux_applications().values():
        replay = app.replay
        for batch in np.geomspace(replay.batches[0], replay.batches[-1], 7):
            assert np.array_equal(replay.gains(batch), [replay.gain(batch, e) for e in range(replay.epochs)])


def test_heterogeneous_rho_by_hand():
    # Sia's form: (N_g / N) rho_g; 48 t4 with rho 2 and 16 a100 with rho 1: 0.75 x 2 + 0.25 x 1
    assert heterogeneous_rho({"t4": 2.0, "a100": 1.0}, {"t4": 48, "a100": 16}) == pytest.approx(1.75)
    assert heterogeneous_rho({"t4": 1.3}, {"t4": 64}) == pytest.approx(1.3)
    with pytest.raises(ValueError):
        heterogeneous_rho({"rtx": 1.0}, {"t4": 64})


class _LinearTimer:
    """Perfect scaling: an iteration of local batch m on k GPUs takes m x 1 ms (compute only)."""

    def seconds(self, app, gpu_type, per_node, local_batch, accum_steps):
        return (accum_steps + 1) * local_batch * 1e-3, local_batch * 1e-3


def test_isolated_time_scales_with_the_share_under_perfect_scaling():
    app, spec = pollux_applications()["ncf"]  # a fixed batch: the same batch on every share
    iso = IsolatedRates({"ncf": (app, spec)}, _LinearTimer(), "t4", 4)
    one = iso.seconds("ncf", 1)
    assert iso.seconds("ncf", 4) == pytest.approx(one / 4, rel=1e-9)
    assert iso.seconds("ncf", 0.5) == pytest.approx(one * 2, rel=1e-9)   # half a GPU: time-shared
    # between 2 and 3 GPUs the rate is interpolated: 2.5 GPUs -> rate 2.5 x one GPU's
    # (3 GPUs run 32769 samples, m = ceil(32768 / 3): hence 1e-4, not exact)
    assert iso.seconds("ncf", 2.5) == pytest.approx(one / 2.5, rel=1e-4)
