"""The `report:` section of a sweep spec: which paper the sweep reproduces and what it claims.

    report:
      paper: "Dally (Sharma et al., 2024)"
      source: "../shared/papers/DIGEST.md section 4"      # where the paper's figures below come from
      primary: {backend: ns3}                              # the network configuration of the headline table
      claims:
        - id: jct-order
          text: "Dally's mean JCT is below Tiresias', and Tiresias' below Gandiva's, as racks grow"
          metric: jct_mean_s            # a column of results.csv
          order: [dally, tiresias, gandiva]   # ascending: each policy's metric below the next one's
          per: racks                    # judged at every value of this column (optional)
          scale: 0.000277777778         # results unit -> the paper's unit (here s -> h); default 1
          unit: h
          paper: {dally: 1.0, tiresias: 1.3, gandiva: 1.6}   # the paper's figures (optional)
          paper_source: "Dally Fig. 8"
          normalise_to: dally           # optional: every value / this policy's at the same judged value
          # a paper figure may be a range [low, high] (a paper reporting "19 % to 36 %" over its settings)
        - id: gandiva-comm
          text: "Gandiva's communication rises with racks"
          metric: comm_latency_mean_s
          trend: increasing             # or decreasing: strictly, over the sorted values of `over`
          over: racks
          policies: [gandiva]
      where: {workload: poisson-100}    # optional filter on results columns for every claim

A claim holds in a network configuration when its order (or trend) holds on the means over seeds at
every judged value. Policies are matched on results.csv's `policy` column (the spec's policy labels).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from artist.errors import InputError
from artist.yamlio import Fields, load_yaml_mapping

REPORT_FIELDS = {"paper", "source", "primary", "claims", "where"}
# an ablation sweep of a paper (another backend, topology or contention mode) shares its main spec's claims
SAME_AS = "same_as"
# ... and may run smaller workloads in place of the ones the claims filter on (`where: {workload: ...}`):
# `report: {same_as: dally.yaml, stand_ins: {batch-100: batch-500}}` judges this sweep's batch-100 where a
# claim asks for batch-500; the report names every stand-in beside the configuration it affects
STAND_INS = "stand_ins"
CLAIM_FIELDS = {"id", "text", "metric", "order", "trend", "over", "per", "policies", "scale", "unit", "paper",
                "paper_source", "where", "normalise_to"}
TRENDS = ("increasing", "decreasing")
_SCALAR = (str, int, float, bool)


@dataclass(frozen=True)
class Claim:
    id: str
    text: str
    metric: str
    policies: tuple[str, ...]  # order: ascending metric; trend: each policy's own trend
    trend: str | None = None  # None: an order claim
    over: str | None = None  # trend: the column the trend runs over
    per: str | None = None  # order: judged at every value of this column
    scale: float = 1.0
    unit: str = ""
    paper: dict[str, tuple[float, ...]] = field(default_factory=dict)  # one figure, or a (low, high) range
    paper_source: str = ""
    where: dict[str, Any] = field(default_factory=dict)
    normalise_to: str | None = None

    @property
    def kind(self) -> str:
        return "order" if self.trend is None else "trend"


@dataclass(frozen=True)
class ReportSpec:
    paper: str
    source: str
    claims: tuple[Claim, ...]
    primary: dict[str, Any] = field(default_factory=dict)
    where: dict[str, Any] = field(default_factory=dict)
    stand_ins: dict[str, str] = field(default_factory=dict)  # this sweep's workload label -> the claims' label

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict, source: str) -> "ReportSpec":
        """The copy a sweep leaves in its results directory (report-spec.json)."""
        try:
            claims = tuple(Claim(**{**c, "policies": tuple(c["policies"]),
                                    "paper": {p: tuple(v) for p, v in c["paper"].items()}}) for c in data["claims"])
            return cls(data["paper"], data["source"], claims, dict(data.get("primary", {})),
                       dict(data.get("where", {})), dict(data.get(STAND_INS, {})))
        except (KeyError, TypeError) as exc:
            raise InputError(source, None, f"not a report spec written by artist sweep ({exc})") from None


def _filter(f: Fields, key: str) -> dict[str, Any]:
    raw = f.raw(key, {})
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, _SCALAR) for k, v in raw.items()):
        raise f.error(key, f"expected a mapping of results columns to single values, got {raw!r}")
    return dict(raw)


def _names(f: Fields, key: str) -> tuple[str, ...]:
    raw = f.raw(key)
    if not isinstance(raw, list) or not raw or not all(isinstance(p, str) and p for p in raw):
        raise f.error(key, f"expected a non-empty list of policy labels, got {raw!r}")
    if len(set(raw)) != len(raw):
        raise f.error(key, f"a policy is listed twice: {raw}")
    return tuple(raw)


def _claim(f: Fields, ids: set[str]) -> Claim:
    f.unknown_keys(CLAIM_FIELDS)
    cid = f.string("id")
    if cid in ids:
        raise f.error("id", f"claim id {cid!r} used twice")
    ids.add(cid)
    text, metric = f.string("text"), f.string("metric")
    if f.has("order") == f.has("trend"):
        raise f.error("order", "give exactly one of 'order' (policies in ascending metric) or 'trend'")
    if f.has("order"):
        policies = _names(f, "order")
        if len(policies) < 2:
            raise f.error("order", "an order needs at least two policies")
        if f.has("over") or f.has("policies"):
            raise f.error("over" if f.has("over") else "policies", "belongs to a trend claim, not an order")
        trend, over, per = None, None, (f.string("per") if f.has("per") else None)
    else:
        trend = f.string("trend")
        if trend not in TRENDS:
            raise f.error("trend", f"expected one of {', '.join(TRENDS)}, got {trend!r}")
        over, policies, per = f.string("over"), _names(f, "policies"), None
        if f.has("per"):
            raise f.error("per", "belongs to an order claim; a trend runs over 'over'")
    paper = {}
    if f.has("paper"):
        raw = f.raw("paper")
        if not isinstance(raw, dict):
            raise f.error("paper", f"expected a mapping policy -> the paper's figure, got {raw!r}")
        pf = Fields(raw, f.source, f"{f.prefix}paper.")
        for p, value in raw.items():
            if isinstance(value, list):  # a range
                if len(value) != 2:
                    raise pf.error(str(p), f"a range is [low, high], got {value!r}")
                lo, hi = (Fields({"v": v}, f.source, f"{pf.prefix}{p}[{i}]").number("v") for i, v in enumerate(value))
                if not lo <= hi:
                    raise pf.error(str(p), f"a range needs low <= high, got {value!r}")
                paper[str(p)] = (lo, hi)
            else:
                paper[str(p)] = (pf.number(p),)
        if not f.has("paper_source"):
            raise f.error("paper_source", "the paper's figures need their source (figure or table)")
    normalise_to = f.string("normalise_to") if f.has("normalise_to") else None
    return Claim(cid, text, metric, policies, trend, over, per, f.number("scale", 1.0, positive=True),
                 f.string("unit", ""), paper, f.string("paper_source", ""), _filter(f, "where"), normalise_to)


def parse_report(f: Fields, base: Path | None = None) -> ReportSpec:
    """The `report:` mapping of a sweep spec; errors name the spec file and the dotted field.
    `report: {same_as: other.yaml}` (relative to base, the spec's directory) takes that spec's report
    section, so `artist report` puts both sweeps' results in one section (e.g. a paper's ablation)."""
    if f.has(SAME_AS):
        f.unknown_keys({SAME_AS, STAND_INS})
        other = (base or Path(".")) / f.string(SAME_AS)
        if not other.is_file():
            raise f.error(SAME_AS, f"no such sweep spec: {other}")
        data = load_yaml_mapping(other)
        of = Fields(data, str(other))
        if not of.has("report") or (isinstance(data["report"], dict) and SAME_AS in data["report"]):
            raise f.error(SAME_AS, f"{other} has no report section of its own")
        shared = parse_report(of.sub("report"))
        return replace(shared, stand_ins=_stand_ins(f, shared)) if f.has(STAND_INS) else shared
    if f.has(STAND_INS):
        raise f.error(STAND_INS, f"belongs to a report that is the {SAME_AS} of another sweep's")
    f.unknown_keys(REPORT_FIELDS)
    raw = f.raw("claims")
    if not isinstance(raw, list) or not raw:
        raise f.error("claims", "expected a non-empty list of claims")
    ids: set[str] = set()
    claims = tuple(_claim(Fields(c, f.source, f"{f.prefix}claims[{i}]."), ids) for i, c in enumerate(raw))
    return ReportSpec(f.string("paper"), f.string("source"), claims, _filter(f, "primary"), _filter(f, "where"))


def _stand_ins(f: Fields, shared: ReportSpec) -> dict[str, str]:
    """this sweep's workload label -> a workload label the shared claims filter on (checked here; that the
    sweep runs the stand-in is checked by check_against_workloads)."""
    raw = f.raw(STAND_INS)
    if not isinstance(raw, dict) or not raw or not all(isinstance(k, str) and isinstance(v, str)
                                                       for k, v in raw.items()):
        raise f.error(STAND_INS, f"expected a mapping of this sweep's workload labels to the claims', got {raw!r}")
    named = {str(w["workload"]) for w in (shared.where, *(c.where for c in shared.claims)) if "workload" in w}
    for mine, theirs in raw.items():
        if theirs not in named:
            raise f.error(f"{STAND_INS}.{mine}", f"{theirs!r} is not a workload the claims filter on "
                                                 f"({', '.join(sorted(named)) or 'none'})")
    if len(set(raw.values())) != len(raw):
        raise f.error(STAND_INS, f"two workloads stand in for the same one: {raw}")
    return dict(raw)


def check_against_workloads(spec: ReportSpec, labels: list[str], source: str) -> None:
    """Every stand-in must be a workload the sweep runs."""
    for mine in spec.stand_ins:
        if mine not in labels:
            raise InputError(source, f"field 'report.{STAND_INS}.{mine}'",
                             f"not among the sweep's workloads ({', '.join(labels)})")


def check_against_policies(spec: ReportSpec, labels: list[str], source: str) -> None:
    """Every policy a claim names must be one the sweep runs (a typo would make a claim 'n/a' silently)."""
    for i, claim in enumerate(spec.claims):
        for p in claim.policies + tuple(claim.paper) + ((claim.normalise_to,) if claim.normalise_to else ()):
            if p not in labels:
                raise InputError(source, f"field 'report.claims[{i}]'",
                                 f"policy {p!r} is not among the sweep's policies ({', '.join(labels)})")
