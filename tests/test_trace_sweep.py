"""A published trace as a sweep workload: `FORMAT:path=...` resolved against the spec's directory, the
run identity made of the options and the file's contents (not its path), bad options named by field."""

from __future__ import annotations

import shutil

import pytest

from artist.errors import InputError
from artist.sweep.spec import load_sweep_spec
from artist.workload import load_models
from artist.workload.traces.load import load_trace
from artist.workload.traces.options import TraceOptions

from conftest import REPO

PHILLY = REPO / "tests" / "data" / "traces" / "philly_cluster_job_log.json"


def spec_in(directory, workload: str):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "traces").mkdir(exist_ok=True)
    shutil.copy(PHILLY, directory / "traces" / "log.json")
    path = directory / "spec.yaml"
    path.write_text(f"name: t\ntopology: {REPO / 'topologies' / 'dally-3tier.yaml'}\nracks: [1]\n"
                    f"policies: [fifo]\nworkloads:\n  - '{workload}'\nseeds: [0, 3]\n")
    return path


def test_trace_workload_in_a_sweep(tmp_path):
    spec = load_sweep_spec(spec_in(tmp_path / "a", "philly:path=traces/log.json,busiest_hours=1,rate=2/h"))
    assert [r.axes["seed"] for r in spec.runs] == [0, 3]
    expected = load_trace(PHILLY, load_models(), 3, "philly", TraceOptions(busiest_hours=1, rate_per_hour=2))[0]
    assert list(spec.runs[1].jobs) == expected
    # The same trace and options elsewhere on disk: the same runs.
    moved = load_sweep_spec(spec_in(tmp_path / "b", "philly:path=traces/log.json,busiest_hours=1,rate=2/h"))
    assert [r.run_id for r in moved.runs] == [r.run_id for r in spec.runs]
    other = load_sweep_spec(spec_in(tmp_path / "c", "philly:path=traces/log.json,busiest_hours=2,rate=2/h"))
    assert other.runs[0].run_id != spec.runs[0].run_id


@pytest.mark.parametrize("workload, problem", [
    ("philly:busiest_hours=1", "give the trace as path=FILE once"),
    ("philly:path=traces/none.json", "no such trace"),
    ("philly:path=traces/log.json,rate=lots", "parameter 'rate'"),
])
def test_bad_trace_workloads_name_the_field(tmp_path, workload, problem):
    with pytest.raises(InputError, match=rf"spec\.yaml: field 'workloads\[0\].*{problem}"):
        load_sweep_spec(spec_in(tmp_path, workload))
