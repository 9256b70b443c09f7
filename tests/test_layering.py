"""Dependencies point one way (DESIGN.md): policies see costs only through the performance model."""

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BACKENDS = ("artist.network.analytical", "artist.network.ns3", "artist.network.cache", "artist.network.calibrated",
            "artist.network.stack", "artist.network.collectives")


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


POLICIES = REPO / "artist" / "policies"
LOOPS = ("artist.simulator", "artist.elastic.exact", "artist.crius")  # the modules that advance time


def _policy_modules() -> list[Path]:
    """Every module of the policies package, sub-packages included (Crius', Pollux', Sia's, Gavel's)."""
    modules = sorted(POLICIES.rglob("*.py"))
    assert len(modules) > 30 and any(p.parent.name == "crius" for p in modules)  # the walk finds them all
    return modules


def test_no_policy_module_imports_the_network():
    offenders = {str(p.relative_to(POLICIES)): sorted(n for n in _imports(p) if n.startswith("artist.network"))
                 for p in _policy_modules()}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_no_policy_module_imports_a_loop():
    """Policies decide; loops advance simulated time and time the jobs (artist/simulator.py, the elastic
    and Crius round loops), so no policy module imports one."""
    offenders = {str(p.relative_to(POLICIES)): sorted(n for n in _imports(p) if n.startswith(LOOPS))
                 for p in _policy_modules()}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_loading_every_policy_loads_no_network_backend():
    """Transitively too: importing the registry and every policy module pulls in no backend."""
    code = ("import sys; from artist.policies import registry; registry.policy_names(); "
            f"print(sorted(m for m in sys.modules if m.startswith({BACKENDS!r})))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_calibration_does_not_import_the_network():
    """network <- calibration would be a cycle (Calibrated lives in network/ and reads profiles)."""
    offenders = {str(p.relative_to(REPO)): sorted(n for n in _imports(p) if n.startswith("artist.network"))
                 for p in sorted((REPO / "artist" / "calibration").glob("*.py"))}
    assert {k: v for k, v in offenders.items() if v} == {}
