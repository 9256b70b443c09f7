"""Compile the ns-3 engine once per installation into a shared library, cached by a hash of its inputs.

    toolchain = find_toolchain()          # None when no C++ compiler is found
    built = build_library(sources, toolchain)
    ctypes.CDLL(built.path)

`sources` maps file names to texts (engine.cc, engine.h and the C entry points
worker.py generates); they are written next to the library and compiled from
there, so the library is exactly what its key says.

Key (library_key): a SHA-256 over every source's name and text, the ns3
package's version and directory (the library's rpath points there), the
compiler's path and `--version` line, and the compiler flags. Any change to
engine.cc, engine.h or worker.py's field lists therefore builds a new library
on every installation at its next start; old libraries are left in place
(about 0.4 MB each).

Where libraries live (cache_root):
  1. <sys.prefix>/var/cache/artist/ns3-engine when Python runs in a virtual
     environment it may write to: the library belongs to that installation (its
     ns3 wheel), survives every $ARTIST_CACHE_DIR the tests and users point at
     fresh directories, and goes away with the environment.
  2. Else $XDG_CACHE_HOME/artist/ns3-engine, else ~/.cache/artist/ns3-engine.
     Deliberately not $ARTIST_CACHE_DIR: that is the latency cache's directory,
     which the tests set to a new temporary directory each; a compile per
     temporary directory would be wasted time.
Layout: <root>/<key>/engine.so, src/ (the sources as compiled), build.json
(what went into the key, for people), build.lock.

Concurrency: processes that need the same key take an exclusive flock on
build.lock; one compiles, the others wait, then load its library. The
compiler writes a temporary file in the same directory, which os.replace()
puts in place, so no process ever loads a half-written library, even where
file locks are not honoured (some network file systems).
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

LIBRARY_NAME = "engine.so"
# The ns-3 modules engine.cc includes; their own dependencies (bridge, stats) load through
# the ns-3 libraries' RUNPATH.
NS3_MODULES = ("core", "network", "point-to-point", "internet", "traffic-control")
CXX_FLAGS = (
    "-std=c++20",  # the ns-3.44 headers' language; cppyy's cling compiles them as C++20 too (__cplusplus 202002)
    "-O2",  # cling's level in the cppyy path (cppyy_backend/loader.py adds -O2)
    "-fPIC", "-shared",
    "-ffp-contract=off",  # no fused multiply-adds: the same rounding with any compiler and CPU (choice)
    # ns-3's release profile, as the wheel's CMake package exports it (lib64/cmake/ns3/ns3Targets.cmake).
    "-DNS3_BUILD_PROFILE_RELEASE", "-DNS3_ASSERT_ENABLE", "-DNS3_LOG_ENABLE",
)
# A first compile took 9-18 s on the 2-core development machine (measured, by load); the limit turns a
# stuck compiler into an error message before runner.py's start-up watchdog kills the worker.
COMPILE_TIMEOUT_S = 240.0
ERROR_TAIL_CHARS = 4000  # compiler output kept in an error message (choice: the last errors, not pages)


class EngineBuildError(RuntimeError):
    """The engine could not be compiled; the message carries the command and the compiler's output."""


@dataclasses.dataclass(frozen=True)
class Toolchain:
    """A C++ compiler and the ns-3 installation (the ns3 wheel) the engine is built against."""

    compiler: str  # absolute path
    compiler_version: str  # first line of `compiler --version`
    ns3_version: str
    ns3_dir: Path  # site-packages/ns3: include/ and lib64/ (or lib/)

    @property
    def include_dir(self) -> Path:
        return self.ns3_dir / "include"

    @property
    def lib_dir(self) -> Path:
        for name in ("lib64", "lib"):
            if (self.ns3_dir / name).is_dir():
                return self.ns3_dir / name
        raise EngineBuildError(f"the ns3 package at {self.ns3_dir} has no lib64/ or lib/ directory")

    def ns3_library_prefix(self) -> str:
        """'ns3.44' for libns3.44-core.so: the prefix of this installation's module libraries."""
        found = sorted(self.lib_dir.glob("libns3*-core.so"))
        if not found:
            raise EngineBuildError(f"no libns3*-core.so in {self.lib_dir}")
        return found[0].name[len("lib"):-len("-core.so")]


