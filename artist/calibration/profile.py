"""Calibration profiles (YAML); artist.network.calibrated.Calibrated applies one to any FabricModel.

A profile holds, per tier (machine, rack, network), the fitted corrections, one
per NCCL size regime (correction.SizeRegimes), or says which tier's corrections
it reuses when no log covered it; the
topology link parameters and the backend identity it was fitted for; the logs
(with SHA-256) it came from; and the fit and held-out errors.

The profile id is a digest of what changes an answer (link parameters, backend
identity, the correction formula, corrections and the sizes where regimes
change), so two profiles that calibrate identically share an id and any change
of a parameter changes every cache key built on it. Every float enters the
digest rounded to ID_SIGNIFICANT_DIGITS significant digits: a re-fit with
another numpy / scipy moves the last bits of a fitted number (relative ~1e-15),
which must not change the id, while a change of a parameter beyond ~1e-9
relative still does. The profile applies its numbers as stored, unrounded.

Format 3 (this version) stores each tier's regimes, for the correction
t' = t0 + (t - t0) / bandwidth_factor + hops x hop_latency_s (correction.py).
Formats 1 and 2 meant t' = t / bandwidth_factor + ...: the same numbers would
mean another correction, so those files are refused with a request to re-fit.
"""

from __future__ import annotations

import hashlib
import json
import numbers
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from artist.calibration.correction import SizeRegime, SizeRegimes, TierCorrection
from artist.topology import Topology
from artist.yamlio import Fields, load_yaml_mapping

PROFILE_FORMAT = 3
READABLE_FORMATS = (3,)
# Formats whose bandwidth_factor divided the whole backend time (t0 included): refused, not re-read.
WHOLE_TIME_FORMATS = (1, 2)
TIER_NAMES = ("machine", "rack", "network")  # Placement.tier values
# Floats are hashed into the profile id at 9 significant digits: re-fitting the four shipped
# analytical profiles with numpy 2.4.6 / scipy 1.17.1 moved fitted numbers by up to 2.6e-15
# relative (h100 machine hop latency), 10^6 below the 1e-9 that 9 digits resolve, while a
# deliberate change of a parameter is far above 1e-9.
ID_SIGNIFICANT_DIGITS = 9
CORRECTION_TEXT = ("t' = t0 + (t - t0) / bandwidth_factor + hops * hop_latency_s, with the bandwidth_factor and "
                   "hop_latency_s of the tier's size regime containing the all-reduce size S (from_bytes <= S < "
                   "to_bytes; S below the first regime uses the first, S beyond the last measured size the last); t = "
                   "the backend's all-reduce time; t0 = the backend's time for the same placement at 1 byte per rank "
                   "(its fixed start-up part); hops = hops of the placement's tier along one chunk's path: 2(N-1) "
                   "NVLink hops on one machine, 2(m-1) NIC crossings over m machines (artist.calibration.correction)")


