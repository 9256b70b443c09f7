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
      figures:                          # optional: the paper's other figures, shown beside ArtISt's (no verdict)
        - id: restarts
          text: "Restarts per job"
          metric: restarts_per_job
          policy: dally
          paper: 2.29                   # or a range [low, high]
          paper_source: "Fig. 16 text"

A claim holds in a network configuration when its order (or trend) holds on the means over seeds at
every judged value. A figure is a single number of the paper (an accuracy, a count) set beside the mean
over seeds of its metric for its policy in the primary network configuration; it is shown, not judged.
Policies are matched on results.csv's `policy` column (the spec's policy labels).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from artist.errors import InputError
from artist.yamlio import Fields, load_yaml_mapping

REPORT_FIELDS = {"paper", "source", "primary", "claims", "where", "figures"}
FIGURE_FIELDS = {"id", "text", "metric", "policy", "paper", "paper_source", "scale", "unit", "where"}
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
class Figure:
    id: str
    text: str
    metric: str
    policy: str
    paper: tuple[float, ...]  # one figure, or a (low, high) range
    paper_source: str
    scale: float = 1.0
    unit: str = ""
    where: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ReportSpec:
    paper: str
    source: str
    claims: tuple[Claim, ...]
    primary: dict[str, Any] = field(default_factory=dict)
    where: dict[str, Any] = field(default_factory=dict)
    stand_ins: dict[str, str] = field(default_factory=dict)  # this sweep's workload label -> the claims' label
    figures: tuple[Figure, ...] = ()

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict, source: str) -> "ReportSpec":
        """The copy a sweep leaves in its results directory (report-spec.json)."""
        try:
            claims = tuple(Claim(**{**c, "policies": tuple(c["policies"]),
                                    "paper": {p: tuple(v) for p, v in c["paper"].items()}}) for c in data["claims"])
            figures = tuple(Figure(**{**f, "paper": tuple(f["paper"])}) for f in data.get("figures", ()))
            return cls(data["paper"], data["source"], claims, dict(data.get("primary", {})),
                       dict(data.get("where", {})), dict(data.get(STAND_INS, {})), figures)
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


def _new_id(f: Fields, ids: set[str], what: str) -> str:
    """The entry's id, added to `ids` (claims and figures share them); refused when used already."""
    new = f.string("id")
    if new in ids:
        raise f.error("id", f"{what} {new!r} used twice")
    ids.add(new)
    return new


def _claim(f: Fields, ids: set[str]) -> Claim:
    f.unknown_keys(CLAIM_FIELDS)
    cid = _new_id(f, ids, "claim id")
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
        for p in raw:
            paper[str(p)] = _paper_value(pf, p)
        if not f.has("paper_source"):
            raise f.error("paper_source", "the paper's figures need their source (figure or table)")
    normalise_to = f.string("normalise_to") if f.has("normalise_to") else None
    return Claim(cid, text, metric, policies, trend, over, per, f.number("scale", 1.0, positive=True),
                 f.string("unit", ""), paper, f.string("paper_source", ""), _filter(f, "where"), normalise_to)


def _paper_value(f: Fields, key) -> tuple[float, ...]:
    """A paper's figure under `key`: a number, or a range [low, high]."""
    value = f.raw(key)
    if not isinstance(value, list):
        return (f.number(key),)
    if len(value) != 2:
        raise f.error(str(key), f"a range is [low, high], got {value!r}")
    lo, hi = (Fields({"v": v}, f.source, f"{f.prefix}{key}[{i}]").number("v") for i, v in enumerate(value))
    if not lo <= hi:
        raise f.error(str(key), f"a range needs low <= high, got {value!r}")
    return lo, hi


def _figure(f: Fields, ids: set[str]) -> Figure:
    f.unknown_keys(FIGURE_FIELDS)
    return Figure(_new_id(f, ids, "id"), f.string("text"), f.string("metric"), f.string("policy"),
                  _paper_value(f, "paper"), f.string("paper_source"), f.number("scale", 1.0, positive=True),
                  f.string("unit", ""), _filter(f, "where"))


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
    figures_raw = f.raw("figures", [])
    if not isinstance(figures_raw, list):
        raise f.error("figures", f"expected a list of the paper's figures, got {figures_raw!r}")
    figures = tuple(_figure(Fields(x, f.source, f"{f.prefix}figures[{i}]."), ids) for i, x in enumerate(figures_raw))
    return ReportSpec(f.string("paper"), f.string("source"), claims, _filter(f, "primary"), _filter(f, "where"),
                      figures=figures)


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
    """Every policy a claim or figure names must be one the sweep runs (a typo would make it 'n/a' silently)."""
    named = [(f"claims[{i}]", p) for i, claim in enumerate(spec.claims)
             for p in claim.policies + tuple(claim.paper) + ((claim.normalise_to,) if claim.normalise_to else ())]
    named += [(f"figures[{i}]", figure.policy) for i, figure in enumerate(spec.figures)]
    for where, p in named:
        if p not in labels:
            raise InputError(source, f"field 'report.{where}'",
                             f"policy {p!r} is not among the sweep's policies ({', '.join(labels)})")
