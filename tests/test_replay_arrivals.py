"""The replay generator: jobs drawn from a mix on the arrival gaps of published traces (any format)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from artist.cli import main
from artist.errors import InputError
from artist.sweep.spec import load_sweep_spec
from artist.workload import load_models
from artist.workload.spec import jobs_from_spec
from sweep_helpers import write_spec, write_topology

ROOT = Path(__file__).resolve().parent.parent
SATURN = ROOT / "workloads" / "sia" / "workloads" / "saturn"
MODELS = load_models()


def _canonical(path: Path, arrivals) -> Path:
    """A canonical trace whose jobs arrive at these times (in shuffled row order: the reader's order must not
    matter)."""
    rows = [f"j{i},{t},resnet18,1,100" for i, t in enumerate(arrivals)]
    path.write_text("job_id,arrival,model,gpus,iterations\n" + "\n".join(reversed(rows)) + "\n")
    return path


def _arrivals(spec: str, **kw) -> list[float]:
    return [job.arrival for job in jobs_from_spec(spec, MODELS, 0, **kw)]


def test_the_traces_own_gaps_in_time_order_then_scaled_to_the_mean_asked(tmp_path):
    trace = _canonical(tmp_path / "t.csv", [100, 110, 140, 200])  # gaps 10, 30, 60
    assert _arrivals(f"replay:n=4,trace={trace}") == [0.0, 10.0, 40.0, 100.0]
    # mean gap 100/3 -> 20: every gap times 0.6
    assert _arrivals(f"replay:n=4,trace={trace},interarrival=20") == pytest.approx([0.0, 6.0, 24.0, 60.0])
    # stated for 256 GPUs, run on 1 024: a quarter of the gap, as Poisson streams scale
    assert _arrivals(f"replay:n=4,trace={trace},interarrival=20,interarrival_gpus=256", cluster_gpus=1024) == \
        pytest.approx([0.0, 1.5, 6.0, 15.0])
    # without interarrival= the traces' own mean is the one stated for those GPUs
    assert _arrivals(f"replay:n=4,trace={trace},interarrival_gpus=512", cluster_gpus=1024) == \
        pytest.approx([0.0, 5.0, 20.0, 50.0])
    # fewer jobs take the first gaps, scaled to their own mean (10, 30 -> mean 20)
    assert _arrivals(f"replay:n=3,trace={trace},interarrival=10") == pytest.approx([0.0, 5.0, 20.0])


def test_traces_run_end_to_end_without_a_gap_between_them(tmp_path):
    first = _canonical(tmp_path / "a.csv", [0, 5])
    second = _canonical(tmp_path / "b.csv", [1000, 1002, 1009])
    assert _arrivals(f"replay:n=4,trace={first}|{second}") == [0.0, 5.0, 7.0, 14.0]


def test_a_published_workload_gives_its_burstiness_and_the_mix_draws_the_jobs():
    traces = "|".join(str(SATURN / f"workload-{i}.csv") for i in range(1, 8))
    spec = f"replay:n=1000,trace={traces},interarrival=15,gpus=1|2|4|8,models=resnet18|resnet50"
    jobs = jobs_from_spec(spec, MODELS, 3)
    gaps = np.diff([j.arrival for j in jobs])
    assert len(jobs) == 1000 and gaps.mean() == pytest.approx(15.0)
    # Helios' busiest hours: gaps burstier than a Poisson stream's (coefficient of variation 1)
    assert gaps.std() / gaps.mean() > 1.15
    assert {j.model for j in jobs} == {"resnet18", "resnet50"} and {j.gpus for j in jobs} == {1, 2, 4, 8}
    assert jobs == jobs_from_spec(spec, MODELS, 3)  # seeded
    assert [j.gpus for j in jobs] != [j.gpus for j in jobs_from_spec(spec, MODELS, 4)]


@pytest.mark.parametrize("params, where, words", [
    ("n=3", "trace", "required"),
    ("n=3,trace=/nonexistent/t.csv", "trace", "no such file"),
    ("n=9,trace=TRACE", "n", "the traces give 3"),
    ("n=3,trace=SAME,interarrival=5", "trace", "no gaps to scale"),
    ("n=3,trace=TRACE,speed=2", "speed", "unknown"),
])
def test_bad_replay_parameters_are_one_line_naming_the_parameter(tmp_path, params, where, words):
    trace = _canonical(tmp_path / "t.csv", [0, 1, 2, 3])
    same = _canonical(tmp_path / "s.csv", [7, 7, 7, 7])
    with pytest.raises(InputError) as err:
        jobs_from_spec("replay:" + params.replace("TRACE", str(trace)).replace("SAME", str(same)), MODELS, 0)
    assert f"parameter '{where}'" in str(err.value) and words in str(err.value)


def test_a_sweep_reads_the_traces_beside_the_spec_and_keys_runs_on_their_contents(tmp_path):
    write_topology(tmp_path)
    _canonical(tmp_path / "t.csv", [0, 60, 90, 300])
    body = {"name": "replay", "topology": "topo.yaml", "racks": [1], "policies": ["fifo"],
            "workloads": ["replay:n=4,trace=t.csv,gpus=1|2,min_iter=100,max_iter=200"], "seeds": [0],
            "comm": "analytical"}
    path = write_spec(tmp_path, body)
    first = load_sweep_spec(path).runs
    assert [r.run_id for r in first] == [r.run_id for r in load_sweep_spec(path).runs]
    _canonical(tmp_path / "t.csv", [0, 60, 90, 301])
    assert {r.run_id for r in load_sweep_spec(path).runs}.isdisjoint(r.run_id for r in first)
    (tmp_path / "t.csv").unlink()
    with pytest.raises(InputError, match="no such trace"):
        load_sweep_spec(path)


def test_simulate_runs_a_replayed_workload_and_refuses_a_bad_one_in_one_line(tmp_path, capsys):
    trace = _canonical(tmp_path / "t.csv", [0, 30, 45, 400])
    ok = main(["simulate", "--policy", "fifo", "--topology", "dally-3tier", "--racks", "1", "--quiet", "--no-cache",
               "--workload", f"replay:n=4,trace={trace},gpus=1|2,min_iter=100,max_iter=200"])
    assert ok == 0
    capsys.readouterr()
    bad = main(["simulate", "--policy", "fifo", "--topology", "dally-3tier", "--racks", "1", "--quiet",
                "--no-cache", "--workload", f"replay:n=40,trace={trace}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert bad != 0 and len(err) == 1 and "parameter 'n'" in err[0] and "Traceback" not in err[0]
