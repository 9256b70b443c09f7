"""The artifacts' accounting rules (artist/elastic/rules.py) and their measured step times
(artist/elastic/measured_steptime.py), against the measured tables themselves and hand-made cases."""

from __future__ import annotations

import textwrap

import pytest

from artist.elastic.applications import pollux_applications
from artist.elastic.measured_steptime import MeasuredStepTimer, ThroughputTables, placement_key
from artist.elastic.progress import ElasticProgress
from artist.elastic.rules import PRESETS, ElasticRules
from artist.errors import InputError
from artist.sweep.elastic import held_to_one_gpu
from conftest import REPO

CIFAR = REPO / "workloads" / "pollux" / "cifar10"


@pytest.fixture(scope="module")
def timer():
    return MeasuredStepTimer({("cifar10", "t4"): ThroughputTables(CIFAR / "placements.csv",
                                                                  CIFAR / "scalability.csv")})


def test_placement_ids_are_the_smallest_rotation_of_the_nodes_in_use():
    assert placement_key([0, 3, 0, 1]) == 13  # (3, 1) turned to (1, 3)
    assert placement_key([2, 1, 3]) == 132  # rotations 213, 132, 321: a rotation, not a sort
    assert placement_key([4]) == 4


def test_a_measured_placement_gives_its_row_and_is_linear_in_the_local_batch(timer):
    # placements.csv rows of placement 13 (1 GPU on one node, 3 on another) at local batches 32 and 45
    row32 = (0.19023866653442384, 0.1485253463745117)
    row45 = (0.14392664432525634, 0.09502823638916015)
    assert timer.step_sync("cifar10", "t4", [0, 3, 1, 0], 32) == pytest.approx(row32, rel=1e-15)
    mid = timer.step_sync("cifar10", "t4", [1, 3], 38.5)  # half way between the two rows
    assert mid == pytest.approx(((row32[0] + row45[0]) / 2, (row32[1] + row45[1]) / 2), rel=1e-12)
    # an iteration with 2 accumulation passes: step + 2 x (step - sync); compute: step - sync
    iteration, compute = timer.seconds("cifar10", "t4", [1, 3], 32, 2)
    assert compute == pytest.approx(row32[0] - row32[1], rel=1e-12)
    assert iteration == pytest.approx(row32[0] + 2 * (row32[0] - row32[1]), rel=1e-12)


def test_a_placement_not_measured_is_read_off_the_scalability_rows(timer):
    # six nodes of one GPU: no such placement in placements.csv; scalability.csv measured (6, 6, 32)
    assert timer.step_sync("cifar10", "t4", [1] * 6, 32) == pytest.approx(
        (0.14090566635131835, 0.09941204528808593), rel=1e-9)


def test_outside_the_tables_is_refused_naming_them(timer):
    with pytest.raises(ValueError, match="placements.csv.*placement 13 at local batch 5000 is outside"):
        timer.step_sync("cifar10", "t4", [1, 3], 5000)
    with pytest.raises(ValueError, match="no measured step times of bert on t4"):
        timer.step_sync("bert", "t4", [1], 8)


def test_the_first_start_pays_the_delay_only_under_the_artifacts_rule():
    app, spec = pollux_applications()["cifar10"]
    own = ElasticProgress(app.replay, 30.0)
    own.resize()
    assert (own.restart_left, own.restarts) == (0.0, 0)
    artifact = ElasticProgress(app.replay, 30.0, first_start_delay=True)
    artifact.resize()
    assert (artifact.restart_left, artifact.restarts) == (30.0, 0)  # charged, not counted as a restart
    artifact.restart_left = 0.0
    artifact.resize()
    assert (artifact.restart_left, artifact.restarts) == (30.0, 1)


def test_ncf_is_held_to_one_gpu_only_where_the_pollux_artifact_holds_it():
    apps = pollux_applications()
    rules = PRESETS["pollux-artifact"]
    for policy, expected in (("pollux", 1), ("optimus-oracle", 1), ("tiresias-pollux", apps["ncf"][1].max_gpus)):
        assert held_to_one_gpu(apps, rules, policy)["ncf"][1].max_gpus == expected
        assert held_to_one_gpu(apps, rules, policy)["bert"][1] == apps["bert"][1]
    assert held_to_one_gpu(apps, ElasticRules(), "pollux") == apps