@dataclasses.dataclass(frozen=True)
class BuiltLibrary:
    path: Path
    key: str
    compiled: bool  # False: an earlier build with the same key was reused
    compile_seconds: float  # 0 when reused


def find_compiler() -> str | None:
    """$CXX (a program name or path) if set, else g++; None when it is not on PATH."""
    return shutil.which(os.environ.get("CXX") or "g++")


def ns3_installation() -> tuple[str, Path]:
    """(version, directory) of the installed ns3 package, found without importing it."""
    try:
        dist = distribution("ns3")
    except PackageNotFoundError:
        raise EngineBuildError("the ns3 package (PyPI ns3) is not installed") from None
    ns3_dir = Path(dist.locate_file("ns3")).resolve()
    if not (ns3_dir / "include" / "ns3").is_dir():
        raise EngineBuildError(f"the ns3 package at {ns3_dir} has no include/ns3 headers to compile against")
    return dist.version, ns3_dir


def find_toolchain() -> Toolchain | None:
    """The compiler and ns-3 installation to build with; None when there is no C++ compiler."""
    compiler = find_compiler()
    if compiler is None:
        return None
    version = compiler_version(compiler)
    ns3_version, ns3_dir = ns3_installation()
    return Toolchain(os.path.realpath(compiler), version, ns3_version, ns3_dir)


def compiler_version(compiler: str) -> str:
    """The first line of `compiler --version` (part of every library key), or an EngineBuildError."""
    try:
        out = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EngineBuildError(f"could not run {compiler} --version: {exc}") from None
    lines = out.stdout.splitlines()
    if out.returncode != 0 or not lines:
        raise EngineBuildError(f"{compiler} --version failed (exit {out.returncode}): {out.stderr[-ERROR_TAIL_CHARS:]}")
    return lines[0].strip()


def sources_digest(sources: Mapping[str, str]) -> dict[str, str]:
    """{file name: SHA-256 of its text}: the sources' part of a library key."""
    return {name: hashlib.sha256(text.encode()).hexdigest() for name, text in sorted(sources.items())}


def _key_inputs(sources: Mapping[str, str], toolchain: Toolchain) -> dict:
    return {
        "sources": sources_digest(sources),
        "ns3_version": toolchain.ns3_version, "ns3_dir": str(toolchain.ns3_dir),
        "compiler": toolchain.compiler, "compiler_version": toolchain.compiler_version,
        "flags": list(CXX_FLAGS), "ns3_modules": list(NS3_MODULES),
    }


def library_key(sources: Mapping[str, str], toolchain: Toolchain) -> str:
    return _key_of(_key_inputs(sources, toolchain))


def _key_of(key_inputs: dict) -> str:
    canonical = json.dumps(key_inputs, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]  # 128 bits: no collision in practice


