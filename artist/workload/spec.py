"""Turn a workload argument into jobs: a trace file or a seeded generator.

    workloads/traces/small.csv           canonical trace (job_id,arrival,model,gpus,iterations[,user,vc])
    path/to/cluster_log.csv              Helios schema (recognised by its header), models drawn with the seed
    philly:path=log.json,busiest_hours=8 a published trace or simulator workload file (artist.workload.traces.spec)
    batch:n=500                          n jobs at t = 0
    poisson:n=400,interarrival=120       n jobs, exponential gaps with that mean (seconds)
    llm:n=40,interarrival=900            LLM-zoo jobs with hybrid plans (artist/workload/llm_mix.py)
    replay:n=1000,trace=a.csv|b.csv      n jobs on the arrival gaps of published traces (any format)

Generators also take gpus=1|2|4|8 (choices), gpu_weights=.4|.3|.2|.1 (their relative
frequencies; default: uniform), min_iter=, max_iter=, models=a|b. Poisson streams also take
interarrival_gpus=G: the interarrival is stated for a cluster of G GPUs and scaled by
G / (the cluster's GPUs), so that the offered load is the same at every cluster size.
Replayed streams take their gaps from trace=FILE|FILE... (each trace's submissions in time order, the
traces end to end: artist/workload/traces/arrivals.py), scaled by one factor to a mean of interarrival= when
it is given (and by interarrival_gpus= as Poisson streams; without interarrival= the traces' own mean is the
one stated for those GPUs), the trace's own seconds otherwise; the jobs are
drawn from the mix as a Poisson stream draws them. n= may not exceed the traces' submissions.
Batch, Poisson and replayed streams also take llm_fraction=F: each job is, with probability F, an LLM-zoo job
(as the llm generator draws it, with llm_models=, llm_gpus=, global_batch=) instead of a data-parallel one,
on the same arrivals (llm_mix.mix_in_llm_jobs).
llm streams take LLM-zoo models (default: llm_mix.DEFAULT_LLM_MODELS), gpus= (default 8|16|32|64),
global_batch= (default 512) and gpu_memory_gib= (default 80) for the plan rule, plan=rule|auto, and length in steps
(min_iter default 100, max_iter default 10000).
Every parameter is bounded (artist.limits), so no generator can hang or exhaust memory.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Mapping

from artist import shipped
from artist.errors import InputError, read_input_file
from artist.limits import MAX_ARRIVAL_S, MAX_GENERATED_JOBS, MAX_GPUS, MAX_ITERATIONS, strict_float, strict_int
from artist.workload.generators import JobMix, batch_jobs, poisson_jobs, replayed_jobs
from artist.workload.job import Job
from artist.workload.model import ModelProfile
from artist.workload.traces import HELIOS_COLUMNS, read_helios_csv, read_jobs_csv
from artist.workload.traces.arrivals import arrival_gaps
from artist.workload.traces.spec import TRACE_KINDS, trace_jobs_from_spec

GENERATORS = ("batch", "poisson", "llm", "replay")


def jobs_from_spec(spec: str, models: Mapping[str, ModelProfile], seed: int,
                   cluster_gpus: int | None = None, notes: list[str] | None = None) -> list[Job]:
    """The jobs of a trace file or a generator text. cluster_gpus: the GPUs of the cluster the jobs
    will run on, which a generator with interarrival_gpus scales its arrival rate to. notes: a list that
    a `FORMAT:path=` trace's load report (kept, dropped, flagged, assumed) is appended to."""
    kind, _, params_text = spec.partition(":")
    if kind in GENERATORS:
        return _generate(kind, params_text, spec, models, seed, cluster_gpus)
    if kind in TRACE_KINDS:
        return trace_jobs_from_spec(spec, models, seed, notes)
    path = shipped.find(spec, shipped.TRACES_DIR, ".csv")  # `small`: the shipped trace
    if not path.exists():
        raise InputError(spec, None, f"no such trace file, not a shipped trace "
                                     f"({', '.join(shipped.names(shipped.TRACES_DIR, '.csv'))}) and not a generator "
                                     f"({', '.join(g + ':...' for g in GENERATORS)})")
    if path.is_dir():
        raise InputError(spec, None, "is a directory; expected a trace CSV file or a generator")
    text, _ = read_input_file(path)
    header = next(csv.reader(io.StringIO(text, newline="")), [])
    if set(HELIOS_COLUMNS).issubset(h.strip() for h in header):
        return read_helios_csv(path, sorted(models), seed, models)
    return read_jobs_csv(path, models)


