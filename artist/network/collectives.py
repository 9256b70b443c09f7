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
from typing import Sequence

from artist.parallel.graph import COMMUNICATION
from artist.placement import Placement
from artist.topology import Topology

ALGORITHMS = ("ring", "hierarchical")


@dataclass(frozen=True)
class Transfer:
    src: int  # rank index
    dst: int  # rank index
    nbytes: int
    step: int
    channel: int
    deps: tuple[int, ...] = ()  # indices into Schedule.transfers


@dataclass(frozen=True)
class Schedule:
    algorithm: str
    ranks: tuple[int, ...]  # global GPU id of each rank
    nbytes: int  # payload per rank (nccl-tests' "size")
    channels: int
    transfers: tuple[Transfer, ...]
    total_steps: int = 0  # > steps when this is only the first steps of the collective (a prefix)

    @property
    def steps(self) -> int:
        """Steps built (of a prefix: only those)."""
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
                    phases: str = "rs+ag", max_steps: int | None = None) -> list[tuple[int, int, int, int, int]]:
    """(src, dst, nbytes, step, channel) of a ring reduce-scatter and/or all-gather, only the
    steps before max_steps when given.

    At reduce-scatter step k, ring position p sends chunk (p - k) mod n; at
    all-gather step k it sends chunk (p + 1 - k) mod n (the chunk it finished)."""
    n = len(ring)
    out = []
    if n < 2:
        return out
    step = first_step
    stop = float("inf") if max_steps is None else max_steps
    if "rs" in phases:
        for k in range(n - 1):
            if step >= stop:
                return out
            for p in range(n):
                out.append((ring[p], ring[(p + 1) % n], chunk_sizes[(p - k) % n], step, channel))
            step += 1
    if "ag" in phases:
        for k in range(n - 1):
            if step >= stop:
                return out
            for p in range(n):
                out.append((ring[p], ring[(p + 1) % n], chunk_sizes[(p + 1 - k) % n], step, channel))
            step += 1
    return out


def _with_dependencies(raw: list[tuple[int, int, int, int, int]], dependencies: bool = True) -> tuple[Transfer, ...]:
    """Each transfer depends on what its sender received in the latest earlier step
    in which it received anything, within the same channel."""
    raw = sorted(raw, key=lambda t: (t[3], t[4], t[0], t[1]))
    if not dependencies:
        return tuple(Transfer(*t) for t in raw)
    received: dict[tuple[int, int], tuple[int, list[int]]] = {}  # (rank, channel) -> (step, indices)
    out: list[Transfer] = []
    pending: list[tuple[int, int, int]] = []  # (rank, channel, index) for the current step
    current_step = None
    for idx, (src, dst, nbytes, step, channel) in enumerate(raw):
        if step != current_step:
            for rank, ch, i in pending:
                prev = received.get((rank, ch))
                if prev is not None and prev[0] == current_step:
                    prev[1].append(i)
                else:
                    received[(rank, ch)] = (current_step, [i])
            pending = []
            current_step = step
        deps = tuple(received[(src, channel)][1]) if (src, channel) in received else ()
        out.append(Transfer(src, dst, nbytes, step, channel, deps))
        pending.append((dst, channel, idx))
    return tuple(out)


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
            raw.extend(_ring_transfers(ring, split_bytes(per_channel[c], n), 0, c, max_steps=max_steps))
    total = 2 * (n - 1) if n > 1 else 0
    return Schedule("ring", tuple(order), int(nbytes), channels, _with_dependencies(raw, dependencies), total)


def ring_pass(kind: str, placement: Placement, nbytes: int, channels: int = 1, dependencies: bool = True) -> Schedule:
    """All-gather or reduce-scatter: one pass round the ring, n-1 steps of a chunk of nbytes / n."""
    order = placement.ranks_in_ring_order()
    rank_of = {g: i for i, g in enumerate(order)}
    raw = []
    if len(order) > 1:
        for c, channel_bytes in enumerate(split_bytes(nbytes, channels)):
            ring = channel_ring(placement, rank_of, c)
            raw.extend(_ring_transfers(ring, split_bytes(channel_bytes, len(order)), 0, c, "rs"))
    return Schedule(kind, tuple(order), int(nbytes), channels, _with_dependencies(raw, dependencies))


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
                raw.extend(_ring_transfers(ring, shards, 0, c, "rs"))
            for local in range(g):
                ring = [rank_of[gs[local]] for gs in machines]
                # After the intra-machine reduce-scatter, local rank `local` owns shard (local + 1) mod g.
                owned = shards[(local + 1) % g]
                raw.extend(_ring_transfers(ring, split_bytes(owned, m_count), intra_steps, c))
            inter_steps = 2 * (m_count - 1)
            for gs in machines:
                ring = [rank_of[x] for x in gs]
                raw.extend(_ring_transfers(ring, shards, intra_steps + inter_steps, c, "ag"))
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
    raise ValueError(f"unknown all-reduce algorithm {algorithm!r}; known: {', '.join(ALGORITHMS)}")
