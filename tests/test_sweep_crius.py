"""Sweeps of Crius' jobs (`crius:` workloads): Crius and its baselines through run_sweep give the numbers of one
Crius run (artist/crius/simulation.py simulate) on the same drawn jobs, byte-identical for a seed; reduced versions and
bad fields as other loops; the report sets the paper's other figures beside the results."""

import filecmp
from pathlib import Path

import pandas as pd
import pytest

from artist.errors import InputError
from artist.sweep.run import run_sweep
from artist.sweep.spec import load_sweep_spec

SPEC = """name: c
topology: crius-testbed
workloads: ['crius:jobs=5,arrivals_per_hour=30']
seeds: [1]
policies: [{name: crius, params: {depth: 2}}, fcfs]
reduced: {workloads: ['crius:jobs=3,arrivals_per_hour=30'], policies: [fcfs]}
"""


def _spec(tmp_path, text=SPEC):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return path


def _direct(policies, seed=1, jobs=5, rate=30.0, depth=2):
    """Each policy's summary of one Crius run on the testbed, built by hand from the simulation's parts."""
    from artist.crius.simulation import crius_fabrics, simulate
    from artist.crius.truth import GroundTruth
    from artist.crius.workload import crius_jobs
    from artist.policies.crius.catalogue import Catalogue
    from artist.policies.crius.cluster import crius_cluster

    pools = crius_cluster("crius-testbed")
    catalogue = Catalogue(pools, crius_fabrics(pools))
    truth = GroundTruth(catalogue.fabrics)
    drawn = crius_jobs(pools, catalogue, jobs, seed, rate, truth)
    return {p: simulate(pools, drawn, p, depth, catalogue, truth).summary() for p in policies}


def test_crius_sweep_matches_a_crius_run_and_is_byte_identical(tmp_path):
    spec = load_sweep_spec(_spec(tmp_path))
    outs = []
    for name in ("a", "b"):
        report = run_sweep(spec, tmp_path / name, n_jobs=1, use_cache=False, progress=False, plots=False)
        assert not report.failed, report.failed
        outs.append(tmp_path / name)
    assert filecmp.cmp(outs[0] / "results.csv", outs[1] / "results.csv", shallow=False)
    table = pd.read_parquet(outs[0] / "results.parquet").set_index("policy")
    direct = _direct(["crius", "fcfs"])
    for policy in ("crius", "fcfs"):
        row, ref = table.loc[policy], direct[policy]
        assert row["jct_mean_s"] == pytest.approx(ref["avg_jct_h"] * 3600, rel=1e-12)
        assert row["makespan_s"] == pytest.approx(ref["makespan_h"] * 3600, rel=1e-12)
        assert row["throughput_mean"] == pytest.approx(ref["avg_throughput"], rel=1e-12)
        assert row["finished"] == ref["finished"] == 5 and row["gpus"] == 64  # testbed: 16 x 2 A40 + 16 x 2 A10
    # Crius' estimator is scored; the baselines rank by DP profiles and have no estimate to score
    assert 0 < table.loc["crius", "estimation_accuracy_avg"] <= 1
    assert pd.isna(table.loc["fcfs", "estimation_accuracy_avg"])


def test_a_crius_sweep_draws_every_loops_plots(tmp_path):
    """Crius' runs measure the exposed communication per iteration as the other loops do, so its sweep draws
    the same plots (it once failed after every run had finished, on a missing comm_latency_mean_s)."""
    spec = load_sweep_spec(_spec(tmp_path), reduced=True)
    report = run_sweep(spec, tmp_path / "out", n_jobs=1, use_cache=False, progress=False, plots=True)
    assert not report.failed
    drawn = {p.stem for p in report.plots}
    assert {"makespan", "jct", "queueing_delay", "jct_cdf", "comm_latency"} <= drawn


def test_reduced_crius_spec(tmp_path):
    spec = load_sweep_spec(_spec(tmp_path), reduced=True)
    assert spec.name == "c-reduced" and [r.axes["policy"] for r in spec.runs] == ["fcfs"]
    assert spec.runs[0].elastic.jobs == 3


