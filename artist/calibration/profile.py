"""Calibration profiles (YAML); artist.network.calibrated.Calibrated applies one to any FabricModel.

A profile holds, per tier (machine, rack, network) and per collective kind
(all_reduce, all_gather, reduce_scatter, all_to_all, send_recv), the fitted
corrections, one per NCCL size regime (correction.SizeRegimes). A kind no log of
the tier measured carries the tier's network terms from a kind that was
measured (`same_as`, e.g. the rack tier's all_gather from its all_reduce: the
NIC's bandwidth and fixed cost are the same whatever collective crosses it); a
tier no log spans reuses the other NIC tier (rack <-> network: both cross the
same NICs) or, for the machine tier, stays uncalibrated (an NVLink correction
is never guessed from a NIC one, nor the reverse). The profile also holds the
topology link parameters and the backend identity it was fitted for, the logs
(with SHA-256) it came from, which terms each log constrained, and the fit,
held-out and hold-out-log errors.

The profile id is a digest of what changes an answer (link parameters, backend
identity, the correction formula, every kind's corrections and the sizes where
regimes change), so two profiles that calibrate identically share an id and any
change of a parameter changes every cache key built on it. Every float enters
the digest rounded to ID_SIGNIFICANT_DIGITS significant digits: a re-fit with
another numpy / scipy moves the last bits of a fitted number (relative ~1e-15),
which must not change the id, while a change of a parameter beyond ~1e-9
relative still does. The profile applies its numbers as stored, unrounded.

Format 4 (this version): t' = max(0, t0 + latency_s + hops x hop_latency_s) +
(t - t0) / bandwidth_factor per kind (correction.py), hop_latency_s fitted only
from logs of two or more node counts. Format 3 charged a fitted latency per hop
(t0 + (t - t0) / bandwidth_factor + hops x hop_latency_s, all-reduce only),
which grew with the node count without data to say so; formats 1 and 2 divided
the whole time. Their numbers mean other corrections, so those files are refused
with a request to re-fit.
"""

from __future__ import annotations

import hashlib
import json
import numbers
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from artist.calibration.correction import KINDS, SizeRegime, SizeRegimes, TierCorrection
from artist.topology import Topology
from artist.yamlio import Fields, load_yaml_mapping

PROFILE_FORMAT = 4
READABLE_FORMATS = (4,)
# Formats whose numbers mean another correction: refused, not re-read.
OLD_FORMATS = {1: "divided the backend's whole time by bandwidth_factor (t / bandwidth_factor)",
               2: "divided the backend's whole time by bandwidth_factor (t / bandwidth_factor)",
               3: "charged its fitted latency once per hop (t0 + (t - t0) / bandwidth_factor + hops x "
                  "hop_latency_s), which grows with the node count, and corrected all-reduce only"}
TIER_NAMES = ("machine", "rack", "network")  # Placement.tier values
# A tier no log spans reuses this tier's corrections when it has them (both cross the same NICs).
NIC_TIER_FALLBACK = {"rack": "network", "network": "rack"}
# Floats are hashed into the profile id at 9 significant digits: re-fitting the four shipped
# analytical profiles with numpy 2.4.6 / scipy 1.17.1 moved fitted numbers by up to 2.6e-15
# relative (h100 machine hop latency), 10^6 below the 1e-9 that 9 digits resolve, while a
# deliberate change of a parameter is far above 1e-9.
ID_SIGNIFICANT_DIGITS = 9
CORRECTION_TEXT = ("t' = max(0, t0 + latency_s + hops * hop_latency_s) + (t - t0) / bandwidth_factor, with the "
                   "terms of the group's tier, the collective's kind and the size regime containing its size S "
                   "(from_bytes <= S < to_bytes; S beyond the last measured size uses the last; S below the first "
                   "regime keeps only the first regime's bandwidth_factor, with latency_s = hop_latency_s = 0); t = "
                   "the backend's time for the collective; t0 = the backend's time for the same "
                   "collective on the same group at 1 byte per rank (its base and per-hop latencies, which scale "
                   "with the node count as NCCL's model does); hops = hops of the group's tier along one chunk's "
                   "path (all-reduce 2(N-1) NVLink hops on one machine, 2(m-1) NIC crossings over m machines; "
                   "all-gather/reduce-scatter half; all-to-all and send/recv 1); hop_latency_s is fitted only from "
                   "logs of two or more node counts, else 0 (artist.calibration.correction)")


