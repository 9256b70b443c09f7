"""The Pollux agent: 7-parameter throughput model (Eq. 8-11), its L-BFGS-B fit with priors, the choice
of (m, s) by goodput under the memory limit, and the 2x exploration cap."""

import numpy as np
import pytest

from artist.elastic.spec import ElasticSpec, LocalBatchLimit
from artist.policies.pollux.agent import PolluxAgent
from artist.policies.pollux.goodput import best_config
from artist.policies.pollux.throughput import (Observations, ThroughputParams, fit, grad_seconds, iteration_seconds,
                                               sync_seconds)

TRUE = ThroughputParams(alpha_grad=0.02, beta_grad=0.0007, alpha_local=0.05, beta_local=0.004,
                        alpha_node=0.15, beta_node=0.01, gamma=2.5)


def test_model_equations_by_hand():
    p = ThroughputParams(0.1, 0.01, 0.2, 0.05, 0.5, 0.1, 1.0)
    assert grad_seconds(p, 10) == pytest.approx(0.2)
    assert sync_seconds(p, 1, 1) == 0.0
    assert sync_seconds(p, 1, 4) == pytest.approx(0.2 + 0.05 * 2)
    assert sync_seconds(p, 2, 8) == pytest.approx(0.5 + 0.1 * 6)
    assert sync_seconds(p, 2, 2) == pytest.approx(0.5)  # no retrogression at K = 2
    # gamma 1: no overlap, T = s Tg + Tg + Ts = 1 x 0.2 + 0.2 + 0.3
    assert iteration_seconds(p, 1, 4, 10, 1) == pytest.approx(0.7)
    # gamma 2: (0.2^2 + 0.3^2)^(1/2)
    p2 = ThroughputParams(0.1, 0.01, 0.2, 0.05, 0.5, 0.1, 2.0)
    assert iteration_seconds(p2, 1, 4, 10, 0) == pytest.approx(np.hypot(0.2, 0.3))


def _synthetic(params, configs, local_batches=(32, 64, 128, 256)):
    rows = []
    for nodes, k in configs:
        for m in local_batches:
            for s in (0, 1):
                rows.append((nodes, k, m, s, float(iteration_seconds(params, nodes, k, m, s)),
                             float(grad_seconds(params, m)) if s else None))
    return Observations.of(rows)


def test_fit_recovers_known_parameters_within_5_percent():
    configs = [(1, 1), (1, 2), (1, 3), (1, 4), (2, 2), (2, 4), (2, 8), (3, 12), (4, 16), (8, 32)]
    got = fit(_synthetic(TRUE, configs)).as_array()
    np.testing.assert_allclose(got, TRUE.as_array(), rtol=0.05)


def test_fit_recovers_parameters_from_step_times_alone_and_noisy_data():
    """No accumulation timings, and 1 % multiplicative noise: still within 5 %."""
    configs = [(1, 1), (1, 2), (1, 3), (1, 4), (2, 2), (2, 4), (2, 8), (3, 12), (4, 16), (8, 32)]
    rng = np.random.default_rng(7)
    rows = [(n, k, m, 0, float(iteration_seconds(TRUE, n, k, m, 0)) * (1 + 0.01 * rng.standard_normal()), None)
            for n, k in configs for m in (32, 64, 128, 256)]
    got = fit(Observations.of(rows)).as_array()
    np.testing.assert_allclose(got, TRUE.as_array(), rtol=0.05)


@pytest.mark.parametrize("search", ["log", "adaptdl"])
def test_priors_assume_perfect_scaling_before_multi_gpu_observations(search):
    """One GPU, one local batch seen: alpha_grad = half the time, sync terms at the lower bound, so the
    model predicts K GPUs run K times as fast (either search: the priors fix what one row cannot say)."""
    obs = Observations.of([(1, 1, 64, 0, 0.5, None)])
    p = fit(obs, search=search)
    assert p.alpha_grad == pytest.approx(0.25)
    assert p.beta_grad == pytest.approx(0.25 / 64, rel=1e-3)
    for k, nodes in ((4, 1), (16, 4)):
        single = 64 / float(iteration_seconds(p, 1, 1, 64, 0))
        many = k * 64 / float(iteration_seconds(p, nodes, k, 64, 0))
        assert many / single == pytest.approx(k, rel=1e-3)


def test_node_terms_are_at_least_1_1_times_local_ones_without_multi_node_observations():
    obs = _synthetic(TRUE, [(1, 1), (1, 2), (1, 3), (1, 4)])
    p = fit(obs)
    assert p.alpha_node >= 1.1 * p.alpha_local - 1e-15 and p.beta_node >= 1.1 * p.beta_local - 1e-15
    assert p.alpha_local == pytest.approx(TRUE.alpha_local, rel=0.05)


@pytest.mark.parametrize("search", ["log", "adaptdl"])
def test_node_terms_stay_above_local_ones_under_either_search(search):
    p = fit(_synthetic(TRUE, [(1, 1), (1, 2), (1, 4)]), search=search)
    assert p.alpha_node >= 1.1 * p.alpha_local - 1e-15 and p.beta_node >= 1.1 * p.beta_local - 1e-15


def test_the_agent_fits_as_pollux_own_agent_does_and_a_bad_search_is_refused():
    """Pollux's agent fits AdaptDL's way (raw parameters from AdaptDL's start, scipy's defaults: what the
    authors' simulator and system run); the log search stays the fit's default for other callers."""
    assert PolluxAgent(SPEC, "t4").search == "adaptdl"
    with pytest.raises(ValueError, match="search must be one of adaptdl, log"):
        fit(_synthetic(TRUE, [(1, 1)]), search="newton")


