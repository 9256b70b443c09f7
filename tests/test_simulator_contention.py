"""The simulator's shared contention mode: co-runners re-rated at every start and stop.

Expected completions follow the piecewise-constant rates by hand: a job runs at its shared step
time while its co-runner runs, then at its step alone."""

from __future__ import annotations

import pandas as pd
import pytest
from fabric_helpers import NIC_GBPS, colliding_pairs, ecmp_topology

from artist.metrics import job_table, spine_table, summary
from artist.network.flow import FlowModel
from artist.perf.compute import ComputeModel
from artist.perf.model import PerfModel
from artist.placement import Placement
from artist.policies.base import Decision, Policy
from artist.simulator import SimulationError, SimulatorConfig, simulate
from artist.workload import Job, ModelProfile

MODEL = ModelProfile("one", tensor_bytes=(16 << 20,), compute_seconds=1e-4, reference_gpu="A100")


class Pinned(Policy):
    """Starts every waiting job on the GPUs given for it."""

    name = "pinned"

    def __init__(self, gpus: dict):
        self.gpus = gpus

    def schedule(self, view):
        wanted = {s.job_id: s.placement for s in view.running}
        wanted.update({s.job_id: Placement(view.topology, self.gpus[s.job_id]) for s in view.waiting})
        return Decision(wanted)


def _run(topo, jobs, gpus, contention):
    config = SimulatorConfig(round_interval_s=None, restore_seconds=0.0, contention=contention)
    return simulate(topo, jobs, {"one": MODEL}, Pinned(gpus), FlowModel(topo), config)


def _steps(topo, a, b):
    perf = PerfModel(FlowModel(topo), ComputeModel(topo), "shared")
    alone = perf.estimate(MODEL, Placement(topo, a)).step_seconds
    shared = perf.shared({"a": (MODEL, Placement(topo, a)), "b": (MODEL, Placement(topo, b))})
    return alone, shared["a"].step_seconds, shared["b"].step_seconds


def test_colliding_jobs_run_at_the_shared_rate_until_one_finishes():
    topo = ecmp_topology(oversubscription=2.0)
    a, b = colliding_pairs(topo, collide=True)
    alone, shared_a, shared_b = _steps(topo, a, b)
    assert shared_a > 1.5 * alone  # they do contend (2x on the bandwidth part)
    jobs = [Job("a", 0.0, "one", 2, 100), Job("b", 0.0, "one", 2, 300)]
    result = _run(topo, jobs, {"a": a, "b": b}, "shared")
    finish = {s.job_id: s.finish for s in result.jobs}
    assert finish["a"] == pytest.approx(100 * shared_a, rel=1e-12)
    # b: 100 x shared_a of time at its shared rate, then the rest alone
    done_b = 100 * shared_a / shared_b
    assert finish["b"] == pytest.approx(100 * shared_a + (300 - done_b) * alone, rel=1e-12)
    table = job_table(result).set_index("job_id")
    assert table.loc["a", "contention_slowdown"] == pytest.approx(shared_a / alone, rel=1e-9)
    expected_b = (100 * shared_a + (300 - done_b) * alone) / (300 * alone)
    assert table.loc["b", "contention_slowdown"] == pytest.approx(expected_b, rel=1e-9)
    assert summary(result)["contention_slowdown_max"] == pytest.approx(shared_a / alone, rel=1e-9)
    # spine: each 2-rank ring puts its whole gradient T on the port of its forward plane every step
    # (2 steps of T/2); both share one port while both run, then b alone, then nothing
    port = NIC_GBPS * 1e9 / 8
    gradient = MODEL.total_bytes
    times = [row[0] for row in result.spine_utilisation]
    peaks = [row[1] for row in result.spine_utilisation]
    assert times == pytest.approx([0.0, finish["a"], finish["b"]])
    assert peaks == pytest.approx([2 * gradient / shared_a / port, gradient / alone / port, 0.0], rel=1e-9)
    assert 0.9 < peaks[0] <= 1.0  # the shared port is (nearly) full: latencies take the rest
    assert list(spine_table(result).columns)[:2] == ["time_s", "spine_max_utilisation"]
    isolated = _run(topo, jobs, {"a": a, "b": b}, "isolated")
    assert {s.job_id: s.finish for s in isolated.jobs} == pytest.approx({"a": 100 * alone, "b": 300 * alone})
    assert "contention_slowdown" not in job_table(isolated)  # isolated tables keep their columns


