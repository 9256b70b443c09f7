"""How an elastic run is accounted: ArtISt's own models, or the rules of a paper's own simulator.

    elastic: {rules: pollux-artifact}                          # a preset
    elastic: {rules: {preset: pollux-artifact, step_time: network}}   # a preset with one rule switched back

ArtISt's defaults (`artist`) are its own models. The presets reproduce the rules by which the papers'
simulators account the same runs, so that ArtISt can be checked against those simulators on their own
workloads (docs/parity.md), and each of ArtISt's models can then be switched on one at a time:

- step_time: `network` (compute from the measured tables, synchronisation from ArtISt's network model of
  the placement: steptime.py) or `measured` (the whole step from the measured tables, interpolated as the
  artifacts do: measured_steptime.py);
- first_start_delay: false (a job's first start is free: ArtISt) or true (the restart delay is charged at
  the first start as well, not counted as a restart: both artifacts set the delay at every allocation,
  Pollux's simulator.py Job.reallocate);
- single_gpu_apps: applications held to one GPU by the named policies (the Pollux artifact gives NCF at
  most one replica under Pollux and Optimus: simulator.py get_pollux_job_info, get_optimus_job_info);
  ArtISt lets every application grow.

Sources: petuum/adaptdl, branch osdi21-artifact, simulator/simulator.py (read 2026-11-28).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

STEP_TIMES = ("network", "measured")


@dataclass(frozen=True)
class ElasticRules:
    step_time: str = "network"
    first_start_delay: bool = False
    # {application: (policy names that hold it to one GPU, ...)}
    single_gpu_apps: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.step_time not in STEP_TIMES:
            raise ValueError(f"step_time must be one of {', '.join(STEP_TIMES)}, got {self.step_time!r}")

    @property
    def is_default(self) -> bool:
        return self == ElasticRules()

    def identity(self) -> dict:
        """The rules as they enter a run's identity (only when not the default: runs keep their ids)."""
        out = asdict(self)
        out["single_gpu_apps"] = {k: sorted(v) for k, v in sorted(self.single_gpu_apps.items())}
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
                                    single_gpu_apps={"ncf": ("pollux", "optimus-oracle")}),
}
KEYS = ("preset", "step_time", "first_start_delay", "single_gpu_apps")


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
        step_time = rf.string("step_time")
        if step_time not in STEP_TIMES:
            raise rf.error("step_time", f"one of {', '.join(STEP_TIMES)}, got {step_time!r}")
        rules = replace(rules, step_time=step_time)
    if rf.has("first_start_delay"):
        rules = replace(rules, first_start_delay=rf.boolean("first_start_delay"))
    if rf.has("single_gpu_apps"):
        apps = rf.data["single_gpu_apps"]
        if not isinstance(apps, dict) or not all(isinstance(k, str) and isinstance(v, list)
                                                 and all(isinstance(p, str) for p in v) for k, v in apps.items()):
            raise rf.error("single_gpu_apps", "a mapping of application to a list of policy names")
        rules = replace(rules, single_gpu_apps={k: tuple(v) for k, v in apps.items()})
    return rules
