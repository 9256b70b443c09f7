"""Reading YAML documents with errors that name the file, line and field."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping

import yaml

from artist.errors import InputError, UnknownFieldError, read_input_file


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping: YAML's 'last one wins' would
    silently drop half of a sweep with two `policies:` keys."""

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: let SafeLoader report it
                continue
            if first is not None:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice in one mapping (first on line {first.line + 1})",
                    key_node.start_mark)
            seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)


def parse_yaml(text: str):
    """yaml.safe_load with duplicate keys refused."""
    return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass


def yaml_problem(exc: yaml.YAMLError, text: str) -> tuple[str | None, str]:
    """(where, problem) of a YAML error, each on one line: 'line L, column C' from its mark, or from the
    character position a reader error gives (a NUL byte), and the problem without PyYAML's quoted context."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
    position = getattr(exc, "position", None)
    if where is None and isinstance(position, int):
        where = f"line {text.count(chr(10), 0, position) + 1}"
    problem = getattr(exc, "problem", None) or getattr(exc, "reason", None) or str(exc)
    if getattr(exc, "character", None) is not None and getattr(exc, "reason", None):
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        problem = f"unacceptable character #x{code:04x}: {exc.reason}"
    return where, " ".join(str(problem).split())


def load_yaml_mapping(path: str | Path) -> dict:
    path = Path(path)
    text, _ = read_input_file(path)
    try:
        data = parse_yaml(text)
    except yaml.YAMLError as exc:
        where, problem = yaml_problem(exc, text)
        raise InputError(str(path), where, f"invalid YAML: {problem}") from exc
    except RecursionError:  # thousands of nested levels: no spec, topology or model is shaped like that
        raise InputError(str(path), None, "invalid YAML: nested too deeply") from None
    if not isinstance(data, dict):
        raise InputError(str(path), None, "expected a mapping at the top level")
    return data


class Fields:
    """Typed access to a mapping; errors name the dotted field path."""

    def __init__(self, data: Mapping[str, Any], source: str, prefix: str = ""):
        if not isinstance(data, Mapping):
            raise InputError(source, f"field '{prefix.rstrip('.') or '<root>'}'", "expected a mapping")
        self.data = data
        self.source = source
        self.prefix = prefix

    def _where(self, key: str) -> str:
        return f"field '{self.prefix}{key}'"

    def error(self, key: str, problem: str) -> InputError:
        return InputError(self.source, self._where(key), problem)

    def has(self, key: str) -> bool:
        return key in self.data and self.data[key] is not None

    def sub(self, key: str) -> "Fields":
        if not self.has(key):
            raise self.error(key, "missing")
        return Fields(self.data[key], self.source, f"{self.prefix}{key}.")

    def raw(self, key: str, default: Any = ...):
        if not self.has(key):
            if default is ...:
                raise self.error(key, "missing")
            return default
        return self.data[key]

    def number(self, key: str, default: Any = ..., *, positive: bool = False, minimum: float | None = None,
               maximum: float | None = None) -> float:
        value = self.raw(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(key, f"expected a number, got {value!r}")
        value = float(value)
        if not math.isfinite(value):
            raise self.error(key, f"must be a finite number, got {value}")
        if maximum is not None and value > maximum:
            raise self.error(key, f"must be <= {maximum:g}, got {value:g}")
        if positive and not value > 0:
            raise self.error(key, f"must be > 0, got {value}")
        if minimum is not None and value < minimum:
            raise self.error(key, f"must be >= {minimum}, got {value}")
        return value

    def integer(self, key: str, default: Any = ..., *, minimum: int | None = None, maximum: int | None = None) -> int:
        value = self.raw(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, f"expected an integer, got {value!r}")
        if minimum is not None and value < minimum:
            raise self.error(key, f"must be >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise self.error(key, f"must be <= {maximum}, got {value}")
        return value

    def boolean(self, key: str, default: Any = ...) -> bool:
        """true or false only (YAML's booleans): "false", "no" or 0 is not read as either."""
        value = self.raw(key, default)
        if not isinstance(value, bool):
            raise self.error(key, f"expected true or false, got {value!r}")
        return value

    def string(self, key: str, default: Any = ...) -> str:
        if not self.has(key) and default is not ...:
            return default
        value = self.raw(key, default)
        if not isinstance(value, str) or not value:
            raise self.error(key, f"expected a non-empty string, got {value!r}")
        return value

    def unknown_keys(self, allowed: set[str]) -> None:
        extra = sorted(set(self.data) - allowed)
        if extra:
            raise UnknownFieldError(self.source, self._where(extra[0]), allowed)
