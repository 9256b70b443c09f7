"""A sweep spec's runs: the cross product of its axes, each run with everything a worker needs."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from artist.errors import InputError
from artist.network.stack import CommSpec
from artist.simulator import SimulatorConfig
from artist.sweep.axes import NO_CALIBRATION, CalibrationChoice, PolicyChoice, WorkloadChoice
from artist.sweep.identity import run_id_of, run_identity
from artist.topology import Topology
from artist.workload import Job
from artist.workload.spec import job_too_large, jobs_from_spec

if TYPE_CHECKING:  # spec.py builds a SweepSpec, then calls expand() on it
    from artist.sweep.spec import SweepSpec


@dataclass(frozen=True)
class Run:
    """One point of the cross product, with everything loaded that a worker needs."""

    index: int  # position in the expansion (the results table's row order)
    run_id: str
    identity: dict = field(hash=False, compare=False)
    axes: dict = field(hash=False, compare=False)  # column -> value, AXIS_COLUMNS order
    topology: Topology = field(hash=False, compare=False)  # with the run's rack count
    jobs: tuple[Job, ...] = field(hash=False, compare=False)
    policy: PolicyChoice = field(hash=False, compare=False)
    workload: WorkloadChoice = field(hash=False, compare=False, default=None)
    comm: CommSpec = CommSpec()  # the network stack; its calibration is the path of calibration.profile
    calibration: CalibrationChoice = NO_CALIBRATION  # the profile itself, shipped to workers loaded
    simulator: SimulatorConfig = SimulatorConfig()
    elastic: Any = field(default=None, hash=False, compare=False)  # sweep/elastic.py's config: the elastic loop

    def describe(self) -> str:
        a = self.axes
        cal = f" calibration={a['calibration']}" if a["calibration"] else ""
        return (f"{a['topology']} racks={a['racks']} policy={a['policy']} workload={a['workload']} seed={a['seed']} "
                f"comm={a['backend']}/{a['algorithm']}/{a['channels']}ch{cal}")


def expand(spec: SweepSpec) -> list[Run]:
    """The cross product, in AXIS_COLUMNS order; loads every (workload, seed, cluster size)'s jobs once
    and checks that every job fits every cluster before any run starts."""
    jobs_cache: dict[tuple[int, int, int], tuple[Job, ...]] = {}

    def jobs_of(wi: int, seed: int, gpus: int) -> tuple[Job, ...]:
        # The cluster's size is part of the key: a Poisson generator may scale its rate to it.
        if (wi, seed, gpus) not in jobs_cache:
            w = spec.workloads[wi]
            try:
                jobs = jobs_from_spec(w.resolved, spec.models, seed, gpus)
            except InputError as exc:
                raise InputError(spec.source, f"field 'workloads[{wi}]'", str(exc)) from None
            except ValueError as exc:
                raise InputError(spec.source, f"field 'workloads[{wi}]'", f"{w.spec}: {exc}") from None
            if not jobs:
                raise InputError(spec.source, f"field 'workloads[{wi}]'", f"{w.spec}: no jobs")
            jobs_cache[(wi, seed, gpus)] = tuple(jobs)
        return jobs_cache[(wi, seed, gpus)]

    sim = spec.simulator
    runs: list[Run] = []
    for t in spec.topologies:
        for racks in (spec.racks or [t.topology.racks]):
            try:
                topology = t.topology.with_racks(racks)
            except ValueError as exc:
                raise InputError(spec.source, "field 'racks'", f"{t.topology.name}: {exc}") from None
            for policy in spec.policies:
                for wi, workload in enumerate(spec.workloads):
                    for seed in spec.seeds:
                        jobs = jobs_of(wi, seed, topology.gpus)
                        biggest = job_too_large(jobs, topology.gpus)
                        if biggest is not None:
                            raise InputError(spec.source, f"field 'workloads[{wi}]'",
                                             f"{workload.spec} (seed {seed}): job {biggest.job_id} asks for "
                                             f"{biggest.gpus} GPUs, but {t.topology.name} with {racks} rack(s) "
                                             f"has {topology.gpus}")
                        for backend, algorithm, channels, cal in itertools.product(
                                spec.backends, spec.algorithms, spec.channels, spec.calibrations):
                            options = spec.comm_options[backend]
                            identity = run_identity(t, racks, spec.models_sha256, policy, workload, seed, backend,
                                                    algorithm, channels, options, cal, sim)
                            axes = {"topology": t.topology.name, "racks": racks, "policy": policy.label,
                                    "workload": workload.label, "seed": seed, "backend": backend,
                                    "algorithm": algorithm, "channels": channels, "calibration": cal.label}
                            comm = CommSpec(backend, algorithm, channels, options,
                                            cal.profile.path if cal.profile is not None else None)
                            runs.append(Run(len(runs), run_id_of(identity), identity, axes, topology, jobs, policy,
                                            workload, comm, cal, sim))
    ids = {}
    for r in runs:
        if r.run_id in ids:  # two points with equal resolved parameters (e.g. two copies of one file)
            raise InputError(spec.source, None, f"runs {ids[r.run_id].describe()} and {r.describe()} have identical "
                                                f"parameters; remove the duplicate axis value")
        ids[r.run_id] = r
    return runs
