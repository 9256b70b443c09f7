"""The documentation site (docs/mkdocs.yml, docs/pages/) and README.md: the site builds with --strict (every
page in the navigation, every link and anchor resolves, the CLI reference and the Python API render from
the code), the README stays short, neither speaks of the project's history, and every tutorial's files and
commands run as written, printing what the page shows."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from docs_pages import (PAGES, README_PATH, REPO, TUTORIALS, fenced_blocks, run_tutorial, section, table_rows,
                        tutorial_env, tutorial_steps, tutorial_workdir)

STAMPED_SPEC = re.compile(r"`sweeps/([a-z0-9-]+\.yaml)` sha256 `([0-9a-f]{12})`")
HISTORY = re.compile(r"issue [0-9]|stop [0-9]|wave [0-9]|agent")
README_MAX_LINES = 150
# Tutorials another test runs as written (with docs_pages.run_tutorial), then checks the results of.
RUN_ELSEWHERE = {"add-a-policy.md": REPO / "tests" / "test_policy_plugin.py"}
TUTORIAL_PAGES = sorted(p.name for p in TUTORIALS.glob("*.md") if p.name != "index.md")


def test_the_site_builds_strict(tmp_path):
    site = tmp_path / "site"
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "docs" / "mkdocs.yml"),
                           "-d", str(site)], capture_output=True, text=True, cwd=REPO, env=env)
    assert done.returncode == 0, done.stderr[-5000:]
    assert "WARNING" not in done.stderr, done.stderr[-5000:]
    # The CLI reference has every command's --help, rendered from the parsers.
    from artist.cli import build_parser

    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    cli = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    for name, parser in commands.items():
        assert f'id="artist-{name}"' in cli, name
        assert parser.description.split()[0] in cli, name
    # The Python API page renders the entry points from the code.
    api = (site / "reference" / "python-api" / "index.html").read_text(encoding="utf-8")
    for name in ("artist.simulate", "artist.run_sweep", "artist.calibrate", "artist.compute_latency_table",
                 "artist.simulator.simulate", "artist.sweep.run.run_sweep", "artist.testing.assert_latency_table"):
        assert f'id="{name}"' in api, name
    # Every page under docs/pages/ is built (strict mode refuses a page left out of the navigation).
    for page in PAGES.rglob("*.md"):
        relative = page.relative_to(PAGES)
        built = site / (relative.parent if relative.name == "index.md" else relative.with_suffix("")) / "index.html"
        assert built.is_file(), page


def test_the_readme_is_short():
    lines = README_PATH.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; at most {README_MAX_LINES}"


def test_neither_readme_nor_docs_speak_of_the_projects_history():
    """The README and the site speak to users: no work items, stops or waves of the project, no agents
    (grep -rnE 'issue [0-9]|stop [0-9]|wave [0-9]|agent' README.md docs/ finds nothing)."""
    files = [README_PATH, *(p for p in (REPO / "docs").rglob("*") if p.is_file() and "__pycache__" not in p.parts)]
    found = [f"{path.relative_to(REPO)}:{n}: {line.strip()}" for path in files
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if HISTORY.search(line)]
    assert not found, "\n".join(found)


def test_every_tutorial_is_run_as_written():
    assert TUTORIAL_PAGES, "no tutorials"
    for name in TUTORIAL_PAGES:
        kinds = [kind for kind, _, _ in tutorial_steps(TUTORIALS / name)]
        assert "bash" in kinds, f"{name} has no commands"
    for name, test_file in RUN_ELSEWHERE.items():
        source = test_file.read_text(encoding="utf-8")
        assert f'"{name}"' in source and "run_tutorial(" in source, f"{test_file.name} does not run {name}"


RUN_HERE = [n for n in TUTORIAL_PAGES if n not in RUN_ELSEWHERE]


@pytest.fixture(scope="module")
def tutorial_runs(tmp_path_factory):
    """Every tutorial run here, two at a time: each is a chain of short processes, so two chains use both cores
    where the rest of the suite uses one."""
    pool = ThreadPoolExecutor(max_workers=2)
    runs = {name: pool.submit(run_tutorial, TUTORIALS / name, tmp_path_factory.mktemp(name.removesuffix(".md")))
            for name in RUN_HERE}
    yield runs
    pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.parametrize("name", RUN_HERE)
def test_tutorial_runs_as_written(name, tutorial_runs):
    tutorial_runs[name].result()  # re-raises the run's failure: the block, its exit code and its output


def test_the_readmes_examples_run(tmp_path):
    """The README's Python example and its command-line example (its first block is the set-up commands,
    which CI runs: tests/test_readme.py)."""
    blocks = fenced_blocks(README_PATH)
    python = [body for info, body in blocks if info == "python"]
    shell = [body for info, body in blocks[1:] if info == "bash"]
    assert len(python) == 1 and len(shell) == 1
    workdir = tutorial_workdir(tmp_path / "work")
    env = tutorial_env(tmp_path / "cache")
    done = subprocess.run([sys.executable, "-c", python[0]], cwd=workdir, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines[:3]] == ["fifo", "tiresias", "dally"], done.stdout
    assert "jct_mean_s" in lines[3] and len(lines) == 3 + 1 + 6, done.stdout  # the quick sweep's 6 runs
    done = subprocess.run(["bash", "-c", "set -euo pipefail\n" + shell[0]], cwd=workdir, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (workdir / "results" / "first" / "jobs.csv").is_file()


def _spec_versions(names: set[str]) -> dict[str, set[str]]:
    """Every sha256 (first 12 hex digits) each spec has had in the repository's history, and has now."""
    def git(*args, **kw):
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, check=True, **kw).stdout

    objects = []
    for name in names:
        for commit in git("rev-list", "HEAD", "--", f"sweeps/{name}", text=True).split():
            objects.append((name, f"{commit}:sweeps/{name}"))
    out = git("cat-file", "--batch", input="".join(f"{o}\n" for _, o in objects).encode())
    versions: dict[str, set[str]] = {name: set() for name in names}
    for name, _ in objects:  # --batch answers in order: "<sha> <type> <size>\n<content>\n", or "<obj> missing\n"
        header, out = out.split(b"\n", 1)
        if header.endswith(b"missing"):
            continue
        size = int(header.split()[2])
        versions[name].add(hashlib.sha256(out[:size]).hexdigest()[:12])
        out = out[size + 1:]
    for name in names:
        if (REPO / "sweeps" / name).is_file():
            versions[name].add(hashlib.sha256((REPO / "sweeps" / name).read_bytes()).hexdigest()[:12])
    return versions


