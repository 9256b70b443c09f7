"""A cluster of several machine types for the elastic loop (Sia, Jayaram Subramanya et al. SOSP'23).

A cluster is a list of pools, one per machine type: the GPU type (the key of the measured compute
tables, artist/elastic/applications.py: t4, rtx, a100, quad), and an ordinary ArtISt Topology for that
type's machines (its own GPUs per machine, intra-machine link and NIC). The elastic loop sees nodes:
every machine of every pool, pool by pool, in file order, optionally split into virtual nodes (Sia's
artifact presents 8-GPU machines to Pollux as two 4-GPU nodes). Node i has a GPU type, a capacity and a
physical machine.

    ElasticCluster.nodes          -> [NodeInfo(pool, machine, gpus), ...]
    ElasticCluster.capacity       -> GPUs per node (what every Allocator receives)
    ElasticCluster.node_types     -> GPU type per node
    PooledStepTimer               -> the StepTimer of artist/elastic/jobs.py over all pools

Timing (PooledStepTimer): a job's iteration is the measured compute of its GPU type plus ArtISt's DDP
step on the job's real placement in its pool (which machines in which racks; symmetric placements share a
memo entry). Pools do not share links: a job never spans pools under Sia, and every job is timed alone as
the one-type loop already does (Sia's configurations keep distributed jobs off each other's NICs); the
opt-in shared mode (artist/elastic/contention.py) times jobs meeting on a pool's spine together instead. A
mixed-type allocation (only a heterogeneity-unaware policy makes one: Pollux) is timed as Sia's artifact
does, collapsed to its dominant type (artist/elastic/jobs.py): that type's compute, and its GPUs on
the other pools' machines laid out as extra machines of the dominant pool (a stated approximation).

A cluster file (topologies/clusters/, e.g. sia-hetero-64.yaml) has `name`, `source` and
`pools: [{gpu_type, topology, memory_gib}]` where topology is a mapping in the topology-file schema or the
name of a shipped topology file, and memory_gib (optional) the memory per GPU (Crius' clusters state it:
its Cells check stage memory against it; a modelled compute table caps its local batch by it). A plain
topology file is a one-pool cluster of the GPU type the caller gives, else a pool per GPU type of its racks.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from artist.elastic.measured import MeasuredApplication
from artist.elastic.steptime import rack_lists
from artist.network.analytical import AnalyticalModel
from artist.network.base import FabricModel
from artist.network.provenance import AnswerCounts
from artist.parallel.ddp import ddp_step
from artist.placement import placement_from_shape
from artist.shipped import CLUSTERS_DIR as CLUSTERS_DIR  # (re-exported: cluster files, beside topologies/)
from artist.shipped import TOPOLOGIES_DIR
from artist.topology import Topology
from artist.workload import ModelProfile
from artist.yamlio import Fields, load_yaml_mapping

MAX_POOLS = 64  # far above any cluster of the papers (Sia's widest has 6 types); bounds a bad file
MIN_MEMORY_GIB, MAX_MEMORY_GIB = 1.0, 4096.0  # memory per GPU a cluster file may state (bounds of a bad file)


@dataclass(frozen=True)
class Pool:
    gpu_type: str          # key of the compute tables (measured, or modelled: applications.with_modelled_types)
    topology: Topology     # this machine type's machines, links and NICs
    memory_gib: float | None = None  # memory per GPU where the cluster file states it (Crius' clusters)
    topology_file: Path | None = None  # the shipped topology file it names, if any (Crius' runs hash it)


@dataclass(frozen=True)
class NodeInfo:
    pool: int      # index into ElasticCluster.pools
    machine: int   # machine index within the pool's topology
    gpus: int


@dataclass(frozen=True)
class ElasticCluster:
    name: str
    pools: tuple[Pool, ...]
    nodes: tuple[NodeInfo, ...]
    source: str = ""

    @classmethod
    def of(cls, name: str, pools: Sequence[Pool], virtual_node_gpus: int | None = None,
           source: str = "") -> "ElasticCluster":
        """Every machine of every pool as a node; with virtual_node_gpus, a machine of more GPUs is split
        into nodes of that many (Sia's artifact: Pollux sees 8-GPU machines as two 4-GPU nodes)."""
        if not pools:
            raise ValueError("a cluster needs at least one pool")
        types = [p.gpu_type for p in pools]
        if len(set(types)) != len(types):
            raise ValueError(f"GPU types must differ between pools, got {types}")
        nodes = []
        for i, pool in enumerate(pools):
            per = pool.topology.gpus_per_machine
            split = per if virtual_node_gpus is None else virtual_node_gpus
            if split < 1 or per % split and split < per:
                raise ValueError(f"virtual nodes of {split} GPUs do not divide machines of {per}")
            chunks = [per] if split >= per else [split] * (per // split)
            for m in range(pool.topology.machines):
                nodes.extend(NodeInfo(i, m, c) for c in chunks)
        return cls(name, tuple(pools), tuple(nodes), source)

    def virtual(self, gpus: int) -> "ElasticCluster":
        return ElasticCluster.of(self.name, self.pools, gpus, self.source)

    @property
    def capacity(self) -> list[int]:
        return [n.gpus for n in self.nodes]

    @property
    def node_types(self) -> list[str]:
        return [self.pools[n.pool].gpu_type for n in self.nodes]

    @property
    def gpu_types(self) -> list[str]:
        return [p.gpu_type for p in self.pools]

    @property
    def gpus(self) -> int:
        return sum(self.capacity)

    def layout(self) -> "NodeLayout":
        """The cluster's nodes on one Topology of the exact event loop (NodeLayout)."""
        return NodeLayout.of(self)

    def pool_of(self, gpu_type: str) -> int:
        for i, p in enumerate(self.pools):
            if p.gpu_type == gpu_type:
                return i
        raise KeyError(f"cluster {self.name!r} has no GPU type {gpu_type!r} (types: {', '.join(self.gpu_types)})")


@dataclass(frozen=True)
class NodeLayout:
    """Where the nodes of an ElasticCluster sit on the one Topology the exact event loop keeps its GPU map
    on. One pool of whole machines is its own topology, node i machine i. Otherwise the pools' racks are laid
    side by side (pool by pool) on a topology of the largest machine shape: a smaller machine's GPUs are the
    first of its slot, a smaller rack's machines the first of its rack, and the GPUs of no node (`absent`)
    are never free; a machine split into virtual nodes gives each node consecutive GPUs. The loop only keeps
    its GPU map on that topology: an elastic job's time is its pool's (PooledStepTimer, NetworkStepTimer)."""
    topology: Topology
    node_gpus: tuple[tuple[int, ...], ...]  # GPU ids of every node

    @classmethod
    def of(cls, cluster: "ElasticCluster") -> "NodeLayout":
        pools = cluster.pools
        one = len(pools) == 1 and all(n.gpus == pools[0].topology.gpus_per_machine for n in cluster.nodes)
        if one:
            topo = pools[0].topology
        else:
            gpm = max(p.topology.gpus_per_machine for p in pools)
            mpr = max(p.topology.machines_per_rack for p in pools)
            rack_types = tuple(p.gpu_type for p in pools for _ in range(p.topology.racks))
            topo = dataclasses.replace(pools[0].topology, name=f"{cluster.name} (GPU map)", racks=len(rack_types),
                                       machines_per_rack=mpr, gpus_per_machine=gpm, rack_gpu_types=rack_types,
                                       gpu_types={}, spine_model="bundle", hierarchy=None, rack_wiring="switch",
                                       nics_per_machine=0, nic_of_gpu=())
        first_rack = np.cumsum([0] + [p.topology.racks for p in pools])
        node_gpus, offset = [], {}  # (pool, machine) -> GPUs of it given to nodes so far
        for node in cluster.nodes:
            pool = pools[node.pool].topology
            rack, slot = divmod(node.machine, pool.machines_per_rack)
            machine = (int(first_rack[node.pool]) + rack) * topo.machines_per_rack + slot
            start = offset.get((node.pool, node.machine), 0)
            offset[(node.pool, node.machine)] = start + node.gpus
            base = machine * topo.gpus_per_machine + start
            node_gpus.append(tuple(range(base, base + node.gpus)))
        return cls(topo, tuple(node_gpus))

    @cached_property
    def node_of_gpu(self) -> np.ndarray:
        """The node of every GPU id of the topology; -1: in no node."""
        out = np.full(self.topology.gpus, -1, dtype=int)
        for node, gpus in enumerate(self.node_gpus):
            out[list(gpus)] = node
        return out

    @property
    def absent(self) -> tuple[int, ...]:
        return tuple(int(g) for g in np.flatnonzero(self.node_of_gpu < 0))

    @property
    def capacity(self) -> list[int]:
        return [len(g) for g in self.node_gpus]

    def free_gpus(self, free, node: int, count: int) -> list[int]:
        """Up to `count` of the node's GPUs that are free on `free` (a FreeMap of this GPU map), lowest first."""
        own = self.node_gpus[node]
        machine = free.topology.machine_of(own[0])
        return [g for g in free.free_by_machine[machine] if own[0] <= g <= own[-1]][:count]

    def per_node(self, gpus: Sequence[int]) -> np.ndarray:
        """GPUs per node of a set of GPU ids."""
        return np.bincount(self.node_of_gpu[list(gpus)], minlength=len(self.node_gpus))


def _pool_topology(value, where: Fields, key: str, name: str) -> tuple[Topology, Path | None]:
    """The pool's topology and the file it was read from (None: given inline)."""
    if isinstance(value, str):
        path = Path(value) if Path(value).is_file() else TOPOLOGIES_DIR / (value if value.endswith(".yaml")
                                                                          else value + ".yaml")
        if not path.is_file():
            raise where.error(key, f"no topology file {value!r}")
        return Topology.from_yaml(path), path
    if not isinstance(value, dict):
        raise where.error(key, "expected a topology mapping or the name of a topology file")
    return Topology.from_mapping({"name": name, **value}, where.source), None


def pools_of_topology(topology: Topology, path: Path | None = None) -> list[Pool]:
    """A topology file as pools, one per GPU type of its racks (rack_gpu_types cycled over racks), each the
    topology's shape with that type's racks only: a mixed topology (hetero-a100-v100) as a cluster file
    would give it. Its pools share no link here, as every cluster's (the elastic loop's approximation)."""
    types = [topology.rack_gpu_types[r % len(topology.rack_gpu_types)] for r in range(topology.racks)]
    pools = []
    for gpu_type in dict.fromkeys(types):
        pool = dataclasses.replace(topology.with_racks(types.count(gpu_type)), rack_gpu_types=(gpu_type,))
        pools.append(Pool(gpu_type, dataclasses.replace(pool, name=f"{topology.name}/{gpu_type}"), None, path))
    return pools


def load_cluster(path: str | Path, gpu_type: str | None = None) -> ElasticCluster:
    """A cluster file (pools), or a plain topology file as one pool of GPU type `gpu_type`."""
    path = Path(path)
    data = load_yaml_mapping(path)
    if "pools" not in data:  # a topology file: one pool of the type given, else a pool per type of its racks
        topo = Topology.from_mapping(data, str(path))
        pools = [Pool(gpu_type, topo, None, path)] if gpu_type else pools_of_topology(topo, path)
        return ElasticCluster.of(topo.name, pools, source=topo.source)
    f = Fields(data, str(path))
    f.unknown_keys({"name", "source", "pools", "notes"})
    name = f.string("name")
    raw = f.raw("pools")
    if not isinstance(raw, list) or not raw or len(raw) > MAX_POOLS:
        raise f.error("pools", f"expected a list of 1 to {MAX_POOLS} pools")
    pools = []
    for i, entry in enumerate(raw):
        pf = Fields(entry, str(path), f"pools.{i}.")
        pf.unknown_keys({"gpu_type", "topology", "memory_gib", "source", "notes"})
        t = pf.string("gpu_type")
        topology, file = _pool_topology(pf.raw("topology"), pf, "topology", f"{name}/{t}")
        memory = pf.number("memory_gib", minimum=MIN_MEMORY_GIB, maximum=MAX_MEMORY_GIB) if pf.has("memory_gib") \
            else None
        pools.append(Pool(t, topology, memory, file))
    try:
        return ElasticCluster.of(name, pools, source=f.string("source", ""))
    except ValueError as exc:
        raise f.error("pools", str(exc)) from None


class PooledStepTimer:
    """StepTimer (artist/elastic/jobs.py) over a multi-type cluster: measured compute of the job's
    GPU type + ArtISt's DDP step on its real placement in that type's pool (see the module docstring)."""

    def __init__(self, cluster: ElasticCluster, apps: Mapping[str, MeasuredApplication],
                 profiles: Mapping[str, ModelProfile], fabrics: Mapping[str, FabricModel] | None = None):
        missing = sorted(set(apps) - set(profiles))
        if missing:
            raise ValueError(f"no model profile for application(s) {', '.join(missing)}")
        for app in apps.values():
            absent = [t for t in cluster.gpu_types if t not in app.compute]
            if absent:
                raise ValueError(f"application {app.name} has no compute table for GPU type(s) {', '.join(absent)}")
        self.cluster, self.apps, self.profiles = cluster, apps, profiles
        self.fabrics = dict(fabrics or {})
        for p in cluster.pools:
            self.fabrics.setdefault(p.gpu_type, AnalyticalModel(p.topology))
        self._memo: dict = {}
        self.answers = AnswerCounts()  # which path answered each question it asked (network/provenance.py)

    def _shape(self, gpu_type: str, per_node: Sequence[int]) -> tuple[Topology, tuple[tuple[int, ...], ...]]:
        """The job's racks of per-machine GPU counts in the pool of gpu_type (canonical: sorted)."""
        pool_index = self.cluster.pool_of(gpu_type)
        topo = self.cluster.pools[pool_index].topology
        if len(per_node) != len(self.cluster.nodes):
            # a short list: GPUs per machine of the type's pool, from its first machine (as NetworkStepTimer)
            if len(per_node) > topo.machines or any(c > topo.gpus_per_machine for c in per_node):
                raise ValueError(f"{list(per_node)}: neither an allocation over the cluster's "
                                 f"{len(self.cluster.nodes)} nodes nor GPUs per machine of the {gpu_type} pool")
            pool_nodes = [i for i, n in enumerate(self.cluster.nodes) if n.pool == pool_index]
            first = {self.cluster.nodes[i].machine: i for i in reversed(pool_nodes)}
            full = [0] * len(self.cluster.nodes)
            for machine, count in enumerate(per_node):
                full[first[machine]] = int(count)
            per_node = full
        machines: dict[int, int] = {}
        foreign: list[int] = []
        for node, count in zip(self.cluster.nodes, per_node):
            if count <= 0:
                continue
            if node.pool == pool_index:
                machines[node.machine] = machines.get(node.machine, 0) + int(count)
            else:
                foreign.append(int(count))
        shape = rack_lists(topo, machines)
        if foreign:  # collapsed mixed-type allocation: the other GPUs as extra machines of this type
            per = topo.gpus_per_machine
            extra = []
            for c in foreign:
                extra += [per] * (c // per) + ([c % per] if c % per else [])
            for i in range(0, len(extra), topo.machines_per_rack):
                shape.append(sorted(extra[i:i + topo.machines_per_rack], reverse=True))
        return topo, tuple(sorted((tuple(r) for r in shape), reverse=True))

    def seconds(self, app: str, gpu_type: str, per_node: Sequence[int], local_batch: int, accum_steps: int
                ) -> tuple[float, float]:
        """(iteration seconds, one pass's compute seconds) of `app` on GPUs per node `per_node`."""
        compute = float(self.apps[app].compute[gpu_type](local_batch))
        topo, shape = self._shape(gpu_type, per_node)
        if not shape:
            raise ValueError("an iteration needs at least one GPU")
        key = (app, gpu_type, shape, local_batch)
        step = self._memo.get(key)
        if step is None:
            if shape == ((1,),):
                step = compute  # one GPU: nothing to synchronise
            else:
                if len(shape) > topo.racks:
                    topo = topo.with_racks(len(shape))
                fabric = self.fabrics[gpu_type] if topo.racks == self.cluster.pools[
                    self.cluster.pool_of(gpu_type)].topology.racks else AnalyticalModel(topo)
                graph = ddp_step(self.profiles[app], placement_from_shape(topo, shape), compute)
                timing = fabric.time({"job": graph})["job"]
                self.answers.record(timing.result)
                step = max(timing.step_seconds, compute)
            self._memo[key] = step
        return accum_steps * compute + step, compute
