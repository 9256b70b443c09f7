"""Jobs with an LLM-zoo model and a hybrid plan: the trace columns, the LLM generator and its plan rule, and
simulations with such jobs through every policy (analytical backend), checked against the hand α-β step."""

from __future__ import annotations

from dataclasses import replace

import pytest
from alpha_beta import BASE, NV_BPS, NV_HOP
from conftest import make_topology

from artist.errors import InputError
from artist.metrics import job_table
from artist.network.analytical import AnalyticalModel
from artist.perf.hybrid_job import default_plan
from artist.policies.registry import make_policy
from artist.simulator import SimulationError, SimulatorConfig, simulate
from artist.workload import Job, load_models, read_jobs_csv, write_jobs_csv
from artist.workload.spec import jobs_from_spec
from artist.workload.zoo import zoo_model

TOPO = make_topology(gpus_per_machine=8)  # 2 racks x 2 machines x 8 A100 (conftest figures), 32 GPUs
MODELS = load_models()


def _trace(tmp_path, text):
    path = tmp_path / "trace.csv"
    path.write_text(text)
    return path


def test_plan_and_global_batch_columns_read_and_write_back(tmp_path):
    path = _trace(tmp_path, "job_id,arrival,model,gpus,iterations,plan,global_batch\n"
                            "a,0,gpt3-1.3b,16,10,dp=2;tp=8;pp=1,64\n"
                            "b,5,resnet50,4,100,,\n"
                            'c,9,gpt3-2.7b,16,20,"dp=1,tp=8,pp=2",\n')
    jobs = read_jobs_csv(path, MODELS)
    assert [j.plan for j in jobs] == ["dp=2,tp=8,pp=1,ep=1,microbatches=32", "",  # 64 sequences / dp 2
                                      "dp=1,tp=8,pp=2,ep=1,microbatches=512"]  # no batch: 512 / dp
    assert [j.global_batch for j in jobs] == [64, 0, 0]
    out = tmp_path / "out.csv"
    write_jobs_csv(jobs, out)
    assert read_jobs_csv(out, MODELS) == jobs
    write_jobs_csv(jobs[1:2], out)  # no plan: the columns the canonical CSV always had
    assert out.read_text().splitlines()[0] == "job_id,arrival,model,gpus,iterations,user,vc"


@pytest.mark.parametrize("row, where, problem", [
    ("a,0,resnet50,8,10,dp=1;tp=8;pp=1,", "column 'model'", "needs an LLM-zoo model"),
    ("a,0,resnet50,8,10,,64", "column 'global_batch'", "only with a plan"),
    ("a,0,gpt3-1.3b,16,10,dp=1;tp=8;pp=1,", "column 'plan'", "the job asks 16"),
    ("a,0,gpt3-1.3b,16,10,dp=2;tp=8;pp=1,63", "column 'plan'", "not a whole number of micro-batches"),
    ("a,0,gpt3-1.3b,16,10,dp=2;tp=8;pp=1;microbatches=4,64", "column 'plan'", "microbatches=4 but"),
    ("a,0,gpt3-1.3b,8,10,dp=2;tp=4;pp=1;ep=2,", "column 'plan'", "has no experts"),
    ("a,0,gpt3-1.3b,8,10,tp=eight,", "column 'plan'", "whole number"),
])
def test_bad_plan_rows_name_the_line_and_column(tmp_path, row, where, problem):
    path = _trace(tmp_path, "job_id,arrival,model,gpus,iterations,plan,global_batch\n" + row + "\n")
    with pytest.raises(InputError) as err:
        read_jobs_csv(path, MODELS)
    text = str(err.value)
    assert str(path) in text and f"line 2, {where}" in text and problem in text and "\n" not in text


