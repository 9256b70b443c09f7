"""The code a network answer comes from, as a digest: part of every latency-cache key.

    code_digest(model)   # -> "3f2a...": 16 hex digits of sha256 over the sources that compute its answers

A cached answer is only as good as the code that computed it. Keys used to carry a hand-bumped version per
backend ("bump when an answer changes"), so an edit that forgot the bump (or a local experiment) was
answered from the cache, and a regression check against a golden latency table passed against changed
code. The digest covers, for the model and every model it wraps (`inner`, `fabric`): the Python module of
its class and every `artist` module that module imports, transitively (imports inside functions too, read
from the source, so a backend's lazily imported worker counts), their parent packages, and the non-Python
sources beside them (the C++ of the ns-3 and phase engines). Any change there is a miss; a change anywhere
else (a policy, a command) is not. Computed once per process (the sources are read once).

Calibration profiles do not record the digest: they match a backend by its settings (identity()), so a
profile stays usable across code changes, while every answer it corrects is recomputed.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from hashlib import sha256
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # artist/
PACKAGE = PACKAGE_DIR.name
SOURCE_SUFFIXES = (".cc", ".h")  # compiled beside the Python (the ns-3 and phase engines)
WRAPPED = ("inner", "fabric")  # attributes through which a model answers with another model


def _path_of(module: str) -> Path | None:
    """The source file of an `artist` module or package; None for a name that is neither (an attribute
    imported from a module: `from artist.x import y`)."""
    base = PACKAGE_DIR.parent.joinpath(*module.split("."))
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def _run_time_nodes(tree: ast.AST):
    """ast.walk, less the bodies of `if TYPE_CHECKING:` (imports only type checkers and documentation tools
    follow: artist/__init__.py names the whole public API there, which no answer runs)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                todo.extend(child.orelse)
            else:
                todo.append(child)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(path: Path, module: str) -> set[str]:
    """The `artist` modules a source file imports (absolute or relative, at any depth of the file)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in _run_time_nodes(ast.parse(path.read_bytes(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[:len(parts) - node.level + 1])
                base = f"{parent}.{base}" if base else parent
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)  # `from package import module`
    return {name for name in found if name == PACKAGE or name.startswith(PACKAGE + ".")}


@lru_cache(maxsize=None)
def module_closure(module: str) -> tuple[Path, ...]:
    """Every source file `module` depends on inside the package: itself, its parent packages, what they
    import, transitively, and the non-Python sources in their directories. Sorted, so the digest does not
    depend on the walk."""
    files: set[Path] = set()
    todo, seen = [module], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        todo.extend(".".join(parts[:k]) for k in range(1, len(parts)))  # its parent packages run first
        path = _path_of(name)
        if path is None:
            continue
        files.add(path)
        todo.extend(_imports(path, name))
    for directory in {p.parent for p in files}:
        files.update(p for p in directory.iterdir() if p.suffix in SOURCE_SUFFIXES and p.is_file())
    return tuple(sorted(files))


@lru_cache(maxsize=None)
def _digest_of(modules: frozenset[str]) -> str:
    files = sorted({f for m in modules for f in module_closure(m)})
    h = sha256()
    for path in files:
        h.update(str(path.relative_to(PACKAGE_DIR.parent)).encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def answering_modules(model) -> frozenset[str]:
    """The package modules of the model's class and its bases and of every model it wraps (WRAPPED
    attributes), at any depth. A backend class from outside the package is not read: such a backend names its
    changes in identity()."""
    modules, todo, seen = set(), [model], set()
    while todo:
        obj = todo.pop()
        if obj is None or id(obj) in seen:
            continue
        seen.add(id(obj))
        for cls in type(obj).__mro__:  # a subclass answers with its bases' code too
            module = cls.__module__
            if module == PACKAGE or module.startswith(PACKAGE + "."):
                modules.add(module)
        todo.extend(getattr(obj, name, None) for name in WRAPPED)
    return frozenset(modules)


def code_digest(model) -> str:
    """16 hex digits naming the code that computes the model's answers (module docstring)."""
    return _digest_of(answering_modules(model))
