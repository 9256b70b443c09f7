"""A latency table regression check sees code changes with the cache on (artist/network/code.py).

Each test copies the `artist` package into a temporary directory, writes a golden table with that copy into
a fresh cache, edits one line of the backend's code in the copy (the analytical model's bandwidth term, the
flow engine's link capacities, the ns-3 engine's link rates) and runs `artist latency-table --check` again on
the same cache: the check must fail, because the cached answers belong to the code before the edit. Before
the code digest was part of every cache key, the same check printed "cache hits ... check OK" (only
--no-cache caught the change). The unedited copy on the same cache is all hits and passes: the cache still
works."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOPOLOGY = ROOT / "topologies" / "dally-3tier.yaml"
MODELS = ROOT / "tests" / "golden" / "models"


def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "artist", copy / "artist", ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def _table(copy: Path, cache: Path, backend: str, *extra: str) -> subprocess.CompletedProcess:
    """`artist latency-table` of one toy model on two machines of one rack, run by the copy's code."""
    args = ["latency-table", "--topology", str(TOPOLOGY), "--models", str(MODELS), "--model", "toy-one-bucket",
            "--shape", "[[1,1]]", "--backend", backend, "--cache-dir", str(cache), *extra]
    code = f"import sys; from artist.cli import main; sys.exit(main({args!r}))"
    env = {**os.environ, "PYTHONPATH": str(copy)}
    env.pop("ARTIST_CACHE_DIR", None)
    # cwd: the copy's parent, so that neither the working directory nor an editable install shadows the copy
    return subprocess.run([sys.executable, "-c", code], cwd=copy.parent, env=env, capture_output=True, text=True,
                          timeout=600)


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) >= 1, f"{old!r} not in {path}: the test's edit point moved"
    path.write_text(text.replace(old, new))


def _check_sees_the_edit(tmp_path, backend: str, file: str, old: str, new: str, *extra: str) -> None:
    copy, cache, golden = _copy(tmp_path), tmp_path / "cache", tmp_path / "golden.csv"
    made = _table(copy, cache, backend, "--out", str(golden), *extra)
    assert made.returncode == 0, made.stderr
    same = _table(copy, cache, backend, "--check", str(golden), *extra)
    assert same.returncode == 0 and "1 cache hits, 0 simulations" in same.stderr, same.stderr
    _edit(copy / "artist" / file, old, new)
    edited = _table(copy, cache, backend, "--check", str(golden), *extra)
    assert "0 cache hits, 1 simulations" in edited.stderr, edited.stderr
    assert edited.returncode == 1, edited.stdout + edited.stderr  # the golden table no longer holds


def test_an_edit_of_the_analytical_model_fails_the_check_with_the_cache_on(tmp_path):
    _check_sees_the_edit(tmp_path, "analytical", "network/analytical.py",
                         "per_step = max(8.0 * b / link_bandwidth_bps", "per_step = max(9.0 * b / link_bandwidth_bps")


def test_an_edit_of_the_flow_engine_fails_the_check_with_the_cache_on(tmp_path):
    _check_sees_the_edit(tmp_path, "flow", "network/flow/engine.py",
                         "capacity.append(link_bandwidth_bps(topology, link) / 8.0)",
                         "capacity.append(link_bandwidth_bps(topology, link) / 9.0)")


@pytest.mark.ns3
def test_an_edit_of_the_ns3_engine_source_fails_the_check_with_the_cache_on(tmp_path):
    """Packet-level answers (--no-fast-path: the message-level fast path would answer without the engine);
    the edited engine is compiled once (~10 s) into the installation's engine cache."""
    pytest.importorskip("ns")
    _check_sees_the_edit(tmp_path, "ns3", "network/ns3/engine.cc",
                         "DataRateValue(DataRate((uint64_t)s.link_bps[l]))",
                         "DataRateValue(DataRate((uint64_t)(s.link_bps[l] / 2)))", "--no-fast-path")


def test_the_digest_names_the_backends_sources_and_nothing_else():
    """The analytical backend's digest covers its module, the collectives and links it imports and the
    topology, not a policy; the ns-3 backend's covers the engine's C++ too."""
    from artist.network.code import module_closure

    analytical = {p.relative_to(ROOT).as_posix() for p in module_closure("artist.network.analytical")}
    assert {"artist/network/analytical.py", "artist/network/collectives.py", "artist/network/links.py",
            "artist/topology.py", "artist/__init__.py"} <= analytical
    assert not any(p.startswith(("artist/policies/", "artist/commands/", "artist/sweep/")) for p in analytical)
    ns3 = {p.relative_to(ROOT).as_posix() for p in module_closure("artist.network.ns3")}
    assert {"artist/network/ns3/engine.cc", "artist/network/ns3/engine.h", "artist/network/ns3/worker.py"} <= ns3