@dataclass(frozen=True)
class CalibrationProfile:
    name: str
    topology_name: str
    link_parameters: dict  # Topology.link_parameters() of the calibration topology
    backend: dict  # identity() of the backend the corrections were fitted for
    corrections: dict[str, dict[str, SizeRegimes]]  # tier -> kind -> fitted regimes
    kind_sources: dict[str, dict[str, str]] = field(default_factory=dict)  # tier -> kind -> fitted kind it reuses
    inherited: dict[str, str] = field(default_factory=dict)  # tier -> the fitted tier whose corrections it reuses
    topology_path: str = ""
    logs: tuple[dict, ...] = ()
    fit: dict = field(default_factory=dict)  # errors, constrained terms and notes per tier / kind / regime and log
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()  # e.g. written with --force although worse than uncalibrated on a hold-out log
    path: str = ""

    def __post_init__(self):
        if not any(self.corrections.values()):
            raise ValueError(f"profile {self.name!r}: no fitted correction")
        for tier, kinds in self.kind_sources.items():
            for kind, source in kinds.items():
                if source not in self.corrections.get(tier, {}):
                    raise ValueError(f"profile {self.name!r}: {tier} {kind} reuses {source!r}, which is not fitted "
                                     f"in that tier")
        for tier, source in self.inherited.items():
            if NIC_TIER_FALLBACK.get(tier) != source:
                raise ValueError(f"profile {self.name!r}: tier {tier!r} may reuse only the other NIC tier "
                                 f"({NIC_TIER_FALLBACK.get(tier, 'none')}), not {source!r}")
            if not self.corrections.get(source):
                raise ValueError(f"profile {self.name!r}: tier {tier!r} reuses tier {source!r}, which has no fitted "
                                 f"correction")

    @property
    def id(self) -> str:
        # The format names the correction formula: the same numbers under format 3 meant another correction.
        tiers = {}
        for t in TIER_NAMES:
            tiers[t] = {}
            for kind in KINDS:
                r = self.correction(t, kind)
                tiers[t][kind] = None if r is None else [
                    {"from_bytes": g.from_bytes, **_correction_dict(g.correction)}
                    for k, g in enumerate(r.regimes)]
        payload = {"format": PROFILE_FORMAT, "tiers": tiers, "link_parameters": self.link_parameters,
                   "backend": self.backend}
        return hashlib.sha256(json.dumps(canonical_for_id(payload), sort_keys=True).encode()).hexdigest()[:16]

    def source_of(self, tier: str, kind: str = "all_reduce") -> tuple[str, str] | None:
        """(tier, kind) whose fitted corrections this tier and kind use; None: uncalibrated."""
        tier = self.inherited.get(tier, tier)
        fitted = self.corrections.get(tier, {})
        if kind in fitted:
            return tier, kind
        source = self.kind_sources.get(tier, {}).get(kind)
        return None if source is None else (tier, source)

    def correction(self, tier: str, kind: str = "all_reduce") -> SizeRegimes | None:
        """The corrections of this tier and collective kind, None where the profile has none
        (no log constrained that tier: the backend's answer stays uncorrected)."""
        source = self.source_of(tier, kind)
        return None if source is None else self.corrections[source[0]][source[1]]

    def uncalibrated(self) -> list[tuple[str, str]]:
        """(tier, kind) pairs the profile leaves uncorrected."""
        return [(t, k) for t in TIER_NAMES for k in KINDS if self.correction(t, k) is None]

    def fitted_range(self, tier: str, kind: str = "all_reduce") -> tuple[int, int] | None:
        """Smallest and largest size (bytes) the profile's corrections for this tier and kind were
        fitted on (held-out sizes included; a reused tier or kind: the one it reuses). Outside it a
        correction is extrapolated: the nearest regime's, for sizes NCCL may run with another
        algorithm or protocol. None when uncalibrated or when the profile records no range."""
        source = self.source_of(tier, kind)
        if source is None:
            return None
        ranges = [test["fitted_range_bytes"] for log in self.logs for test in log.get("tests", [])
                  if test.get("tier") == source[0] and test.get("collective") == source[1]
                  and test.get("fitted_range_bytes") and test.get("role", "fit") == "fit"]
        if not ranges:
            return None
        return min(int(r[0]) for r in ranges), max(int(r[1]) for r in ranges)

    def coverage_note(self, sizes_bytes, what: str = "all-reduce sizes", kind: str = "all_reduce") -> str | None:
        """A sentence naming, per tier, how many of these sizes lie outside the fitted range (None
        if all lie inside): a simulation should say when its latencies are extrapolated."""
        sizes = sorted(set(int(n) for n in sizes_bytes))
        parts = []
        for tier in TIER_NAMES:
            fitted = self.fitted_range(tier, kind)
            if fitted is None:
                continue
            outside = [n for n in sizes if not fitted[0] <= n <= fitted[1]]
            if outside:
                reused = f", reusing {self.inherited[tier]}'s" if tier in self.inherited else ""
                parts.append(f"{tier} tier{reused} (fitted on {_bytes_text(fitted[0])}-{_bytes_text(fitted[1])}): "
                             f"{len(outside)} of {len(sizes)} distinct sizes outside")
        if not parts or not sizes:
            return None
        return (f"calibration profile {self.name!r}: {what} {_bytes_text(sizes[0])}-{_bytes_text(sizes[-1])}; "
                f"{'; '.join(parts)}. Above the fitted sizes the last regime's correction is extrapolated; below "
                f"them only its bandwidth factor applies (NCCL may run another protocol there, whose fixed cost "
                f"no log shows): calibrate with logs that cover these sizes (nccl-tests -b/-e) to check them")

    def tier_note(self, topology: Topology, kind: str = "all_reduce") -> str | None:
        """A sentence naming the tiers of this topology the profile has no correction for (None if it covers
        every tier the topology has): answers there are the backend's own, and a user should know before a
        run (results name them in the `uncalibrated` column after it)."""
        tiers = ["machine"] + (["rack"] if topology.machines_per_rack > 1 or topology.rails else []) + \
            (["network"] if topology.racks > 1 else [])
        left = [t for t in tiers if self.correction(t, kind) is None]
        if not left:
            return None
        return (f"calibration profile {self.name} has no {kind} correction for the {', '.join(left)} tier(s) of "
                f"{topology.name}: answers there stay the backend's own (results: the uncalibrated column)")

    def check_topology(self, topology: Topology) -> None:
        if topology.link_parameters() != self.link_parameters:
            theirs = topology.link_parameters()
            diff = sorted(k for k in set(theirs) | set(self.link_parameters)
                          if theirs.get(k) != self.link_parameters.get(k))
            raise ValueError(f"calibration profile {self.name!r} was fitted on topology {self.topology_name!r}; "
                             f"topology {topology.name!r} differs in {', '.join(diff)}")

    # ---- YAML ------------------------------------------------------------------
    def _tier_mapping(self, t: str) -> dict:
        stats = dict(self.fit.get("tiers", {}).get(t, {}))
        if t in self.inherited:
            return {"same_as": self.inherited[t], "note": stats.get("note", "no log spans this tier")}
        if not self.corrections.get(t):
            return {"uncalibrated": stats.get("note", "no log spans this tier")}
        kinds_stats = stats.pop("kinds", {})
        kinds = {}
        for kind in KINDS:
            kstats = dict(kinds_stats.get(kind, {}))
            if kind in self.corrections[t]:
                regime_stats = kstats.pop("regimes", [])
                regimes = self.corrections[t][kind].regimes
                kinds[kind] = {"regimes": [
                    {"from_bytes": g.from_bytes,
                     "to_bytes": regimes[k + 1].from_bytes if k + 1 < len(regimes) else None,
                     **_correction_dict(g.correction), **(regime_stats[k] if k < len(regime_stats) else {})}
                    for k, g in enumerate(regimes)], **kstats}
            elif kind in self.kind_sources.get(t, {}):
                kinds[kind] = {"same_as": self.kind_sources[t][kind],
                               "note": kstats.get("note", "no log of this tier measured this collective")}
        return {"kinds": kinds, **stats}

    def to_mapping(self) -> dict:
        out = {
            "profile_format": PROFILE_FORMAT,
            "name": self.name,
            "id": self.id,
            "correction": CORRECTION_TEXT,
            "topology": {"name": self.topology_name, "path": self.topology_path,
                         "link_parameters": dict(self.link_parameters)},
            "backend": dict(self.backend),
            "tiers": {t: self._tier_mapping(t) for t in TIER_NAMES},
            "uncalibrated": [f"{t} {k}" for t, k in self.uncalibrated()],
            "logs": [dict(log) for log in self.logs],
            "errors": self.fit.get("logs", {}),
            "notes": list(self.notes),
        }
        if self.fit.get("holdout"):
            out["holdout"] = self.fit["holdout"]
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_mapping(), sort_keys=False, default_flow_style=False, width=120,
                              allow_unicode=True)

    def save(self, path: str | Path) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(self.to_yaml())
        tmp.replace(path)

    @classmethod
    def load(cls, path: str | Path) -> "CalibrationProfile":
        path = Path(path)
        f = Fields(load_yaml_mapping(path), str(path))
        f.unknown_keys({"profile_format", "name", "id", "correction", "topology", "backend", "tiers", "uncalibrated",
                        "logs", "errors", "holdout", "notes", "warnings"})
        fmt = f.integer("profile_format")
        if fmt in OLD_FORMATS:
            raise f.error("profile_format", f"profile format {fmt} is no longer read: it {OLD_FORMATS[fmt]}, while "
                                            f"format {PROFILE_FORMAT} fits a fixed cost per call and a per-hop cost "
                                            f"only from logs of two node counts, per collective; the fitted numbers "
                                            f"do not carry over: re-fit with `artist calibrate` (the command is in "
                                            f"the profile's notes)")
        if fmt not in READABLE_FORMATS:
            raise f.error("profile_format", f"unsupported profile format {fmt} (this version reads "
                                            f"{', '.join(map(str, READABLE_FORMATS))}); re-fit with `artist calibrate`")
        topo = f.sub("topology")
        topo.unknown_keys({"name", "path", "link_parameters"})
        link = topo.raw("link_parameters")
        if not isinstance(link, dict) or not link:
            raise topo.error("link_parameters", "expected a mapping of link parameters")
        backend = f.raw("backend")
        if not isinstance(backend, dict) or "backend" not in backend:
            raise f.error("backend", "expected the backend identity mapping (with a 'backend' name)")
        tiers_f = f.sub("tiers")
        tiers_f.unknown_keys(set(TIER_NAMES))
        corrections, kind_sources, inherited, stats = {}, {}, {}, {}
        for t in TIER_NAMES:
            tf = tiers_f.sub(t)
            if tf.has("same_as"):
                tf.unknown_keys({"same_as", "note"})
                target = tf.string("same_as")
                if target not in NIC_TIER_FALLBACK.get(t, ()) or not tiers_f.sub(target).has("kinds"):
                    raise tf.error("same_as", f"must name the other NIC tier ({NIC_TIER_FALLBACK.get(t, 'none')}) "
                                              f"with fitted corrections, got {target!r}")
                inherited[t] = target
                stats[t] = {"note": tf.string("note", "")}
                continue
            if tf.has("uncalibrated"):
                tf.unknown_keys({"uncalibrated"})
                stats[t] = {"note": tf.string("uncalibrated")}
                continue
            corrections[t], kind_sources[t], kind_stats = _read_kinds(tf)
            stats[t] = {**{k: v for k, v in tf.data.items() if k != "kinds"}, "kinds": kind_stats}
        logs = f.raw("logs", [])
        if not isinstance(logs, list) or not all(isinstance(log, dict) for log in logs):
            raise f.error("logs", "expected a list of mappings")
        notes = f.raw("notes", [])
        warnings = f.raw("warnings", [])
        try:
            profile = cls(
                name=f.string("name"), topology_name=topo.string("name"), link_parameters=link, backend=backend,
                corrections=corrections, kind_sources=kind_sources, inherited=inherited,
                topology_path=str(topo.raw("path", "")), logs=tuple(logs),
                fit={"tiers": stats, "logs": f.raw("errors", {}), "holdout": f.raw("holdout", {})},
                notes=tuple(str(n) for n in notes) if isinstance(notes, list) else (str(notes),),
                warnings=tuple(str(w) for w in warnings) if isinstance(warnings, list) else (str(warnings),),
                path=str(path))
        except ValueError as exc:
            raise f.error("tiers", str(exc)) from None
        if f.has("id") and str(f.raw("id")) != profile.id:
            raise f.error("id", f"does not match the profile's content (content id {profile.id}): the parameters were "
                                f"edited after fitting; re-fit with `artist calibrate` or delete the id line")
        return profile


