"""Which GPUs are free and who holds the others.

FreeMap is the free-GPU bookkeeping plus placement search (policies copy it
to plan a round); ClusterState adds ownership and enforces the invariants:
a GPU is never given to two jobs and never released by a job that does not
hold it.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from artist.placement import MACHINE, NETWORK, RACK, TIER_ORDER, Placement
from artist.topology import Topology


class AllocationError(RuntimeError):
    """A request that would break the cluster's invariants (a bug in a policy or the simulator)."""


class _FreeCounts:
    """What the tier of a placement depends on: free GPUs per machine (free_count), per rack (rack_free) and
    in all (total_free), and the most on one machine and in one rack (kept until the counts change)."""

    topology: Topology
    free_count: list[int]
    rack_free: list[int]
    total_free: int
    _most_free: tuple[int, int] | None

    def most_free(self) -> tuple[int, int]:
        """(most free GPUs on one machine, in one rack). Why kept: Gandiva asks it of every running job
        at every scheduling moment, and the map changes far less often."""
        if self._most_free is None:
            self._most_free = (max(self.free_count), max(self.rack_free))
        return self._most_free

    def best_tier_possible(self, n: int) -> str | None:
        """The most consolidated tier at which n GPUs are free right now."""
        if n > self.total_free:
            return None
        machine_most, rack_most = self.most_free()
        if n <= self.topology.gpus_per_machine and machine_most >= n:
            return MACHINE
        if n <= self.topology.gpus_per_rack and rack_most >= n:
            return RACK
        return NETWORK