@dataclass(frozen=True)
class CalibrationProfile:
    name: str
    topology_name: str
    link_parameters: dict  # Topology.link_parameters() of the calibration topology
    backend: dict  # identity() of the backend the corrections were fitted for
    corrections: dict[str, SizeRegimes]  # fitted tiers
    inherited: dict[str, str] = field(default_factory=dict)  # tier -> the fitted tier whose correction it reuses
    topology_path: str = ""
    logs: tuple[dict, ...] = ()
    fit: dict = field(default_factory=dict)  # errors and notes, per tier (with a list per regime) and per log
    notes: tuple[str, ...] = ()
    path: str = ""

    def __post_init__(self):
        for tier in TIER_NAMES:
            if tier not in self.corrections and self.inherited.get(tier) not in self.corrections:
                raise ValueError(f"profile {self.name!r}: tier {tier!r} has neither a fitted correction nor a fitted "
                                 f"tier to reuse")

    @property
    def id(self) -> str:
        tiers = {t: self.correction(t) for t in TIER_NAMES}
        # The format names the correction formula: the same numbers under format 2 meant another correction.
        # The first regime's from_bytes is not in the id: it also covers every smaller size.
        payload = {"format": PROFILE_FORMAT,
                   "tiers": {t: [{"from_bytes": 0 if k == 0 else g.from_bytes, **_correction_dict(g.correction)}
                                 for k, g in enumerate(r.regimes)] for t, r in tiers.items()},
                   "link_parameters": self.link_parameters, "backend": self.backend}
        return hashlib.sha256(json.dumps(canonical_for_id(payload), sort_keys=True).encode()).hexdigest()[:16]

    def correction(self, tier: str) -> SizeRegimes:
        if tier in self.corrections:
            return self.corrections[tier]
        return self.corrections[self.inherited[tier]]

    def fitted_range(self, tier: str) -> tuple[int, int] | None:
        """Smallest and largest all-reduce size (bytes) the profile was fitted on in this tier (a
        reused tier: the tier it reuses), held-out sizes included. Outside it a correction is
        extrapolated: the nearest regime's, for sizes NCCL may run with another algorithm or
        protocol. None when the profile records no range (written by hand)."""
        source = self.inherited.get(tier, tier)
        ranges = [test["fitted_range_bytes"] for log in self.logs for test in log.get("all_reduce_tests", [])
                  if test.get("tier") == source and test.get("fitted_range_bytes")]
        if not ranges:
            return None
        return min(int(r[0]) for r in ranges), max(int(r[1]) for r in ranges)

    def coverage_note(self, sizes_bytes, what: str = "all-reduce sizes") -> str | None:
        """A sentence naming, per tier, how many of these sizes lie outside the fitted range (None
        if all lie inside): a simulation should say when its latencies are extrapolated."""
        sizes = sorted(set(int(n) for n in sizes_bytes))
        parts = []
        for tier in TIER_NAMES:
            fitted = self.fitted_range(tier)
            if fitted is None:
                continue
            outside = [n for n in sizes if not fitted[0] <= n <= fitted[1]]
            if outside:
                reused = f", reusing {self.inherited[tier]}'s" if tier in self.inherited else ""
                parts.append(f"{tier} tier{reused} (fitted on {_bytes_text(fitted[0])}-{_bytes_text(fitted[1])}): "
                             f"{len(outside)} of {len(sizes)} distinct sizes outside")
        if not parts:
            return None
        return (f"calibration profile {self.name!r}: {what} {_bytes_text(sizes[0])}-{_bytes_text(sizes[-1])}; "
                f"{'; '.join(parts)}. Outside the fitted sizes the nearest size regime's correction is "
                f"extrapolated (NCCL may run another algorithm or protocol there): calibrate with logs that "
                f"cover these sizes (nccl-tests -b/-e) to check them")

    def check_topology(self, topology: Topology) -> None:
        if topology.link_parameters() != self.link_parameters:
            theirs = topology.link_parameters()
            diff = sorted(k for k in set(theirs) | set(self.link_parameters)
                          if theirs.get(k) != self.link_parameters.get(k))
            raise ValueError(f"calibration profile {self.name!r} was fitted on topology {self.topology_name!r}; "
                             f"topology {topology.name!r} differs in {', '.join(diff)}")

    # ---- YAML ------------------------------------------------------------------
    def to_mapping(self) -> dict:
        tiers = {}
        for t in TIER_NAMES:
            stats = dict(self.fit.get("tiers", {}).get(t, {}))
            if t in self.corrections:
                regime_stats = stats.pop("regimes", [])
                regimes = self.corrections[t].regimes
                tiers[t] = {"regimes": [
                    {"from_bytes": g.from_bytes,
                     "to_bytes": regimes[k + 1].from_bytes if k + 1 < len(regimes) else None,
                     **_correction_dict(g.correction), **(regime_stats[k] if k < len(regime_stats) else {})}
                    for k, g in enumerate(regimes)], **stats}
            else:
                tiers[t] = {"same_as": self.inherited[t], "note": stats.get("note", "no log covered this tier")}
        return {
            "profile_format": PROFILE_FORMAT,
            "name": self.name,
            "id": self.id,
            "correction": CORRECTION_TEXT,
            "topology": {"name": self.topology_name, "path": self.topology_path,
                         "link_parameters": dict(self.link_parameters)},
            "backend": dict(self.backend),
            "tiers": tiers,
            "logs": [dict(log) for log in self.logs],
            "errors": self.fit.get("logs", {}),
            "notes": list(self.notes),
        }

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
        f.unknown_keys({"profile_format", "name", "id", "correction", "topology", "backend", "tiers", "logs", "errors",
                        "notes"})
        fmt = f.integer("profile_format")
        if fmt in WHOLE_TIME_FORMATS:
            raise f.error("profile_format", f"profile format {fmt} is no longer read: its bandwidth_factor divided "
                                            f"the backend's whole time (t / bandwidth_factor), while format "
                                            f"{PROFILE_FORMAT} divides only the size-dependent part (t0 + (t - t0) / "
                                            f"bandwidth_factor); the fitted numbers do not carry over: re-fit with "
                                            f"`artist calibrate` (the command is in the profile's notes)")
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
        fitted_key = "regimes"
        corrections, inherited, stats = {}, {}, {}
        for t in TIER_NAMES:
            tf = tiers_f.sub(t)
            if tf.has("same_as"):
                tf.unknown_keys({"same_as", "note"})
                target = tf.string("same_as")
                if target not in TIER_NAMES or not tiers_f.sub(target).has(fitted_key):
                    raise tf.error("same_as", f"must name a tier with a fitted correction, got {target!r}")
                inherited[t] = target
                stats[t] = {"note": tf.string("note", "")}
                continue
            corrections[t], regime_stats = _read_regimes(tf)
            stats[t] = {**{k: v for k, v in tf.data.items() if k != "regimes"}, "regimes": regime_stats}
        logs = f.raw("logs", [])
        if not isinstance(logs, list) or not all(isinstance(log, dict) for log in logs):
            raise f.error("logs", "expected a list of mappings")
        notes = f.raw("notes", [])
        profile = cls(
            name=f.string("name"), topology_name=topo.string("name"), link_parameters=link, backend=backend,
            corrections=corrections, inherited=inherited, topology_path=str(topo.raw("path", "")),
            logs=tuple(logs), fit={"tiers": stats, "logs": f.raw("errors", {})},
            notes=tuple(str(n) for n in notes) if isinstance(notes, list) else (str(notes),), path=str(path))
        if f.has("id") and str(f.raw("id")) != profile.id:
            raise f.error("id", f"does not match the profile's content (content id {profile.id}): the parameters were "
                                f"edited after fitting; re-fit with `artist calibrate` or delete the id line")
        return profile


def _read_correction(f: Fields) -> TierCorrection:
    return TierCorrection(bandwidth_factor=f.number("bandwidth_factor", positive=True),
                          hop_latency_s=f.number("hop_latency_s", minimum=0.0))


REGIME_KEYS = ("from_bytes", "to_bytes", "bandwidth_factor", "hop_latency_s")


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
    return {"bandwidth_factor": float(c.bandwidth_factor), "hop_latency_s": float(c.hop_latency_s)}


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
