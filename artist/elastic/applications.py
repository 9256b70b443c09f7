"""The Pollux applications shipped in workloads/pollux/ (measured tables + applications.yaml)."""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from pathlib import Path

from artist.elastic.measured import MeasuredApplication, read_application
from artist.elastic.spec import ElasticSpec
from artist.errors import InputError
from artist.shipped import ROOT
from artist.yamlio import load_yaml_mapping

POLLUX_DIR = ROOT / "workloads" / "pollux"
SIA_DIR = ROOT / "workloads" / "sia"
_KEYS = {"epochs", "restart_seconds", "max_local_batch", "fixed_batch", "max_batch", "table1"}


def _settings(directory: Path) -> tuple[str, dict[str, dict]]:
    path = directory / "applications.yaml"
    data = load_yaml_mapping(path)
    if not isinstance(data, dict) or not isinstance(data.get("applications"), dict):
        raise InputError(str(path), "applications", "expected a mapping of application name to settings")
    gpu_type = data.get("gpu_type")
    if not isinstance(gpu_type, str) or not gpu_type:
        raise InputError(str(path), "gpu_type", "expected the GPU type the tables were measured on")
    apps = {}
    for name, entry in data["applications"].items():
        if not isinstance(entry, dict):
            raise InputError(str(path), f"applications.{name}", "expected a mapping")
        unknown = set(entry) - _KEYS
        if unknown:
            raise InputError(str(path), f"applications.{name}", f"unknown key(s) {', '.join(sorted(unknown))}")
        apps[str(name)] = entry
    return gpu_type, apps


@lru_cache(maxsize=None)
def pollux_applications(directory: str = str(POLLUX_DIR)) -> dict[str, tuple[MeasuredApplication, ElasticSpec]]:
    """Every application: its measured tables and the ElasticSpec the artifact gives its jobs."""
    base = Path(directory)
    gpu_type, apps = _settings(base)
    out = {}
    for name, entry in sorted(apps.items()):
        app = read_application(base / name, gpu_type, epochs=entry.get("epochs"),
                               max_local_batch=entry.get("max_local_batch"), max_batch=entry.get("max_batch"))
        try:
            spec = ElasticSpec(initial_batch=app.initial_batch, max_batch=app.max_batch, local_batch=app.limits,
                               restart_seconds=float(entry.get("restart_seconds", 30.0)),
                               fixed_batch=entry.get("fixed_batch"))
        except ValueError as exc:
            raise InputError(str(base / "applications.yaml"), f"applications.{name}", str(exc)) from None
        out[name] = (app, spec)
    return out


@lru_cache(maxsize=None)
def heterogeneous_applications(pollux_dir: str = str(POLLUX_DIR), sia_dir: str = str(SIA_DIR)
                               ) -> dict[str, tuple[MeasuredApplication, ElasticSpec]]:
    """The Pollux applications with Sia's per-GPU-type compute tables added (t4 plus rtx, a100, quad),
    per-type local batch limits, and Sia's per-model restart delays."""
    path = Path(sia_dir) / "gpu_types.yaml"
    data = load_yaml_mapping(path)
    types = data.get("gpu_types")
    if not isinstance(types, dict) or not types:
        raise InputError(str(path), "gpu_types", "expected a mapping of GPU type to {table, machine}")
    caps = data.get("max_local_batch") or {}
    restarts = data.get("restart_seconds") or {}
    out = {}
    for name, (app, spec) in pollux_applications(pollux_dir).items():
        for gpu_type, entry in sorted(types.items()):
            if not isinstance(entry, dict) or not isinstance(entry.get("table"), str):
                raise InputError(str(path), f"gpu_types.{gpu_type}", "expected {table: <file>, machine: <text>}")
            app = app.with_gpu_type(gpu_type, Path(sia_dir) / name / entry["table"],
                                    (caps.get(name) or {}).get(gpu_type))
        if name not in restarts:
            raise InputError(str(path), "restart_seconds", f"no restart delay for {name}")
        out[name] = (app, dataclasses.replace(spec, local_batch=app.limits, restart_seconds=float(restarts[name])))
    return out


def measured_memory_gib(directory: str | Path) -> dict[str, float]:
    """Memory per GPU of the measured types whose gpu_types.yaml entry states it (memory_gib); {} for a
    directory of one type's tables (Pollux's), which states none."""
    path = Path(directory) / "gpu_types.yaml"
    if not path.is_file():
        return {}
    types = load_yaml_mapping(path).get("gpu_types") or {}
    out = {}
    for gpu_type, entry in types.items():
        if isinstance(entry, dict) and entry.get("memory_gib") is not None:
            value = entry["memory_gib"]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1 <= value <= 4096:
                raise InputError(str(path), f"gpu_types.{gpu_type}.memory_gib",
                                 f"expected GiB in [1, 4096], got {value!r}")
            out[str(gpu_type)] = float(value)
    return out
