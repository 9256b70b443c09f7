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
CLUSTERS_DIR = TOPOLOGIES_DIR / "clusters"  # cluster files: pools of one GPU type each
MODELS_DIR = ROOT / "workloads" / "models"
TRACES_DIR = ROOT / "workloads" / "traces"
PROFILES_DIR = ROOT / "calibration" / "profiles"
SWEEPS_DIR = ROOT / "sweeps"

DEFAULT_TOPOLOGY = TOPOLOGIES_DIR / "dally-3tier.yaml"
DEFAULT_TRACE = TRACES_DIR / "small.csv"


def names(directory: Path, suffix: str = ".yaml") -> list[str]:
    return sorted(p.stem for p in directory.glob(f"*{suffix}")) if directory.is_dir() else []


def find(text: str | Path, directory: Path, suffix: str = ".yaml", base: Path | None = None) -> Path:
    """The file `text` names: the path as given (relative to `base`, a spec's directory, if given) when it
    exists, else for a bare name (no directory part) the shipped file of that name in `directory`, with or
    without its suffix; else the path as given, for the caller's one-line 'no such file'."""
    path = Path(text).expanduser()
    given = path if base is None or path.is_absolute() else base / path
    if given.exists() or path.parent != Path("."):
        return given
    shipped = directory / (path.name if path.suffix == suffix else f"{path.name}{suffix}")
    return shipped if shipped.is_file() else given


def resolve(text: str | Path, directory: Path, option: str, what: str, suffix: str = ".yaml") -> Path:
    """find's file; an InputError naming the option where there is none."""
    found = find(text, directory, suffix)
    if found.exists():
        return found
    known = ", ".join(names(directory, suffix)) or "none"
    raise InputError("command line", option, f"no such file {str(text)!r}, and not a shipped {what} (shipped: {known})")


def find_topology(text: str | Path, base: Path | None = None) -> Path:
    """find's file among the shipped topologies, else among the shipped cluster files (`dally-hetero`)."""
    found = find(text, TOPOLOGIES_DIR, base=base)
    if found.is_file():
        return found
    cluster = find(text, CLUSTERS_DIR, base=base)
    return cluster if cluster.is_file() else found


def topology_path(text: str | Path) -> Path:
    """--topology's file: a path, a shipped topology's name or a shipped cluster file's name."""
    found = find_topology(text)
    if found.exists():
        return found
    known = ", ".join(names(TOPOLOGIES_DIR) + names(CLUSTERS_DIR)) or "none"
    raise InputError("command line", "--topology", f"no such file {str(text)!r}, and not a shipped topology or "
                                                   f"cluster (shipped: {known})")


def sweep_path(text: str | Path) -> Path:
    """`artist sweep quick`: a spec file, or the shipped spec of that name (sweeps/quick.yaml)."""
    return resolve(text, SWEEPS_DIR, "spec", "sweep spec")
