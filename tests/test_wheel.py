"""The wheel works outside a checkout: it carries the shipped topologies, models, traces, profiles and sweeps
(artist/_data/, in the repository's layout), and an install of it alone, run from an empty directory, simulates
and sweeps by shipped names.

The wheel is built from a copy of the repository with the venv's own setuptools (no build isolation, no
network) and installed with --target, without its dependencies (the venv has them): PYTHONPATH puts that
install ahead of the venv's editable one, which each run checks (artist.__file__).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest

from artist import shipped

REPO = Path(__file__).resolve().parent.parent
DATA_FOLDERS = ("topologies", "workloads", "calibration", "sweeps")  # the repository's, shipped as artist/_data/
# Not data the code reads: the scripts that write it, the folders' own READMEs, the fit plots
LEFT_OUT_SUFFIXES = (".py", ".png")
LEFT_OUT_FILES = {"workloads/README.md", "calibration/README.md"}
# Never part of a build: version control, the venv, caches, earlier builds and results
NOT_SOURCE = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.pyc", "build", "dist", "*.egg-info",
                                    "results", "sweep-results", ".artist-cache", ".pytest_cache", ".ruff_cache")
MAX_WHEEL_BYTES = 4 << 20  # 1.4 MB today: results, caches or plots slipping in would pass this
PIP_QUIET = ["--disable-pip-version-check", "--no-input", "-q"]


def _pip(*args: str, cwd: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", *args, *PIP_QUIET], cwd=cwd, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"pip {' '.join(args)}:\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    setuptools = version("setuptools")
    if int(setuptools.split(".")[0]) < 77:  # ensurepip's is 65.5: cannot build wheels by itself
        pytest.fail(f"setuptools {setuptools} in this venv builds no wheel of this project: install the test "
                    f"extra (pip install -e '.[test]'), which asks for setuptools>=77")
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"  # a copy: the build's own build/ and egg-info stay out of the shared tree
    shutil.copytree(REPO, source, ignore=NOT_SOURCE)
    _pip("wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(root / "dist"), str(source),
         cwd=root)
    (built,) = (root / "dist").glob("artist-*.whl")
    return built


@pytest.fixture(scope="module")
def site(wheel) -> Path:
    target = wheel.parent.parent / "site"
    _pip("install", "--no-deps", "--no-index", "--target", str(target), str(wheel), cwd=wheel.parent)
    return target


def _artist(site: Path, cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    """The installed wheel's command line, run from cwd (outside the checkout)."""
    env = {**os.environ, "PYTHONPATH": str(site), "ARTIST_CACHE_DIR": str(cwd / "cache")}
    return subprocess.run([sys.executable, "-m", "artist.cli", *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def _expected_data_files() -> set[str]:
    """The wheel's artist/_data/ files as the repository has them, less what is left out on purpose."""
    found = set()
    for folder in DATA_FOLDERS:
        for path in (REPO / folder).rglob("*"):
            relative = path.relative_to(REPO).as_posix()
            if (path.is_file() and path.suffix not in LEFT_OUT_SUFFIXES and relative not in LEFT_OUT_FILES
                    and "__pycache__" not in path.parts):
                found.add(f"artist/_data/{relative}")
    return found


def test_the_wheel_holds_the_code_and_the_shipped_data_and_nothing_else(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    data = {n for n in names if n.startswith("artist/_data/")}
    expected = _expected_data_files()
    assert not expected - data, f"shipped files missing from the wheel (a glob in pyproject.toml's " \
                                f"[tool.setuptools.package-data]?): {sorted(expected - data)}"
    assert not data - expected, f"files in the wheel's data that are no shipped data: {sorted(data - expected)}"
    assert {"artist/_data/sweeps/quick.yaml", "artist/_data/topologies/dally-3tier.yaml",
            "artist/_data/workloads/traces/small.csv", "artist/_data/calibration/profiles/h100-ns3.yaml",
            "artist/_data/workloads/pollux/applications.yaml", "artist/_data/workloads/sia/SOURCE.md"} <= data

    code = {n for n in names if n.startswith("artist/") and n not in data}
    sources = {p.relative_to(REPO).as_posix() for p in (REPO / "artist").rglob("*")
               if p.suffix in (".py", ".cc", ".h") and "__pycache__" not in p.parts}
    assert not sources - code, f"modules missing from the wheel (a package to list in pyproject.toml's " \
                               f"[tool.setuptools] packages?): {sorted(sources - code)}"
    assert not code - sources, f"files in the wheel's code that are not the package's: {sorted(code - sources)}"

    rest = names - data - code
    assert all(n.startswith("artist-") and ".dist-info/" in n for n in rest), sorted(rest)
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in rest), sorted(rest)
    metadata = zipfile.ZipFile(wheel).read(next(n for n in rest if n.endswith("/METADATA"))).decode()
    assert "License-Expression: GPL-2.0-or-later" in metadata
    assert wheel.stat().st_size < MAX_WHEEL_BYTES, f"{wheel.name}: {wheel.stat().st_size} bytes"


def test_the_installed_wheel_simulates_on_a_shipped_topology_from_anywhere(site, tmp_path):
    probe = subprocess.run([sys.executable, "-c", "import artist.shipped as s; print(s.__file__); print(s.ROOT)"],
                           cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(site)}, capture_output=True, text=True,
                           timeout=60)
    assert probe.returncode == 0, probe.stderr
    package_file, data_root = probe.stdout.splitlines()
    assert Path(package_file).is_relative_to(site), f"the editable install answered: {package_file}"
    assert Path(data_root) == site / "artist" / "_data"

    done = _artist(site, tmp_path, "simulate", "--topology", "dally-3tier", "--backend", "analytical", "--quiet")
    assert done.returncode == 0, done.stderr
    assert "topology dally-3tier (2 racks, 128 GPUs), 16 jobs" in done.stdout  # 16: the shipped small trace


def test_the_installed_wheel_sweeps_by_shipped_name(site, tmp_path):
    # quick.yaml names its topology and profile by ../ paths, which must hold inside the wheel too
    done = _artist(site, tmp_path, "sweep", "quick", "--backend", "analytical", "-j", "1", "--quiet", "--no-plots")
    assert done.returncode == 0, done.stderr
    assert "sweep quick: 6 runs (0 already done, 6 run now, 0 failed)" in done.stdout
    assert (tmp_path / "results" / "quick" / "results.csv").is_file()
    # the measured tables of the elastic loop (../workloads/sia) and Crius' cluster files, read without running
    for argv in (["sia", "--reduced", "--backend", "analytical"], ["crius", "--reduced"]):
        done = _artist(site, tmp_path, "sweep", *argv, "--dry-run")
        assert done.returncode == 0 and " runs (0 done, " in done.stdout, (argv, done.stderr)


def test_the_installed_wheel_answers_through_the_python_api(site, tmp_path):
    # the API from outside the checkout: a sweep by shipped name as a table, a simulation by shipped names
    code = ("import artist\n"
            "table = artist.run_sweep('quick', backend='analytical')\n"
            "print(len(table), sorted(set(table['policy'])))\n"
            "result = artist.simulate('dally-3tier', 'small', policy='tiresias')\n"
            "print(len(result.jobs), result.summary['finished'])\n"
            "print(artist.__file__)\n")
    env = {**os.environ, "PYTHONPATH": str(site), "ARTIST_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    sweep, jobs, where = done.stdout.splitlines()
    assert sweep == "6 ['dally', 'fifo', 'tiresias']" and jobs == "16 16"  # quick: 3 policies x 2 sizes
    assert Path(where).is_relative_to(site)


def test_an_unknown_sweep_name_is_one_line_naming_the_shipped_ones(site, tmp_path):
    done = _artist(site, tmp_path, "sweep", "no-such-sweep", "--dry-run")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "spec: no such file 'no-such-sweep', and not a shipped sweep spec (shipped: " in lines[0]
    assert "quick" in lines[0]


def test_a_checkout_reads_the_data_in_place():
    """The repository has no artist/_data/: an editable install or a checkout reads the top-level folders."""
    assert not (REPO / "artist" / "_data").exists()
    assert shipped.ROOT == REPO
    assert shipped.sweep_path("quick") == REPO / "sweeps" / "quick.yaml"
    assert shipped.sweep_path(REPO / "sweeps" / "dally.yaml") == REPO / "sweeps" / "dally.yaml"