def _read_correction(f: Fields) -> TierCorrection:
    return TierCorrection(bandwidth_factor=f.number("bandwidth_factor", positive=True),
                          latency_s=f.number("latency_s"),
                          hop_latency_s=f.number("hop_latency_s", minimum=0.0))


REGIME_KEYS = ("from_bytes", "to_bytes", "bandwidth_factor", "latency_s", "hop_latency_s")


def _read_kinds(tf: Fields) -> tuple[dict[str, SizeRegimes], dict[str, str], dict[str, dict]]:
    kf = tf.sub("kinds")
    kf.unknown_keys(set(KINDS))
    fitted, sources, stats = {}, {}, {}
    for kind in KINDS:
        if not kf.has(kind):
            continue
        one = kf.sub(kind)
        if one.has("same_as"):
            one.unknown_keys({"same_as", "note"})
            sources[kind] = one.string("same_as")
            stats[kind] = {"note": one.string("note", "")}
            continue
        fitted[kind], regime_stats = _read_regimes(one)
        stats[kind] = {**{k: v for k, v in one.data.items() if k != "regimes"}, "regimes": regime_stats}
    if not fitted:
        raise tf.error("kinds", "a calibrated tier needs at least one fitted collective kind")
    for kind, source in sources.items():
        if source not in fitted:
            raise kf.sub(kind).error("same_as", f"must name a fitted collective kind of this tier "
                                                f"({', '.join(fitted)}), got {source!r}")
    return fitted, sources, stats