def job_too_large(jobs, gpus: int) -> Job | None:
    """The largest job if it asks for more than `gpus` GPUs (it could never start), else None."""
    biggest = max(jobs, key=lambda j: j.gpus)
    return biggest if biggest.gpus > gpus else None


class _Params:
    """key=value parameters of a generator, each read once with its bounds; errors name it."""

    def __init__(self, spec: str, kind: str, text: str):
        self.spec = spec
        self.values: dict[str, str] = {}
        for item in filter(None, text.split(",")):
            key, eq, value = item.partition("=")
            if not eq:
                raise InputError(spec, f"parameter '{item}'", "expected key=value")
            key = key.strip()
            if key in self.values:
                raise InputError(spec, f"parameter '{key}'", "given twice")
            self.values[key] = value.strip()
        allowed = {"n", "gpus", "gpu_weights", "min_iter", "max_iter", "models"}
        if kind in ("poisson", "llm", "replay"):
            allowed |= {"interarrival", "interarrival_gpus"}
        if kind == "replay":
            allowed.add("trace")
        if kind in ("batch", "poisson", "replay"):
            allowed |= {"llm_fraction", "llm_models", "llm_gpus", "global_batch"}
        if kind == "llm":
            allowed |= {"global_batch", "gpu_memory_gib", "plan"}
        for key in self.values:
            if key not in allowed:
                raise InputError(spec, f"parameter '{key}'", f"unknown; allowed: {', '.join(sorted(allowed))}")

    def error(self, key: str, problem: str) -> InputError:
        return InputError(self.spec, f"parameter '{key}'", problem)

    def integer(self, key: str, default: int, minimum: int, maximum: int) -> int:
        text = self.values.get(key)
        if text is None:
            return default
        try:
            value = strict_int(text)
        except ValueError:
            raise self.error(key, f"not an integer: {text!r}") from None
        if not minimum <= value <= maximum:
            raise self.error(key, f"must be in [{minimum}, {maximum}], got {value}")
        return value

    def number(self, key: str, default: float, maximum: float) -> float:
        text = self.values.get(key)
        if text is None:
            return default
        try:
            value = strict_float(text)
        except ValueError:
            raise self.error(key, f"not a number: {text!r}") from None
        if not (math.isfinite(value) and 0 < value <= maximum):
            raise self.error(key, f"must be > 0 and <= {maximum:g}, got {text}")
        return value

    def weights(self, key: str, count: int) -> tuple[float, ...] | None:
        """count relative frequencies separated by '|' (None when not given); each >= 0, not all 0."""
        text = self.values.get(key)
        if text is None:
            return None
        try:
            values = tuple(strict_float(x) for x in text.split("|"))
        except ValueError:
            raise self.error(key, f"expected numbers separated by '|', got {text!r}") from None
        if len(values) != count:
            raise self.error(key, f"{len(values)} weights for {count} GPU counts (gpus=): give one weight per count")
        if not all(math.isfinite(v) and v >= 0 for v in values) or not 0 < sum(values) < math.inf:
            # (a sum that overflows to inf leaves no probabilities to draw with)
            raise self.error(key, f"weights must be finite, >= 0 and not all 0, with a finite sum, got {text!r}")
        return values


