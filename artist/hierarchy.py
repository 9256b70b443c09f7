"""Switch levels above the racks: which switch group every rack (and every group) hangs under.

Level 1 is the topology's ``spine`` tier; ``levels:`` adds levels 2, 3, ... on
top (aggregation -> core -> ...). The switches of level i come in groups
("blocks"); each unit of level i-1 (a leaf switch for i = 1, else a block of
level i-1) hangs under one block of level i, and the top level is one block
joining everything. Membership comes in one of two forms:

- regular: ``group: N`` on every level but the top: N units of the level below
  per block (racks per spine block on the spine, spine blocks per block on the
  next level, ...); the rack count must fill whole blocks;
- explicit: ``switches: FILE.csv``, rows ``name,level,parent``: every rack and
  switch (and optionally every host) with the switch it hangs under. Levels
  are ``host``, ``rack``, ``spine`` and the ``levels`` names; a parent sits on
  the next level up; the top level has one switch, with an empty parent.
  Racks are numbered in row order; hosts fill their rack's machine slots.

This module holds the membership (``Hierarchy``) and reads it; capacities and
ports per level are topology.py's, routes links.py's.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import hashlib
import io
import re
from dataclasses import dataclass
from pathlib import Path

from artist.errors import InputError, read_input_file
from artist.limits import MAX_OVERSUBSCRIPTION

LEVEL_MODELS = ("bundle", "ecmp")
# Names of the fixed tiers and link kinds: a level may not take them (its links are named after it).
RESERVED_NAMES = ("host", "machine", "rack", "spine", "gpu", "nic", "port")
CSV_COLUMNS = ("name", "level", "parent")
MAX_LEVELS = 8  # levels above the racks; production fabrics have 2-3 (limit, so no file recurses without bound)


@dataclass(frozen=True)
class Level:
    """One switch level above the racks: its uplinks from the level below and its switches."""

    name: str
    bandwidth_bps: float  # per uplink port (per bundle: the ports' speed, which changes nothing), per direction
    link_latency_s: float  # one uplink from the level below
    switch_latency_s: float  # one switch of this level traversed
    oversubscription: float  # the level below's downstream capacity / its uplink capacity into this level
    model: str = "bundle"  # LEVEL_MODELS: one ideal uplink per unit below, or ECMP-hashed ports
    source: str = ""

    def parameters(self) -> dict:
        return {"name": self.name, "bps": self.bandwidth_bps, "link_s": self.link_latency_s,
                "switch_s": self.switch_latency_s, "oversubscription": self.oversubscription, "model": self.model}


@dataclass(frozen=True)
class Hierarchy:
    """Levels above the spine and the membership of every level below the top."""

    upper: tuple[Level, ...]  # levels 2, 3, ... bottom-up (level 1 is the topology's spine)
    racks: int
    groups: tuple[int, ...] = ()  # regular form: units per block at levels 1 .. top-1
    members: tuple[tuple[int, ...], ...] = ()  # explicit form: parent block of each unit, levels 1 .. top-1
    names: tuple[tuple[str, ...], ...] = ()  # explicit form: unit names of levels 0 (racks) .. top-1
    source: str = ""  # the membership file

    @property
    def explicit(self) -> bool:
        """True for membership read from a `switches` file (names listed), False for `group` fields."""
        return bool(self.names)

    @property
    def depth(self) -> int:
        """Levels above the racks (the spine counts as one)."""
        return 1 + len(self.upper)

    @functools.cached_property
    def parents(self) -> tuple[tuple[int, ...], ...]:
        """parents[i-1][u]: the level-i block of unit u of level i-1 (racks at level 0), i = 1 .. top-1."""
        if self.members:
            return (self.members[0][:self.racks],) + self.members[1:]
        out, units = [], self.racks
        for group in self.groups:
            out.append(tuple(u // group for u in range(units)))
            units //= group
        return tuple(out)

    def block(self, rack: int, level: int) -> int:
        """The level-`level` block rack `rack` hangs under (level 0: the rack; the top: block 0)."""
        unit = rack
        for parent in self.parents[:level]:
            unit = parent[unit]
        return 0 if level >= self.depth else unit

    def parent(self, unit: int, level: int) -> int:
        """The block of level + 1 that unit `unit` of level `level` hangs under."""
        return self.parents[level][unit] if level < len(self.parents) else 0

    def units(self, level: int) -> int:
        """Units (blocks) of a level, 0 < level < top, counting any left empty by a rack count cut."""
        if level >= self.depth:
            return 1
        if self.explicit:
            return len(self.names[level])
        units = self.racks
        for group in self.groups[:level]:
            units //= group
        return units

    def with_racks(self, racks: int) -> "Hierarchy":
        if self.explicit:
            if racks > len(self.names[0]):
                raise ValueError(f"{self.source} lists {len(self.names[0])} racks; {racks} asked")
        else:
            check_whole_blocks(racks, self.groups)
        return dataclasses.replace(self, racks=racks)

    def parameters(self) -> dict:
        """Cache-key material: the upper levels and the membership of the racks in use."""
        params: dict = {"levels": [level.parameters() for level in self.upper]}
        if self.explicit:
            text = repr((self.racks, self.parents)).encode()
            params["membership"] = hashlib.sha256(text).hexdigest()[:16]
        else:
            params["groups"] = list(self.groups)
        return params


def check_whole_blocks(racks: int, groups: tuple[int, ...]) -> None:
    size = 1
    for group in groups:
        size *= group
    if racks % size:
        raise ValueError(f"{racks} racks do not fill whole blocks of {size} racks (groups {list(groups)}); a "
                         f"partial block would have less uplink capacity than the others")


def level_from_fields(f, name: str, tier_fields: tuple[float, float, float, str]) -> Level:
    """A Level from a `levels` entry's Fields (bandwidth, latencies and source already read as a tier)."""
    bps, link_s, switch_s, source = tier_fields
    model = f.string("model", "bundle")
    if model not in LEVEL_MODELS:
        raise f.error("model", f"unknown model {model!r}; known: {', '.join(LEVEL_MODELS)}")
    return Level(name, bps, link_s, switch_s, f.number("oversubscription", 1.0, positive=True,
                                                       maximum=MAX_OVERSUBSCRIPTION), model, source)