def test_plan_rule_adds_stages_only_when_memory_asks():
    # gpt3-13b at TP 8: weights, gradients and Adam state are 16 bytes per parameter (mixed precision,
    # Rajbhandari et al. 2020) = 13e9 x 16 / 8 = 24.2 GiB per GPU, over 20 GiB: two stages are needed.
    assert default_plan(zoo_model("gpt3-13b"), 16, 64, 80 * 2**30).text() == "dp=2,tp=8,pp=1,ep=1,microbatches=32"
    assert default_plan(zoo_model("gpt3-13b"), 16, 64, 20 * 2**30).text() == "dp=1,tp=8,pp=2,ep=1,microbatches=64"
    with pytest.raises(ValueError, match="no plan of gpt3-13b on 8 GPUs fits in 20 GiB"):
        default_plan(zoo_model("gpt3-13b"), 8, 64, 20 * 2**30)


def test_llm_generator_is_seeded_and_its_jobs_carry_whole_plans():
    spec = "llm:n=12,interarrival=300,models=gpt3-1.3b|llama2-7b|gpt3-13b,gpus=8|16,global_batch=32"
    jobs = jobs_from_spec(spec, MODELS, seed=3)
    assert jobs == jobs_from_spec(spec, MODELS, seed=3) and jobs != jobs_from_spec(spec, MODELS, seed=4)
    for job in jobs:
        dp, tp, pp, _, m = (int(kv.split("=")[1]) for kv in job.plan.split(","))
        assert dp * tp * pp == job.gpus and dp * m == 32 and job.global_batch == 32
    with pytest.raises(InputError, match="unknown model 'resnet50'"):
        jobs_from_spec("llm:n=2,models=resnet50", MODELS, seed=0)
    with pytest.raises(InputError, match="no plan of gpt3-13b on 8 GPUs fits in 10 GiB"):
        jobs_from_spec("llm:n=4,models=gpt3-13b,gpus=8,gpu_memory_gib=10", MODELS, seed=0)


def _ring_all_reduce_in_one_machine(nbytes):  # tests/alpha_beta.py figures: 2 (n - 1) NVLink steps of S / n
    n = 8
    return BASE + 2 * (n - 1) * NV_HOP + 2 * (n - 1) * (nbytes / n) / NV_BPS


def test_a_lone_llm_job_finishes_after_its_hand_alpha_beta_steps():
    job = Job("g", 0.0, "gpt3-1.3b", 8, 50, plan="dp=1,tp=8,pp=1,ep=1,microbatches=2")
    result = simulate(TOPO, [job], MODELS, make_policy("fifo"), AnalyticalModel(TOPO),
                      SimulatorConfig(check_invariants=True))
    (state,) = result.jobs
    assert state.placement.gpus == tuple(range(8))  # FIFO packs: the TP group stays on one machine's NVLink
    compute = state.model.compute_seconds  # pp = 1: no bubble, so the ideal step is the compute
    count = 24 * 2 * (2 + 4)  # blocks x micro-batches x (forward 2 + backward with recomputation 4) all-reduces
    step = compute + count * _ring_all_reduce_in_one_machine(2048 * 2048 * 2)  # sequence x hidden x 2 bytes
    assert state.finish == pytest.approx(50 * step, rel=1e-9)
    row = job_table(result).iloc[0]
    assert row["model"] == "gpt3-1.3b" and row["ideal_seconds"] == pytest.approx(50 * compute, rel=1e-12)
    assert row["comm_seconds_per_iteration"] == pytest.approx(step - compute, rel=1e-9)


