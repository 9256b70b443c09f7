"""Every benchmark script still runs: each has a --tiny mode (seconds) that exercises its code paths, so an
import or interface change in the package breaks this test rather than the next measurement (a script that
ran 9 minutes before failing on a moved import went unnoticed once). The figures are not checked here:
benchmarks print them and assert nothing."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))
# their tiny modes start ns-3
NS3 = {"contention_accuracy", "hybrid_speed", "ns3_speed", "ns3_step_speed", "sweep_cost", "sweep_speed"}


def test_every_benchmark_is_listed():
    assert len(SCRIPTS) >= 18 and NS3 <= {p.stem for p in SCRIPTS}


@pytest.mark.parametrize("script", [pytest.param(p, marks=pytest.mark.ns3) if p.stem in NS3 else p for p in SCRIPTS],
                         ids=lambda p: p.stem)
def test_the_benchmark_runs_in_its_tiny_mode(script, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ARTIST_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, str(script), "--tiny"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert done.stdout.strip(), "a benchmark prints its figures"


def test_the_shipped_ns3_references_match_the_scenarios_they_answer():
    # benchmarks/data/contention_accuracy_ns3.json holds ns-3's answers per scenario (keyed by the scenario's
    # name first): a change of the scenarios (jobs, seeds) must show here, not as a silently wrong table. Each
    # job's long-run shared step cannot be faster than its step alone beyond the long run's own spread (1 %)
    import json

    from artist.network.flow.scenarios import contention_scenarios, large_contention_scenarios

    with open(ROOT / "benchmarks" / "data" / "contention_accuracy_ns3.json") as f:
        shipped = json.load(f)
    assert "_source" in shipped
    by_name = {json.loads(key)[0]: answers for key, answers in shipped.items() if not key.startswith("_")}
    scenarios = contention_scenarios(24, 14) + large_contention_scenarios(24, 29)
    assert sorted(by_name) == sorted(sc.name for sc in scenarios)
    for sc in scenarios:
        answers = by_name[sc.name]
        assert sorted(answers) == sorted(sc.graphs), sc.name
        for job, a in answers.items():
            assert a["alone"] > 0 and a["shared"] >= 0.99 * a["alone"], (sc.name, job)
