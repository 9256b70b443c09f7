"""Elastic jobs under Pollux, decided in 60 s rounds: the ground-truth step time (measured compute + ArtISt's
network), a lone job's completion time by hand, conservation, capacity, and determinism."""


import numpy as np
import pytest
from elastic_helpers import csv_rows, measured_compute, t4_cluster, t4_step_timer

from artist.elastic.applications import POLLUX_DIR, pollux_applications
from artist.elastic.exact import simulate_elastic
from artist.elastic.jobs import ElasticJobs, ElasticJobSpec
from artist.elastic.spec import ElasticSpec
from artist.shipped import TOPOLOGIES_DIR
from artist.policies.pollux.scheduler import PolluxScheduler



@pytest.fixture(scope="module")
def timer():
    return t4_step_timer()


def test_step_time_is_measured_compute_plus_the_networks_exposed_sync(timer):
    c = measured_compute("imagenet", 81)
    assert timer.seconds("imagenet", "t4", (1,), 81, 0) == (pytest.approx(c), pytest.approx(c))
    assert timer.seconds("imagenet", "t4", (1,), 81, 3)[0] == pytest.approx(4 * c)  # s passes + the last
    one_node = timer.seconds("imagenet", "t4", (4,), 81, 0)[0]
    two_nodes = timer.seconds("imagenet", "t4", (0, 4, 4), 81, 0)[0]
    assert c < one_node < two_nodes  # PCIe sync exposes some, 12.5 Gb/s per GPU across machines more
    # accumulation passes add exactly their compute, never communication
    assert timer.seconds("imagenet", "t4", (4, 4), 81, 2)[0] - two_nodes == pytest.approx(2 * c)


def _cifar_total_progress():
    tables = [csv_rows(p) for p in sorted((POLLUX_DIR / "cifar10").glob("validation-*.csv"))]
    return min(float(t[-1]["progress"]) for t in tables)


def test_a_lone_fixed_batch_job_takes_its_progress_times_its_step_time(timer):
    """cifar10 held at M0 = 128 on the only GPU: gain 1 per step, so the job takes (total progress) x
    compute(128) seconds, no restart, from its first round."""
    app, spec = pollux_applications()["cifar10"]
    fixed = ElasticSpec(initial_batch=128, max_batch=4096, local_batch=spec.local_batch, fixed_batch=128)
    job = simulate_elastic(t4_cluster(1, 1), [ElasticJobSpec("j", 0.0, "cifar10")], {"cifar10": (app, fixed)}, timer,
                           PolluxScheduler([1], pop_size=4, generations=2, seed=0)).jobs[0]
    # 128 is not a measured local batch: linear between the medians at 91 and 129
    c91, c129 = measured_compute("cifar10", 91), measured_compute("cifar10", 129)
    c128 = c91 + (128 - 91) / (129 - 91) * (c129 - c91)
    assert job.finish == pytest.approx(_cifar_total_progress() * c128, rel=1e-9)
    assert job.progress.restarts == 0 and job.progress.progress == pytest.approx(_cifar_total_progress())


def _small_run(timer, seed):
    apps = pollux_applications()
    jobs = [ElasticJobSpec(f"j{i}", 200.0 * i, app) for i, app in enumerate(["cifar10", "ncf"])]
    return simulate_elastic(t4_cluster(2), jobs, {k: apps[k] for k in ("ncf", "cifar10")}, timer,
                            PolluxScheduler([4, 4], pop_size=6, generations=3, seed=seed))


def test_every_job_finishes_its_measured_epochs_within_capacity_and_runs_repeat(timer):
    result = _small_run(timer, 1)
    for job in result.jobs:
        assert job.progress.progress == pytest.approx(job.app.replay.total_progress)
        assert job.finish > job.spec.arrival
        assert all(job.elastic.initial_batch <= b <= job.elastic.max_batch for _, _, b, _ in job.gpu_rounds)
        assert all(0 < e <= 1 for *_, e in job.gpu_rounds)
    per_round = {}
    for job in result.jobs:
        for t, gpus, *_ in job.gpu_rounds:
            per_round[t] = per_round.get(t, 0) + gpus
    assert max(per_round.values()) <= 8
    again = _small_run(timer, 1)
    assert [(j.spec.job_id, j.finish, j.progress.restarts) for j in result.jobs] == \
        [(j.spec.job_id, j.finish, j.progress.restarts) for j in again.jobs]


def test_unknown_application_and_duplicate_ids_are_refused(timer):
    apps = pollux_applications()
    with pytest.raises(ValueError, match="unknown application 'gpt'"):
        ElasticJobs([4], "t4", [ElasticJobSpec("a", 0, "gpt")], apps, timer)
    with pytest.raises(ValueError, match="unique"):
        ElasticJobs([4], "t4", [ElasticJobSpec("a", 0, "ncf")] * 2, apps, timer)
    assert np.isfinite(timer.seconds("ncf", "t4", (2,), 64, 0)[0])


def test_a_lone_rigid_job_under_tiresias_runs_its_own_gpus_and_batch(timer):
    """cifar10 at 1 GPU and batch 128 (= M0) under Tiresias: the same hand value as the fixed-batch case."""
    from artist.policies.pollux.baselines import TiresiasRigid
    apps = pollux_applications()
    job = simulate_elastic(t4_cluster(1, 2), [ElasticJobSpec("j", 0.0, "cifar10", gpus=1, batch=128)],
                           {"cifar10": apps["cifar10"]}, timer, TiresiasRigid([2])).jobs[0]
    c91, c129 = measured_compute("cifar10", 91), measured_compute("cifar10", 129)
    assert job.finish == pytest.approx(_cifar_total_progress() * (c91 + 37 / 38 * (c129 - c91)), rel=1e-9)
    assert {g for _, g, _, _ in job.gpu_rounds} == {1} and job.progress.restarts == 0
    with pytest.raises(ValueError, match="both gpus and batch"):
        ElasticJobs([2], "t4", [ElasticJobSpec("k", 0.0, "cifar10", gpus=1)], apps, timer)


def test_the_step_timer_places_machines_in_their_racks():
    """Node i is machine i: machines 0 and 8 of dally-3tier (8 machines a rack) are in two racks, so their
    ring crosses the spine; ten machines span two racks instead of being refused as one rack of ten."""
    from artist.elastic.steptime import NetworkStepTimer
    from artist.network.analytical import AnalyticalModel
    from artist.placement import placement_from_shape
    from artist.topology import load_topology
    from artist.workload import load_models
    from artist.workload.traces.pollux import APPLICATIONS

    topo = load_topology(TOPOLOGIES_DIR / "dally-3tier.yaml")
    apps = {k: a for k, (a, _) in pollux_applications().items()}
    models = load_models()
    timer = NetworkStepTimer(topo, AnalyticalModel(topo), apps, {k: models[APPLICATIONS[k][0]] for k in apps})
    nodes = np.zeros(topo.machines, int)
    nodes[[0, 8]] = 8
    across = timer.seconds("imagenet", "t4", nodes, 81, 0)[0]
    compute = timer.seconds("imagenet", "t4", [1], 81, 0)[1]
    from artist.parallel.ddp import ddp_step
    expected = AnalyticalModel(topo).time({"j": ddp_step(models["resnet50"], placement_from_shape(topo, [[8], [8]]),
                                                         compute)})["j"].step_seconds
    assert across == pytest.approx(max(expected, compute))
    assert across > timer.seconds("imagenet", "t4", [8, 8], 81, 0)[0]  # the same two machines in one rack
    nodes[:10] = 8
    assert np.isfinite(timer.seconds("imagenet", "t4", nodes, 81, 0)[0])
