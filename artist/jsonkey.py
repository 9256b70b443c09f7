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


class EncodedMapping(dict):
    """A mapping whose canonical JSON was composed once, from parts already encoded (encoded_mapping):
    canonical_json returns that text. Never changed after it is made."""

    text: str = ""


def canonical_json(value) -> str:
    """Sorted keys, no whitespace, NaN refused: the same value gives the same text in any process."""
    if isinstance(value, EncodedMapping):
        return value.text
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False, default=_jsonable)


def encoded_mapping(value: dict, encoded: dict[str, str]) -> EncodedMapping:
    """value as an EncodedMapping whose text is canonical_json(value), with the values of `encoded`'s keys
    taken from their canonical JSON texts given there instead of encoded again (a cache key's step graphs:
    ~10^5 nodes, whose text the key's digest of them already made). The same text, composed as json.dumps
    composes a dict with sorted keys and no whitespace."""
    out = EncodedMapping(value)
    out.text = "{" + ",".join(f"{canonical_json(k)}:{encoded[k] if k in encoded else canonical_json(v)}"
                              for k, v in sorted(value.items())) + "}"
    return out


def digest(value) -> str:
    """sha256 (hex) of the value's canonical JSON."""
    return sha256(canonical_json(value).encode()).hexdigest()
