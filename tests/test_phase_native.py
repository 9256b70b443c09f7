"""The compiled phase engine (engine.cc) against engine.py's loop: the same answers bit for bit on every
component of the contention scenarios, in steady state, for a fixed number of steps and when the event
cap stops a run; and the fallback to the Python loop where no compiler is found."""

from __future__ import annotations

import dataclasses

import pytest

from artist.errors import InputError
from artist.network.analytical import AnalyticalModel
from artist.network.flow.scenarios import contention_scenarios, large_contention_scenarios
from artist.network.ns3 import engine_build
from artist.network.phase import PhaseContention, native
from artist.network.phase.engine import run_component

pytestmark = pytest.mark.skipif(engine_build.find_compiler() is None, reason="no C++ compiler")


def _components(scenarios):
    """(name, canonical jobs, capacities, alone steps) of every component the phase model times."""
    out = []
    for sc in scenarios:
        model = PhaseContention(AnalyticalModel(sc.topology, channels=sc.channels), keep_jobs=True)
        model.steady(sc.graphs)
        for timed in model.components():
            if len(timed.jobs) > 1:
                out.append((sc.name, timed.jobs, timed.capacity, [step.alone for step in timed.steps]))
    return out


def _python(steady):
    return dataclasses.replace(steady, engine="python")


@pytest.fixture(scope="module")
def standard():
    return _components(contention_scenarios(24, 14, 1))


def test_compiled_and_python_engines_agree_bit_for_bit_in_steady_state(standard):
    assert len(standard) >= 20
    two_stage = [b for _, jobs, _, _ in standard for job in jobs for node in job.nodes for b in node.bundles
                 if 0 < b.ups < len(b.crossings)]
    assert len(two_stage) >= 20  # the buffered stages are exercised (up and down shared links)
    for name, jobs, capacity, alone in standard:
        python = run_component(jobs, capacity, alone=alone, engine="python")
        compiled = run_component(jobs, capacity, alone=alone, engine="compiled")
        assert all(s.engine == "compiled" for s in compiled)
        assert [_python(s) for s in compiled] == python, name


def test_jobs_numbered_on_their_own_and_mapped_give_the_canonical_components_answers():
    """The model runs each job in its own link numbering with a map onto the component's (packed once per
    job); the same run on the canonical jobs, in the Python loop, gives the same answers bit for bit."""
    scenarios = contention_scenarios(24, 14, 1)[:10]
    compared = 0
    for sc in scenarios:
        model = PhaseContention(AnalyticalModel(sc.topology, channels=sc.channels), keep_jobs=True)
        model.steady(sc.graphs)
        for timed in model.components():
            if len(timed.jobs) > 1:
                alone = [step.alone for step in timed.steps]
                python = run_component(timed.jobs, timed.capacity, alone=alone, engine="python")
                assert [_python(step.shared) for step in timed.steps] == python, sc.name
                compared += 1
    assert compared >= 5


def test_compiled_and_python_engines_agree_without_skipping_and_for_fixed_steps(standard):
    for name, jobs, capacity, _ in standard[:8]:
        assert ([_python(s) for s in run_component(jobs, capacity, engine="compiled")]
                == run_component(jobs, capacity, engine="python")), name
        assert ([_python(s) for s in run_component(jobs, capacity, steps=3, engine="compiled")]
                == run_component(jobs, capacity, steps=3, engine="python")), name
        for job in jobs:
            assert (_python(run_component([job], capacity, steps=1, engine="compiled")[0])
                    == run_component([job], capacity, steps=1, engine="python")[0]), name


def test_compiled_and_python_engines_agree_when_the_event_cap_stops_a_run(standard):
    for name, jobs, capacity, alone in standard[:8]:
        for cap in (7, 150):
            python = run_component(jobs, capacity, alone=alone, max_events=cap, engine="python")
            compiled = run_component(jobs, capacity, alone=alone, max_events=cap, engine="compiled")
            assert [_python(s) for s in compiled] == python, (name, cap)


