"""Options and checks that several `artist` sub-commands share, so they validate alike."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Iterable

from artist import shipped
from artist.commands._args import integer, number
from artist.errors import InputError
from artist.limits import MAX_CHANNELS, MAX_GPUS
from artist.network.cache import CACHE_FILE_NAME
from artist.network.collectives import ALGORITHM_CHOICES
from artist.network.stack import BACKENDS


CACHE_DIR_HELP = (f"directory holding {CACHE_FILE_NAME} (default: $ARTIST_CACHE_DIR, else $XDG_CACHE_HOME/artist, "
                  f"else ~/.cache/artist)")


def add_topology_arguments(p) -> None:
    p.add_argument("--topology", default=str(shipped.DEFAULT_TOPOLOGY),
                   help="topology YAML, or the name of a shipped one (artist list topologies); "
                        "default: the Dally paper's cluster, dally-3tier")
    p.add_argument("--racks", type=integer(1, MAX_GPUS), default=None, help="override the topology's rack count")


def load_topology_from(args):
    from artist.topology import load_topology

    path = shipped.topology_path(args.topology)
    return with_racks(load_topology(path), args.racks)


def with_racks(topology, racks: int | None):
    """The topology with --racks racks (None: as it is); a count it cannot take is one line naming --racks."""
    if racks is None:
        return topology
    try:
        return topology.with_racks(racks)
    except ValueError as exc:
        raise InputError("command line", "--racks", str(exc)) from None


def add_network_arguments(p, *, calibration: bool = True, cache: bool = True) -> None:
    """--backend (the network backend in every command; --comm is the old spelling), --algorithm,
    --channels, --calibration, and the cache options."""
    p.add_argument("--backend", "--comm", dest="backend", default="analytical", choices=BACKENDS,
                   help="network backend: analytical (alpha-beta), flow (fluid max-min: jobs share links), ns3 "
                        "(packet level) or none (communication free: the network-less baseline)")
    p.add_argument("--algorithm", default="ring", choices=ALGORITHM_CHOICES,
                   help="all-reduce algorithm: ring, hierarchical, tree (NCCL's double binary tree), or nccl "
                        "(analytical only: the algorithm, "
                        "protocol and channels NCCL's tuner picks per size)")
    p.add_argument("--channels", type=integer(1, MAX_CHANNELS), default=1,
                   help=f"parallel rings (NCCL channels), 1-{MAX_CHANNELS}")
    if calibration:
        p.add_argument("--calibration", default=None, metavar="PROFILE",
                       help="calibration profile YAML or the name of a shipped one (artist list profiles), "
                            "applied to the backend's answers")
    if cache:
        p.add_argument("--no-cache", action="store_true", help="do not read or write the latency cache")
        p.add_argument("--cache-dir", default=None, help=CACHE_DIR_HELP)
    add_ns3_timeout_argument(p)


NS3_TIMEOUT_MAX_S = 7 * 24 * 3600.0  # the longest watchdog one may set on one ns-3 run: a week (a bound)


def add_ns3_timeout_argument(p) -> None:
    p.add_argument("--ns3-timeout", type=number(1, NS3_TIMEOUT_MAX_S), default=None, metavar="SECONDS",
                   help="ns3 only: seconds one packet run may take before its watchdog stops it (default 600); "
                        "answers do not depend on it, so cached ones stay valid")


def add_accelerate_argument(p) -> None:
    p.add_argument("--accelerate", action="store_true",
                   help="ns3 only: steady-state skipping of ring all-reduces, all-gathers and reduce-scatters "
                        "(their first steps simulated, the rest extrapolated; within 1%% of full runs, see "
                        "benchmarks/ns3_speed.py); answers say ns3_steady_state")


def ns3_options(args, backend: str | None = None) -> tuple[tuple[str, object], ...]:
    """The backend options --ns3-timeout and --accelerate give (none when neither is given); one line when
    one is given for a backend other than ns3 (backend: the one the command runs, default --backend)."""
    backend = backend or args.backend
    options: tuple[tuple[str, object], ...] = ()
    for flag, name, value in (("--ns3-timeout", "timeout_s", getattr(args, "ns3_timeout", None)),
                              ("--accelerate", "accelerate", getattr(args, "accelerate", False) or None)):
        if value is None:
            continue
        if backend != "ns3":
            raise InputError("command line", flag, f"only with the ns3 backend, not {backend}")
        options += ((name, float(value) if name == "timeout_s" else True),)
    return options


def calibration_path(text: str | None) -> str | None:
    if text is None:
        return None
    return str(shipped.resolve(text, shipped.PROFILES_DIR, "--calibration", "calibration profile"))


def check_calibration(path: str | None, topology, spec) -> None:
    """The profile must have been fitted on this topology's links and for this backend setting:
    one line naming the profile and what differs, before any work."""
    if path is None:
        return
    from artist.calibration.profile import backend_settings, load_profile

    profile = load_profile(path)
    try:
        profile.check_topology(topology)
    except ValueError as exc:
        raise InputError(path, "field 'topology'", str(exc)) from None
    wanted = backend_settings({"backend": spec.backend, "algorithm": spec.algorithm, "channels": spec.channels})
    if backend_settings(profile.backend) != wanted:
        raise InputError(path, "field 'backend'", f"fitted for {backend_settings(profile.backend)}, not {wanted}; "
                                                  f"pass the matching --backend/--algorithm/--channels or another "
                                                  f"profile (artist list profiles)")
    note = profile.tier_note(topology)
    if note:
        print(f"note: {note}", file=sys.stderr)


def build_stack(spec, topology):
    """The command's network stack, CommSpec.build (Calibrated(Cached(backend))), its calibration checked first;
    a profile the backend still refuses (an identity differing beyond the settings) is one line."""
    check_calibration(spec.calibration, topology, spec)
    try:
        return spec.build(topology)
    except ValueError as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(spec.calibration or "command line", None if spec.calibration else "--backend",
                         str(exc)) from None


def writable_dir(path: str | Path, option: str = "--out") -> Path:
    """Create the output directory now and prove it takes a file, so a long run cannot fail at
    its very end for want of a place to write."""
    if not str(path).strip():  # '' would mean the working directory, or nothing written at all
        raise InputError("command line", option, "empty path: name a directory")
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError("command line", option, f"{path} is a file; name a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".artist-write-check-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise InputError("command line", option, f"cannot write to {path} ({exc.strerror or exc})") from None
    return path


def writable_file(path: str | Path, option: str, inputs: Iterable[str | Path] = (),
                  inputs_are: str = "one of the inputs read", make_dir: bool = True) -> Path:
    """An output file's path, checked before any work: not empty, not a directory, none of the command's
    `inputs` (writing it would overwrite what the command reads), and (make_dir) its directory made and
    proven writable; a command that does not create directories passes make_dir=False."""
    if not str(path).strip():
        raise InputError("command line", option, "empty path: name the file to write")
    path = Path(path)
    if path.is_dir():
        raise InputError("command line", option, f"{path} is a directory; name the file to write")
    if path.resolve() in {Path(p).resolve() for p in inputs}:
        raise InputError("command line", option, f"{path} is {inputs_are}: writing it would overwrite it; name "
                                                 f"another file")
    if make_dir:
        writable_dir(path.parent if str(path.parent) else ".", option)
    return path


def progress_enabled(args) -> bool:
    """Progress bars go to stderr unless --quiet; off when stderr is not a terminal and the user
    did not ask (logs and CI stay clean)."""
    if getattr(args, "quiet", False):
        return False
    if getattr(args, "progress", False):
        return True
    return sys.stderr.isatty()
