"""NCCL's own algorithm/protocol cost model ("tuner"), re-implemented from NVIDIA/nccl v2.30.7-1.

NCCL picks, for every collective call, an algorithm (Ring, Tree, NVLS, NVLSTree, CollNetDirect,
CollNetChain, PAT) and a protocol (LL, LL128, Simple) by minimising its own latency + size /
bandwidth model (src/graph/tuning.cc, src/enqueue.cc). This package predicts that choice and
NCCL's own time estimate, to say which algorithm a measured nccl-tests row most likely ran.

Modules: releases.py (NCCL's index orders and constant tables per release), inputs.py (what the tuner
reads and answers), model.py (ncclTopoTuneModel, ncclTopoGetAlgoTime and the pick), search.py (a
machine description -> the inputs, a simplified topology search). Public names:
- ``Machine`` and ``tuner_inputs``: a cluster description -> what NCCL's topology search hands
  the tuner (``TunerInputs`` made of ``GraphInfo`` per search), with ``nvlink_gbs_of`` and
  ``pcie_gbs_of`` for NCCL's own link figures;
- ``predicted_time``: NCCL's time for one (collective, size, algorithm, protocol);
- ``choose``: the ``Choice`` NCCL makes (algorithm, protocol, time, channels, threads);
- ``tuning_table``: the latency / bandwidth table NCCL prints with NCCL_DEBUG_SUBSYS=TUNING;
- ``NcclRelease``, ``V2_30_7``, ``RELEASES``: the constant tables per NCCL release.
"""

from artist.network.nccl.inputs import Choice, GraphInfo, TunerInputs
from artist.network.nccl.model import choose, predicted_time, tuning_table
from artist.network.nccl.releases import ALGORITHMS, COLLECTIVES, PROTOCOLS, RELEASES, V2_30_7, NcclRelease
from artist.network.nccl.search import Machine, nvlink_gbs_of, pcie_gbs_of, tuner_inputs

__all__ = ["ALGORITHMS", "COLLECTIVES", "PROTOCOLS", "RELEASES", "V2_30_7", "Choice", "GraphInfo", "Machine",
           "NcclRelease", "TunerInputs", "choose", "nvlink_gbs_of", "pcie_gbs_of", "predicted_time",
           "tuner_inputs", "tuning_table"]