def check_level_name(f, key: str, name: str, taken: set[str]) -> None:
    if not re.fullmatch(r"[a-z][a-z0-9]*", name) or name in RESERVED_NAMES:
        raise f.error(key, f"level name {name!r}: lowercase letters and digits, not one of "
                           f"{', '.join(RESERVED_NAMES)}")
    if name in taken:
        raise f.error(key, f"level name {name!r} is used twice")
    taken.add(name)


def read_membership(path: Path, level_names: tuple[str, ...], machines_per_rack: int
                    ) -> tuple[tuple[tuple[int, ...], ...], tuple[tuple[str, ...], ...]]:
    """(parents per level 1 .. top-1, unit names per level 0 .. top-1) from a ``name,level,parent`` CSV.
    level_names: the levels above the racks, bottom-up ("spine", then the `levels` names)."""
    src = str(path)
    text, _ = read_input_file(path)
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or tuple(c.strip() for c in rows[0]) != CSV_COLUMNS:
        raise InputError(src, "line 1", f"expected the header {','.join(CSV_COLUMNS)}")
    order = ("host", "rack") + level_names
    rank = {name: i for i, name in enumerate(order)}
    entries: dict[str, tuple[str, str, int]] = {}  # name -> (level, parent, line)
    seen_rows: dict[tuple, int] = {}
    for line, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        if len(row) != len(CSV_COLUMNS):
            raise InputError(src, f"line {line}", f"expected {len(CSV_COLUMNS)} columns, got {len(row)}")
        name, level, parent = (c.strip() for c in row)
        if (name, level, parent) in seen_rows:
            raise InputError(src, f"line {line}", f"duplicate row (same as line {seen_rows[(name, level, parent)]})")
        seen_rows[(name, level, parent)] = line
        if not name:
            raise InputError(src, f"line {line}, column 'name'", "empty name")
        if level not in rank:
            raise InputError(src, f"line {line}, column 'level'", f"unknown level {level!r}; levels: "
                                                                  f"{', '.join(order)}")
        if name in entries:
            first_level, first_parent, first_line = entries[name]
            if first_level != level:
                raise InputError(src, f"line {line}", f"{name!r} is a {level} here and a {first_level} on line "
                                                      f"{first_line}: one name, one switch")
            raise InputError(src, f"line {line}, column 'parent'",
                             f"{level} {name!r} is under {parent!r} here and under {first_parent!r} on line "
                             f"{first_line}: a {level} hangs under one switch")
        entries[name] = (level, parent, line)
    top = order[-1]
    for name, (level, parent, line) in entries.items():
        if level == top:
            if parent:
                raise InputError(src, f"line {line}, column 'parent'",
                                 f"{top} {name!r} is the top level and has no parent, got {parent!r}")
            continue
        if not parent:
            raise InputError(src, f"line {line}, column 'parent'",
                             f"{level} {name!r} has no {order[rank[level] + 1]} (missing level)")
        _check_chain(src, entries, name)
        if parent not in entries:
            raise InputError(src, f"line {line}, column 'parent'", f"unknown switch {parent!r}")
        parent_level = entries[parent][0]
        if parent_level != order[rank[level] + 1]:
            raise InputError(src, f"line {line}, column 'parent'",
                             f"{level} {name!r} hangs under {parent_level} {parent!r}, but the level above "
                             f"{level} is {order[rank[level] + 1]} (missing level)")
    by_level: dict[str, list[str]] = {name: [] for name in order}
    for name, (level, _, _) in entries.items():
        by_level[level].append(name)
    for level in order[1:]:
        if not by_level[level]:
            raise InputError(src, None, f"no {level} listed (missing level)")
    if len(by_level[top]) != 1:
        raise InputError(src, f"line {entries[by_level[top][1]][2]}",
                         f"a second {top} {by_level[top][1]!r}: the top level is one switch joining everything")
    hosts: dict[str, int] = {}
    for host in by_level["host"]:
        rack = entries[host][1]
        hosts[rack] = hosts.get(rack, 0) + 1
        if hosts[rack] > machines_per_rack:
            raise InputError(src, f"line {entries[host][2]}", f"rack {rack!r} has more than machines_per_rack = "
                                                              f"{machines_per_rack} hosts")
    names = tuple(tuple(by_level[level]) for level in order[1:-1])
    index = [{name: i for i, name in enumerate(level)} for level in names[1:]] + [{by_level[top][0]: 0}]
    parents = tuple(tuple(index[i][entries[name][1]] for name in names[i]) for i in range(len(names) - 1))
    return parents, names


def _check_chain(src: str, entries: dict, name: str) -> None:
    """Refuse a cycle: a switch that is its own ancestor (parents followed from `name`)."""
    seen = [name]
    node = entries[name][1]
    while node and node in entries:
        if node in seen:
            loop = " -> ".join(seen[seen.index(node):] + [node])
            raise InputError(src, f"line {entries[name][2]}, column 'parent'", f"cycle: {loop}")
        seen.append(node)
        node = entries[node][1]