def _read_regimes(tf: Fields) -> tuple[SizeRegimes, list[dict]]:
    items = tf.raw("regimes")
    if not isinstance(items, list) or not items:
        raise tf.error("regimes", "expected a non-empty list of size regimes")
    regimes, stats = [], []
    for k, item in enumerate(items):
        rf = Fields(item, tf.source, f"{tf.prefix}regimes[{k}].")
        start = rf.integer("from_bytes", minimum=0)
        if regimes and start <= regimes[-1].from_bytes:
            raise rf.error("from_bytes",
                           f"regimes must start at increasing sizes ({start} after {regimes[-1].from_bytes})")
        end = rf.raw("to_bytes", None)
        wanted = items[k + 1].get("from_bytes") if k + 1 < len(items) and isinstance(items[k + 1], dict) else None
        if end != wanted:
            raise rf.error("to_bytes",
                           f"must be the next regime's from_bytes ({wanted}; null for the last regime), got {end!r}")
        regimes.append(SizeRegime(start, _read_correction(rf)))
        stats.append({key: v for key, v in rf.data.items() if key not in REGIME_KEYS})
    return SizeRegimes(tuple(regimes)), stats


def _correction_dict(c: TierCorrection) -> dict:
    # Seconds, not microseconds: a unit conversion would not survive the YAML round trip bit for bit.
    return {"bandwidth_factor": float(c.bandwidth_factor), "latency_s": float(c.latency_s),
            "hop_latency_s": float(c.hop_latency_s)}


def canonical_for_id(value):
    """value with every float rounded to ID_SIGNIFICANT_DIGITS significant digits (recursively
    through mappings and sequences), the form the profile id hashes; integers, strings and
    booleans unchanged. -0.0 becomes 0.0 (the same number, another JSON text)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):  # float, numpy floats
        return float(f"{float(value):.{ID_SIGNIFICANT_DIGITS}g}") + 0.0
    if isinstance(value, dict):
        return {str(k): canonical_for_id(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical_for_id(v) for v in value]
    raise TypeError(f"cannot put a {type(value).__name__} into a profile id: {value!r}")


def _bytes_text(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


def backend_settings(identity: dict) -> str:
    """'ns3/ring/8ch': the backend settings a profile is fitted for (or a command asks for), as text
    that two settings share exactly when a profile fits both."""
    return f"{identity.get('backend')}/{identity.get('algorithm', 'ring')}/{identity.get('channels', 1)}ch"


def load_profile(path: str | Path) -> CalibrationProfile:
    return CalibrationProfile.load(path)
