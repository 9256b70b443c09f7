"""Where the data shipped with ArtISt lives, so that defaults work from any working directory.

An editable install (the README's) keeps the repository's topologies/, workloads/,
calibration/ and sweeps/ beside the package; options that take one of these files
accept either a path or the shipped file's name (`--topology dgx-h100`).
"""

from __future__ import annotations

from pathlib import Path

from artist.errors import InputError

ROOT = Path(__file__).resolve().parent.parent
TOPOLOGIES_DIR = ROOT / "topologies"
MODELS_DIR = ROOT / "workloads" / "models"
TRACES_DIR = ROOT / "workloads" / "traces"
PROFILES_DIR = ROOT / "calibration" / "profiles"

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