def test_results_stamps_name_real_versions_of_their_specs():
    """Every spec hash a results page gives is the sha256 of a version of that spec in the repository's history."""
    stamped: list[tuple[str, str, str]] = []  # (page, spec, hash)
    for page in sorted((PAGES / "results").glob("*.md")):
        text = " ".join(page.read_text(encoding="utf-8").split())
        stamped += [(page.name, spec, h) for spec, h in STAMPED_SPEC.findall(text)]
    for _, cells in table_rows(section("## Run times", PAGES / "results" / "papers.md")):
        specs, hashes = re.findall(r"`([a-z0-9-]+\.yaml)`", cells[0]), re.findall(r"`([0-9a-f]{12})`", cells[1])
        assert len(specs) == len(hashes), cells
        stamped += [("papers.md", spec, h) for spec, h in zip(specs, hashes)]
    assert len(stamped) >= 20
    try:
        shallow = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=REPO, capture_output=True,
                                 text=True, check=True).stdout.strip() == "true"
        versions = _spec_versions({spec for _, spec, _ in stamped})
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no git history to check the stamps against")
    wrong = [f"{page}: sweeps/{spec} sha256 {h}" for page, spec, h in stamped if h not in versions[spec]]
    if wrong and shallow:
        pytest.skip("a shallow clone: the stamped versions may be older than its history")
    assert not wrong, "stamped spec hashes no version of the spec had:\n" + "\n".join(wrong)
