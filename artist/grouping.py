"""Items grouped by what they hold in common, transitively (union-find).

    groups_sharing({item: tokens, ...}) -> [[item, ...], ...]

Two items are in one group when they hold a common token, or are linked through
other items that do. Groups list their items in the mapping's order, and come in
the order of their first item, so the result depends only on that order (the
contention components of the loop and the phase model's link groups both read
it that way).
"""

from __future__ import annotations

from typing import Hashable, Iterable, Mapping


def groups_sharing(tokens_of: Mapping[Hashable, Iterable[Hashable]]) -> list[list]:
    """The mapping's keys grouped by tokens in common (module docstring)."""
    order = {item: i for i, item in enumerate(tokens_of)}
    parent = {item: item for item in tokens_of}

    def find(item):
        while parent[item] != item:
            parent[item] = parent[parent[item]]
            item = parent[item]
        return item

    first_holder: dict = {}
    for item, tokens in tokens_of.items():
        for token in tokens:
            a, b = find(item), find(first_holder.setdefault(token, item))
            if a != b:
                parent[max(a, b, key=order.get)] = min(a, b, key=order.get)
    groups: dict = {}
    for item in tokens_of:
        groups.setdefault(find(item), []).append(item)
    return list(groups.values())
