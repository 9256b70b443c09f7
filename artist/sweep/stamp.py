"""What a sweep's numbers were made with, recorded beside them (OUT/sweep-log.jsonl) and printed by `artist report`:
the spec's bytes (sha256), the code (git commit of the installation, `-dirty` with uncommitted changes, or the
package version outside a checkout) and the machine (host, cores, platform, Python)."""

from __future__ import annotations

import hashlib
import os
import platform
import socket
import subprocess
from functools import lru_cache
from pathlib import Path


def spec_sha256(source: str) -> str | None:
    """sha256 of the spec file (None for a spec given as data, e.g. the Python API's dict)."""
    path = Path(source)
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


@lru_cache(maxsize=1)
def code_version() -> str:
    """`<commit>` or `<commit>-dirty` when the package is a git checkout, else the installed version."""
    here = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "-C", str(here), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                                text=True, timeout=10)
        if commit.returncode == 0 and commit.stdout.strip():
            dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=10).stdout.strip()
            return commit.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"artist {version('artist')}"
    except PackageNotFoundError:
        return "unknown"


def machine() -> dict:
    return {"host": socket.gethostname(), "cpus": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version()}


def sweep_stamp(source: str) -> dict:
    """The sweep log's stamp fields of one invocation."""
    return {"spec_sha256": spec_sha256(source), "code": code_version(), "machine": machine()}
