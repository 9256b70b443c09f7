"""The network alone: one step's or one collective's communication time, and latency tables of models x shapes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence, Union

from artist.api._options import command_args
from artist.api.inputs import topology_of
from artist.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from artist.topology import Topology

# A placement shape: racks of per-machine GPU counts, as text ('[[4,4],[8]]') or nested lists ([[4, 4], [8]]).
Shape = Union[str, Sequence[Sequence[int]]]
# GPU ids: text of ids and ranges ('0-7,64-71') or the ids.
Gpus = Union[str, Sequence[int]]


def comm(topology: str | Path | Topology = "dally-3tier", *, model: str | Path | None = None,
         shape: Shape | None = None, collective: str | None = None, nbytes: int | str | None = None,
         gpus: Gpus | None = None, jobs: Sequence[str] | None = None, plan: str | None = None,
         racks: int | None = None, models: str | Path | None = None, backend: str = "analytical",
         algorithm: str = "ring", channels: int = 1, calibration: str | Path | None = None,
         transport: str = "window", arbitration: str = "fifo", accelerate: bool = False, fast_path: bool = True,
         microbatches: int | None = None, global_batch: int | None = None, micro_batch_size: int = 1,
         recompute: bool = True, sequence_parallel: bool = False, overlap_dp: bool = True, cache: bool = True,
         cache_dir: str | Path | None = None) -> dict[str, Any] | list[dict[str, Any]]:
    """Communication on a placement, as ``artist comm ... --json`` answers it: give one of model, collective or jobs.

    - ``model`` and ``shape``: one data-parallel step's all-reduce seconds, raw and exposed (after overlap with
      the backward pass).
    - ``collective``, ``nbytes`` and ``gpus`` (or ``shape``): one collective alone.
    - ``jobs``: data-parallel jobs on given GPUs, each job's step alone and with all of them sharing the fabric
      (backend flow or ns3).
    - ``model`` from the LLM zoo and ``plan``: one hybrid-parallel plan's step, exposed communication and memory.

    Args:
        topology: A topology YAML file or shipped name, or a Topology.
        model: A model name (under ``models``), a model profile YAML file, or an LLM-zoo model with ``plan``.
        shape: The placement: racks of per-machine GPU counts, ``"[[4,4],[8]]"`` or ``[[4, 4], [8]]``.
        collective: ``all_reduce``, ``all_gather``, ``reduce_scatter``, ``all_to_all`` or ``send_recv``.
        nbytes: The collective's payload per rank (nccl-tests' size): bytes, or text such as ``"64MiB"``.
        gpus: The collective's GPU group, ``"0-7,64-71"`` or a list of ids (send_recv: source, destination); with
            ``plan``, the plan's GPUs in rank order.
        jobs: ``"MODEL:GPUS"`` texts, e.g. ``["resnet50:0-7,64-71", "vgg11:8-15,72-79"]``.
        plan: A hybrid plan of an LLM-zoo model: ``"dp=D,tp=T,pp=P[,ep=E][,microbatches=M]"``.
        racks: Replace the topology's rack count.
        models: A directory of model profiles; None: the shipped ones.
        backend: ``analytical``, ``flow``, ``ns3`` or ``none``.
        algorithm: All-reduce algorithm: ``ring``, ``hierarchical``, ``tree`` (NCCL's double binary tree) or
            ``nccl`` (analytical only: what NCCL's tuner picks per size; answers of one collective name it).
        channels: Parallel rings (NCCL channels).
        calibration: A calibration profile (path or shipped name) applied to the backend's answers.
        transport: ns3 only: ``window`` (message-level window transport) or ``tcp`` (DCTCP baseline).
        arbitration: ns3 window transport only: switch output arbitration, ``fifo`` or ``round-robin``.
        accelerate: ns3 only: steady-state skipping for ring all-reduces.
        fast_path: ns3 only: False runs packets even where no link is shared.
        microbatches: ``plan``: micro-batches per replica per step; default: the global batch's split.
        global_batch: ``plan``: sequences per step where the plan states no micro-batches; None: the CLI's default.
        micro_batch_size: ``plan``: sequences per micro-batch.
        recompute: ``plan``: full activation recomputation.
        sequence_parallel: ``plan``: Megatron sequence parallelism.
        overlap_dp: ``plan``: all-reduce gradients per layer, overlapped with the backward pass.
        cache: Read and write the latency cache.
        cache_dir: The latency cache's directory, instead of the default.

    Returns:
        The answer as a dict (model: raw_seconds, exposed_seconds, buckets, shape, tier, answered_by, ...;
        collective: seconds, bytes_per_rank, ...; plan: step_s, compute_s, exposed_comm_s, bubble_fraction,
        memory_gib_per_gpu, mfu, ...), or for ``jobs`` one dict per job (alone_s, shared_s, steps_measured,
        converged).

    Raises:
        InputError: A bad option, model, shape or GPU list, with the one-line message the CLI prints.

    Examples:
        >>> artist.comm(model="resnet50", shape=[[8], [8]])["exposed_seconds"]
    """
    from artist.commands.comm import answer

    given = [name for name, value in (("model", model), ("collective", collective), ("jobs", jobs))
             if value is not None]
    if len(given) != 1:
        raise InputError("command line", "--model", "give one of model (with shape or plan), collective (with "
                                                    f"nbytes and gpus or shape) or jobs; got {given or 'none'}")
    values = dict(model=None if model is None else str(model), shape=_shape_text(shape), collective=collective,
                  nbytes=nbytes, gpus=_gpus_text(gpus), job=None if jobs is None else list(jobs), plan=plan,
                  racks=racks, models=models, backend=backend, algorithm=algorithm, channels=channels,
                  calibration=calibration, transport=transport, arbitration=arbitration, accelerate=accelerate,
                  no_fast_path=not fast_path, microbatches=microbatches, micro_batch_size=micro_batch_size,
                  no_recompute=not recompute, sequence_parallel=sequence_parallel, no_overlap_dp=not overlap_dp,
                  no_cache=not cache, cache_dir=cache_dir, json=True)
    if global_batch is not None:
        values["global_batch"] = global_batch
    args = command_args("comm", **values)
    return answer(args, topology_of(topology, args.racks))


def compute_latency_table(topology: str | Path | Topology = "dally-3tier", *, model_names: Sequence[str] = (),
                          shapes: Sequence[Shape] = (), standard: bool = False, plans: Sequence[str] = (),
                          layouts: Sequence[str] = (), racks: int | None = None, models: str | Path | None = None,
                          backend: str = "analytical", algorithm: str = "ring", channels: int = 1,
                          calibration: str | Path | None = None, fast_path: bool = True,
                          global_batch: int | None = None, jobs: int = 1, cache: bool = True,
                          cache_dir: str | Path | None = None, progress: bool = False) -> pd.DataFrame:
    """Communication time per iteration of models x placement shapes, as ``artist latency-table`` computes it.

    Check it against a golden table with assert_latency_table (``artist latency-table --check``): the regression
    test of a network model or a calibration profile.

    Args:
        topology: A topology YAML file or shipped name, or a Topology.
        model_names: Model names (default: every profile in ``models``); with ``plans``, LLM-zoo models.
        shapes: Placement shapes, ``"[[4,4],[8]]"`` or ``[[4, 4], [8]]``.
        standard: Add the standard shape set (8 to 64 GPUs in one machine, one rack and two racks; the Dally
            paper's Table I, artist/latency_table.py).
        plans: LLM-zoo hybrid plans ``"dp=D,tp=T,pp=P"``: one for every model name or one per name; then the rows
            are a hybrid step per placement (``layouts`` and ``shapes``).
        layouts: With ``plans``: named layouts (packed, tp-split, pp-racks, dp-racks); default all four, or none
            when shapes are given.
        racks: Replace the topology's rack count.
        models: A directory of model profiles; None: the shipped ones.
        backend: ``analytical``, ``flow``, ``ns3`` or ``none``.
        algorithm: All-reduce algorithm: ``ring``, ``hierarchical``, ``tree`` (NCCL's double binary tree) or
            ``nccl`` (analytical only: what NCCL's tuner picks per size; answers of one collective name it).
        channels: Parallel rings (NCCL channels).
        calibration: A calibration profile (path or shipped name) applied to the backend's answers.
        fast_path: ns3 only: False makes every row a full packet run.
        global_batch: With ``plans``: sequences per step where a plan states no micro-batches; None: the CLI's
            default.
        jobs: Parallel worker processes (-1: all cores).
        cache: Read and write the latency cache.
        cache_dir: The latency cache's directory, instead of the default.
        progress: A progress bar on standard error.

    Returns:
        One row per (model, shape): model, shape (canonical), tier, gpus, backend, calibrated,
        collective_seconds, exposed_seconds, compute_seconds, comm_pct_of_compute; the table the CLI writes as
        CSV. With ``plans``: model, plan, placement, tier, gpus, backend, step_seconds, compute_seconds and the
        exposed seconds per parallelism (artist/hybrid_latency_table.py).

    Raises:
        InputError: A bad option, model or shape, with the one-line message the CLI prints.

    Examples:
        >>> table = artist.compute_latency_table("dally-3tier", standard=True)  # every shipped model
        >>> artist.assert_latency_table(table, "tests/golden/analytical_dally-3tier_dally-models_standard.csv",
        ...                             rtol=1e-6)
    """
    import pandas as pd

    from artist.commands.latency_table import compute_table, plan_rows

    values = dict(model=list(model_names), shape=[_shape_text(s) for s in shapes], standard=standard,
                  plan=list(plans), layout=list(layouts), racks=racks, models=models, backend=backend,
                  algorithm=algorithm, channels=channels, calibration=calibration, no_fast_path=not fast_path,
                  jobs=jobs, no_cache=not cache, cache_dir=cache_dir, quiet=not progress, progress=progress)
    if global_batch is not None:
        values["global_batch"] = global_batch
    args = command_args("latency-table", **values)
    where = topology_of(topology, args.racks)
    if args.plan:
        from artist.hybrid_latency_table import COLUMNS

        rows, _ = plan_rows(args, where)
        return pd.DataFrame(rows, columns=list(COLUMNS))
    run, _, _ = compute_table(args, where)
    return run.table


def _shape_text(shape: Shape | None) -> str | None:
    """--shape's text of a shape given as text or as nested lists."""
    if shape is None or isinstance(shape, str):
        return shape
    return json.dumps([list(rack) for rack in shape])


def _gpus_text(gpus: Gpus | None) -> str | None:
    """--gpus' text of GPU ids given as text or as a list."""
    if gpus is None or isinstance(gpus, str):
        return gpus
    return ",".join(str(g) for g in gpus)