def test_compiled_and_python_engines_agree_on_large_components():
    """Two of the larger scenarios (1F1B-like and MoE-like jobs, 8-32 per component; more than 24 bundles
    active at once, where max-min switches to flow/maxmin.py's array form: up to 50 flows), for their first
    5 000 events (the Python loop takes ~4 ms an event there, most of it max-min: the latency-shown fixed
    point calls it ~10 times a rate change)."""
    large = _components(large_contention_scenarios(24, 29, 1)[:2])
    assert large
    for name, jobs, capacity, alone in large:
        python = run_component(jobs, capacity, alone=alone, engine="python", max_events=5_000)
        compiled = run_component(jobs, capacity, alone=alone, engine="compiled", max_events=5_000)
        assert [_python(s) for s in compiled] == python, name


def test_without_a_compiler_the_python_loop_answers_and_says_so(monkeypatch, standard):
    monkeypatch.setattr(engine_build, "find_compiler", lambda: None)
    monkeypatch.setattr(native, "_loaded", {})
    monkeypatch.delenv("ARTIST_PHASE_ENGINE", raising=False)
    name, jobs, capacity, alone = standard[0]
    with pytest.warns(RuntimeWarning, match="no C\\+\\+ compiler"):
        got = run_component(jobs, capacity, alone=alone)
    assert all(s.engine == "python" for s in got)
    monkeypatch.setenv("ARTIST_PHASE_ENGINE", "compiled")
    with pytest.raises(engine_build.EngineBuildError, match="ARTIST_PHASE_ENGINE=compiled"):
        run_component(jobs, capacity, alone=alone)


def test_the_engine_choice_is_read_from_the_environment(monkeypatch, standard):
    name, jobs, capacity, alone = standard[0]
    monkeypatch.setenv("ARTIST_PHASE_ENGINE", "python")
    assert all(s.engine == "python" for s in run_component(jobs, capacity, alone=alone))
    monkeypatch.setenv("ARTIST_PHASE_ENGINE", "auto")
    assert all(s.engine == "compiled" for s in run_component(jobs, capacity, alone=alone))
    monkeypatch.setenv("ARTIST_PHASE_ENGINE", "fast")
    with pytest.raises(InputError, match="ARTIST_PHASE_ENGINE='fast'"):
        run_component(jobs, capacity, alone=alone)


def test_a_window_holds_at_least_64_contended_phases_of_the_slowest_job_and_at_most_4_steps():
    from artist.network.phase.engine import PhaseBundle, PhaseJob, PhaseNode, window_of

    def job(phases):
        bundle = PhaseBundle(1.0, 1.0, ((0, 1.0),))
        return PhaseJob(tuple(PhaseNode((i - 1,) if i else (), 1e-3, True, (bundle,)) for i in range(phases)))

    assert [window_of(job(p)) for p in (1, 16, 17, 32, 33, 64, 5000)] == [4, 4, 4, 2, 2, 1, 1]



def test_a_required_compiled_engine_that_cannot_be_built_is_one_line_through_the_cli(monkeypatch, capsys):
    """native.py raises the EngineBuildError (test above) from inside any command that times shared
    contention; the CLI says it in one line, exit 3, as it does an ns-3 run that failed."""
    import artist.commands.simulate as command
    from artist.cli import main

    monkeypatch.setattr(engine_build, "find_compiler", lambda: None)
    monkeypatch.setattr(native, "_loaded", {})
    monkeypatch.setenv("ARTIST_PHASE_ENGINE", "compiled")
    monkeypatch.setattr(command, "simulate", lambda *a, **k: native.compiled_runner())
    assert main(["simulate", "--topology", "topologies/dally-3tier.yaml", "--racks", "1",
                 "--workload", "poisson:n=2", "--quiet"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ARTIST_PHASE_ENGINE=compiled" in err[0], err


def test_a_bad_engine_choice_is_refused_when_the_run_is_set_up_not_at_its_first_shared_component(
        monkeypatch, capsys):
    from artist.cli import main

    monkeypatch.setenv("ARTIST_PHASE_ENGINE", "fast")
    assert main(["simulate", "--topology", "topologies/dally-3tier.yaml", "--racks", "1",
                 "--workload", "poisson:n=2", "--contention", "shared", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ARTIST_PHASE_ENGINE='fast'" in err[0], err
    monkeypatch.setenv("ARTIST_PHASE_ENGINE", "python")
    assert main(["simulate", "--topology", "topologies/dally-3tier.yaml", "--racks", "1",
                 "--workload", "poisson:n=2", "--contention", "shared", "--quiet"]) == 0
