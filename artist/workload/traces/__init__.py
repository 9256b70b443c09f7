"""Job traces: ArtISt's canonical CSV and the published traces and simulator workload files researchers have.

- csvrows.py: the streamed CSV row reader every CSV format shares (errors name file, line, column)
- record.py: TraceRecord (a trace's view of one job) and LoadReport (what a load kept, dropped, assumed)
- canonical.py: the canonical CSV, read and written
- one module per format: philly.py (JSON), pai.py (directory of headerless tables), helios.py, acme.py,
  pollux.py (Pollux/Sia), gavel.py (TSV), tiresias.py, crius.py; each documents the fields used and dropped
- formats.py: the formats by name and format detection
- options.py: windowing, sampling, assignment, state and bad-row options (TraceOptions)
- mapping.py: model assignment by GPU-time category or size; iterations from run time and GPU speed
- window.py: busiest N hours, jobs per hour
- load.py: load_trace (a trace -> jobs and a LoadReport); stats.py: trace_stats
- arrivals.py: a trace's arrival gaps alone, for the replay generator
- spec.py: the `FORMAT:path=...,key=value` workload text

The names below are those `artist.workload.traces` had when it was one module.
"""

from artist.workload.traces.canonical import CANONICAL_COLUMNS, OPTIONAL_COLUMNS, read_jobs_csv, write_jobs_csv
from artist.workload.traces.helios import HELIOS_COLUMNS, read_helios_csv

__all__ = ["CANONICAL_COLUMNS", "HELIOS_COLUMNS", "OPTIONAL_COLUMNS", "read_helios_csv", "read_jobs_csv",
           "write_jobs_csv"]
