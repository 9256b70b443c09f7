"""Statistical efficiency (Pollux Eq. 6), its replay from the artifact's measured curves, and the
elastic job's batch arithmetic. Expectations are hand-computed or read from the CSVs with the csv module."""

import csv
import statistics
from pathlib import Path

import numpy as np
import pytest

from artist.elastic.applications import POLLUX_DIR, pollux_applications
from artist.elastic.measured import read_application
from artist.elastic.spec import ElasticSpec, LocalBatchLimit, candidate_batches, split_batch
from artist.errors import InputError
from artist.perf.efficiency import efficiency, gain, noise_scale


def _rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("phi", [0.0, 1.0, 37.5, 1e6])
def test_efficiency_is_one_at_the_initial_batch(phi):
    assert efficiency(128, 128, phi) == 1.0


def test_efficiency_at_four_times_the_initial_batch_by_hand():
    # phi = M0 = 100, M = 400: (100 + 100) / (100 + 400) = 0.4; gain = 4 x 0.4 = 1.6 M0-steps per step
    assert efficiency(400, 100, 100.0) == pytest.approx(0.4)
    assert gain(400, 100, 100.0) == pytest.approx(1.6)
    # phi = 2 M0: (2 + 1) / (2 + 4) = 0.5
    assert efficiency(4 * 64, 64, 128.0) == pytest.approx(0.5)
    # no noise (phi = 0): 4x the samples per step buy nothing: efficiency 1/4, gain 1
    assert efficiency(400, 100, 0.0) == pytest.approx(0.25)
    assert gain(400, 100, 0.0) == pytest.approx(1.0)


def test_efficiency_is_vectorised_and_decreasing():
    e = efficiency(np.array([100, 200, 400, 800]), 100, 300.0)
    assert np.all(np.diff(e) < 0) and e[0] == 1.0


def test_noise_scale_from_the_artifacts_statistics_matches_its_gain_formula():
    # The artifact's gain: (var + sqr) / (var / scale + sqr), scale = M / M0. sqr 1, var 3, M0 10, M 40:
    # (3 + 1) / (0.75 + 1) = 2.285714...
    phi = noise_scale(grad_sqr=1.0, grad_var=3.0, initial_batch=10)
    assert phi == 30.0
    assert gain(40, 10, phi) == pytest.approx(4 / 1.75)


def test_replay_interpolates_linearly_between_measured_batches():
    app = read_application(POLLUX_DIR / "cifar10", "t4")
    lo = _rows(POLLUX_DIR / "cifar10" / "validation-128.csv")
    hi = _rows(POLLUX_DIR / "cifar10" / "validation-256.csv")
    for epoch in (0, 5, 99):
        sqr, var = app.replay.grad_stats(192, epoch)  # halfway between 128 and 256
        assert sqr == pytest.approx((float(lo[epoch]["grad_sqr"]) + float(hi[epoch]["grad_sqr"])) / 2)
        assert var == pytest.approx((float(lo[epoch]["grad_var"]) + float(hi[epoch]["grad_var"])) / 2)
        exact = app.replay.grad_stats(256, epoch)
        assert exact == (float(hi[epoch]["grad_sqr"]), float(hi[epoch]["grad_var"]))
    # phi = M0 var / sqr at a measured batch
    sqr, var = float(hi[3]["grad_sqr"]), float(hi[3]["grad_var"])
    assert app.replay.phi(256, 3) == pytest.approx(128 * var / sqr)
    with pytest.raises(ValueError, match="outside the measured range"):
        app.replay.grad_stats(8192, 0)
    with pytest.raises(ValueError, match="epoch 100"):
        app.replay.grad_stats(256, 100)


def test_epoch_ends_are_the_smallest_progress_over_batches():
    app = read_application(POLLUX_DIR / "yolov3", "t4")
    tables = [_rows(p) for p in sorted((POLLUX_DIR / "yolov3").glob("validation-*.csv"))]
    ends = [min(float(t[e]["progress"]) for t in tables) for e in range(50)]
    assert list(app.replay.epoch_end_progress) == ends
    assert app.replay.total_progress == ends[-1]
    assert app.replay.epoch_of(0.0) == 0
    assert app.replay.epoch_of(ends[0]) == 1  # an epoch's end belongs to the next epoch
    assert app.replay.epoch_of(ends[-1]) == 50


