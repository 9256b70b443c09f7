"""NCCL's Tree all-reduce as a schedule: a double binary tree of machines, a chain of GPUs inside each
machine, the payload pipelined through it in chunks (reduce up the tree, broadcast down).

How NCCL builds it (src/graph/trees.cc, connect.cc, enqueue.cc of NVIDIA/nccl v2.30; re-derived here):
- Machines, numbered 0..m-1 in ring order, form a binary tree in which rank 0 is the root with one child
  and each rank's parent and children follow from its lowest set bit (``node_btree``: the in-order tree
  of trees.cc's illustration). The second tree is that tree mirrored (m even) or shifted by one (m odd),
  so that a machine inside one tree is a leaf of the other (``node_dtree``); half the channels run on each.
- Inside a machine a channel's GPUs form a chain (the machine's GPUs in NIC order, rotated by the channel as
  rings are); the chain's first GPU talks to the parent machine. With two or more GPUs per machine NCCL's
  balanced pattern takes the first child machine on the chain's second GPU and the second child on its
  first, so two NICs share a machine's tree traffic; with one GPU everything is on it.
- Each channel's share of the payload moves in chunks of the protocol's step (Simple: 4 MiB buffer / 8
  steps = 512 KiB). A GPU sends chunk k up once it has chunk k from every child; the root, once it has
  chunk k from its children, sends it down, and every GPU forwards down what it receives. The chunks of one
  link follow each other on its connection (the flow and ns-3 engines send a connection's messages one
  after another), so a connection that is busy hides the next chunk's start-up latency, as NCCL's
  in-flight steps do.

Steps (for the analytical backend's lock-step timing): a GPU of height h (longest path to a leaf below it)
sends chunk k up at step k + h; one at depth d sends it down at step k + H + d (H the root's height).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from artist.network.collectives import Schedule, TransferTable, nic_interleaved, split_bytes
from artist.placement import Placement

TREE_CHUNK_BYTES = 512 * 1024  # NCCL's Simple-protocol step: 4 MiB buffer / NCCL_STEPS = 8 (enqueue.cc)


def node_btree(n: int, rank: int) -> tuple[int, tuple[int, ...], int]:
    """(parent, children, child type) of `rank` in NCCL's binary tree over n ranks rooted at 0 (parent -1
    for the root; child type 0 when rank is below its parent, 1 above)."""
    bit = 1
    while bit < n and not bit & rank:
        bit <<= 1
    if rank == 0:
        return -1, ((bit >> 1,) if n > 1 else ()), 0
    up = (rank ^ bit) | (bit << 1)
    if up >= n:
        up = rank ^ bit
    low = bit >> 1
    if low == 0:
        return up, (), 0 if rank < up else 1
    down1 = rank + low
    while down1 >= n:  # the largest child within bounds
        low >>= 1
        down1 = rank + low
    children = (rank - (bit >> 1),) + ((down1,) if low else ())
    return up, children, 0 if rank < up else 1


def node_dtree(n: int, rank: int, tree: int) -> tuple[int, tuple[int, ...], int]:
    """node_btree for tree 0; for tree 1 the mirrored tree (n even) or the tree shifted by one (n odd)."""
    if tree == 0:
        return node_btree(n, rank)
    if n % 2:
        up, children, kind = node_btree(n, (rank - 1) % n)
        return (-1 if up < 0 else (up + 1) % n), tuple((c + 1) % n for c in children), kind
    up, children, kind = node_btree(n, n - 1 - rank)
    return (-1 if up < 0 else n - 1 - up), tuple(n - 1 - c for c in children), kind


@dataclass(frozen=True)
class ChannelTree:
    """One channel's tree over the placement's ranks (indices into its ring order)."""

    parent: tuple[int, ...]  # rank -> parent rank, -1 for the root
    children: tuple[tuple[int, ...], ...]

    @cached_property
    def root(self) -> int:
        return self.parent.index(-1)

    @cached_property
    def height(self) -> tuple[int, ...]:
        """Longest path from each rank down to a leaf."""
        h = [0] * len(self.parent)
        for r in reversed(self.order):
            h[r] = 1 + max((h[c] for c in self.children[r]), default=-1)
        return tuple(h)

    @cached_property
    def depth(self) -> tuple[int, ...]:
        d = [0] * len(self.parent)
        for r in self.order:
            for c in self.children[r]:
                d[c] = d[r] + 1
        return tuple(d)

    @cached_property
    def order(self) -> tuple[int, ...]:
        """Ranks root first, each after its parent."""
        out, todo = [], [self.root]
        while todo:
            r = todo.pop()
            out.append(r)
            todo.extend(reversed(self.children[r]))
        return tuple(out)


def channel_trees(placement: Placement, channels: int) -> list[ChannelTree]:
    """Every channel's tree (module docstring): channels below half the count on tree 0, the rest on
    tree 1, each half rotating the machines' chains as channel_ring rotates rings."""
    order = placement.ranks_in_ring_order()
    rank_of = {g: i for i, g in enumerate(order)}
    machines = [nic_interleaved(placement.topology, placement.gpus_by_machine[m])
                for ms in placement.machines_by_rack.values() for m in ms]
    n_nodes, half = len(machines), (channels + 1) // 2
    trees = []
    for c in range(channels):
        tree, shift = (0, c) if c < half else (1, c - half)
        chains = []
        for local in machines:
            s = shift % len(local)
            chains.append([rank_of[g] for g in local[s:] + local[:s]])
        parent = [-1] * len(order)
        children: list[list[int]] = [[] for _ in order]
        for chain in chains:
            for a, b in zip(chain, chain[1:]):
                parent[b] = a
                children[a].append(b)
        for node, chain in enumerate(chains):
            up, _, kind = node_dtree(n_nodes, node, tree)
            if up < 0:
                continue
            above = chains[up]
            facing = above[1] if kind == 0 and len(above) > 1 else above[0]  # balanced pattern
            parent[chain[0]] = facing
            children[facing].append(chain[0])
        trees.append(ChannelTree(tuple(parent), tuple(tuple(c) for c in children)))
    return trees


