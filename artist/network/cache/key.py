"""The latency cache's key: what an answer depends on, in canonical form.

Key. sha256 of a canonical JSON (sorted keys, no whitespace) of:
  - the placement's canonical shape (which racks/machines/GPUs were picked
    does not matter, see placement.py) and its GPU types with counts and
    relative speeds (they set the compute time and so the exposed time);
  - ``model.comm_signature()`` (buckets, ready times, compute seconds);
  - the topology's link parameters of the tiers the placement touches (machine
    always; rack when it leaves a machine; spine and oversubscription when it
    leaves a rack) plus GPUs per machine and machines per rack;
  - ``inner.identity()``: backend name and version, algorithm, channels,
    latency and transport parameters, calibration profile id.
JSON and sha256 do not depend on PYTHONHASHSEED or the process.

Questions cached: a model's iteration (``iteration_comm_time``) and, for
backends that offer it, one all-reduce of a payload (``collective_seconds``,
asked by calibration fits); the key's "model" part tells them apart.
"""

from __future__ import annotations

from artist.jsonkey import digest
from artist.placement import MACHINE, NETWORK, RACK, Placement
from artist.workload import ModelProfile

# Bump KEY_VERSION when the meaning of the key material changes.
KEY_VERSION = 1


def touched_link_parameters(placement: Placement) -> dict:
    """The topology's link parameters of the tiers this placement's traffic can cross."""
    tiers = {MACHINE: ("machine.",), RACK: ("machine.", "rack."), NETWORK: ("machine.", "rack.", "spine.")}
    prefixes = tiers[placement.tier]
    params = placement.topology.link_parameters()
    out = {k: v for k, v in params.items() if k.startswith(prefixes)}
    out["gpus_per_machine"] = params["gpus_per_machine"]
    out["machines_per_rack"] = params["machines_per_rack"]
    if placement.tier == NETWORK:
        out["oversubscription"] = params["oversubscription"]
    return out


def key_material_parts(inner, placement: Placement) -> dict:
    topology = placement.topology
    return {
        "key_version": KEY_VERSION,
        "shape": [list(rack) for rack in placement.canonical_shape],
        "gpu_types": [[name, count, topology.gpu_type(name).relative_speed]
                      for name, count in placement.gpu_type_counts],
        "links": touched_link_parameters(placement),
        "backend": inner.identity(),
    }


def key_material(inner, model: ModelProfile, placement: Placement) -> dict:
    material = key_material_parts(inner, placement)
    material["model"] = model.comm_signature()
    return material


def collective_key_material(inner, placement: Placement, nbytes: int) -> dict:
    """Key material of one all-reduce of nbytes (calibration fits ask this, not a model's iteration)."""
    material = key_material_parts(inner, placement)
    material["model"] = f"allreduce:{int(nbytes)}"
    return material


def cache_key(material: dict) -> str:
    return digest(material)
