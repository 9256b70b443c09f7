"""The hybrid-parallel plans of an LLM-zoo model on N GPUs, ranked by step time."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from artist.api._options import command_args
from artist.api.inputs import topology_of

if TYPE_CHECKING:
    import pandas as pd

    from artist.topology import Topology


def plans(model: str, gpus: int, topology: str | Path | Topology = "dally-3tier", *, racks: int | None = None,
          global_batch: int | None = None, micro_batch_size: int = 1, recompute: bool = True,
          sequence_parallel: bool = False, overlap_dp: bool = True, backend: str = "analytical",
          algorithm: str = "ring", channels: int = 1, calibration: str | Path | None = None, cache: bool = True,
          cache_dir: str | Path | None = None) -> pd.DataFrame:
    """Every DP x TP x PP (x EP) plan of an LLM-zoo model on the first N GPUs, timed and ranked, as ``artist plans``.

    Plans are every tp dividing the GPU count up to one machine, every pp up to the model's blocks, ep over the
    divisors of dp that divide the experts; each is a step graph (1F1B) timed by the network backend. A plan whose
    busiest GPU does not fit in memory is refused, with the reason, never ranked.

    Args:
        model: An LLM-zoo model (``artist list models``: gpt3-13b, ...).
        gpus: The GPU count, taken from GPU 0 in rank order (Megatron: TP fastest, then PP, then DP).
        topology: A topology YAML file or shipped name, or a Topology.
        racks: Replace the topology's rack count.
        global_batch: Sequences per step; None: the CLI's default (Megatron-LM's smallest batch).
        micro_batch_size: Sequences per micro-batch.
        recompute: Full activation recomputation (False keeps activations).
        sequence_parallel: Megatron sequence parallelism.
        overlap_dp: All-reduce gradients per layer, overlapped with the backward pass.
        backend: ``analytical``, ``flow``, ``ns3`` or ``none``.
        algorithm: All-reduce algorithm: ``ring``, ``hierarchical``, ``tree`` (NCCL's double binary tree) or
            ``nccl`` (analytical only: what NCCL's tuner picks per size; answers of one collective name it).
        channels: Parallel rings (NCCL channels).
        calibration: A calibration profile (path or shipped name) applied to the backend's answers.
        cache: Read and write the latency cache.
        cache_dir: The latency cache's directory, instead of the default.

    Returns:
        One row per plan: the plans that fit first, fastest first (rank 1, 2, ...), then the refused ones (rank
        None, ``refused`` saying why). Columns: rank, plan, step_s, compute_s, exposed_tp_s, exposed_pp_s,
        exposed_dp_s, exposed_ep_s, bubble_fraction, memory_gib_per_gpu, mfu, tflops_per_gpu, samples_per_s,
        micro_batch_size, gpu_type, graph_nodes, backend, packets, refused.

    Raises:
        InputError: An unknown model, a GPU count the topology lacks, or a bad option, with the one-line message
            the CLI prints.

    Examples:
        >>> artist.plans("gpt3-13b", 64, "dgx-h100").head(3)[["plan", "step_s", "mfu"]]
    """
    import pandas as pd

    from artist.commands.plans import rank_plans

    values = dict(model=model, gpus=gpus, racks=racks, micro_batch_size=micro_batch_size,
                  no_recompute=not recompute, sequence_parallel=sequence_parallel, no_overlap_dp=not overlap_dp,
                  backend=backend, algorithm=algorithm, channels=channels, calibration=calibration,
                  no_cache=not cache, cache_dir=cache_dir)
    if global_batch is not None:
        values["global_batch"] = global_batch
    args = command_args("plans", **values)
    _, _, ranked, refused = rank_plans(args, topology_of(topology, args.racks))
    rows = []
    for rank, estimate in enumerate(ranked, 1):
        fields = estimate.as_json()
        exposed = fields.pop("exposed_comm_s")
        fields.pop("model")
        rows.append({"rank": rank, **fields, **{f"exposed_{tag}_s": exposed[tag] for tag in ("tp", "pp", "dp", "ep")},
                     "refused": None})
    # (the CLI's reason text: the message without its 'command line: --option:' prefix)
    rows += [{"rank": None, "plan": plan.text(), "refused": reason.split(": ", 2)[-1]} for plan, reason in refused]
    columns = ["rank", "plan", "step_s", "compute_s", "exposed_tp_s", "exposed_pp_s", "exposed_dp_s", "exposed_ep_s",
               "bubble_fraction", "memory_gib_per_gpu", "mfu", "tflops_per_gpu", "samples_per_s", "micro_batch_size",
               "gpu_type", "graph_nodes", "backend", "packets", "refused"]
    table = pd.DataFrame(rows, columns=columns)
    for column in ("rank", "micro_batch_size", "graph_nodes", "packets"):  # integers, empty on refused rows
        table[column] = table[column].astype("Int64")
    return table
