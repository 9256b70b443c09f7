"""The latency cache's key: what an answer depends on, in canonical form.

Key. sha256 of a canonical JSON (sorted keys, no whitespace) of:
  - the step graphs of the question, relabelled onto canonical GPUs
    (canonical_gpu_map: racks, machines and GPUs renumbered so that which ones
    were picked does not matter) and listed in order of their signature; a
    graph carries its compute nodes' durations (and so the GPU speeds that set
    them) at 9 significant digits, its groups and payloads;
  - the topology's link parameters of the tiers the graphs touch (machine
    always; rack when they leave a machine; spine and oversubscription when
    they leave a rack) plus GPUs per machine and machines per rack;
  - ``inner.identity()``: backend name and version, algorithm, channels,
    latency and transport parameters;
  - ``code``: the digest of the sources that compute the answer (network/code.py), so
    an answer cached by other code is a miss, whatever the versions say.
JSON and sha256 do not depend on PYTHONHASHSEED or the process.

Every relabelling is a topology automorphism (a rack onto a rack, a machine
onto a machine of it, a GPU onto a GPU of it), so two questions with one key
have one answer; ties are broken by id, so a key can miss a symmetry (two
questions that could share an answer get two) but never merge two different
questions.

Questions cached: step graphs (``time``) and one collective of a payload
(``collective_seconds``, asked by calibration fits and `artist comm`); the
key's "model" part tells them apart.
"""

from __future__ import annotations

import json
from hashlib import sha256
from typing import Mapping

from artist.jsonkey import digest, encoded_mapping
from artist.network.code import code_digest
from artist.parallel.graph import StepGraph
from artist.placement import MACHINE, NETWORK, RACK, Placement, placement_from_shape
from artist.network.symmetry import ecmp_gpu_map, fabric_key, shape_symmetric
from artist.topology import Topology

# Bump KEY_VERSION when the meaning of the key material changes.
# 2: step graphs relabelled onto canonical GPUs replace (shape, GPU speeds, model buckets).
KEY_VERSION = 2


def touched_link_parameters(placement: Placement) -> dict:
    """The topology's link parameters of the tiers this placement's traffic can cross."""
    tiers = {MACHINE: ("machine.",), RACK: ("machine.", "rack."), NETWORK: ("machine.", "rack.", "spine.")}
    tier = placement.tier
    if tier == RACK and placement.topology.rails:  # two rails of one rack meet through the spine
        tier = NETWORK
    prefixes = tiers[tier]
    params = placement.topology.link_parameters()
    out = {k: v for k, v in params.items() if k.startswith(prefixes)}
    out["gpus_per_machine"] = params["gpus_per_machine"]
    out["machines_per_rack"] = params["machines_per_rack"]
    if tier == NETWORK:
        out["oversubscription"] = params["oversubscription"]
    return out


def canonical_gpu_map(topology: Topology, gpus) -> dict[int, int]:
    """GPU -> GPU of placement_from_shape(canonical shape): racks in the canonical shape's
    order (ties by id), each rack's machines by GPU count (ties by id), GPUs in id order.
    On an ecmp spine or rail-optimised racks only racks are renumbered, in order (network/symmetry.py:
    the hash and the rails see positions inside racks)."""
    if not shape_symmetric(topology):
        return ecmp_gpu_map(topology, gpus)
    placement = Placement(topology, tuple(gpus))
    by_machine = placement.gpus_by_machine

    def machines_of(rack):
        return sorted(placement.machines_by_rack[rack], key=lambda m: (-len(by_machine[m]), m))

    def rack_order(rack):
        counts = tuple(len(by_machine[m]) for m in machines_of(rack))
        return (-sum(counts), tuple(-c for c in counts), len(counts), rack)

    racks = sorted(placement.machines_by_rack, key=rack_order)
    target = placement_from_shape(topology, placement.canonical_shape).gpus
    source = [g for r in racks for m in machines_of(r) for g in by_machine[m]]
    return dict(zip(source, target))


def graphs_key_material(inner, graphs: Mapping[str, StepGraph], topology: Topology) -> tuple[dict, list, dict]:
    """(key material, job ids in key order, the graphs relabelled onto canonical GPUs)."""
    union = sorted({g for graph in graphs.values() for g in graph.gpus})
    gpu_map = canonical_gpu_map(topology, union) if union else {}
    relabelled = {job: graph.relabel(gpu_map) for job, graph in graphs.items()}
    # Each graph's key material is made and encoded once: its text is what StepGraph.signature digests
    # (the graphs' order) and, joined, canonical_json of the list (lists of numbers and strings: no keys to
    # sort, no NaN), which the model digest, the key and the stored row reuse.
    parts = {job: relabelled[job].key_material() for job in graphs}
    texts = {job: json.dumps(parts[job], separators=(",", ":")) for job in graphs}
    order = sorted(graphs, key=lambda job: (sha256(texts[job].encode()).hexdigest()[:16], job)) \
        if len(graphs) > 1 else list(graphs)
    graphs_part = [parts[job] for job in order]
    graphs_text = "[" + ",".join(texts[job] for job in order) + "]"
    material = {
        "key_version": KEY_VERSION,
        "graphs": graphs_part,
        "model": sha256(graphs_text.encode()).hexdigest()[:16],  # = digest(graphs_part)[:16]
        "links": touched_link_parameters(Placement(topology, tuple(union))) if union else {},
        "backend": inner.identity(),
        "code": code_digest(inner),
    }
    return encoded_mapping(material, {"graphs": graphs_text}), order, relabelled


def collective_key_material(inner, group: Placement, nbytes: int, kind: str = "all_reduce") -> dict:
    """Key material of one collective of nbytes alone (calibration fits and `artist comm` ask this)."""
    material = {
        "key_version": KEY_VERSION,
        "shape": [list(rack) for rack in group.canonical_shape],
        "links": touched_link_parameters(group),
        "backend": inner.identity(),
        "code": code_digest(inner),
        "model": f"{kind}:{int(nbytes)}",
    }
    if not shape_symmetric(group.topology):  # the hash and rails see positions inside racks (symmetry.py)
        material["fabric_form"] = [list(rack) for rack in fabric_key(group)[1:]]
    return material


def cache_key(material: dict) -> str:
    return digest(material)
