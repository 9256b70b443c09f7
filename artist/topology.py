"""Cluster topology: GPUs on machines, machines in racks, racks on a spine.

Three tiers, each with its own links:
- ``machine``: every GPU has one link to its machine's NVSwitch-class switch;
- ``rack``: every machine has ``tiers.rack.nics_per_machine`` NICs (default:
  one per GPU, as DGX machines have), each with one link of
  ``tiers.rack.bandwidth_gbps`` to the rack switch. GPU k of a machine sends
  and receives its inter-machine traffic through NIC floor(k x nics / gpus)
  (GPUs paired with NICs in order, as DGX boxes pair them behind PCIe
  switches) or through the NIC an explicit ``tiers.rack.nic_of_gpu`` list
  names; GPUs on one NIC share it (the PCIe hop from GPU to NIC is not a tier
  of the model: it never limits). With
  ``tiers.rack.wiring: rails`` (rail-optimised, as DGX SuperPODs are wired) a
  rack has one leaf switch per NIC index k ("rail" k), NIC k of every machine
  on leaf k; two GPUs of a rack on different rails reach each other through
  the spine. Each leaf then has its own uplinks (its NICs' capacity /
  oversubscription, or that many ports).
- ``spine``: racks joined through spine switches. Two models (``tiers.spine.model``):
  ``bundle`` (default): every rack has ONE uplink whose capacity is the rack's
  total NIC capacity divided by the oversubscription ratio, i.e. an ideally
  load-balanced bundle of spine ports (the port bandwidth changes nothing);
  ``ecmp``: a leaf-spine fabric. Every rack has ``spine_ports`` individual
  uplink ports of ``spine.bandwidth_bps``, port k to spine plane k, with
  spine_ports = rack NIC capacity / (oversubscription x port bandwidth); a
  transfer between racks takes the plane chosen by the ECMP hash
  (artist/network/ecmp.py) up from its rack and down to the other.
- ``levels`` (optional, artist/hierarchy.py): switch levels above the spine
  (aggregation -> core -> ...). The spine's switches then come in blocks
  (``tiers.spine.group`` racks per block, or an explicit ``switches`` CSV),
  each level groups the blocks of the level below, the top joins everything.
  Every level has its own port speed, latencies, oversubscription (the level
  below's downstream capacity / its uplink capacity into this level) and model
  (``bundle``: one ideal uplink per unit below; ``ecmp``: that capacity as
  individual hashed ports, a whole number per unit, the same for every unit).
  Traffic climbs only to the lowest level where its two GPUs' racks share a
  block and comes back down.

GPU ids are global and dense: GPU g sits on machine g // gpus_per_machine,
machine m in rack m // machines_per_rack; NIC n (global) is NIC n % nics of
machine n // nics. All bandwidths are per direction.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from pathlib import Path

from artist.errors import InputError
from artist.hierarchy import (MAX_LEVELS, Hierarchy, Level, check_level_name, check_whole_blocks, level_from_fields,
                              read_membership)
from artist.limits import (MAX_BANDWIDTH_GBPS, MAX_GPUS, MAX_LATENCY_US, MAX_OVERSUBSCRIPTION, MAX_RELATIVE_SPEED,
                           MIN_BANDWIDTH_GBPS, MIN_RELATIVE_SPEED)
from artist.yamlio import Fields, load_yaml_mapping

TIER_NAMES = ("machine", "rack", "spine")
SPINE_MODELS = ("bundle", "ecmp")
RACK_WIRINGS = ("switch", "rails")  # one rack switch, or one leaf switch per GPU index (rail-optimised)
MAX_SPINE_PORTS = 1 << 16  # per rack; far above any switch radix (limit, so no topology allocates without bound)


@dataclass(frozen=True)
class Tier:
    name: str
    bandwidth_bps: float  # per link, per direction, bits per second
    link_latency_s: float  # propagation + serialisation start-up of one link
    switch_latency_s: float  # per switch traversed at this tier
    source: str = ""

    @property
    def bytes_per_second(self) -> float:
        return self.bandwidth_bps / 8.0


@dataclass(frozen=True)
class GpuType:
    name: str
    relative_speed: float  # compute speed relative to the profiles' reference GPU
    source: str = ""
    declared: bool = True  # False: no gpu_types entry, speed 1 assumed (only right for the reference GPU)


@dataclass(frozen=True)
class Topology:
    name: str
    racks: int
    machines_per_rack: int
    gpus_per_machine: int
    machine: Tier
    rack: Tier
    spine: Tier
    oversubscription: float = 1.0
    spine_model: str = "bundle"  # SPINE_MODELS: one ideal uplink per rack, or individual ECMP ports
    rack_wiring: str = "switch"  # RACK_WIRINGS: NICs on one rack switch, or on rail leaves
    rack_gpu_types: tuple[str, ...] = ("generic",)  # cycled over racks
    nics_per_machine: int = 0  # 0: one NIC per GPU
    nic_of_gpu: tuple[int, ...] = ()  # NIC index of each GPU index of a machine; (): floor(k x nics / gpus)
    gpu_types: dict = field(default_factory=dict, compare=False, hash=False)
    source: str = ""
    path: str = ""
    hierarchy: Hierarchy | None = None  # levels above the spine and their membership; None: the spine is the top

    # ---- sizes -------------------------------------------------------------
    @property
    def machines(self) -> int:
        return self.racks * self.machines_per_rack

    @property
    def gpus(self) -> int:
        return self.machines * self.gpus_per_machine

    @property
    def gpus_per_rack(self) -> int:
        return self.machines_per_rack * self.gpus_per_machine

    def machine_of(self, gpu: int) -> int:
        return gpu // self.gpus_per_machine

    def rack_of_machine(self, machine: int) -> int:
        return machine // self.machines_per_rack

    def rack_of(self, gpu: int) -> int:
        return self.rack_of_machine(self.machine_of(gpu))

    def gpu_type_of_machine(self, machine: int) -> str:
        return self.rack_gpu_types[self.rack_of_machine(machine) % len(self.rack_gpu_types)]

    def gpu_type(self, name: str) -> GpuType:
        try:
            return self.gpu_types[name]
        except KeyError:
            raise KeyError(f"topology {self.name!r} has no GPU type {name!r}") from None

    def tier(self, name: str) -> Tier:
        if name not in TIER_NAMES:
            raise KeyError(f"unknown tier {name!r}; tiers are {TIER_NAMES}")
        return getattr(self, name)

    # ---- NICs (module docstring) ------------------------------------------
    @property
    def nics(self) -> int:
        """NICs per machine."""
        return self.nics_per_machine or self.gpus_per_machine

    @property
    def nics_per_rack(self) -> int:
        return self.machines_per_rack * self.nics

    @functools.cached_property
    def nic_map(self) -> tuple[int, ...]:
        """NIC index (inside the machine) of each GPU index of a machine."""
        if self.nic_of_gpu:
            return self.nic_of_gpu
        return tuple(k * self.nics // self.gpus_per_machine for k in range(self.gpus_per_machine))

    @property
    def shared_nics(self) -> bool:
        """True when some NIC serves several GPUs (GPUs of a machine are then not interchangeable,
        unless the machine has one NIC for all)."""
        return self.nics < self.gpus_per_machine

    def nic_index(self, gpu: int) -> int:
        """GPU g's NIC inside its machine (its rail with rail-optimised wiring)."""
        if not self.nics_per_machine and not self.nic_of_gpu:
            return gpu % self.gpus_per_machine
        return self.nic_map[gpu % self.gpus_per_machine]

    def nic_of(self, gpu: int) -> int:
        """GPU g's NIC, as a global id: machine x nics + its NIC index."""
        return self.machine_of(gpu) * self.nics + self.nic_index(gpu)

    # ---- leaf switches (one per rack, or one per rail of a rack) ------------
    @property
    def rails(self) -> bool:
        return self.rack_wiring == "rails"

    @property
    def leaves_per_rack(self) -> int:
        return self.nics if self.rails else 1

    def leaf_of(self, gpu: int) -> int:
        """The leaf switch of GPU g's NIC: its rack's switch, or with rails its rack's switch of the
        rail of its NIC index k (leaf = rack x nics + k)."""
        if not self.rails:
            return self.rack_of(gpu)
        return self.rack_of(gpu) * self.nics + self.nic_index(gpu)

    # ---- derived link figures --------------------------------------------
    @property
    def rack_uplink_bps(self) -> float:
        """Capacity of one rack's bundle of spine uplinks, per direction."""
        return self.nics_per_rack * self.rack.bandwidth_bps / self.oversubscription

    @property
    def leaf_uplink_bps(self) -> float:
        """Capacity of one leaf switch's bundle of spine uplinks (a rack's, without rails)."""
        if not self.rails:
            return self.rack_uplink_bps
        return self.machines_per_rack * self.rack.bandwidth_bps / self.oversubscription

    @property
    def spine_ports_per_rack(self) -> float:
        return self.rack_uplink_bps / self.spine.bandwidth_bps

    @property
    def spine_ports(self) -> int:
        """Uplink ports per leaf switch (per rack without rails) of an ``ecmp`` spine: a whole number
        (checked when loading)."""
        exact = self.leaf_uplink_bps / self.spine.bandwidth_bps
        ports = round(exact)
        if ports < 1 or abs(ports - exact) > 1e-9 * max(1.0, exact):
            nics = self.nics_per_rack // self.leaves_per_rack
            raise ValueError(f"topology {self.name!r}: {nics} NICs x {self.rack.bandwidth_bps / 1e9:g} "
                             f"Gb/s / oversubscription {self.oversubscription:g} / {self.spine.bandwidth_bps / 1e9:g} "
                             f"Gb/s per spine port = {exact:g} ports per {'leaf' if self.rails else 'rack'}; an ecmp "
                             f"spine needs a whole number >= 1")
        if ports > MAX_SPINE_PORTS:
            raise ValueError(f"topology {self.name!r}: {ports} spine ports per rack; at most {MAX_SPINE_PORTS}")
        return ports

    # ---- switch levels above the racks (artist/hierarchy.py) ------------------
    @functools.cached_property
    def levels(self) -> tuple[Level, ...]:
        """Levels 1 (the spine) .. top, bottom-up."""
        spine = Level("spine", self.spine.bandwidth_bps, self.spine.link_latency_s, self.spine.switch_latency_s,
                      self.oversubscription, self.spine_model, self.spine.source)
        return (spine,) + (self.hierarchy.upper if self.hierarchy else ())

    def level_unit(self, leaf: int, level: int) -> int:
        """The unit whose uplink into `level` a transfer from `leaf` climbs: the leaf itself for the
        spine, else its rack's block at level - 1."""
        if level == 1:
            return leaf
        return self.hierarchy.block(leaf // self.leaves_per_rack, level - 1)

    def common_level(self, leaf_a: int, leaf_b: int) -> int:
        """Lowest level whose block holds both leaves: 0 for one leaf, 1 for the spine, ..."""
        if leaf_a == leaf_b:
            return 0
        if not self.hierarchy:
            return 1
        rack_a, rack_b = leaf_a // self.leaves_per_rack, leaf_b // self.leaves_per_rack
        level = 1
        while self.hierarchy.block(rack_a, level) != self.hierarchy.block(rack_b, level):
            level += 1
        return level

    @functools.cached_property
    def _upper_uplink_bps(self) -> tuple[tuple[float, ...], ...]:
        """[i - 2][u]: capacity of unit u of level i-1 into level i (i >= 2): its downstream capacity (its
        members' uplinks into it) / level i's oversubscription."""
        h = self.hierarchy
        if not h or h.depth < 2:
            return ()
        down = [0.0] * h.units(1)
        for b in h.parents[0]:
            down[b] += self.leaves_per_rack * self.leaf_uplink_bps
        out = []
        for i, level in enumerate(self.levels[1:], start=2):
            up = [d / level.oversubscription for d in down]
            out.append(tuple(up))
            if i < h.depth:
                down = [0.0] * h.units(i)
                for u, parent in enumerate(h.parents[i - 1]):
                    down[parent] += up[u]
        return tuple(out)

    def uplink_bps(self, level: int, unit: int) -> float:
        """Capacity of unit's uplink bundle into `level` (per direction)."""
        if level == 1:
            return self.leaf_uplink_bps
        return self._upper_uplink_bps[level - 2][unit]

    def level_ports(self, level: int) -> int:
        """Uplink ports per unit into an ``ecmp`` level: a whole number, the same for every unit."""
        if level == 1:
            return self.spine_ports
        return self._upper_ports[level]

    @functools.cached_property
    def _upper_ports(self) -> dict[int, int]:
        out = {}
        for i, level in enumerate(self.levels[1:], start=2):
            if level.model != "ecmp":
                continue
            counts = {}
            for unit, bps in enumerate(self._upper_uplink_bps[i - 2]):
                if bps > 0:  # a block left empty by a rack count cut carries nothing
                    counts.setdefault(bps / level.bandwidth_bps, unit)
            exact = sorted(counts)
            ports = round(exact[0]) if exact else 1
            if (len(exact) > 1 or ports < 1 or abs(ports - exact[0]) > 1e-9 * max(1.0, exact[0])
                    or ports > MAX_SPINE_PORTS):
                found = ", ".join(f"{e:g}" for e in exact[:4])
                raise ValueError(f"topology {self.name!r}: uplink ports into level {level.name!r} (downstream "
                                 f"capacity / (oversubscription {level.oversubscription:g} x "
                                 f"{level.bandwidth_bps / 1e9:g} Gb/s)) come to {found} per unit; an ecmp level needs "
                                 f"one whole number 1..{MAX_SPINE_PORTS} for every unit (or model: bundle)")
            out[i] = ports
        return out

    def check_level_ports(self) -> None:
        """ValueError when an ecmp level's port count is not one whole number (module docstring)."""
        if self.spine_model == "ecmp":
            self.spine_ports
        self._upper_ports

    def uplink_kinds(self, level: int) -> tuple[str, str]:
        """Link kinds (up, down) of the uplinks into `level` (network/links.py)."""
        ecmp = self.levels[level - 1].model == "ecmp"
        if level == 1:
            return ("port_up", "port_down") if ecmp else ("rack_up", "rack_down")
        prefix = self.levels[level - 1].name + ("_port" if ecmp else "")
        return f"{prefix}_up", f"{prefix}_down"

    @functools.cached_property
    def link_kinds(self) -> dict[str, tuple[int, bool]]:
        """Link kind of every level's uplinks -> (level, True for individual ECMP ports)."""
        out = {"rack_up": (1, False), "rack_down": (1, False), "port_up": (1, True), "port_down": (1, True)}
        for i, level in enumerate(self.levels[1:], start=2):
            for kind in self.uplink_kinds(i):
                out[kind] = (i, level.model == "ecmp")
        return out

    def with_racks(self, racks: int) -> "Topology":
        if racks < 1:
            raise ValueError(f"rack count must be >= 1, got {racks}")
        if racks * self.gpus_per_rack > MAX_GPUS:
            raise ValueError(f"{racks} racks of {self.gpus_per_rack} GPUs is {racks * self.gpus_per_rack} GPUs; "
                             f"at most {MAX_GPUS} are supported")
        hierarchy = self.hierarchy.with_racks(racks) if self.hierarchy else None
        topology = dataclasses.replace(self, racks=racks, hierarchy=hierarchy)
        topology.check_level_ports()
        return topology

    def check_reference_gpu(self, reference_gpus) -> None:
        """Refuse a GPU type whose speed the file does not declare unless it is the model profiles'
        reference GPU: a `gpu_type: V100` alone would otherwise run at the A100 profiles' speed."""
        for name in dict.fromkeys(self.rack_gpu_types):
            gpu = self.gpu_types[name]
            if gpu.declared:
                continue
            others = sorted(r for r in set(reference_gpus) if not _same_gpu(name, r))
            if others:
                raise InputError(self.path or self.name, "field 'gpu_type'",
                                 f"GPU type {name!r} has no declared speed, and the model profiles' compute times are "
                                 f"for {', '.join(others)}: declare it under gpu_types with relative_speed and its "
                                 f"source (see topologies/hetero-a100-v100.yaml)")

    def link_parameters(self) -> dict:
        """Everything about the links that can change a latency (cache-key material). The spine
        model is listed only when it is not the bundle, so that bundle topologies keep their keys."""
        params = {
            "gpus_per_machine": self.gpus_per_machine,
            "machines_per_rack": self.machines_per_rack,
            "oversubscription": self.oversubscription,
            **{
                f"{t.name}.{k}": v
                for t in (self.machine, self.rack, self.spine)
                for k, v in (("bps", t.bandwidth_bps), ("link_s", t.link_latency_s), ("switch_s", t.switch_latency_s))
            },
        }
        if self.spine_model != "bundle":
            params["spine.model"] = self.spine_model
        if self.rails:
            params["rack.wiring"] = self.rack_wiring
        if self.nics != self.gpus_per_machine or self.nic_map != tuple(range(self.gpus_per_machine)):
            params["rack.nics_per_machine"] = self.nics
            params["rack.nic_of_gpu"] = list(self.nic_map)
        if self.hierarchy:
            params["spine.hierarchy"] = self.hierarchy.parameters()
        return params

    # ---- loading -----------------------------------------------------------
    @classmethod
    def from_yaml(cls, path: str | Path, racks: int | None = None) -> "Topology":
        path = Path(path)
        topo = cls.from_mapping(load_yaml_mapping(path), str(path))
        return topo.with_racks(racks) if racks is not None else topo

    @classmethod
    def from_mapping(cls, data: dict, source: str = "<topology>") -> "Topology":
        f = Fields(data, source)
        f.unknown_keys({
            "name", "source", "racks", "machines_per_rack", "gpus_per_machine", "gpu_type",
            "rack_gpu_types", "gpu_types", "tiers", "oversubscription", "notes", "levels", "switches",
        })
        tiers_f = f.sub("tiers")
        tiers_f.unknown_keys(set(TIER_NAMES))
        tiers = {name: _tier(tiers_f.sub(name), name) for name in TIER_NAMES}

        gpu_types: dict[str, GpuType] = {}
        if f.has("gpu_types"):
            types_f = f.sub("gpu_types")
            for name in types_f.data:
                tf = types_f.sub(name)
                tf.unknown_keys({"relative_speed", "source"})
                gpu_types[str(name)] = GpuType(str(name), tf.number("relative_speed", minimum=MIN_RELATIVE_SPEED,
                                                                  maximum=MAX_RELATIVE_SPEED),
                                               tf.string("source", ""))
        if f.has("rack_gpu_types"):
            rack_types = f.raw("rack_gpu_types")
            if not isinstance(rack_types, list) or not rack_types or not all(isinstance(t, str) for t in rack_types):
                raise f.error("rack_gpu_types", "expected a non-empty list of GPU type names")
            rack_types = tuple(rack_types)
        else:
            rack_types = (f.string("gpu_type"),)
        for t in rack_types:
            if t not in gpu_types:
                if gpu_types:
                    raise f.error("rack_gpu_types" if f.has("rack_gpu_types") else "gpu_type",
                                  f"GPU type {t!r} is not declared under gpu_types")
                gpu_types[t] = GpuType(t, 1.0, "not declared: assumed to be the model profiles' reference GPU",
                                       declared=False)

        spine_f = tiers_f.sub("spine")
        oversub = f.number("oversubscription", 1.0, positive=True, maximum=MAX_OVERSUBSCRIPTION)
        if spine_f.has("oversubscription"):
            oversub = spine_f.number("oversubscription", positive=True, maximum=MAX_OVERSUBSCRIPTION)
        rack_f = tiers_f.sub("rack")
        wiring = rack_f.string("wiring", "switch")
        if wiring not in RACK_WIRINGS:
            raise rack_f.error("wiring", f"unknown rack wiring {wiring!r}; known: {', '.join(RACK_WIRINGS)}")
        spine_model = spine_f.string("model", "bundle")
        if spine_model not in SPINE_MODELS:
            raise spine_f.error("model", f"unknown spine model {spine_model!r}; known: {', '.join(SPINE_MODELS)}")

        machines_per_rack = f.integer("machines_per_rack", minimum=1, maximum=MAX_GPUS)
        hierarchy = _hierarchy(f, spine_f, source, machines_per_rack)
        racks = hierarchy.racks if hierarchy else f.integer("racks", minimum=1, maximum=MAX_GPUS)
        gpus_per_machine = f.integer("gpus_per_machine", minimum=1, maximum=MAX_GPUS)
        nics, nic_of_gpu = _nics(rack_f, gpus_per_machine)
        if racks * machines_per_rack * gpus_per_machine > MAX_GPUS:
            raise f.error("racks", f"{racks} x {machines_per_rack} x {gpus_per_machine} = "
                                   f"{racks * machines_per_rack * gpus_per_machine} GPUs; at most {MAX_GPUS} are "
                                   f"supported")
        topology = cls(
            name=f.string("name"),
            racks=racks,
            machines_per_rack=machines_per_rack,
            gpus_per_machine=gpus_per_machine,
            machine=tiers["machine"],
            rack=tiers["rack"],
            spine=tiers["spine"],
            oversubscription=oversub,
            spine_model=spine_model,
            rack_wiring=wiring,
            rack_gpu_types=rack_types,
            nics_per_machine=nics,
            nic_of_gpu=nic_of_gpu,
            gpu_types=gpu_types,
            source=f.string("source", ""),
            path=source,
            hierarchy=hierarchy,
        )
        if spine_model == "ecmp":
            try:
                topology.spine_ports
            except ValueError as exc:
                raise spine_f.error("oversubscription" if spine_f.has("oversubscription") else "bandwidth_gbps",
                                    str(exc)) from None
        if hierarchy:
            try:
                topology = topology.with_racks(racks)  # the racks in use: whole blocks, ecmp ports per level
            except ValueError as exc:
                raise f.error("racks" if "whole blocks" in str(exc) or "lists" in str(exc) else "levels",
                              str(exc)) from None
        return topology

    def with_spine_model(self, model: str) -> "Topology":
        """The same cluster with another spine model (comparisons: bundle vs ecmp)."""
        if model not in SPINE_MODELS:
            raise ValueError(f"unknown spine model {model!r}; known: {', '.join(SPINE_MODELS)}")
        topology = dataclasses.replace(self, spine_model=model)
        if model == "ecmp":
            topology.spine_ports  # raises ValueError when the port count is not whole
        return topology


def _same_gpu(topology_name: str, reference: str) -> bool:
    """'A100' names the reference 'A100-SXM4-80GB' (a topology names the family, a profile the part)."""
    a, b = topology_name.lower(), reference.lower()
    return a == b or b.startswith(a + "-") or b.startswith(a + " ")


def _tier(f: Fields, name: str) -> Tier:
    # Only the spine has an oversubscription; a field that changes no answer is refused, not ignored.
    f.unknown_keys({"bandwidth_gbps", "link_latency_us", "switch_latency_us", "source", "notes"}
                   | ({"oversubscription", "model", "group"} if name == "spine" else set())
                   | ({"wiring", "nics_per_machine", "nic_of_gpu"} if name == "rack" else set()))
    bps, link_s, switch_s, source = _tier_figures(f)
    return Tier(name=name, bandwidth_bps=bps, link_latency_s=link_s, switch_latency_s=switch_s, source=source)


def _hierarchy(f: Fields, spine_f: Fields, source: str, machines_per_rack: int) -> Hierarchy | None:
    """The `levels` above the spine and their membership (`group` fields or a `switches` CSV), or None."""
    if not f.has("levels"):
        if spine_f.has("group"):
            raise spine_f.error("group", "only with levels above the spine (field 'levels'): the spine alone is "
                                         "the top and joins every rack")
        if not f.has("switches"):
            return None
    raw = f.raw("levels", [])
    if not isinstance(raw, list) or len(raw) >= MAX_LEVELS or (f.has("levels") and not raw):
        raise f.error("levels", f"expected a list of 1 to {MAX_LEVELS - 1} levels above the spine, bottom-up")
    explicit = f.has("switches")
    levels, groups, taken = [], [], set()
    if not explicit:
        groups.append(spine_f.integer("group", minimum=1, maximum=MAX_GPUS))
    elif spine_f.has("group"):
        raise spine_f.error("group", "not with an explicit membership file (field 'switches')")
    for i, entry in enumerate(raw):
        lf = Fields(entry, source, f"levels[{i}].")
        lf.unknown_keys({"name", "bandwidth_gbps", "link_latency_us", "switch_latency_us", "oversubscription",
                         "model", "group", "source", "notes"})
        name = lf.string("name")
        check_level_name(lf, "name", name, taken)
        tier = _tier_figures(lf)
        levels.append(level_from_fields(lf, name, tier))
        top = i == len(raw) - 1
        if lf.has("group") and (top or explicit):
            raise lf.error("group", "the top level joins everything" if top else
                                    "not with an explicit membership file (field 'switches')")
        if not top and not explicit:
            groups.append(lf.integer("group", minimum=1, maximum=MAX_GPUS))
    if not explicit:
        racks = f.integer("racks", minimum=1, maximum=MAX_GPUS)
        try:
            check_whole_blocks(racks, tuple(groups))
        except ValueError as exc:
            raise f.error("racks", str(exc)) from None
        return Hierarchy(tuple(levels), racks, groups=tuple(groups))
    rel = f.string("switches")
    path = Path(source).parent / rel
    parents, names = read_membership(path, ("spine",) + tuple(level.name for level in levels), machines_per_rack)
    listed = len(names[0])
    racks = f.integer("racks", listed, minimum=1, maximum=listed)
    return Hierarchy(tuple(levels), racks, members=parents, names=names, source=str(path))


def _tier_figures(f: Fields) -> tuple[float, float, float, str]:
    """(bandwidth bps, link latency s, switch latency s, source) of a tier or level."""
    if not f.has("source"):
        raise f.error("source", "every tier must say where its figures come from")
    return (f.number("bandwidth_gbps", minimum=MIN_BANDWIDTH_GBPS, maximum=MAX_BANDWIDTH_GBPS) * 1e9,
            f.number("link_latency_us", minimum=0.0, maximum=MAX_LATENCY_US) * 1e-6,
            f.number("switch_latency_us", minimum=0.0, maximum=MAX_LATENCY_US) * 1e-6, f.string("source"))


def _nics(f: Fields, gpus_per_machine: int) -> tuple[int, tuple[int, ...]]:
    """(nics_per_machine, nic_of_gpu) of the rack tier: (0, ()) for the default, one NIC per GPU.
    A NIC no GPU uses would change no answer, so it is refused."""
    nics = f.integer("nics_per_machine", gpus_per_machine, minimum=1, maximum=gpus_per_machine)
    if not f.has("nic_of_gpu"):
        return (0 if nics == gpus_per_machine else nics), ()
    raw = f.raw("nic_of_gpu")
    if (not isinstance(raw, list) or len(raw) != gpus_per_machine
            or not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n < nics for n in raw)):
        raise f.error("nic_of_gpu", f"expected a list of {gpus_per_machine} NIC indices (one per GPU of a machine), "
                                    f"each an integer in 0..{nics - 1}")
    unused = sorted(set(range(nics)) - set(raw))
    if unused:
        raise f.error("nic_of_gpu", f"NIC(s) {unused} serve no GPU: lower nics_per_machine or attach a GPU to them")
    return nics, tuple(raw)


def load_topology(path: str | Path, racks: int | None = None) -> Topology:
    return Topology.from_yaml(path, racks)