def _generate(kind: str, params_text: str, spec: str, models, seed: int, cluster_gpus: int | None) -> list[Job]:
    p = _Params(spec, kind, params_text)
    if kind == "llm":
        from artist.workload.llm_mix import DEFAULT_LLM_GPUS, DEFAULT_LLM_MODELS
        from artist.workload.zoo import ZOO

        models = ZOO
        default_models, choices = DEFAULT_LLM_MODELS, DEFAULT_LLM_GPUS
    else:
        default_models, choices = tuple(sorted(models)), JobMix.gpu_choices  # the dataclass default
    names = tuple(p.values["models"].split("|")) if "models" in p.values else default_models
    for name in names:
        if name not in models:
            raise p.error("models", f"unknown model {name!r}; known: {', '.join(sorted(models))}")
    if "gpus" in p.values:
        choices = _gpu_counts(p, "gpus")
    lengths = (100, 10_000) if kind == "llm" else (1000, 100_000)  # LLM jobs: training steps of seconds each
    min_iter = p.integer("min_iter", lengths[0], 1, MAX_ITERATIONS)
    max_iter = p.integer("max_iter", max(lengths[1], min_iter), 1, MAX_ITERATIONS)
    if min_iter > max_iter:
        raise p.error("min_iter", f"min_iter {min_iter} > max_iter {max_iter}")
    mix = JobMix(models=names, gpu_choices=choices, gpu_weights=p.weights("gpu_weights", len(choices)),
                 min_iterations=min_iter, max_iterations=max_iter)
    n = p.integer("n", 100, 1, MAX_GENERATED_JOBS)
    if kind == "batch":
        return _with_llm_jobs(p, batch_jobs(n, mix, seed), 1.0, seed)
    if kind == "replay":
        return _replayed(p, n, mix, seed, cluster_gpus)
    interarrival = _interarrival(p, cluster_gpus)
    if kind == "llm":
        from artist.workload.llm_mix import DEFAULT_GLOBAL_BATCH, llm_jobs

        global_batch = p.integer("global_batch", DEFAULT_GLOBAL_BATCH, 1, 1 << 24)
        memory = p.number("gpu_memory_gib", 80.0, 1 << 20) * 2**30
        rule = p.values.get("plan", "rule")
        if rule not in ("rule", "auto"):
            raise p.error("plan", f"expected rule (default_plan) or auto (the fastest on each placement), got {rule!r}")
        try:
            jobs = llm_jobs(n, mix, interarrival, seed, global_batch, memory, auto=rule == "auto")
        except ValueError as exc:
            raise p.error("models", str(exc)) from None
    else:
        jobs = _with_llm_jobs(p, poisson_jobs(n, mix, interarrival, seed), interarrival, seed)
    return _within_limit(p, jobs)


def _within_limit(p: _Params, jobs: list[Job]) -> list[Job]:
    if jobs[-1].arrival > MAX_ARRIVAL_S:
        raise p.error("interarrival", f"the last of {len(jobs)} arrivals falls at {jobs[-1].arrival:.3g} s, past "
                                      f"the {MAX_ARRIVAL_S:g} s limit (artist.limits): use fewer jobs or shorter gaps")
    return jobs


def _interarrival(p: _Params, cluster_gpus: int | None, default: float = 60.0) -> float:
    """interarrival= (seconds), scaled by interarrival_gpus= to the cluster's size when given."""
    interarrival = p.number("interarrival", default, MAX_ARRIVAL_S)
    if "interarrival_gpus" in p.values:
        stated_for = p.integer("interarrival_gpus", 0, 1, MAX_GPUS)
        if cluster_gpus is None:
            raise p.error("interarrival_gpus", "scales the interarrival to the cluster's size, which is not known "
                                               "here; give the workload to a command that runs it on a topology")
        interarrival = interarrival * stated_for / cluster_gpus  # the same offered load at every cluster size
    return interarrival