def test_jobs_on_disjoint_ports_and_single_rack_jobs_are_never_re_rated():
    topo = ecmp_topology()
    c, d = colliding_pairs(topo, collide=False)
    in_rack = tuple(g for g in range(4) if g not in c + d)[:2]
    jobs = [Job("c", 0.0, "one", 2, 50), Job("d", 0.0, "one", 2, 80), Job("r", 0.0, "one", 2, 60)]
    result = _run(topo, jobs, {"c": c, "d": d, "r": in_rack}, "shared")
    table = job_table(result).set_index("job_id")
    # steady state averages 4 identical steps: equal to the alone step up to float rounding
    assert list(table["contention_slowdown"]) == pytest.approx([1.0, 1.0, 1.0], rel=1e-12)
    assert table.loc["r", "rate_changes"] == 0


def test_shared_mode_is_deterministic(tmp_path):
    topo = ecmp_topology(racks=2, oversubscription=2.0)
    pairs = [(0, 4), (1, 5), (2, 6), (3, 7)]
    jobs = [Job(f"j{i}", 0.01 * i, "one", 2, 40 + 10 * i) for i in range(4)]
    tables = []
    for _ in range(2):
        result = _run(topo, jobs, {f"j{i}": pairs[i] for i in range(4)}, "shared")
        path = tmp_path / f"jobs{len(tables)}.csv"
        job_table(result).to_csv(path, index=False, float_format="%.9g")
        tables.append(path.read_bytes())
    assert tables[0] == tables[1]


def test_a_performance_model_in_another_mode_is_refused():
    topo = ecmp_topology()
    with pytest.raises(SimulationError, match="contention mode"):
        simulate(topo, [Job("a", 0.0, "one", 2, 1)], {"one": MODEL}, Pinned({"a": (0, 4)}),
                 PerfModel(FlowModel(topo), ComputeModel(topo)), SimulatorConfig(contention="shared"))


def test_contention_is_a_sweep_setting_recorded_in_the_run_id(tmp_path):
    from sweep_helpers import tiny_spec

    from artist.errors import InputError
    from artist.sweep.spec import load_sweep_spec

    simulator = {"round_interval_s": None, "restore_seconds": 30}
    base = load_sweep_spec(tiny_spec(tmp_path)).runs
    isolated = load_sweep_spec(tiny_spec(tmp_path, simulator={**simulator, "contention": "isolated"})).runs
    shared = load_sweep_spec(tiny_spec(tmp_path, simulator={**simulator, "contention": "shared"})).runs
    assert [r.run_id for r in isolated] == [r.run_id for r in base]  # isolated runs keep their ids
    assert not {r.run_id for r in shared} & {r.run_id for r in base}
    assert shared[0].identity["simulator"]["contention"] == "shared" and shared[0].simulator.contention == "shared"
    with pytest.raises(InputError, match=r"field 'simulator.contention': unknown contention mode 'sometimes'"):
        load_sweep_spec(tiny_spec(tmp_path, simulator={**simulator, "contention": "sometimes"}))


def test_a_shared_sweep_records_slowdown_and_spine_peak_and_plots_them(tmp_path):
    from sweep_helpers import generated_spec

    from artist.sweep.plots import plot_sweep
    from artist.sweep.run import run_sweep
    from artist.sweep.spec import load_sweep_spec

    spec = generated_spec(tmp_path, racks=[2], seeds=[0], comm="flow",
                          workloads=["batch:n=6,gpus=8,min_iter=50,max_iter=200"], policies=["fifo"],
                          simulator={"round_interval_s": None, "restore_seconds": 30, "contention": "shared"})
    report = run_sweep(load_sweep_spec(spec), tmp_path / "out", n_jobs=1, progress=False,
                       cache_dir=tmp_path / "cache", plots=False)
    results = pd.read_csv(report.out_dir / "results.csv")
    assert {"contention_slowdown_mean", "spine_utilisation_peak"} <= set(results.columns)
    assert (results["contention_slowdown_mean"] >= 1.0).all() and (results["spine_utilisation_peak"] >= 0).all()
    written = {p.name for p in plot_sweep(report.out_dir)}
    assert {"contention.png", "contention.pdf"} <= written
