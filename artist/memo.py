"""Bounded memos: a dict that starts afresh when full, keyed by value or by the identity of objects.

    memoised(memo, key, make, bound)              # memo[key], made by make() when missing
    memoised_by_identity(memo, objects, make, bound)  # per the very objects (a tuple), not their value

By identity is for answers derived from large objects that are kept alive elsewhere while they are
asked about (a running job's step graph): hashing them by value would cost as much as the derivation.
The entry holds the objects, so their ids cannot be reused by others while it exists, and it is
checked against them, so an id reused after eviction never answers for another object.
"""

from __future__ import annotations

from typing import Callable, Hashable, TypeVar

T = TypeVar("T")


def memoised(memo: dict, key: Hashable, make: Callable[[], T], bound: int) -> T:
    """memo[key], made by make() when missing; the memo is cleared when it holds `bound` entries."""
    found = memo.get(key)
    if found is None:
        if len(memo) >= bound:
            memo.clear()
        found = memo[key] = make()
    return found


def memoised_by_identity(memo: dict, objects: tuple, make: Callable[[], T], bound: int) -> T:
    """make()'s answer for these very objects (module docstring); cleared at `bound` entries."""
    key = tuple(map(id, objects))
    found = memo.get(key)
    if found is None or any(a is not b for a, b in zip(found[0], objects)):
        if len(memo) >= bound:
            memo.clear()
        found = memo[key] = (objects, make())
    return found[1]