@pytest.mark.parametrize("policy", ["fifo", "tiresias", "gandiva", "dally"])
def test_mixed_llm_and_ddp_jobs_run_to_completion_deterministically(policy):
    jobs = jobs_from_spec("llm:n=6,interarrival=120,models=gpt3-1.3b|bert-1.3b,gpus=8|16,global_batch=16,"
                          "min_iter=20,max_iter=200", MODELS, seed=1)
    jobs += jobs_from_spec("poisson:n=6,interarrival=60,gpus=1|4|8,min_iter=100,max_iter=2000", MODELS, seed=1)
    runs = [simulate(TOPO, jobs, MODELS, make_policy(policy), AnalyticalModel(TOPO),
                     SimulatorConfig(check_invariants=True)) for _ in range(2)]
    tables = [job_table(r) for r in runs]
    assert tables[0].equals(tables[1])
    assert tables[0]["finish_s"].notna().all() and len(tables[0]) == 12
    assert any(s.job.plan for s in runs[0].jobs) and any(not s.job.plan for s in runs[0].jobs)
    for state in runs[0].jobs:
        if state.job.plan:  # communication only adds: no placement runs a step faster than its compute
            assert all(r.iteration_seconds >= state.model.compute_seconds for r in state.history)
        assert state.job.iterations * state.model.compute_seconds <= state.finish - state.first_start + 1e-9


def test_hybrid_jobs_refuse_what_the_simulator_cannot_time():
    job = Job("g", 0.0, "gpt3-1.3b", 8, 5, plan="dp=1,tp=8,pp=1,ep=1,microbatches=2")
    # shared contention times hybrid jobs (tests/test_llm_contention.py); a job alone: its alone step
    shared = simulate(TOPO, [job], MODELS, make_policy("fifo"), AnalyticalModel(TOPO),
                      SimulatorConfig(contention="shared"))
    isolated = simulate(TOPO, [job], MODELS, make_policy("fifo"), AnalyticalModel(TOPO))
    assert shared.jobs[0].finish == isolated.jobs[0].finish
    big = Job("h", 0.0, "gpt3-175b", 8, 5, plan="dp=1,tp=8,pp=1,ep=1,microbatches=2")
    with pytest.raises(SimulationError, match="job h: .*does not fit"):
        simulate(TOPO, [big], MODELS, make_policy("fifo"), AnalyticalModel(TOPO))


def test_a_sweep_spec_with_an_llm_workload_and_a_calibration_loads(tmp_path):
    from artist.sweep.spec import load_sweep_spec

    repo = __import__("pathlib").Path(__file__).resolve().parent.parent
    spec = tmp_path / "llm.yaml"
    spec.write_text(f"name: llm\ntopology: {repo}/topologies/dgx-h100.yaml\nracks: [1]\npolicies: [fifo]\n"
                    "workloads:\n  - spec: llm:n=4,global_batch=64,models=gpt3-1.3b\n"
                    "comm: {backend: analytical, algorithm: ring, channels: 8}\n"
                    f"calibration: {repo}/calibration/profiles/h100-analytical.yaml\n")
    loaded = load_sweep_spec(spec)  # the calibration coverage note reads profiles' buckets: zoo jobs have none
    assert len(loaded.runs) == 1 and all(job.plan for job in loaded.runs[0].jobs)