def _writable_dir(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(path, os.W_OK | os.X_OK)


def cache_root() -> Path:
    """Where compiled engines live (see the module docstring for the order and why)."""
    if sys.prefix != sys.base_prefix and os.access(sys.prefix, os.W_OK):
        venv_dir = Path(sys.prefix) / "var" / "cache" / "artist" / "ns3-engine"
        if _writable_dir(venv_dir):
            return venv_dir
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "artist" / "ns3-engine"


def compile_command(toolchain: Toolchain, cc_files: list[Path], output: Path) -> list[str]:
    lib_dir = str(toolchain.lib_dir)
    prefix = toolchain.ns3_library_prefix()
    return [toolchain.compiler, *CXX_FLAGS, f"-I{toolchain.include_dir}", *map(str, cc_files), "-o", str(output),
            f"-L{lib_dir}", f"-Wl,-rpath,{lib_dir}", "-Wl,--no-undefined",  # a missing symbol fails here, not at load
            *(f"-l{prefix}-{module}" for module in NS3_MODULES)]


def _failure_message(cmd: list[str], code: int, output: str, label: str = "the ns-3 engine") -> str:
    """The command, the tail of the compiler's output, and last its first error line: one-line
    summaries (artist.cli prints a message's first and last lines) then name the actual problem."""
    first = next((line.strip() for line in output.splitlines() if "error" in line or "undefined reference" in line),
                 "(no line says error; see above)")
    return (f"compiling {label} failed (exit {code}):\n{shlex.join(cmd)}\n"
            f"--- compiler output (last {ERROR_TAIL_CHARS} characters) ---\n{output[-ERROR_TAIL_CHARS:]}\n"
            f"--- first error: {first}")


def _compile(sources: Mapping[str, str], command: Callable[[list[Path], Path], list[str]], key_dir: Path,
             target: Path, label: str) -> None:
    src_dir = key_dir / "src"
    src_dir.mkdir(exist_ok=True)
    for name, text in sources.items():
        (src_dir / name).write_text(text)
    cc_files = [src_dir / name for name in sorted(sources) if name.endswith(".cc")]
    fd, tmp_name = tempfile.mkstemp(prefix=f".{LIBRARY_NAME}.", suffix=".tmp", dir=key_dir)
    os.close(fd)
    tmp = Path(tmp_name)
    cmd = command(cc_files, tmp)
    try:
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, cwd=src_dir)
        except subprocess.TimeoutExpired:
            raise EngineBuildError(f"compiling {label} took over {COMPILE_TIMEOUT_S:.0f} s: "
                                   f"{shlex.join(cmd)}") from None
        if out.returncode != 0:
            raise EngineBuildError(_failure_message(cmd, out.returncode, (out.stdout + out.stderr).strip(), label))
        os.chmod(tmp, 0o755)  # readable by everyone who may use this installation (mkstemp made it 0600)
        os.replace(tmp, target)  # atomic: a reader sees no library or a whole one
    finally:
        tmp.unlink(missing_ok=True)


def build_library(sources: Mapping[str, str], toolchain: Toolchain, root: Path | None = None) -> BuiltLibrary:
    """The library for these sources, compiled now unless a build with the same key exists."""
    return build_cached(sources, _key_inputs(sources, toolchain), lambda cc, out: compile_command(toolchain, cc, out),
                        root or cache_root(), "the ns-3 engine")


def _private(*paths: Path) -> None:
    """Make sure nobody else can replace the library this process will load (a cache root under a shared
    XDG_CACHE_HOME, say): a path this user owns loses group and other write permission; a path another user
    (not root) owns, or root's that others may write, is refused. Why: loading a library runs its code."""
    uid = os.getuid()
    for path in paths:
        st = path.stat()
        if st.st_uid == uid:
            if st.st_mode & 0o022:
                os.chmod(path, st.st_mode & ~0o022 & 0o7777)
        elif st.st_uid != 0 or st.st_mode & 0o022:
            raise EngineBuildError(f"{path} belongs to another user or others may write it: a library there could "
                                   f"be replaced, so it is not loaded; set XDG_CACHE_HOME to a directory of your own")


def build_cached(sources: Mapping[str, str], key_inputs: dict, command: Callable[[list[Path], Path], list[str]],
                 root: Path, label: str) -> BuiltLibrary:
    """A library compiled by command(cc_files, output) from these sources into root/<key>/ (key: a hash of
    key_inputs, which must name every input of the build), unless it is there already; one compile per key
    across processes (module docstring). Also used for engines without ns-3 (network/phase/native.py)."""
    key = _key_of(key_inputs)
    key_dir = root / key
    target = key_dir / LIBRARY_NAME
    if target.exists():  # the common case: no lock, no compiler run
        _private(root, key_dir, target)
        return BuiltLibrary(target, key, compiled=False, compile_seconds=0.0)
    try:
        key_dir.mkdir(parents=True, exist_ok=True)
        lock = os.open(key_dir / "build.lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise EngineBuildError(f"cannot create the engine cache directory {key_dir}: {exc}") from None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be compiling this key: wait for it
        if target.exists():
            _private(root, key_dir, target)
            return BuiltLibrary(target, key, compiled=False, compile_seconds=0.0)
        _private(root, key_dir)
        (key_dir / "build.json").write_text(json.dumps(key_inputs, indent=1, sort_keys=True))
        started = time.perf_counter()
        _compile(sources, command, key_dir, target, label)
        _private(target)
        return BuiltLibrary(target, key, compiled=True, compile_seconds=time.perf_counter() - started)
    finally:
        os.close(lock)  # releases the flock