def test_fit_refuses_bad_observations():
    with pytest.raises(ValueError, match="positive"):
        fit(Observations.of([(1, 1, 64, 0, 0.0, None)]))
    with pytest.raises(ValueError, match="nodes <= replicas"):
        fit(Observations.of([(2, 1, 64, 0, 0.5, None)]))
    with pytest.raises(ValueError, match="no observations"):
        Observations.of([])


SPEC = ElasticSpec(initial_batch=128, max_batch=4096, local_batch={"t4": LocalBatchLimit(32, 256)})


def test_best_config_without_gradient_noise_penalty_takes_the_largest_batch():
    """phi = inf (efficiency 1): goodput = throughput, which grows with the batch (alpha_grad and the sync
    are amortised over more samples), so the maximum batch 4096 on 4 GPUs: 1024 per GPU, memory 256:
    m = 256 with s = 3 accumulation passes."""
    cfg = best_config(TRUE, float("inf"), SPEC, SPEC.limit("t4"), 1, 4)
    assert (cfg.batch, cfg.local_batch, cfg.accum_steps) == (4096, 256, 3)


def test_best_config_with_no_gradient_noise_takes_the_smallest_batch():
    """phi = 0: efficiency = M0 / M, so goodput = M0 / T_iter: the shortest iteration, the smallest batch
    K x min_local = 4 x 32 = 128 = M0."""
    cfg = best_config(TRUE, 0.0, SPEC, SPEC.limit("t4"), 1, 4)
    assert (cfg.batch, cfg.local_batch, cfg.accum_steps) == (128, 32, 0)


def test_best_config_brute_force_over_every_integer_batch():
    """The 50 geometric candidates land within 2 % of the goodput of the best integer batch."""
    phi = 500.0
    cfg = best_config(TRUE, phi, SPEC, SPEC.limit("t4"), 2, 8)
    best = 0.0
    for total in range(256, 4097):
        local = total / 8
        s = int(np.ceil(local / 256 - 1e-8)) - 1
        m = int(np.ceil(local / (s + 1) - 1e-8))
        if not 32 <= m <= 256:
            continue
        batch = 8 * m * (s + 1)
        rate = batch / float(iteration_seconds(TRUE, 2, 8, m, s)) * (phi + 128) / (phi + batch)
        best = max(best, rate)
    assert best * 0.98 <= cfg.goodput <= best * (1 + 1e-9)


def test_agent_caps_gpus_at_twice_the_most_held():
    agent = PolluxAgent(SPEC, "t4")
    assert agent.max_gpus == 1 and agent.goodput(1, 1) is None
    agent.observe(1, 1, 128, 0, 0.11, None, grad_sqr=1.0, grad_var=2.0)
    assert agent.max_gpus == 2 and agent.phi == pytest.approx(256.0)
    assert agent.params is not None and agent.fits == 1
    agent.observe(1, 4, 64, 0, 0.2, None, grad_sqr=1.0, grad_var=2.0)
    agent.observe(1, 4, 32, 0, 0.15, None, grad_sqr=1.0, grad_var=2.0)
    assert agent.max_gpus == 8 and agent.fits == 1  # fitted when next asked, once for both
    assert agent.goodput(1, 4) is not None and agent.fits == 2
    agent.observe(1, 4, 64, 0, 0.21, None, grad_sqr=1.0, grad_var=2.0)  # a repeat: no refit
    assert agent.params is not None and agent.fits == 2
    agent.most_gpus = 100
    assert agent.max_gpus == 64  # the job's max_gpus (default 64); 4096 // 32 = 128 GPUs feedable
    small = PolluxAgent(ElasticSpec(initial_batch=8, max_batch=64, local_batch={"t4": LocalBatchLimit(4, 8)}), "t4")
    small.most_gpus = 40
    assert small.max_gpus == 16  # 64 // 4: no more GPUs than the maximum batch can feed
    with pytest.raises(ValueError, match="bad observation"):
        agent.observe(2, 1, 64, 0, 0.2, None, 1.0, 1.0)


def test_analytic_gradient_of_the_fit_loss_matches_finite_differences():
    from scipy.optimize import approx_fprime

    from artist.policies.pollux.throughput import _objective
    obs = _synthetic(TRUE, [(1, 1), (1, 3), (2, 4), (4, 16)])
    has_accum = ~np.isnan(obs.accum_seconds)
    for x in (np.array([0.03, 0.001, 0.04, 0.003, 0.2, 0.02, 1.7]),
              np.array([0.01, 0.002, 0.06, 0.001, 0.1, 0.005, 3.3])):
        numeric = approx_fprime(x, lambda v: _objective(v, obs, has_accum)[0], 1e-8)
        np.testing.assert_allclose(_objective(x, obs, has_accum)[1], numeric, rtol=1e-4, atol=1e-6)


def test_vectorised_goodputs_agree_with_best_config_pair_by_pair():
    from artist.policies.pollux.goodput import best_goodputs
    pairs = [(1, 1), (1, 3), (1, 4), (2, 5), (3, 12), (4, 16), (16, 64), (2, 200)]
    got = best_goodputs(TRUE, 300.0, SPEC, SPEC.limit("t4"), [p[0] for p in pairs], [p[1] for p in pairs])
    for (n, k), g in zip(pairs, got):
        cfg = best_config(TRUE, 300.0, SPEC, SPEC.limit("t4"), n, k)
        assert g == (cfg.goodput if cfg is not None else 0.0)
    assert got[-1] == 0.0  # 200 GPUs x 16 samples exceed the maximum batch 4096
