"""Turn a workload argument into jobs: a trace file or a seeded generator.

    workloads/traces/small.csv           canonical trace (job_id,arrival,model,gpus,iterations[,user,vc])
    path/to/cluster_log.csv              Helios schema (recognised by its header), models drawn with the seed
    batch:n=500                          n jobs at t = 0
    poisson:n=400,interarrival=120       n jobs, exponential gaps with that mean (seconds)

Generators also take gpus=1|2|4|8 (choices), min_iter=, max_iter=.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Mapping

from artist.errors import InputError
from artist.workload import (HELIOS_COLUMNS, Job, JobMix, ModelProfile, batch_jobs, poisson_jobs,
                             read_helios_csv, read_jobs_csv)

GENERATORS = ("batch", "poisson")


def jobs_from_spec(spec: str, models: Mapping[str, ModelProfile], seed: int) -> list[Job]:
    kind, _, params_text = spec.partition(":")
    if kind in GENERATORS:
        return _generate(kind, params_text, spec, models, seed)
    path = Path(spec)
    if not path.exists():
        raise InputError(spec, None, f"no such trace file, and not a generator ({', '.join(g + ':...' for g in GENERATORS)})")
    with open(path, newline="") as fh:
        header = next(csv.reader(fh), [])
    if set(HELIOS_COLUMNS).issubset(h.strip() for h in header):
        return read_helios_csv(path, sorted(models), seed, models)
    return read_jobs_csv(path, models)


def _generate(kind: str, params_text: str, spec: str, models, seed: int) -> list[Job]:
    params: dict[str, str] = {}
    for item in filter(None, params_text.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise InputError(spec, f"parameter '{item}'", "expected key=value")
        params[key.strip()] = value.strip()
    allowed = {"n", "gpus", "min_iter", "max_iter", "models"} | ({"interarrival"} if kind == "poisson" else set())
    for key in params:
        if key not in allowed:
            raise InputError(spec, f"parameter '{key}'", f"unknown; allowed: {', '.join(sorted(allowed))}")

    def integer(key, default):
        try:
            return int(params.get(key, default))
        except ValueError:
            raise InputError(spec, f"parameter '{key}'", f"not an integer: {params[key]!r}") from None

    names = tuple(params["models"].split("|")) if "models" in params else tuple(sorted(models))
    for name in names:
        if name not in models:
            raise InputError(spec, "parameter 'models'", f"unknown model {name!r}")
    choices = JobMix.gpu_choices  # the dataclass default
    if "gpus" in params:
        try:
            choices = tuple(int(x) for x in params["gpus"].split("|"))
        except ValueError:
            raise InputError(spec, "parameter 'gpus'", f"expected integers separated by '|', got {params['gpus']!r}") from None
    mix = JobMix(models=names, gpu_choices=choices, min_iterations=integer("min_iter", 1000),
                 max_iterations=integer("max_iter", 100_000))
    n = integer("n", 100)
    if kind == "batch":
        return batch_jobs(n, mix, seed)
    try:
        gap = float(params.get("interarrival", 60.0))
    except ValueError:
        raise InputError(spec, "parameter 'interarrival'", f"not a number: {params['interarrival']!r}") from None
    return poisson_jobs(n, mix, gap, seed)