class FreeCounts(_FreeCounts):
    """A FreeMap's counts without which GPUs: enough for best_tier_possible and for asking whether a job
    would fit if some running jobs gave their GPUs back (give / take their placements), at a fraction of
    a trial map's cost. find() needs the map."""

    def __init__(self, free: "FreeMap"):
        self.topology = free.topology
        self.free_count = free.free_count[:]
        self.rack_free = free.rack_free[:]
        self.total_free = free.total_free
        self._most_free = free._most_free

    def copy(self) -> "FreeCounts":
        new = FreeCounts.__new__(FreeCounts)
        new.topology, new.total_free, new._most_free = self.topology, self.total_free, self._most_free
        new.free_count, new.rack_free = self.free_count[:], self.rack_free[:]
        return new

    def give(self, placement: Placement) -> None:
        """Count the placement's GPUs free (the most free kept up to date: counts only grow)."""
        mpr = self.topology.machines_per_rack
        machine_most, rack_most = self._most_free if self._most_free is not None else (None, None)
        for m, gpus in placement.gpus_by_machine.items():
            k, r = len(gpus), m // mpr
            self.free_count[m] += k
            self.rack_free[r] += k
            if machine_most is not None:
                machine_most, rack_most = max(machine_most, self.free_count[m]), max(rack_most, self.rack_free[r])
        self.total_free += placement.size
        self._most_free = None if machine_most is None else (machine_most, rack_most)

    def take(self, placement: Placement) -> None:
        mpr = self.topology.machines_per_rack
        for m, gpus in placement.gpus_by_machine.items():
            self.free_count[m] -= len(gpus)
            self.rack_free[m // mpr] -= len(gpus)
        self.total_free -= placement.size
        self._most_free = None


class FreeMap(_FreeCounts):
    def __init__(self, topology: Topology, free_by_machine: Sequence[Iterable[int]] | None = None):
        self.topology = topology
        gpm = topology.gpus_per_machine
        if free_by_machine is None:
            free_by_machine = [range(m * gpm, (m + 1) * gpm) for m in range(topology.machines)]
        # Sorted tuples of free GPU ids, one per machine. Tuples, never changed in place (take and
        # give put new ones), so that copy() can share them.
        self.free_by_machine: list[tuple[int, ...]] = [tuple(f) for f in free_by_machine]
        self.free_count = [len(f) for f in self.free_by_machine]
        mpr = topology.machines_per_rack
        self.rack_free = [sum(self.free_count[r * mpr:(r + 1) * mpr]) for r in range(topology.racks)]
        self.total_free = sum(self.rack_free)
        self._most_free = None  # (most free GPUs on one machine, in one rack), kept until take or give

    @classmethod
    def without(cls, topology: Topology, absent: Iterable[int]) -> "FreeMap":
        """Every GPU of the topology free but the `absent` ones (GPU ids that do not exist: a smaller machine
        laid on a larger one's slot, artist/elastic/cluster.py NodeLayout)."""
        absent = frozenset(absent)
        if not absent:
            return cls(topology)
        gpm = topology.gpus_per_machine
        return cls(topology, [[g for g in range(m * gpm, (m + 1) * gpm) if g not in absent]
                              for m in range(topology.machines)])

    def copy(self) -> "FreeMap":
        new = FreeMap.__new__(FreeMap)
        new.topology = self.topology
        new.free_by_machine = self.free_by_machine[:]  # the tuples are shared: nothing changes them
        new.free_count = self.free_count[:]
        new.rack_free = self.rack_free[:]
        new.total_free = self.total_free
        new._most_free = self._most_free
        return new

    # ---- bookkeeping -------------------------------------------------------
    def _by_machine(self, gpus: Iterable[int]) -> dict[int, list[int]]:
        """GPUs grouped by machine (topology.machine_of), in the order given."""
        gpm = self.topology.gpus_per_machine
        by_machine: dict[int, list[int]] = {}
        for g in gpus:
            m = g // gpm
            group = by_machine.get(m)
            if group is None:
                by_machine[m] = [g]
            else:
                group.append(g)
        return by_machine

    def take(self, gpus: Iterable[int]) -> None:
        by_machine = self._by_machine(gpus)
        free_by_machine = self.free_by_machine
        taken: list[tuple[int, set[int]]] = []
        for m, group in by_machine.items():
            gs = set(group)
            free = free_by_machine[m]
            if not gs.issubset(free):
                raise AllocationError(f"GPUs {sorted(gs - set(free))} on machine {m} are not free")
            taken.append((m, gs))
        mpr = self.topology.machines_per_rack
        self._most_free = None
        for m, gs in taken:
            free = free_by_machine[m]
            k = len(gs)
            free_by_machine[m] = () if k == len(free) else tuple([g for g in free if g not in gs])
            self.free_count[m] -= k
            self.rack_free[m // mpr] -= k
            self.total_free -= k

    def give(self, gpus: Iterable[int]) -> None:
        by_machine = self._by_machine(gpus)
        free_by_machine = self.free_by_machine
        gpm = self.topology.gpus_per_machine
        for m, gs in by_machine.items():
            free = free_by_machine[m]
            if (free and not set(free).isdisjoint(gs)) or len(set(gs)) != len(gs):
                raise AllocationError(f"GPUs {gs} on machine {m} are already free")
            if self.free_count[m] + len(gs) > gpm:
                raise AllocationError(f"machine {m} would exceed its {gpm} GPUs")
        mpr = self.topology.machines_per_rack
        self._most_free = None
        for m, gs in by_machine.items():
            free = free_by_machine[m]
            free_by_machine[m] = tuple(sorted(free + tuple(gs))) if free else tuple(sorted(gs))
            k = len(gs)
            self.free_count[m] += k
            self.rack_free[m // mpr] += k
            self.total_free += k

    # ---- search ------------------------------------------------------------
    def best_tier_with(self, n: int, gpus: Iterable[int] | Placement) -> str | None:
        """best_tier_possible(n) as it would be after give(gpus), without copying or changing the map
        (Gandiva asks it of every running job at every scheduling moment; most cannot move up a tier).
        gpus: GPU ids, or a Placement (its grouping by machine is kept with it)."""
        if isinstance(gpus, Placement):
            given, back = gpus.gpus_by_machine, gpus.size
        else:
            given = self._by_machine(gpus)
            back = sum(len(g) for g in given.values())
        if n > self.total_free + back:
            return None
        machine_most, rack_most = self.most_free()
        if n <= self.topology.gpus_per_machine and (
                machine_most >= n or any(self.free_count[m] + len(g) >= n for m, g in given.items())):
            return MACHINE
        if n <= self.topology.gpus_per_rack:
            if rack_most >= n:
                return RACK
            mpr = self.topology.machines_per_rack
            given_per_rack: dict[int, int] = {}
            for m, g in given.items():
                given_per_rack[m // mpr] = given_per_rack.get(m // mpr, 0) + len(g)
            if any(self.rack_free[r] + k >= n for r, k in given_per_rack.items()):
                return RACK
        return NETWORK

    def find(self, n: int, max_tier: str = NETWORK) -> Placement | None:
        """Most consolidated placement of n free GPUs, no worse than max_tier.

        Machine tier: the fullest machine that still fits (best fit keeps big
        holes for big jobs). Rack tier: the rack that fits with the fewest
        machines, taking its freest machines first. Network tier: freest racks
        first, each filled freest-machine first. Ties go to the lowest id, so
        the search is deterministic."""
        tier = self.best_tier_possible(n)
        if tier is None or TIER_ORDER[tier] > TIER_ORDER[max_tier]:
            return None
        t = self.topology
        if tier == MACHINE:
            m = min((c, m) for m, c in enumerate(self.free_count) if c >= n)[1]
            return Placement(t, tuple(self.free_by_machine[m][:n]))
        if tier == RACK:
            best = None
            for r, free in enumerate(self.rack_free):
                if free < n:
                    continue
                machines = self._freest_machines(r)
                gpus, used = self._fill(machines, n)
                key = (used, free, r)
                if best is None or key < best[0]:
                    best = (key, gpus)
            return Placement(t, tuple(best[1]))
        racks = sorted(range(t.racks), key=lambda r: (-self.rack_free[r], r))
        machines = [m for r in racks for m in self._freest_machines(r)]
        gpus, _ = self._fill(machines, n)
        return Placement(t, tuple(gpus))

    def first_fit(self, n: int) -> Placement | None:
        """Lowest-numbered free GPUs, with no regard to tier (network-agnostic placement)."""
        if n > self.total_free:
            return None
        gpus: list[int] = []
        for free in self.free_by_machine:
            gpus.extend(free[: n - len(gpus)])
            if len(gpus) == n:
                return Placement(self.topology, tuple(gpus))
        raise AssertionError("free counts out of sync with free lists")

    def _freest_machines(self, rack: int) -> list[int]:
        mpr = self.topology.machines_per_rack
        ms = range(rack * mpr, (rack + 1) * mpr)
        return sorted((m for m in ms if self.free_count[m]), key=lambda m: (-self.free_count[m], m))

    def _fill(self, machines: list[int], n: int) -> tuple[list[int], int]:
        gpus: list[int] = []
        used = 0
        for m in machines:
            take = self.free_by_machine[m][: n - len(gpus)]
            gpus.extend(take)
            used += 1
            if len(gpus) == n:
                break
        return gpus, used


ABSENT = "(absent)"  # owner of a GPU id that does not exist


class ClusterState:
    """The cluster's allocations; the simulator is its only writer."""

    def __init__(self, topology: Topology, absent: Iterable[int] = ()):
        """`absent`: GPU ids of the topology that do not exist (a smaller machine laid on a larger one's
        slot, artist/elastic/cluster.py NodeLayout): never free, never allocated."""
        self.topology = topology
        self.absent = frozenset(absent)
        self.free = FreeMap.without(topology, self.absent)
        self.owner: list[str | None] = [None] * topology.gpus
        for g in self.absent:
            self.owner[g] = ABSENT
        self.allocations: dict[str, Placement] = {}

    def allocate(self, job_id: str, placement: Placement) -> None:
        if job_id in self.allocations:
            raise AllocationError(f"job {job_id} already holds {self.allocations[job_id]}")
        if placement.topology != self.topology:
            raise AllocationError(f"job {job_id}: placement is on another topology")
        for g in placement.gpus:
            if self.owner[g] is not None:
                raise AllocationError(f"GPU {g} asked for job {job_id} is held by job {self.owner[g]}")
        self.free.take(placement.gpus)
        for g in placement.gpus:
            self.owner[g] = job_id
        self.allocations[job_id] = placement

    def release(self, job_id: str) -> Placement:
        placement = self.allocations.pop(job_id, None)
        if placement is None:
            raise AllocationError(f"job {job_id} holds no GPUs")
        for g in placement.gpus:
            if self.owner[g] != job_id:
                raise AllocationError(f"GPU {g} is not held by job {job_id}")
            self.owner[g] = None
        self.free.give(placement.gpus)
        return placement

    @property
    def allocated_gpus(self) -> int:
        return self.topology.gpus - len(self.absent) - self.free.total_free

    def check_invariants(self) -> None:
        held = sum(p.size for p in self.allocations.values())
        exist = self.topology.gpus - len(self.absent)
        if held + self.free.total_free != exist:
            raise AllocationError(f"{held} held + {self.free.total_free} free != {exist} GPUs")
        owned = sum(1 for o in self.owner if o is not None and o is not ABSENT)
        if owned != held:
            raise AllocationError(f"owner map holds {owned} GPUs, allocations {held}")
