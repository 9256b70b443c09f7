"""How an elastic run is accounted: ArtISt's own models, or the rules of a paper's own simulator.

    elastic: {rules: pollux-artifact}                          # a preset
    elastic: {rules: {preset: pollux-artifact, step_time: network}}   # a preset with one rule switched back

ArtISt's defaults (`artist`) are its own models. The presets reproduce the rules by which the papers'
simulators account the same runs, so that ArtISt can be checked against those simulators on their own
workloads (docs/pages/results/parity.md), and each of ArtISt's models can then be switched on one at a time:

- step_time: `network` (compute from the measured tables, synchronisation from ArtISt's network model of
  the placement: steptime.py) or `measured` (the whole step from the measured tables, interpolated as the
  artifacts do: measured_steptime.py);
- first_start_delay: false (a job's first start is free: ArtISt) or true (the restart delay is charged at
  the first start as well, not counted as a restart: both artifacts set the delay at every allocation,
  Pollux's simulator.py Job.reallocate);
- single_gpu_apps: applications held to one GPU by the named policies (the Pollux artifact gives NCF at
  most one replica under Pollux and Optimus: simulator.py get_pollux_job_info, get_optimus_job_info);
  ArtISt lets every application grow;
- retune_every_round: false (a job re-picks (m, s) at a new allocation and at each epoch end, as AdaptDL's
  dataloader does once per pass) or true (also at the end of every round: the Pollux artifact's Job.step
  calls update_local_bsz after every simulated step, so a job tries the batch its refitted model prefers
  every minute, and its model sees new local batches sooner);
- goodput_slowdown: per application, a factor its training progress is divided by (the Sia artifact
  multiplies every job's goodput by 1 / SLOWDOWNS[application], "slowdown values for each job fitted to
  real-world data": sia-simulator/simulator_config.py and job.py Job.step); ArtISt has none.

Sources: petuum/adaptdl, branch osdi21-artifact (commit c793c708), simulator/simulator.py; siasosp23/artifacts
(commit aaf7a0de), sia-simulator/simulator_config.py and job.py (both read 2026-11-28).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

STEP_TIMES = ("network", "measured")


@dataclass(frozen=True)
class ElasticRules:
    step_time: str = "network"
    first_start_delay: bool = False
    retune_every_round: bool = False
    # {application: (policy names that hold it to one GPU, ...)}
    single_gpu_apps: dict = field(default_factory=dict)
    # {application: factor its progress is divided by}
    goodput_slowdown: dict = field(default_factory=dict)

    def __post_init__(self):
        # messages without the field's name: rules_from_fields puts them after it
        if self.step_time not in STEP_TIMES:
            raise ValueError(f"one of {', '.join(STEP_TIMES)}, got {self.step_time!r}")
        bad = {k: v for k, v in self.goodput_slowdown.items() if not 0 < v < 1e3}
        if bad:
            raise ValueError(f"factors must be in (0, 1000), got {bad}")

    @property
    def is_default(self) -> bool:
        return self == ElasticRules()

    def identity(self) -> dict:
        """The rules as they enter a run's identity (only when not the default: runs keep their ids)."""
        out = asdict(self)
        out["single_gpu_apps"] = {k: sorted(v) for k, v in sorted(self.single_gpu_apps.items())}
        out["goodput_slowdown"] = dict(sorted(self.goodput_slowdown.items()))
        return out

    def max_gpus(self, app: str, policy: str) -> int | None:
        """1 where these rules hold the application to one GPU under this policy, else None."""
        return 1 if policy in self.single_gpu_apps.get(app, ()) else None


PRESETS = {
    "artist": ElasticRules(),
    # petuum/adaptdl osdi21-artifact simulator/: applications.py get_throughput (measured step times),
    # simulator.py Job.reallocate (rescale_time = 30 at every allocation, the first included),
    # get_pollux_job_info / get_optimus_job_info (ncf: max_replicas = 1)
    "pollux-artifact": ElasticRules(step_time="measured", first_start_delay=True,
                                    single_gpu_apps={"ncf": ("pollux", "optimus-oracle")},
                                    retune_every_round=True),
}
# siasosp23/artifacts sia-simulator/simulator_config.py SLOWDOWNS (the authors' calibration of their simulator
# to their testbed runs), applied as job.py's goodput x 1 / SLOWDOWNS[app]
SIA_SLOWDOWNS = {"bert": 1.2, "cifar10": 1.8, "deepspeech2": 1.2, "imagenet": 1.2, "ncf": 1.5, "yolov3": 1.2}
PRESETS["sia-artifact"] = ElasticRules(step_time="measured", first_start_delay=True, goodput_slowdown=SIA_SLOWDOWNS)
KEYS = ("preset", "step_time", "first_start_delay", "retune_every_round", "single_gpu_apps", "goodput_slowdown")


def rules_from_fields(f) -> ElasticRules:
    """The rules of a spec's `elastic.rules` (a preset's name, or a mapping: preset and rules switched),
    refused in one line naming the field."""
    if not f.has("rules"):
        return PRESETS["artist"]
    raw = f.data["rules"]
    if isinstance(raw, str):
        if raw not in PRESETS:
            raise f.error("rules", f"unknown preset {raw!r}; known: {', '.join(PRESETS)}")
        return PRESETS[raw]
    rf = f.sub("rules")
    rf.unknown_keys(set(KEYS))
    preset = rf.string("preset", "artist")
    if preset not in PRESETS:
        raise rf.error("preset", f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
    rules = PRESETS[preset]
    if rf.has("step_time"):
        rules = _switched(rf, rules, "step_time", rf.string("step_time"))
    if rf.has("first_start_delay"):
        rules = replace(rules, first_start_delay=rf.boolean("first_start_delay"))
    if rf.has("retune_every_round"):
        rules = replace(rules, retune_every_round=rf.boolean("retune_every_round"))
    if rf.has("single_gpu_apps"):
        apps = rf.data["single_gpu_apps"]
        if not isinstance(apps, dict) or not all(isinstance(k, str) and isinstance(v, list)
                                                 and all(isinstance(p, str) for p in v) for k, v in apps.items()):
            raise rf.error("single_gpu_apps", "a mapping of application to a list of policy names")
        rules = replace(rules, single_gpu_apps={k: tuple(v) for k, v in apps.items()})
    if rf.has("goodput_slowdown"):
        factors = rf.data["goodput_slowdown"]
        if not isinstance(factors, dict) or not all(isinstance(k, str) and not isinstance(v, bool)
                                                    and isinstance(v, (int, float)) for k, v in factors.items()):
            raise rf.error("goodput_slowdown", "a mapping of application to a factor in (0, 1000)")
        rules = _switched(rf, rules, "goodput_slowdown", {k: float(v) for k, v in factors.items()})
    return rules


def _switched(rf, rules: ElasticRules, key: str, value) -> ElasticRules:
    """The rules with one switched, ElasticRules' own checks refused in one line naming the field."""
    try:
        return replace(rules, **{key: value})
    except ValueError as exc:
        raise rf.error(key, str(exc)) from None
