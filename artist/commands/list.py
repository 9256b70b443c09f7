"""`artist list models|policies|topologies|backends|profiles|sweeps`: what this installation ships and knows."""

from __future__ import annotations

import re
from pathlib import Path

from artist import shipped


def add_parser(sub) -> None:
    p = sub.add_parser("list", help="list shipped models, policies, topologies, backends, calibration profiles or "
                                    "sweeps",
                       description="Names usable in --model, --policy, --topology, --backend, --calibration and "
                                   "`artist sweep NAME`.")
    p.add_argument("what", choices=("models", "policies", "topologies", "backends", "profiles", "sweeps"))
    p.set_defaults(func=run)


def _rows(what: str) -> list[str]:
    if what == "models":
        return _model_rows()
    if what == "policies":
        from artist.policies.suite import all_policies

        listings = all_policies()
        width = max(len(p.name) for p in listings)
        return [f"{p.name:<{width}}  {'+'.join(p.loops):<20} {p.summary}" for p in listings]
    if what == "topologies":
        from artist.topology import load_topology

        rows = []
        for name in shipped.names(shipped.TOPOLOGIES_DIR):
            t = load_topology(shipped.TOPOLOGIES_DIR / f"{name}.yaml")
            rows.append(f"{name:<22} {t.racks} racks x {t.machines_per_rack} machines x {t.gpus_per_machine} GPUs "
                        f"({t.gpus} GPUs; {', '.join(dict.fromkeys(t.rack_gpu_types))})")
        from artist.elastic.cluster import load_cluster

        for name in shipped.names(shipped.CLUSTERS_DIR):  # cluster files: a pool per GPU type
            c = load_cluster(shipped.CLUSTERS_DIR / f"{name}.yaml")
            pools = ", ".join(f"{p.gpu_type} {p.topology.machines} x {p.topology.gpus_per_machine}" for p in c.pools)
            rows.append(f"{name:<22} cluster of {len(c.pools)} pools: {pools} ({c.gpus} GPUs)")
        return rows
    if what == "sweeps":
        return [f"{name:<28} {_headline(shipped.SWEEPS_DIR / f'{name}.yaml')}"
                for name in shipped.names(shipped.SWEEPS_DIR)]
    if what == "backends":
        from artist.network.stack import BACKENDS

        return list(BACKENDS)
    from artist.calibration.profile import load_profile

    rows = []
    for name in shipped.names(shipped.PROFILES_DIR):
        p = load_profile(shipped.PROFILES_DIR / f"{name}.yaml")
        b = p.backend
        rows.append(f"{name:<26} backend {b.get('backend')}/{b.get('algorithm', 'ring')}/{b.get('channels', 1)}ch "
                    f"on topology {p.topology_name}")
    return rows


def _headline(spec: Path) -> str:
    """A shipped spec's first header sentence (its comment lines up to the first sentence end or colon)."""
    words = []
    for line in spec.read_text().splitlines():
        if not line.startswith("#"):
            break
        words.append(line.lstrip("# ").strip())
    text = " ".join(words)
    end = re.search(r"\.\s+(?=[A-Z])|:\s", text)  # "Fig. 16" and "et al." go on
    text = text[:end.start()] if end else text
    return text if len(text) <= 100 else text[:99].rsplit(" ", 1)[0] + " ..."


def _model_rows() -> list[str]:
    """Both kinds of model a job can name: the data-parallel profiles (workloads/models/) and the LLM zoo
    (hybrid-parallel plans: --plan, the llm generator, trace rows with a plan), each under its heading."""
    from artist.workload import load_models
    from artist.workload.zoo import ZOO

    rows = ["data-parallel model profiles (DDP gradient buckets; workloads/models/):"]
    rows += [f"  {name:<22} {len(m.buckets):>3} buckets  {m.total_bytes / 2**20:9.1f} MiB of gradients  "
             f"{m.compute_seconds * 1e3:8.2f} ms/iteration on {m.reference_gpu}"
             for name, m in sorted(load_models().items())]
    rows.append("LLM zoo (hybrid-parallel DP x TP x PP (x EP) plans; published dimensions, source per family):")
    for name, m in ZOO.items():
        experts = f", {m.moe_experts} experts" if m.is_moe else ""
        rows.append(f"  {name:<22} {m.total_params() / 1e9:7.2f} B parameters  {m.layers:>3} layers  "
                    f"hidden {m.hidden:>5}  {m.heads:>3} heads  sequence {m.seq_len}{experts}")
    return rows


def run(args) -> int:
    for row in _rows(args.what):
        print(row)
    return 0
