"""What the cluster is asked to run: model profiles, jobs, trace readers and job generators.

- model.py: ModelProfile (gradients in backward order, compute time), load_models
- job.py: Job
- traces.py: the canonical trace CSV and Helios' cluster_log.csv
- generators.py: JobMix, batch_jobs, poisson_jobs, replayed_jobs (arrivals on a trace's gaps)
- spec.py: a workload argument (a trace path or a generator text) -> jobs

The names below are the module's public names from before it became a package.
"""

from artist.workload.generators import JobMix, batch_jobs, poisson_jobs
from artist.workload.job import Job
from artist.workload.model import (DDP_BUCKET_CAP_BYTES, DEFAULT_FORWARD_FRACTION, DEFAULT_MODELS_DIR, ModelProfile,
                                   load_models)
from artist.workload.traces import (CANONICAL_COLUMNS, HELIOS_COLUMNS, OPTIONAL_COLUMNS, read_helios_csv,
                                    read_jobs_csv, write_jobs_csv)

__all__ = [
    "CANONICAL_COLUMNS", "DDP_BUCKET_CAP_BYTES", "DEFAULT_FORWARD_FRACTION", "DEFAULT_MODELS_DIR", "HELIOS_COLUMNS",
    "OPTIONAL_COLUMNS", "Job", "JobMix", "ModelProfile", "batch_jobs", "load_models", "poisson_jobs",
    "read_helios_csv", "read_jobs_csv", "write_jobs_csv",
]
