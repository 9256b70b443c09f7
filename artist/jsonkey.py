"""Canonical JSON and its digest: the text identities are hashed from (cache keys, sweep run ids).

The same value gives the same text in any process and on any machine: sorted keys,
no whitespace, NaN refused; neither depends on PYTHONHASHSEED.
"""

from __future__ import annotations

import json
from hashlib import sha256


def _jsonable(value):
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return value.item()
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def canonical_json(value) -> str:
    """Sorted keys, no whitespace, NaN refused: the same value gives the same text in any process."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False, default=_jsonable)


def digest(value) -> str:
    """sha256 (hex) of the value's canonical JSON."""
    return sha256(canonical_json(value).encode()).hexdigest()