def tree_chunks(channel_bytes: int, chunk_bytes: int = TREE_CHUNK_BYTES) -> int:
    """Chunks one channel's share moves in (at least one)."""
    return max(1, math.ceil(int(channel_bytes) / chunk_bytes))


def tree_rows(tree: ChannelTree, chunk_sizes, channel: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One channel's transfers: rows (src, dst, nbytes, step, channel), in the order up-phase chunk by chunk
    (children before parents), then down-phase chunk by chunk (parents before children), and their
    dependencies as row indices within this channel: per row a count, and the indices in row order.
    Every chunk repeats chunk 0's pattern shifted by k steps, so chunk 0's rows are tiled (numpy)."""
    root, height, depth, parent = tree.root, tree.height, tree.depth, tree.parent
    top = height[root]
    up = [r for r in reversed(tree.order) if r != root]  # children before parents
    at = {r: i for i, r in enumerate(up)}  # rank -> its up row in chunk 0
    up_deps = [[at[c] for c in tree.children[r]] for r in up]
    down, down_deps, down_from_up, into = [], [], [], {}
    for r in tree.order:  # parents before children; the root's chunk comes up, the others' from above
        ready = [at[c] for c in tree.children[r]] if r == root else [into[r]]
        for c in tree.children[r]:
            into[c] = len(down)
            down.append((r, c))
            down_deps.append(ready)
            down_from_up.append(r == root)
    width, chunks = len(up), len(chunk_sizes)
    k = np.arange(chunks, dtype=np.int64)
    sizes = np.asarray(chunk_sizes, dtype=np.int64)

    def block(src, dst, first_step):
        rows = np.empty((chunks, width, 5), dtype=np.int64)
        rows[:, :, 0], rows[:, :, 1] = src, dst
        rows[:, :, 2] = sizes[:, None]
        rows[:, :, 3] = np.asarray(first_step, dtype=np.int64)[None, :] + k[:, None]
        rows[:, :, 4] = channel
        return rows.reshape(-1, 5)

    rows = np.concatenate([
        block(up, [parent[r] for r in up], [height[r] for r in up]),
        block([a for a, _ in down], [b for _, b in down], [top + depth[a] for a, _ in down])])
    up_idx = np.asarray([i for d in up_deps for i in d], dtype=np.int64)
    down_idx = np.asarray([i for d in down_deps for i in d], dtype=np.int64)
    down_up = np.repeat(np.asarray(down_from_up, dtype=bool), [len(d) for d in down_deps])
    # chunk k's up rows start at k x width, its down rows at (chunks + k) x width
    up_all = (up_idx[None, :] + (k * width)[:, None]).ravel()
    down_all = (down_idx[None, :] + np.where(down_up[None, :], k[:, None] * width,
                                             (chunks + k[:, None]) * width)).ravel()
    counts = np.concatenate([np.tile([len(d) for d in up_deps], chunks),
                             np.tile([len(d) for d in down_deps], chunks)]).astype(np.int64)
    return rows, counts, np.concatenate([up_all, down_all]).astype(np.int64)


def tree_allreduce(placement: Placement, nbytes: int, channels: int = 1, dependencies: bool = True,
                   chunk_bytes: int = TREE_CHUNK_BYTES) -> Schedule:
    """NCCL's Tree all-reduce of nbytes per rank (module docstring), transfers sorted by (step, channel,
    src, dst) as the other schedules are."""
    order = placement.ranks_in_ring_order()
    blocks, count_blocks, dep_blocks, offset = [], [], [], 0
    if len(order) > 1:
        for c, (tree, share) in enumerate(zip(channel_trees(placement, channels), split_bytes(nbytes, channels))):
            rows, counts, deps = tree_rows(tree, split_bytes(share, tree_chunks(share, chunk_bytes)), c)
            blocks.append(rows)
            count_blocks.append(counts)
            dep_blocks.append(deps + offset)
            offset += len(rows)
    empty = np.zeros(0, dtype=np.int64)
    rows = np.concatenate(blocks) if blocks else np.zeros((0, 5), dtype=np.int64)
    counts = np.concatenate(count_blocks) if count_blocks else empty
    deps = np.concatenate(dep_blocks) if dep_blocks else empty
    src, dst, size, step, channel = (rows[:, i] for i in range(5))
    by = np.lexsort((dst, src, channel, step))  # (step, channel, src, dst), stable
    position = np.empty(len(by), dtype=np.int64)
    position[by] = np.arange(len(by))
    dep_off = np.zeros(len(by) + 1, dtype=np.int64)
    if dependencies:
        old_off = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=old_off[1:])
        new_counts = counts[by]
        np.cumsum(new_counts, out=dep_off[1:])
        # row i of the sorted table takes old row by[i]'s slice of deps, renumbered to sorted positions
        gather = np.repeat(old_off[:-1][by] - dep_off[:-1], new_counts) + np.arange(dep_off[-1], dtype=np.int64)
        dep_idx = position[deps[gather]]
    else:
        dep_idx = empty
    table = TransferTable(src[by], dst[by], size[by], step[by], channel[by], dep_off, dep_idx)
    return Schedule("tree", tuple(order), int(nbytes), channels, table)
