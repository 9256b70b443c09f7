"""Every paper sweep (a spec in sweeps/ with a `report:` section) runs in its reduced version and `artist
report` judges every claim it states: what CI runs in seconds in place of the hours of the full sweeps."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from artist.sweep.run import run_sweep
from artist.sweep.spec import load_sweep_spec

ROOT = Path(__file__).resolve().parents[1]
PAPER_SPECS = sorted(p for p in (ROOT / "sweeps").glob("*.yaml") if "report" in (yaml.safe_load(p.read_text()) or {}))


def test_the_paper_sweeps_are_there():
    names = {p.name for p in PAPER_SPECS}
    assert names >= {"dally.yaml", "dally-ablation.yaml", "pollux.yaml", "sia.yaml", "crius.yaml",
                     # the network ablations: contention (two arms), calibration, and one per elastic / Crius paper
                     "dally-contention.yaml", "dally-contention-isolated.yaml", "dally-calibration.yaml",
                     "pollux-ablation.yaml", "sia-ablation.yaml", "crius-ablation.yaml"}


@pytest.fixture(scope="module")
def reduced_results(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("papers")
    for path in PAPER_SPECS:
        spec = load_sweep_spec(path, reduced=True)
        report = run_sweep(spec, out / path.stem, n_jobs=1, progress=False, plots=False, use_cache=False)
        assert not report.failed, report.failed
    return out


def test_every_claim_of_every_paper_sweep_is_judged(reduced_results):
    done = subprocess.run([sys.executable, "-m", "artist.cli", "report", str(reduced_results), "--html"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    markdown = (reduced_results / "report" / "report.md").read_text()
    for path in PAPER_SPECS:
        section = yaml.safe_load(path.read_text())["report"]
        if "same_as" in section:
            continue
        assert f"## {section['paper']}" in markdown
        for claim in section["claims"]:
            row = next(line for line in markdown.splitlines() if line.startswith(f"| {claim['text']} [{claim['id']}]"))
            verdicts = [c.strip() for c in row.strip("|").split(" | ")[1:]]
            assert verdicts and all(v in ("held", "not held", "n/a") for v in verdicts), row
