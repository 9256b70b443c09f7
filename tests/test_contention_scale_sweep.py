"""sweeps/contention-scale.yaml's reduced version: it runs, both arms have the same runs, the shared arm writes
the contention columns, and a second run from another empty cache gives byte-identical results."""

from __future__ import annotations

from conftest import REPO

from artist.sweep.run import run_sweep
from artist.sweep.spec import load_sweep_spec

SHARED = REPO / "sweeps" / "contention-scale.yaml"
ISOLATED = REPO / "sweeps" / "contention-scale-isolated.yaml"


def _run(path, out, cache):
    spec = load_sweep_spec(path, reduced=True)
    report = run_sweep(spec, out, n_jobs=1, progress=False, plots=False, cache_dir=cache)
    assert not report.failed, report.failed
    return out / "results.csv"


def test_reduced_contention_scale_is_deterministic_and_its_arms_differ_only_in_contention(tmp_path):
    first = _run(SHARED, tmp_path / "a", tmp_path / "cache-a")
    second = _run(SHARED, tmp_path / "b", tmp_path / "cache-b")
    assert first.read_bytes() == second.read_bytes()
    import pandas as pd

    shared = pd.read_csv(first)
    isolated = pd.read_csv(_run(ISOLATED, tmp_path / "c", tmp_path / "cache-c"))
    assert list(shared["policy"]) == list(isolated["policy"]) == ["fifo", "tiresias", "gandiva", "dally"]
    for column in ("met_contention_fraction", "contention_slowdown_mean", "contention_slowdown_p99"):
        assert column in shared.columns and column not in isolated.columns
    assert ((shared["met_contention_fraction"] >= 0) & (shared["met_contention_fraction"] <= 1)).all()
    assert (shared["contention_slowdown_max"] >= 1.0).all()