def test_compute_is_the_median_of_step_minus_sync_per_local_batch():
    app = read_application(POLLUX_DIR / "imagenet", "t4")
    rows = _rows(POLLUX_DIR / "imagenet" / "placements.csv")
    for b in (20, 81, 200):
        want = statistics.median(float(r["step_time"]) - float(r["sync_time"])
                                 for r in rows if int(r["local_bsz"]) == b)
        assert app.compute["t4"](b) == pytest.approx(want)
    # linear in between two measured points
    assert app.compute["t4"](24) == pytest.approx(app.compute["t4"](20) + (app.compute["t4"](28)
                                                                            - app.compute["t4"](20)) / 2)
    with pytest.raises(ValueError, match="outside the measured range"):
        app.compute["t4"](400)


def test_shipped_applications_match_pollux_table_1():
    apps = pollux_applications()
    # Table 1's M0 per model (paper) and the artifact's epochs and memory bound (applications.py)
    m0 = {"imagenet": 200, "yolov3": 8, "deepspeech2": 20, "bert": 12, "cifar10": 128, "ncf": 256}
    assert {n: a.initial_batch for n, (a, _) in apps.items()} == m0
    assert apps["yolov3"][1].limit("t4") == LocalBatchLimit(4, 8)
    assert apps["ncf"][1].fixed_batch == 32768
    assert {n: s.restart_seconds for n, (_, s) in apps.items()} == dict.fromkeys(m0, 30.0)


@pytest.mark.parametrize("total,replicas,m0,limit,want", [
    (1000, 4, 128, (32, 128), (125, 1)),    # 250 per GPU > 128: one accumulation pass of 125
    (512, 4, 128, (32, 128), (128, 0)),     # exactly fits
    (200, 1, 128, (32, 1024), (100, 1)),    # one GPU above M0: at least one accumulation pass
    (128, 1, 128, (32, 1024), (128, 0)),    # one GPU at M0: none
    (64, 4, 64, (32, 128), None),           # 16 per GPU is below the smallest local batch
    (4000, 4, 128, (32, 128), (125, 7)),    # 1000 per GPU: 8 passes of 125
])
def test_split_batch_by_hand(total, replicas, m0, limit, want):
    assert split_batch(total, replicas, LocalBatchLimit(*limit), m0) == want


def test_candidate_batches_span_the_feasible_range():
    spec = ElasticSpec(initial_batch=128, max_batch=4096, local_batch={"t4": LocalBatchLimit(32, 1024)})
    c = candidate_batches(8, spec, spec.limit("t4"))
    assert len(c) == 50 and c[0] == pytest.approx(256) and c[-1] == pytest.approx(4096)  # 8 x 32 = 256 > M0
    assert candidate_batches(200, spec, spec.limit("t4")).size == 0  # 200 x 32 > 4096
    fixed = ElasticSpec(initial_batch=256, max_batch=32768, fixed_batch=32768)
    assert list(candidate_batches(4, fixed, LocalBatchLimit(32, 32768))) == [32768]
    with pytest.raises(ValueError, match="no local batch limit for GPU type 'a100'"):
        spec.limit("a100")