def _brute_force_fastest(placement, model, global_batch):
    """Every dp x tp x pp of the placement's GPUs (tp up to a machine, a whole number of micro-batches),
    timed one by one: the fastest step, written without the code's candidate list."""
    from artist.parallel.plan import ParallelPlan
    from artist.perf.hybrid import estimate_plan

    n, best = placement.size, None
    for tp in (1, 2, 4, 8):
        for pp in range(1, n + 1):
            if n % (tp * pp) or global_batch % (n // (tp * pp)) or pp > zoo_model(model).layers:
                continue
            dp = n // (tp * pp)
            est = estimate_plan(AnalyticalModel(TOPO), TOPO, zoo_model(model),
                                ParallelPlan(dp, tp, pp, 1, global_batch // dp), placement.gpus)
            best = est.step_seconds if best is None else min(best, est.step_seconds)
    return best


def test_plan_auto_takes_the_fastest_plan_on_each_placement(tmp_path):
    from artist.perf.model import as_perf_model
    from artist.placement import Placement

    path = _trace(tmp_path, "job_id,arrival,model,gpus,iterations,plan,global_batch\na,0,gpt3-1.3b,16,30,auto,16\n")
    (job,) = read_jobs_csv(path, MODELS)
    assert (job.plan, job.global_batch) == ("auto", 16)
    result = simulate(TOPO, [job], MODELS, make_policy("fifo"), AnalyticalModel(TOPO))
    (state,) = result.jobs
    packed = _brute_force_fastest(state.placement, "gpt3-1.3b", 16)
    assert state.finish == pytest.approx(30 * packed, rel=1e-12)
    # Four GPUs on each of four machines: the fastest plan there is another one, and slower.
    spread = Placement(TOPO, tuple(g for m in range(4) for g in range(8 * m, 8 * m + 4)))
    est = as_perf_model(AnalyticalModel(TOPO), TOPO).estimate(state.model, spread)
    assert est.step_seconds == pytest.approx(_brute_force_fastest(spread, "gpt3-1.3b", 16), rel=1e-12)
    assert est.step_seconds > packed
    bad = _trace(tmp_path, "job_id,arrival,model,gpus,iterations,plan\na,0,gpt3-1.3b,16,30,auto\n")
    with pytest.raises(InputError, match="plan auto needs the global batch"):
        read_jobs_csv(bad, MODELS)


def test_llm_generator_with_plan_auto_runs_through_dally():
    jobs = jobs_from_spec("llm:n=4,interarrival=200,models=gpt3-1.3b,gpus=8|16,global_batch=16,plan=auto,"
                          "min_iter=10,max_iter=50", MODELS, seed=2)
    assert {j.plan for j in jobs} == {"auto"}
    result = simulate(TOPO, jobs, MODELS, make_policy("dally"), AnalyticalModel(TOPO),
                      SimulatorConfig(check_invariants=True))
    assert all(s.finish is not None for s in result.jobs)


def test_llm_fraction_mixes_llm_jobs_into_a_poisson_stream_on_its_arrivals():
    """llm_fraction=F: each arrival of the data-parallel stream carries, with probability F, the LLM job the
    llm generator draws for the same seed and position instead (coin flips from their own stream)."""
    ddp_text = "poisson:n=200,interarrival=30,gpus=1|2|4"
    ddp = jobs_from_spec(ddp_text, MODELS, seed=5)
    llm = jobs_from_spec("llm:n=200,interarrival=30,gpus=8|16", MODELS, seed=5)
    mixed = jobs_from_spec(ddp_text + ",llm_fraction=0.25,llm_gpus=8|16", MODELS, seed=5)
    assert [j.arrival for j in mixed] == [j.arrival for j in ddp]  # one arrival stream
    chosen = [m == d for m, d in zip(mixed, ddp)]
    for m, d, l_job, kept in zip(mixed, ddp, llm, chosen):
        assert m == (d if kept else replace(l_job, arrival=d.arrival))
    assert 30 <= chosen.count(False) <= 70  # about 50 of 200 (binomial, sd ~6)
    assert jobs_from_spec(ddp_text + ",llm_fraction=1,llm_gpus=8|16", MODELS, seed=5) == \
        [replace(l_job, arrival=d.arrival) for l_job, d in zip(llm, ddp)]
    assert jobs_from_spec(ddp_text + ",llm_fraction=0.25,llm_gpus=8|16", MODELS, seed=5) == mixed  # deterministic


@pytest.mark.parametrize("text, field", [
    ("poisson:n=5,llm_gpus=8", "llm_gpus"),  # LLM settings without a share of LLM jobs
    ("poisson:n=5,llm_fraction=1.5", "llm_fraction"),
    ("batch:n=5,llm_fraction=0.5,llm_models=resnet50", "llm_models"),
])
def test_llm_fraction_errors_name_the_parameter(text, field):
    with pytest.raises(InputError, match=f"parameter '{field}'"):
        jobs_from_spec(text, MODELS, seed=0)
