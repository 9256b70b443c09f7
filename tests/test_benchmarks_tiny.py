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
