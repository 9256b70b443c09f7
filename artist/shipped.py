"""Where the data shipped with ArtISt lives, so that defaults work from any working directory.

The repository keeps topologies/, workloads/, calibration/ and sweeps/ beside the package. A wheel
carries the same folders, in the same layout, under artist/_data/ (pyproject.toml maps them there as
package data), so a sweep spec's `../topologies/x.yaml` still finds its file. ROOT is whichever of the
two this installation has: artist/_data/ in a wheel, the repository in a checkout or an editable install.
Options that take one of these files accept either a path or the shipped file's name (`--topology
dgx-h100`, `artist sweep quick`).
"""

from __future__ import annotations

from pathlib import Path

from artist.errors import InputError

PACKAGE_DIR = Path(__file__).resolve().parent
WHEEL_DATA_DIR = PACKAGE_DIR / "_data"  # only in an installed wheel: never in the repository
ROOT = WHEEL_DATA_DIR if WHEEL_DATA_DIR.is_dir() else PACKAGE_DIR.parent
TOPOLOGIES_DIR = ROOT / "topologies"
MODELS_DIR = ROOT / "workloads" / "models"
TRACES_DIR = ROOT / "workloads" / "traces"
PROFILES_DIR = ROOT / "calibration" / "profiles"
SWEEPS_DIR = ROOT / "sweeps"

DEFAULT_TOPOLOGY = TOPOLOGIES_DIR / "dally-3tier.yaml"
DEFAULT_TRACE = TRACES_DIR / "small.csv"


def names(directory: Path, suffix: str = ".yaml") -> list[str]:
    return sorted(p.stem for p in directory.glob(f"*{suffix}")) if directory.is_dir() else []


def resolve(text: str | Path, directory: Path, option: str, what: str, suffix: str = ".yaml") -> Path:
    """A path as given if it exists, else the shipped file of that name; an InputError naming the
    option otherwise."""
    path = Path(text).expanduser()
    if path.exists():
        return path
    shipped = directory / f"{path.name}" if path.suffix == suffix else directory / f"{path.name}{suffix}"
    if path.parent == Path(".") and shipped.is_file():
        return shipped
    known = ", ".join(names(directory, suffix)) or "none"
    raise InputError("command line", option, f"no such file {str(text)!r}, and not a shipped {what} (shipped: {known})")


def topology_path(text: str | Path) -> Path:
    return resolve(text, TOPOLOGIES_DIR, "--topology", "topology")


def sweep_path(text: str | Path) -> Path:
    """`artist sweep quick`: a spec file, or the shipped spec of that name (sweeps/quick.yaml)."""
    return resolve(text, SWEEPS_DIR, "spec", "sweep spec")
