"""Collectives as dependency graphs of point-to-point transfers.

A Schedule is a list of Transfers between ranks (rank i is GPU ranks[i]).
Transfers are grouped in lock-step steps; a transfer's ``deps`` are the
transfers its sender must have fully received before it may start (in a ring,
rank r forwards at step k the chunk it received at step k-1). The analytical
backend times the steps; the ns-3 engine executes the dependency graph packet by
packet. Both read the same Schedule, so they model the same algorithm.

Algorithms:
- ``ring``: NCCL-style ring all-reduce (reduce-scatter then all-gather,
  2(N-1) steps of S/N bytes) over the ranks grouped by rack and machine, so the
  ring leaves a machine once. With C channels the payload is split in C parallel
  rings; channel c rotates each machine's GPUs by c so that different GPUs (and
  NICs) carry each channel's inter-machine hop, as NCCL's channels do.
- ``hierarchical``: reduce-scatter inside each machine, a ring all-reduce among
  the GPUs with the same local index across machines, all-gather inside each
  machine (needs the same GPU count on every machine).
- ``tree``: NCCL's Tree: a double binary tree of machines with a chain of GPUs in
  each, the payload pipelined up (reduce) and down (broadcast) in 512 KiB chunks
  (artist/network/tree.py).

The other collectives (payload conventions as nccl-tests' "size", see
artist/parallel/graph.py) use the all-reduce's ring of rings and channels:
- ``all_gather`` / ``reduce_scatter``: one ring pass, n-1 steps of nbytes / n
  (NCCL runs both as rings whatever the all-reduce algorithm);
- ``all_to_all``: every rank sends nbytes / n to every other rank at once, one
  step (NCCL's grouped send/recv to all peers);
- ``send_recv``: nbytes from the group's first GPU to its second, one step.
Each channel carries an equal share of the payload.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from collections.abc import Sequence

import numpy as np

from artist.parallel.graph import COMMUNICATION
from artist.placement import Placement
from artist.topology import Topology

ALGORITHMS = ("ring", "hierarchical", "tree")
# NCCL's own choice per size (tree, NVLS, ring, ... with their protocols), from its tuner's cost model:
# an algorithm setting of the analytical backend only (artist/network/analytical.py), no schedule here
NCCL_CHOICE = "nccl"
ALGORITHM_CHOICES = ALGORITHMS + (NCCL_CHOICE,)


def algorithm_refusal(backend: str, algorithm: str) -> str | None:
    """Why this backend cannot run this algorithm setting (None: it can)."""
    if algorithm == NCCL_CHOICE and backend not in ("analytical", "none"):
        return (f"algorithm {NCCL_CHOICE} (NCCL's own choice of algorithm and protocol) is the analytical backend's; "
                f"{backend} executes {' or '.join(ALGORITHMS)} schedules")
    if algorithm not in ALGORITHM_CHOICES:
        return f"unknown algorithm {algorithm!r}; known: {', '.join(ALGORITHM_CHOICES)}"
    return None


@dataclass(frozen=True)
class Transfer:
    src: int  # rank index
    dst: int  # rank index
    nbytes: int
    step: int
    channel: int
    deps: tuple[int, ...] = ()  # indices into Schedule.transfers


class TransferTable(Sequence):
    """A schedule's transfers as numpy columns (deps as offsets into one index array), read as a
    sequence of Transfer: a 1 024-GPU ring all-reduce has millions of transfers, and the ns-3 builder
    and fast path read the columns without ever making a Transfer object of them. Transfer objects
    are made (once, then kept) only for code that iterates."""

    def __init__(self, src, dst, nbytes, step, channel, dep_off, dep_idx):
        self.src, self.dst, self.nbytes, self.step, self.channel = src, dst, nbytes, step, channel
        self.dep_off, self.dep_idx = dep_off, dep_idx  # deps of transfer i: dep_idx[dep_off[i]:dep_off[i + 1]]

    @classmethod
    def of(cls, transfers: Sequence[Transfer]) -> "TransferTable":
        col = lambda f: np.fromiter((f(t) for t in transfers), dtype=np.int64, count=len(transfers))  # noqa: E731
        dep_idx = np.fromiter((d for t in transfers for d in t.deps), dtype=np.int64)
        dep_off = np.zeros(len(transfers) + 1, dtype=np.int64)
        dep_off[1:] = np.cumsum(col(lambda t: len(t.deps)))
        return cls(col(lambda t: t.src), col(lambda t: t.dst), col(lambda t: t.nbytes), col(lambda t: t.step),
                   col(lambda t: t.channel), dep_off, dep_idx)

    def __len__(self) -> int:
        return len(self.src)

    @cached_property
    def _objects(self) -> tuple[Transfer, ...]:
        off, idx = self.dep_off.tolist(), self.dep_idx.tolist()
        return tuple(Transfer(s, d, b, k, c, tuple(idx[off[i]:off[i + 1]])) for i, (s, d, b, k, c) in
                     enumerate(zip(self.src.tolist(), self.dst.tolist(), self.nbytes.tolist(), self.step.tolist(),
                                   self.channel.tolist())))

    def __getitem__(self, i):
        return self._objects[i]

    def __iter__(self):
        return iter(self._objects)

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and len(self) == len(other) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(self._objects)

    def __repr__(self) -> str:
        return f"TransferTable({len(self)} transfers)"


@dataclass(frozen=True)
class Schedule:
    algorithm: str
    ranks: tuple[int, ...]  # global GPU id of each rank
    nbytes: int  # payload per rank (nccl-tests' "size")
    channels: int
    transfers: Sequence[Transfer]  # a tuple of Transfer, or a TransferTable (the same, as columns)
    total_steps: int = 0  # > steps when this is only the first steps of the collective (a prefix)

    @property
    def table(self) -> TransferTable:
        """The transfers as numpy columns."""
        t = self.transfers
        return t if isinstance(t, TransferTable) else TransferTable.of(t)

    @property
    def steps(self) -> int:
        """Steps built (of a prefix: only those)."""
        if isinstance(self.transfers, TransferTable):
            return 1 + int(self.transfers.step.max(initial=-1))
        return 1 + max((t.step for t in self.transfers), default=-1)

    @property
    def is_prefix(self) -> bool:
        return self.total_steps > self.steps

    def by_step(self) -> list[list[Transfer]]:
        out: list[list[Transfer]] = [[] for _ in range(self.steps)]
        for t in self.transfers:
            out[t.step].append(t)
        return out

    def bytes_sent_per_rank(self) -> list[int]:
        sent = [0] * len(self.ranks)
        for t in self.transfers:
            sent[t.src] += t.nbytes
        return sent

    def bytes_received_per_rank(self) -> list[int]:
        received = [0] * len(self.ranks)
        for t in self.transfers:
            received[t.dst] += t.nbytes
        return received


def split_bytes(nbytes: int, parts: int) -> list[int]:
    """Split nbytes into `parts` integer pieces differing by at most one byte."""
    base, extra = divmod(int(nbytes), parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def _ring_transfers(ring: Sequence[int], chunk_sizes: Sequence[int], first_step: int, channel: int,
                    phases: str = "rs+ag", max_steps: int | None = None) -> np.ndarray:
    """Rows (src, dst, nbytes, step, channel) of a ring reduce-scatter and/or all-gather, only the
    steps before max_steps when given.

    At reduce-scatter step k, ring position p sends chunk (p - k) mod n; at
    all-gather step k it sends chunk (p + 1 - k) mod n (the chunk it finished)."""
    n = len(ring)
    if n < 2:
        return np.zeros((0, 5), dtype=np.int64)
    stop = first_step + 2 * n if max_steps is None else max_steps
    ring_a, chunks, p = np.asarray(ring, dtype=np.int64), np.asarray(chunk_sizes, dtype=np.int64), np.arange(n)
    blocks, step = [], first_step
    for phase, shift in (("rs", 0), ("ag", 1)):
        if phase not in phases:
            continue
        k = np.arange(max(0, min(n - 1, stop - step)))
        block = np.empty((len(k), n, 5), dtype=np.int64)
        block[:, :, 0] = ring_a
        block[:, :, 1] = np.roll(ring_a, -1)
        block[:, :, 2] = chunks[(p[None, :] + shift - k[:, None]) % n]
        block[:, :, 3] = (step + k)[:, None]
        block[:, :, 4] = channel
        blocks.append(block.reshape(-1, 5))
        if len(k) < n - 1:
            break  # stopped at max_steps
        step += n - 1
    return np.concatenate(blocks) if blocks else np.zeros((0, 5), dtype=np.int64)


def _rows(raw) -> np.ndarray:
    """Rows (src, dst, nbytes, step, channel) from a list of tuples and/or arrays of rows."""
    parts = [np.asarray(r, dtype=np.int64).reshape(-1, 5) for r in raw if not isinstance(r, tuple)]
    tuples = [r for r in raw if isinstance(r, tuple)]
    if tuples:
        parts.append(np.asarray(tuples, dtype=np.int64).reshape(-1, 5))
    return np.concatenate(parts) if parts else np.zeros((0, 5), dtype=np.int64)


def _with_dependencies(raw, dependencies: bool = True) -> TransferTable:
    """The transfers sorted by (step, channel, src, dst) (stable); each depends on what its sender
    received in the latest earlier step in which it received anything, within the same channel.

    raw: rows (src, dst, nbytes, step, channel), as tuples or arrays of rows (one kind per call)."""
    rows = _rows(raw)
    src, dst, nbytes, step, channel = (rows[:, i] for i in range(5))
    ranks = int(max(src.max(initial=0), dst.max(initial=0))) + 1
    chans, steps = int(channel.max(initial=0)) + 1, int(step.max(initial=0)) + 1
    key = ((step * chans + channel) * ranks + src) * ranks + dst
    if (key[1:] < key[:-1]).any():  # a ring on channel 0 comes in order already
        order = np.argsort(key, kind="stable")
        src, dst, nbytes, step, channel = src[order], dst[order], nbytes[order], step[order], channel[order]
    else:
        src, dst, nbytes, step, channel = src.copy(), dst.copy(), nbytes.copy(), step.copy(), channel.copy()
    del key
    count = len(src)
    if not dependencies or count == 0:
        return TransferTable(src, dst, nbytes, step, channel, np.zeros(count + 1, dtype=np.int64),
                             np.zeros(0, dtype=np.int64))
    # receives keyed (rank, channel, step), sorted (stable: a key's transfers in index order)
    received = (dst * chans + channel) * steps + step
    by_key = np.argsort(received, kind="stable")
    keys = received[by_key]
    sender = src * chans + channel
    last = np.searchsorted(keys, sender * steps + step, side="left") - 1  # latest receive at an earlier step
    found = last >= 0
    found[found] = keys[last[found]] // steps == sender[found]
    first = np.searchsorted(keys, keys[np.where(found, last, 0)], side="left")
    counts = np.where(found, last + 1 - first, 0)
    dep_off = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(counts, out=dep_off[1:])
    within = np.arange(dep_off[-1], dtype=np.int64) - np.repeat(dep_off[:-1], counts)
    dep_idx = by_key[np.repeat(first, counts) + within]
    return TransferTable(src, dst, nbytes, step, channel, dep_off, dep_idx.astype(np.int64))


def nic_interleaved(topology: Topology, local: Sequence[int]) -> list[int]:
    """A machine's GPUs in the order channels rotate through: each NIC's first GPU (NICs in order),
    then each NIC's second, ...; with a NIC per GPU (or one NIC) simply their order. Rotating this
    order by c makes consecutive channels enter and leave the machine by different NICs, so C channels
    spread over min(C, NICs) NICs, as NCCL puts one ring on each NIC."""
    if not topology.shared_nics:
        return list(local)
    seen: dict[int, int] = {}
    keyed = []
    for g in local:
        nic = topology.nic_index(g)
        seen[nic] = seen.get(nic, -1) + 1
        keyed.append((seen[nic], nic, g))
    return [g for _, _, g in sorted(keyed)]


def channel_ring(placement: Placement, rank_of: dict[int, int], channel: int) -> list[int]:
    """Ranks of channel c's ring: racks, machines in order; each machine's GPUs (nic_interleaved)
    rotated by c so that another GPU (and NIC) carries each channel's inter-machine hop, as NCCL's
    channels do. On rail-optimised racks the rotation keeps hops on one rail (rail_aligned_ring)."""
    if placement.topology.rails:
        return rail_aligned_ring(placement, rank_of, channel)
    ring_gpus = []
    for machines in placement.machines_by_rack.values():
        for m in machines:
            local = nic_interleaved(placement.topology, placement.gpus_by_machine[m])
            shift = channel % len(local)
            ring_gpus.extend(local[shift:] + local[:shift])
    return [rank_of[g] for g in ring_gpus]


def rail_aligned_ring(placement: Placement, rank_of: dict[int, int], channel: int) -> list[int]:
    """Channel c's ring on rail-optimised racks: the first machine's GPUs rotated by c, every next
    machine's rotated to start at a GPU on the rail (NIC index) the previous machine's last GPU has, so that
    every inter-machine hop stays on one rail (NCCL builds rings this way on rail-optimised fabrics);
    a machine without a GPU on that rail, and the hop closing the ring, may change rails (through the
    spine: NCCL's PXN detour over NVLink is not modelled)."""
    topology = placement.topology
    ring_gpus: list[int] = []
    for machines in placement.machines_by_rack.values():
        for m in machines:
            local = nic_interleaved(topology, placement.gpus_by_machine[m])
            rails = [topology.nic_index(g) for g in local]
            if ring_gpus and topology.nic_index(ring_gpus[-1]) in rails:
                shift = rails.index(topology.nic_index(ring_gpus[-1]))
            else:
                shift = channel % len(local)
            ring_gpus.extend(local[shift:] + local[:shift])
    return [rank_of[g] for g in ring_gpus]


def ring_allreduce(placement: Placement, nbytes: int, channels: int = 1, dependencies: bool = True,
                   max_steps: int | None = None) -> Schedule:
    """max_steps: build only the first steps (steady-state skipping simulates no more)."""
    order = placement.ranks_in_ring_order()
    rank_of = {g: i for i, g in enumerate(order)}
    n = len(order)
    raw = []
    if n > 1:
        per_channel = split_bytes(nbytes, channels)
        for c in range(channels):
            ring = channel_ring(placement, rank_of, c)
            raw.append(_ring_transfers(ring, split_bytes(per_channel[c], n), 0, c, max_steps=max_steps))
    total = 2 * (n - 1) if n > 1 else 0
    return Schedule("ring", tuple(order), int(nbytes), channels, _with_dependencies(raw, dependencies), total)


def ring_pass(kind: str, placement: Placement, nbytes: int, channels: int = 1, dependencies: bool = True,
              max_steps: int | None = None) -> Schedule:
    """All-gather or reduce-scatter: one pass round the ring, n-1 steps of a chunk of nbytes / n.
    max_steps: build only the first steps (steady-state skipping simulates no more)."""
    order = placement.ranks_in_ring_order()
    rank_of = {g: i for i, g in enumerate(order)}
    raw = []
    if len(order) > 1:
        for c, channel_bytes in enumerate(split_bytes(nbytes, channels)):
            ring = channel_ring(placement, rank_of, c)
            raw.append(_ring_transfers(ring, split_bytes(channel_bytes, len(order)), 0, c, "rs", max_steps=max_steps))
    total = len(order) - 1 if len(order) > 1 else 0
    return Schedule(kind, tuple(order), int(nbytes), channels, _with_dependencies(raw, dependencies), total)


def all_to_all(placement: Placement, nbytes: int, channels: int = 1) -> Schedule:
    """Every rank sends nbytes / n to every other rank, all at once (no dependencies)."""
    order = placement.ranks_in_ring_order()
    n = len(order)
    raw = []
    if n > 1:
        for c, channel_bytes in enumerate(split_bytes(nbytes, channels)):
            per_peer = split_bytes(channel_bytes, n)
            for src in range(n):
                for dst in range(n):
                    if src != dst:
                        raw.append((src, dst, per_peer[dst], 0, c))
    return Schedule("all_to_all", tuple(order), int(nbytes), channels, _with_dependencies(raw, False))


def send_recv(src: int, dst: int, nbytes: int, channels: int = 1) -> Schedule:
    """nbytes from GPU src to GPU dst, split over the channels (rank 0 = src, rank 1 = dst)."""
    raw = [(0, 1, b, 0, c) for c, b in enumerate(split_bytes(nbytes, channels))]
    return Schedule("send_recv", (src, dst), int(nbytes), channels, _with_dependencies(raw, False))


def hierarchical_allreduce(placement: Placement, nbytes: int, channels: int = 1, dependencies: bool = True) -> Schedule:
    order = placement.ranks_in_ring_order()
    rank_of = {g: i for i, g in enumerate(order)}
    machines = [placement.gpus_by_machine[m] for r in placement.machines_by_rack.values() for m in r]
    local = {len(gs) for gs in machines}
    if len(local) != 1:
        raise ValueError(
            f"hierarchical all-reduce needs the same GPU count on every machine; placement has "
            f"{sorted(len(gs) for gs in machines)} (use algorithm 'ring')")
    g = local.pop()
    m_count = len(machines)
    raw = []
    if len(order) > 1:
        for c, channel_bytes in enumerate(split_bytes(nbytes, channels)):
            shards = split_bytes(channel_bytes, g)  # shard l ends up owned by local rank l
            intra_steps = g - 1
            for gs in machines:
                ring = [rank_of[x] for x in gs]
                raw.append(_ring_transfers(ring, shards, 0, c, "rs"))
            for local in range(g):
                ring = [rank_of[gs[local]] for gs in machines]
                # After the intra-machine reduce-scatter, local rank `local` owns shard (local + 1) mod g.
                owned = shards[(local + 1) % g]
                raw.append(_ring_transfers(ring, split_bytes(owned, m_count), intra_steps, c))
            inter_steps = 2 * (m_count - 1)
            for gs in machines:
                ring = [rank_of[x] for x in gs]
                raw.append(_ring_transfers(ring, shards, intra_steps + inter_steps, c, "ag"))
    return Schedule("hierarchical", tuple(order), int(nbytes), channels, _with_dependencies(raw, dependencies))


def collective_schedule(kind: str, algorithm: str, group: Placement, nbytes: int, channels: int = 1,
                        dependencies: bool = True, src_dst: tuple[int, int] | None = None) -> Schedule:
    """The schedule of one collective of `kind` over `group` (send_recv: from src_dst[0] to src_dst[1])."""
    if channels < 1:
        raise ValueError(f"channels must be >= 1, got {channels}")
    if kind == "all_reduce":
        return allreduce_schedule(algorithm, group, nbytes, channels, dependencies)
    if kind in ("all_gather", "reduce_scatter"):
        return ring_pass(kind, group, nbytes, channels, dependencies)
    if kind == "all_to_all":
        return all_to_all(group, nbytes, channels)
    if kind == "send_recv":
        if src_dst is None:
            src_dst = tuple(group.gpus)
        if len(src_dst) != 2 or src_dst[0] == src_dst[1]:
            raise ValueError(f"send_recv needs two different GPUs, got {src_dst}")
        return send_recv(src_dst[0], src_dst[1], nbytes, channels)
    raise ValueError(f"unknown collective {kind!r}; known: {', '.join(COMMUNICATION)}")


def allreduce_schedule(algorithm: str, placement: Placement, nbytes: int, channels: int = 1,
                       dependencies: bool = True) -> Schedule:
    """The all-reduce of nbytes per rank on this placement. dependencies=False skips
    building the dependency lists (the analytical model times lock-step steps)."""
    if channels < 1:
        raise ValueError(f"channels must be >= 1, got {channels}")
    if algorithm == "ring":
        return ring_allreduce(placement, nbytes, channels, dependencies)
    if algorithm == "hierarchical":
        return hierarchical_allreduce(placement, nbytes, channels, dependencies)
    if algorithm == "tree":
        from artist.network.tree import tree_allreduce  # (tree.py builds on this module)

        return tree_allreduce(placement, nbytes, channels, dependencies)
    raise ValueError(f"unknown all-reduce algorithm {algorithm!r}; known: {', '.join(ALGORITHMS)}")