@pytest.mark.parametrize("old, new, field", [
    ("depth: 2}}, fcfs]", "depth: 2}}, fifo]", "policies[1]"),
    ("{name: crius, params: {depth: 2}}", "{name: fcfs, params: {depth: 2}}", "policies[0].params.depth"),
    ("topology: crius-testbed", "topology: nowhere", "topology"),
    ("seeds: [1]", "seeds: [1]\ncomm: ns3", "comm"),
    ("seeds: [1]", "seeds: [1]\ncomm: [none, none]", "comm"),
    ("crius:jobs=5,", "crius:jobs=0,", "workloads[0].spec"),
    ("crius:jobs=5,", "crius:", "workloads[0].spec"),
    ("'crius:jobs=5,arrivals_per_hour=30'", "'crius:jobs=5,arrivals_per_hour=30', 'poisson:n=5'", "workloads[1].spec"),
    ("topology: crius-testbed", "topology: crius-testbed\ndepth: 2", "depth"),
    ("topology: crius-testbed", "cluster: crius-testbed", "cluster"),
])
def test_bad_crius_specs_name_the_field(tmp_path, old, new, field):
    path = _spec(tmp_path, SPEC.replace(old, new))
    with pytest.raises(InputError) as exc:
        load_sweep_spec(path)
    assert field in str(exc.value) and str(path) in str(exc.value)


def test_shipped_paper_specs_load_through_artist_sweep():
    """sweeps/crius.yaml (Crius' jobs) and sweeps/sia.yaml (a cluster file) expand as their headers say."""
    from pathlib import Path

    sweeps = Path(__file__).resolve().parents[1] / "sweeps"
    crius = load_sweep_spec(sweeps / "crius.yaml")
    assert len(crius.runs) == 5 * 2 and {r.axes["seed"] for r in crius.runs} == {1, 2}
    assert [r.axes["policy"] for r in crius.runs][::2] == ["crius", "gavel", "fcfs", "gandiva-crius", "elasticflow-ls"]
    assert crius.runs[0].elastic.jobs == 1000 and crius.report.figures  # the paper's other figures, for the report
    sia = load_sweep_spec(sweeps / "sia.yaml")
    assert [r.axes["policy"] for r in sia.runs][::2] == ["Sia", "Pollux", "Gavel+TunedJobs"]
    assert {r.elastic.gpus for r in sia.runs} == {64}


def test_crius_comm_axis_none_makes_communication_free(tmp_path):
    """`comm: [none, analytical]`: the analytical runs keep the ids of a spec without `comm`; with none, Crius'
    offline profiles read 0 s and a rack-spanning job's true step is its compute alone (below analytical's)."""
    from artist.network.stack import CommSpec
    from artist.crius.simulation import crius_fabrics
    from artist.crius.truth import GroundTruth
    from artist.policies.crius.catalogue import Catalogue
    from artist.policies.crius.cluster import crius_cluster

    plain = load_sweep_spec(_spec(tmp_path))
    both = load_sweep_spec(_spec(tmp_path, SPEC.replace("seeds: [1]", "seeds: [1]\ncomm: [none, analytical]")))
    assert [r.axes["backend"] for r in both.runs] == ["none", "analytical"] * 2
    assert [r.run_id for r in both.runs if r.axes["backend"] == "analytical"] == [r.run_id for r in plain.runs]
    assert {r.elastic.backend for r in both.runs} == {"none", "analytical"}
    pools = crius_cluster("crius-testbed")
    free, alpha_beta = (Catalogue(pools, crius_fabrics(pools, CommSpec("none"))),
                        Catalogue(pools, crius_fabrics(pools)))
    assert free.tables["A40"].seconds("all_reduce", gpus=8, nbytes=3e7) == 0.0
    assert alpha_beta.tables["A40"].seconds("all_reduce", gpus=8, nbytes=3e7) > 0.0
    plans = [c.run_plan("gpt3-1.3b", 64, 8, "A40", 8, tuned=False) for c in (free, alpha_beta)]
    gpus = list(range(0, 8))  # 4 machines of 2 A40 each: data parallel across machines
    free_s, alpha_beta_s = (GroundTruth(c.fabrics).seconds(p, gpus) for c, p in zip((free, alpha_beta), plans))
    assert 0 < free_s < alpha_beta_s


