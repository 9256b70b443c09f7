"""A policy in one file of the user's: import a Python file whose @register calls add its policies.

    # my_policies/sjf.py
    from artist.policies.registry import register
    @register("sjf")
    class ShortestJobFirst(Policy): ...

A sweep names it with `policies: [{name: sjf, plugin: ../my_policies/sjf.py}]` and `artist simulate`
with `--plugin my_policies/sjf.py --policy sjf`. Workers import the file again (they are fresh
processes); the file's sha256 is part of the run id, so an edited policy re-runs.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import traceback
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from types import ModuleType

from artist.errors import InputError

# Whether a plugin file may be imported now. Importing runs the file's code: a command that only looks at a
# spec (`artist sweep --dry-run`) must not run a downloaded spec's code, so it reads the spec under
# without_plugin_code() and takes a plugin's policy name as written.
_IMPORTS = ContextVar("artist_plugin_imports", default=True)


@contextmanager
def without_plugin_code():
    token = _IMPORTS.set(False)
    try:
        yield
    finally:
        _IMPORTS.reset(token)


def load_plugin(path: str | Path) -> ModuleType | None:
    """Import the file once per process (keyed by its resolved path and content); an error while
    importing it is one line naming the file and the line that failed. None (nothing imported) inside
    without_plugin_code()."""
    path = Path(path).resolve()
    if not path.is_file():
        raise InputError(str(path), None, "no such policy plugin file")
    if not _IMPORTS.get():
        return None
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    name = f"artist_plugin_{path.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        del sys.modules[name]
        raise InputError(str(path), f"line {exc.lineno}", f"syntax error: {exc.msg}") from None
    except Exception as exc:  # noqa: BLE001 - anything the user's file raises while importing
        del sys.modules[name]
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).resolve() == path]
        where = f"line {frames[-1].lineno}" if frames else None
        raise InputError(str(path), where, f"importing the policy plugin failed: {type(exc).__name__}: {exc}") from None
    return module


def plugin_sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