@pytest.mark.parametrize("kwargs,match", [
    ({"initial_batch": 0, "max_batch": 10}, "initial_batch"),
    ({"initial_batch": 20, "max_batch": 10}, "initial_batch"),
    ({"initial_batch": 1, "max_batch": 10, "min_gpus": 5, "max_gpus": 4}, "min_gpus"),
    ({"initial_batch": 1, "max_batch": 10, "restart_seconds": -1}, "restart_seconds"),
])
def test_elastic_spec_refuses_bad_values(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ElasticSpec(**kwargs)


GOOD_PLACEMENTS = "placement,local_bsz,step_time,sync_time\n1,4,0.5,0\n"


def _write_app(tmp_path: Path, validation: str, placements: str = GOOD_PLACEMENTS):
    d = tmp_path / "app"
    d.mkdir()
    (d / "validation-8.csv").write_text(validation)
    (d / "placements.csv").write_text(placements)
    return d


@pytest.mark.parametrize("validation,placements,match", [
    ("progress,iteration,metric,grad_sqr,grad_var\n1,1,0.5,x,1\n", None, r"line 2, column 'grad_sqr': not a number"),
    ("progress,iteration,metric,grad_sqr\n1,1,0.5,1\n", None, "missing measurement column"),
    ("progress,iteration,metric,grad_sqr,grad_var\n5,1,0.5,1,1\n3,2,0.6,1,1\n", None, "must not decrease"),
    ("progress,iteration,metric,grad_sqr,grad_var\n1,1,0.5,-1,1\n", None, "must be >= 0"),
    ("progress,iteration,metric,grad_sqr,grad_var\n1,1,0.5,1,1\n",
     "placement,local_bsz,step_time,sync_time\n1,4,0.5,0.6\n", "step_time must exceed sync_time"),
    ("progress,iteration,metric,grad_sqr,grad_var\n", None, "no measurement rows"),
])
def test_bad_tables_are_named(tmp_path, validation, placements, match):
    d = _write_app(tmp_path, validation, *([placements] if placements else []))
    with pytest.raises(InputError, match=match) as info:
        read_application(d, "t4")
    assert str(d) in str(info.value)


def _two_epoch_replay():
    from artist.perf.efficiency import EpochCurve, GradientNoiseReplay
    curve = {b: EpochCurve(b, np.array([100.0, 200.0]), np.array([0.1, 0.2]), np.array([1.0, 1.0]),
                           np.array([3.0, 3.0])) for b in (10, 40)}
    return GradientNoiseReplay(curve)  # M0 = 10, phi = 10 x 3 / 1 = 30


def test_progress_moves_at_the_gain_and_stops_at_epoch_ends():
    from artist.elastic.progress import ElasticProgress
    job = ElasticProgress(_two_epoch_replay(), restart_seconds=30.0)
    job.resize()  # first start: free
    assert job.restart_left == 0 and job.restarts == 0
    # batch 40: gain = 4 x (30 + 10) / (30 + 40) = 16/7 M0-steps per step; 0.5 s a step: 32/7 per second;
    # epoch 0 ends at progress 100: after 100 x 7 / 32 = 21.875 s
    assert job.advance(60, 40, 0.5) == pytest.approx(21.875)
    assert job.epoch == 1 and job.progress == 100.0
    # at M0 (gain 1) and 1 s a step: 10 s bring 10 steps
    assert job.advance(10, 10, 1.0) == 10 and job.progress == pytest.approx(110.0)
    job.resize()  # a resize: 30 s without progress, counted
    assert job.restarts == 1
    assert job.advance(60, 10, 1.0) == 30.0 and job.progress == pytest.approx(110.0)
    assert job.advance(200, 10, 1.0) == pytest.approx(90.0) and job.done
    assert job.advance(60, 10, 1.0) == 0.0
    with pytest.raises(ValueError, match="positive"):
        ElasticProgress(_two_epoch_replay(), 30.0).advance(1, 10, 0.0)


def test_split_batches_agrees_with_split_batch():
    from artist.elastic.spec import split_batches
    limit = LocalBatchLimit(16, 128)
    totals = np.array([16, 100, 128, 129, 500, 1000, 4096, 5000], dtype=float)
    for k in (1, 2, 3, 8):
        m, s = split_batches(totals, k, limit, 64)
        for t, mi, si in zip(totals, m, s):
            one = split_batch(t, k, limit, 64)
            if one is None:
                assert not 16 <= mi <= 128
            else:
                assert one == (int(mi), int(si))


def test_sia_gpu_types_add_measured_compute_per_type():
    from artist.elastic.applications import SIA_DIR, heterogeneous_applications
    apps = heterogeneous_applications()
    app, spec = apps["cifar10"]
    assert sorted(app.compute) == ["a100", "quad", "rtx", "t4"]
    rows = _rows(SIA_DIR / "cifar10" / "placements-dgx-ext.csv")  # columns in another order than Pollux's
    want = statistics.median(float(r["step_time"]) - float(r["sync_time"]) for r in rows if r["local_bsz"] == "64")
    assert app.compute["a100"](64) == pytest.approx(want)
    assert spec.limit("quad") == LocalBatchLimit(32, 2048)             # the largest batch measured on it
    assert apps["deepspeech2"][1].limit("rtx") == LocalBatchLimit(10, 57)  # Sia's memory bound
    # Sia's per-model restart delays (its simulator), Pollux's 30 s stays with pollux_applications
    assert {n: s.restart_seconds for n, (_, s) in apps.items()} == {
        "bert": 120, "cifar10": 50, "deepspeech2": 25, "imagenet": 250, "ncf": 15, "yolov3": 80}
    with pytest.raises(InputError, match="already known"):
        app.with_gpu_type("t4", SIA_DIR / "cifar10" / "placements-rtx.csv")