def _spec(tmp_path, rules_yaml: str, policy: str = "{name: tiresias-pollux, params: {tuned_jobs: true}}"):
    from artist.sweep.spec import load_sweep_spec as load_spec

    path = tmp_path / "spec.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: rules
        loop: elastic
        topology: {REPO / "topologies" / "pollux-t4.yaml"}
        elastic: {{applications: {REPO / "workloads" / "pollux"}, rules: {rules_yaml}}}
        policies: [{policy}]
        workloads: [{{spec: {REPO / "workloads" / "pollux" / "workloads" / "workload-6.csv"}, first: 3}}]
        comm: analytical
        """))
    return load_spec(path)


def test_spec_rules_a_preset_or_switched_one_at_a_time(tmp_path):
    preset = _spec(tmp_path, "pollux-artifact").runs[0].elastic.rules
    assert preset == PRESETS["pollux-artifact"]
    switched = _spec(tmp_path, "{preset: pollux-artifact, step_time: network}").runs[0].elastic.rules
    assert (switched.step_time, switched.first_start_delay) == ("network", True)
    default = _spec(tmp_path, "artist").runs[0]
    assert default.elastic.rules.is_default and "rules" not in default.identity["elastic"]
    assert preset.retune_every_round and not ElasticRules().retune_every_round
    kept = _spec(tmp_path, "{preset: pollux-artifact, retune_every_round: false}").runs[0].elastic.rules
    assert (kept.retune_every_round, kept.first_start_delay) == (False, True)


def test_the_artifacts_jobs_re_pick_their_batch_at_every_round_end(tmp_path, monkeypatch):
    """The Pollux artifact's jobs re-pick (m, s) from their latest model after every simulated round
    (retune_every_round, its preset's); ArtISt's at a new allocation and at each epoch end. Counted over
    the same 3-job run: the round ends add re-picks, and only under the rule."""
    from artist.elastic.jobs import ElasticJobs
    from artist.sweep.run import run_sweep

    counts = {}
    tune = ElasticJobs.tune

    def counted(self, job):
        counts[self.retune_every_round] = counts.get(self.retune_every_round, 0) + 1
        return tune(self, job)

    monkeypatch.setattr(ElasticJobs, "tune", counted)
    for k, rules in enumerate(("pollux-artifact", "{preset: pollux-artifact, retune_every_round: false}")):
        spec = _spec(tmp_path, rules)
        report = run_sweep(spec, tmp_path / f"out{k}", n_jobs=1, use_cache=False, progress=False, plots=False)
        assert not report.failed, report.failed
    assert counts[False] >= 3  # every job tuned at its allocation
    assert counts[True] > counts[False]  # ... and again after every round it held GPUs, under the rule


def test_a_pollux_agent_sees_one_pass_compute_at_every_configuration(tmp_path, monkeypatch):
    """AdaptDL times the all-reduce of each synchronising pass and fits compute = step - sync, so Pollux's
    agent knows a configuration's compute whether or not it accumulates (s = 0 too): every observation
    the loop hands it carries a positive compute time, below the step it belongs to."""
    from artist.policies.pollux.agent import PolluxAgent
    from artist.sweep.run import run_sweep

    seen = []
    observe = PolluxAgent.observe

    def recorded(self, nodes, replicas, local_batch, accum_steps, iter_seconds, accum_seconds, sqr, var):
        seen.append((accum_steps, iter_seconds, accum_seconds))
        return observe(self, nodes, replicas, local_batch, accum_steps, iter_seconds, accum_seconds, sqr, var)

    monkeypatch.setattr(PolluxAgent, "observe", recorded)
    spec = _spec(tmp_path, "artist", policy="{name: pollux, params: {pop_size: 4, generations: 4}}")
    report = run_sweep(spec, tmp_path / "out", n_jobs=1, use_cache=False, progress=False, plots=False)
    assert not report.failed, report.failed
    assert any(s == 0 for s, _, _ in seen)
    bad = [(s, t, c) for s, t, c in seen if c is None or not 0 < c <= t]
    assert not bad, bad[:3]


@pytest.mark.parametrize("rules_yaml, problem", [
    ("pollux", "field 'elastic.rules': unknown preset 'pollux'"),
    ("{preset: pollux-artifact, first_start_delay: 'no'}", "field 'elastic.rules.first_start_delay': expected true"),
    ("{step_time: ns3}", "field 'elastic.rules.step_time': one of network, measured"),
    ("{slowdown: 2}", "field 'elastic.rules.slowdown': unknown field"),
    ("{preset: pollux-artifact, retune_every_round: 1}", "field 'elastic.rules.retune_every_round': expected true"),
])
def test_bad_rules_are_one_line_naming_the_field(tmp_path, rules_yaml, problem):
    with pytest.raises(InputError) as err:
        _spec(tmp_path, rules_yaml)
    assert problem in str(err.value) and "\n" not in str(err.value)


def test_a_goodput_slowdown_divides_progress_and_nothing_else():
    """The Sia artifact's calibration: goodput x 1 / SLOWDOWNS[app] (cifar10: 1.8). The same seconds at the
    same configuration make 1 / 1.8 of the progress; the restart delay is not stretched."""
    app, _ = pollux_applications()["cifar10"]
    plain = ElasticProgress(app.replay, 50.0)
    slowed = ElasticProgress(app.replay, 50.0, first_start_delay=True, slowdown=PRESETS["sia-artifact"]
                             .goodput_slowdown["cifar10"])
    assert slowed.rate(1024, 0.5) == pytest.approx(plain.rate(1024, 0.5) / 1.8, rel=1e-15)
    slowed.resize()
    assert slowed.advance(100.0, 1024, 0.5) == 50.0  # the delay, at its own length
    used = slowed.advance(10.0, 1024, 0.5)
    plain.advance(used, 1024, 0.5)
    assert slowed.progress == pytest.approx(plain.progress / 1.8, rel=1e-12)