def test_crius_backend_override_is_its_comm_axis(tmp_path):
    """`artist sweep crius.yaml --backend none` runs the paper's setting without a network; no calibration."""
    spec = load_sweep_spec(_spec(tmp_path), backend_override="none")
    assert {r.axes["backend"] for r in spec.runs} == {"none"} and {r.elastic.backend for r in spec.runs} == {"none"}
    with pytest.raises(InputError, match="--calibration"):
        load_sweep_spec(_spec(tmp_path), calibration_override="none")
    with pytest.raises(InputError, match="comm"):
        load_sweep_spec(_spec(tmp_path), backend_override="ns3")


@pytest.mark.parametrize("workload, where", [
    ("crius:jobs=5,arrivals_per_hour=1.0e-300", "field 'workloads[0].spec': 5 jobs at 1e-300 per hour arrive over"),
    ("crius:jobs=5,philly_log={trunc}", "line 9: not valid JSON"),
])
def test_a_crius_spec_that_every_run_would_fail_on_is_refused_when_loaded(tmp_path, workload, where):
    """Both passed the spec check: the rate ran for ever, the truncated log failed in every run."""
    trunc = tmp_path / "trunc.json"
    trunc.write_bytes((Path(__file__).parent / "data" / "traces" / "philly_cluster_job_log.json").read_bytes()[:300])
    text = SPEC.replace("crius:jobs=5,arrivals_per_hour=30", workload.format(trunc=trunc))
    with pytest.raises(InputError) as err:
        load_sweep_spec(_spec(tmp_path, text))
    assert where in str(err.value)


def test_crius_rows_have_every_loops_columns_measured_by_hand():
    """A Crius run's row has the columns of every loop (artist/metrics.py jobs_summary), from what the run did:
    FCFS never restarts a job, so its GPU-seconds are each job's N_G x (finish - first start) (the first plan
    search is held time); with communication free (`none`) no iteration waits for the network, and the
    analytical ground truth's questions are counted under its path."""
    import numpy as np

    from artist.crius.simulation import crius_fabrics, simulate
    from artist.crius.truth import GroundTruth
    from artist.crius.workload import crius_jobs
    from artist.network.stack import CommSpec
    from artist.policies.crius.catalogue import Catalogue
    from artist.policies.crius.cluster import crius_cluster
    from artist.sweep.crius import tables_of

    pools = crius_cluster("crius-testbed")
    rows = {}
    for backend in ("analytical", "none"):
        catalogue = Catalogue(pools, crius_fabrics(pools, CommSpec(backend)))
        truth = GroundTruth(catalogue.fabrics)
        drawn = crius_jobs(pools, catalogue, 6, 1, 30.0, truth)
        result = simulate(pools, drawn, "fcfs", 2, catalogue, truth)
        jobs, rows[backend], _ = tables_of(result)  # the last: the `none` run's jobs
    row = rows["analytical"]
    assert (jobs["restarts"] == 0).all() and row["restarts_total"] == 0
    held = (jobs["gpus_requested"] * (jobs["finish_s"] - jobs["start_s"])).sum()
    assert rows["none"]["gpu_utilisation_fraction"] == pytest.approx(held / (64 * rows["none"]["makespan_s"]),
                                                                      rel=1e-12)
    assert rows["none"]["comm_latency_mean_s"] == 0.0 and row["comm_latency_mean_s"] > 0
    assert row["answers_analytical"] > 0 and rows["none"]["answers_none"] > 0 and row["answers_flow"] == 0
    queue = jobs["queueing_delay_s"].to_numpy()
    assert rows["none"]["queueing_p95_s"] == pytest.approx(float(np.percentile(queue, 95)), rel=1e-12)
