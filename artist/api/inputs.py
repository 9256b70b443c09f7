"""Loading what a simulation runs on: a topology, a workload's jobs and the model profiles they train."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Union

from artist import shipped
from artist.api._options import command_args

if TYPE_CHECKING:
    from artist.topology import Topology
    from artist.workload import Job, ModelProfile

Models = Union[str, Path, Mapping[str, "ModelProfile"], None]


def load_topology(name_or_path: str | Path = "dally-3tier", racks: int | None = None) -> Topology:
    """A cluster topology: racks of machines of GPUs and the links between them.

    Args:
        name_or_path: A topology YAML file, or the name of a shipped one (``artist list topologies``:
            ``dally-3tier``, ``dgx-h100``, ...).
        racks: Replace the file's rack count (the ``--racks`` option); None keeps it.

    Returns:
        The topology, as ``artist simulate --topology NAME --racks N`` loads it.

    Raises:
        InputError: No such file or shipped name, a file that is not a valid topology, or a rack count it
            cannot take.

    Examples:
        >>> topology = artist.load_topology("dally-3tier", racks=2)
        >>> topology.gpus
        128
    """
    from artist.commands._common import load_topology_from

    return load_topology_from(command_args("simulate", topology=name_or_path, racks=racks))


def load_models(directory: str | Path | None = None) -> dict[str, ModelProfile]:
    """The model profiles (gradient buckets and compute time per iteration) jobs name by model.

    Args:
        directory: A directory of model profile YAML files; None: the shipped ones (workloads/models).

    Returns:
        Model name -> profile.
    """
    from artist.workload import load_models as load

    return load(None if directory is None else str(directory))


def load_workload(spec_or_path: str | Path = "small", *, topology: Topology | None = None, seed: int = 0,
                  models: Models = None) -> list[Job]:
    """The jobs of a workload: a trace file, a shipped trace, a published trace or a seeded generator.

    Args:
        spec_or_path: What ``artist simulate --workload`` takes: a trace CSV (canonical or Helios); the name of a
            shipped trace (``small``, ``helios_sample``: workloads/traces); a published trace as
            ``FORMAT:path=FILE,...`` (philly, pai, helios, acme, pollux, gavel, tiresias, crius); or a generator,
            ``batch:n=500`` or ``poisson:n=400,interarrival=120`` (with ``gpus=1|2|4|8``, ``min_iter=``,
            ``max_iter=``, ``models=a|b``, ...).
        topology: The cluster the jobs will run on: a generator's ``interarrival_gpus=`` scales its arrival rate
            to its GPU count. None: no scaling (such a generator then refuses to run).
        seed: The generator's seed (and a Helios trace's model draw).
        models: Model profiles: a directory of YAML files, a mapping of name to profile, or None for the shipped
            ones. A trace's models must be among them.

    Returns:
        The jobs in arrival order. What a published trace's load kept, dropped and assumed is printed on
        standard error, as the CLI prints it.

    Raises:
        InputError: No such file and not a generator, a bad generator parameter, or a trace row that is wrong.

    Examples:
        >>> jobs = artist.load_workload("poisson:n=20,interarrival=60", seed=1)
        >>> len(jobs)
        20
    """
    from artist.commands.simulate import load_jobs

    args = command_args("simulate", workload=workload_text(spec_or_path), seed=seed)
    profiles = models_of(models)
    return load_jobs(args.workload, profiles, args.seed, None if topology is None else topology.gpus)


def workload_text(spec_or_path: str | Path) -> str:
    """The --workload text of a workload argument: a shipped trace's name becomes its file (shipped.find; a
    generator or published-trace text stays as it is)."""
    text = str(spec_or_path)
    return text if ":" in text else str(shipped.find(text, shipped.TRACES_DIR, ".csv"))


def models_of(models: Models) -> dict[str, ModelProfile]:
    """Model profiles from a directory, a mapping or None (the shipped ones)."""
    if isinstance(models, Mapping):
        return dict(models)
    return load_models(models)


def topology_of(topology: str | Path | Topology, racks: int | None = None) -> Topology:
    """A topology argument as a Topology: a name or path loaded (load_topology), a Topology with `racks` applied."""
    if isinstance(topology, (str, Path)):
        return load_topology(topology, racks)
    from artist.commands._common import with_racks

    return with_racks(topology, command_args("simulate", racks=racks).racks)
