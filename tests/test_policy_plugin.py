"""A policy in one file (artist/policies/plugins.py), as the tutorial docs/pages/tutorials/add-a-policy.md
writes it: its files and commands run as written (swept against the suite, reported), then the results are
checked for the policy's own defining property."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from docs_pages import TUTORIALS, example, run_tutorial

from artist.errors import InputError
from artist.policies.plugins import load_plugin

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = TUTORIALS / "add-a-policy.md"
PLUGIN = 'python title="my_policies/smallest_first.py"'


def _cli(*argv, cwd):
    return subprocess.run([sys.executable, "-m", "artist.cli", *argv], capture_output=True, text=True, cwd=cwd)


def plugin_source() -> str:
    """The tutorial's policy file."""
    return example(PLUGIN, TUTORIAL)


@pytest.fixture(scope="module")
def walkthrough(tmp_path_factory) -> Path:
    """The tutorial run as written, in a repository-like layout (its spec's ../topologies resolves)."""
    root = tmp_path_factory.mktemp("walkthrough")
    run_tutorial(TUTORIAL, root)
    return root / "work"


def test_the_walkthrough_sweeps_and_reports(walkthrough):
    out = walkthrough / "results/smallest-first-vs-suite"
    results = pd.read_csv(out / "results.csv")
    assert sorted(results.policy.unique()) == ["dally", "fifo", "gandiva", "smallest-first", "tiresias"]
    assert len(results) == 20 and (results.finished == results.jobs).all()
    done = _cli("report", str(out), "--html", cwd=walkthrough)
    assert done.returncode == 0, done.stderr
    report = (out / "report/report.md").read_text()
    assert "Smallest-first has a lower mean JCT than FIFO" in report


def test_at_time_zero_the_smallest_jobs_start(walkthrough):
    """The policy's defining property, from its jobs table: in a batch workload (all jobs at t = 0)
    every job started at t = 0 asks for no more GPUs than any job that had to wait."""
    runs = walkthrough / "results/smallest-first-vs-suite/runs"
    checked = 0
    for params in runs.glob("*/params.json"):
        if '"smallest-first"' not in params.read_text():
            continue
        jobs = pd.read_csv(params.parent / "jobs.csv")
        first = jobs[jobs.first_start_s == 0]
        later = jobs[jobs.first_start_s > 0]
        assert len(first) and len(later)
        assert first.gpus.max() <= later.gpus.min()
        checked += 1
    assert checked == 4  # 2 seeds x 2 networks


def test_an_edited_plugin_is_another_run(walkthrough, tmp_path):
    from artist.sweep.spec import load_sweep_spec

    root = tmp_path / "copy"
    shutil.copytree(walkthrough / "my_policies", root / "my_policies")
    (root / "topologies").symlink_to(ROOT / "topologies")
    before = {r.run_id for r in load_sweep_spec(root / "my_policies/compare.yaml").runs}
    plugin = root / "my_policies/smallest_first.py"
    plugin.write_text(plugin.read_text().replace('@register("smallest-first")', '@register("smallest-first")  # v2'))
    after = {r.run_id for r in load_sweep_spec(root / "my_policies/compare.yaml").runs}
    assert len(before - after) == 4 and len(before & after) == 16  # only the plugin policy's 2 seeds x 2 networks


@pytest.mark.parametrize("text, where", [("def broken(:\n", "line 1"), ("x = 1\nraise RuntimeError('no')\n", "line 2")])
def test_a_broken_plugin_is_one_line(tmp_path, text, where):
    path = tmp_path / "bad.py"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_plugin(path)
    assert str(path) in str(err.value) and where in str(err.value)
    done = _cli("simulate", "--plugin", str(path), "--policy", "fifo", cwd=tmp_path)
    assert done.returncode != 0 and "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_the_plugin_runs_beside_the_elastic_policies(tmp_path):
    """The tutorial's one-file policy in one sweep beside Pollux, Sia, Gavel and Crius: an elastic spec runs it
    every round as it runs the suite's rigid policies (artist/policies/rigid_in_elastic.py)."""
    root = tmp_path / "repo"
    for folder in ("topologies", "workloads"):
        (root / folder).parent.mkdir(parents=True, exist_ok=True)
        (root / folder).symlink_to(ROOT / folder)
    (root / "my_policies").mkdir()
    (root / "my_policies/smallest_first.py").write_text(plugin_source())
    (root / "my_policies/elastic.yaml").write_text("""\
name: smallest-first-vs-elastic
loop: elastic
topology: ../topologies/clusters/dally-hetero-congested.yaml
elastic: {applications: ../workloads/sia}
policies:
  - {name: smallest-first, plugin: smallest_first.py}
  - {name: pollux, params: {p: -1, pop_size: 10, generations: 5}, label: Pollux}
  - {name: sia, params: {p: -0.5, lam: 1.1}, label: Sia}
  - {name: gavel, params: {tuned_jobs: true}, label: Gavel}
  - {name: crius, params: {depth: 3}, label: Crius}
workloads:
  - {spec: ../workloads/sia/workloads/philly/workload-1.csv, label: philly-1, first: 6}
seeds: [0]
comm: analytical
""")
    done = _cli("sweep", "my_policies/elastic.yaml", "-j", "1", "--quiet", "--no-plots", "--no-cache", cwd=root)
    assert done.returncode == 0, done.stderr
    results = pd.read_csv(root / "results/smallest-first-vs-elastic/results.csv")
    assert sorted(results.policy) == ["Crius", "Gavel", "Pollux", "Sia", "smallest-first"]
    assert (results.finished == results.jobs).all() and (results.jobs == 6).all()


def test_a_dry_run_runs_no_plugin_code(tmp_path):
    """Reading a spec imported its plugin files, so `sweep --dry-run` of a downloaded spec ran its code. A dry
    run lists the runs with the plugin's policy name as written; the real sweep imports it."""
    marker = tmp_path / "ran"
    (tmp_path / "p.py").write_text(f"from pathlib import Path\nPath({str(marker)!r}).write_text('x')\n"
                                   + plugin_source())
    (tmp_path / "s.yaml").write_text(f"name: dry\ntopology: {ROOT}/topologies/dally-3tier.yaml\nracks: [1]\n"
                                     "policies: [{name: smallest-first, plugin: p.py}]\n"
                                     "workloads: [batch:n=3]\ncomm: analytical\n")
    done = _cli("sweep", "s.yaml", "--dry-run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "smallest-first" in done.stdout and not marker.exists()
    done = _cli("sweep", "s.yaml", "-j", "1", "--quiet", "--no-plots", "--no-cache", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert marker.exists()