def _replayed(p: _Params, n: int, mix: JobMix, seed: int, cluster_gpus: int | None) -> list[Job]:
    """replay: the traces' gaps (module docstring), scaled to interarrival= when it is given."""
    paths = [Path(t) for t in p.values.get("trace", "").split("|") if t.strip()]
    if not paths:
        raise p.error("trace", "required: trace=FILE or trace=FILE|FILE (published traces whose arrival gaps "
                               "the jobs take)")
    for path in paths:
        if not path.exists():
            raise p.error("trace", f"no such file: {path}")
    gaps = arrival_gaps(paths)
    if n - 1 > len(gaps):
        raise p.error("n", f"{n} jobs need {n - 1} arrival gaps; the traces give {len(gaps)}")
    gaps = gaps[:n - 1]
    if "interarrival" in p.values or "interarrival_gpus" in p.values:
        if not gaps.sum() > 0:
            raise p.error("trace", "every job of the traces arrives at once: no gaps to scale to interarrival=")
        gaps = gaps * (_interarrival(p, cluster_gpus, float(gaps.mean())) / gaps.mean())
    mean = float(gaps.mean()) if len(gaps) else 1.0
    return _within_limit(p, _with_llm_jobs(p, replayed_jobs(n, mix, gaps, seed), mean, seed))


def _with_llm_jobs(p: _Params, jobs: list[Job], interarrival: float, seed: int) -> list[Job]:
    """The data-parallel jobs as drawn, or with llm_fraction= a share of them swapped for LLM-zoo jobs
    on the same arrivals (llm_mix.mix_in_llm_jobs): llm_models= and llm_gpus= as the llm generator's
    models= and gpus= (same defaults), its default length (100 to 10 000 steps) and plan rule."""
    llm_keys = [k for k in ("llm_models", "llm_gpus", "global_batch") if k in p.values]
    if "llm_fraction" not in p.values:
        if llm_keys:
            raise p.error(llm_keys[0], "only with llm_fraction= (the share of jobs that are LLM-zoo jobs)")
        return jobs
    fraction = p.number("llm_fraction", 0.0, 1.0)
    from artist.workload.llm_mix import (DEFAULT_GLOBAL_BATCH, DEFAULT_LLM_GPUS, DEFAULT_LLM_MODELS, llm_jobs,
                                         mix_in_llm_jobs)
    from artist.workload.zoo import ZOO

    names = tuple(p.values["llm_models"].split("|")) if "llm_models" in p.values else DEFAULT_LLM_MODELS
    for name in names:
        if name not in ZOO:
            raise p.error("llm_models", f"unknown LLM-zoo model {name!r}; known: {', '.join(sorted(ZOO))}")
    choices = _gpu_counts(p, "llm_gpus") if "llm_gpus" in p.values else DEFAULT_LLM_GPUS
    mix = JobMix(models=names, gpu_choices=choices, min_iterations=100, max_iterations=10_000)
    global_batch = p.integer("global_batch", DEFAULT_GLOBAL_BATCH, 1, 1 << 24)
    try:
        llm = llm_jobs(len(jobs), mix, interarrival, seed, global_batch)
    except ValueError as exc:
        raise p.error("llm_models", str(exc)) from None
    return mix_in_llm_jobs(jobs, llm, fraction, seed)


def _gpu_counts(p: _Params, key: str) -> tuple[int, ...]:
    """GPU counts separated by '|', each in [1, MAX_GPUS]."""
    try:
        choices = tuple(strict_int(x) for x in p.values[key].split("|"))
    except ValueError:
        raise p.error(key, f"expected integers separated by '|', got {p.values[key]!r}") from None
    bad = [c for c in choices if not 1 <= c <= MAX_GPUS]
    if bad:
        raise p.error(key, f"GPU counts must be in [1, {MAX_GPUS}], got {bad[0]}")
    return choices
