"""The documentation is checked against the code it documents, so that it cannot drift:

- every example of the formats reference (docs/pages/reference/formats.md) loads with the real loader, and
  the values the page documents (units, defaults of fields the example leaves out) are what the loader
  returns;
- the field tables of the topology, model-profile and sweep-spec formats list exactly the fields the
  loaders accept (read from the loaders' own `Fields.unknown_keys` calls while they load the examples);
- the two set-up commands are README.md's first block, and CI runs them;
- every column the code writes to its tables is documented with its unit (reference/outputs.md);
- the limits table gives artist.limits' values (reference/errors-and-limits.md).
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

import pytest
import yaml

import docs_pages
from artist import limits, yamlio
from artist.workload import load_models
from docs_pages import PAGES, README_PATH, table_rows
from docs_pages import subsections as _subsections

REPO = Path(__file__).resolve().parent.parent
README = README_PATH.read_text(encoding="utf-8")
FORMATS = PAGES / "reference" / "formats.md"
OUTPUTS = PAGES / "reference" / "outputs.md"
LIMITS = PAGES / "reference" / "errors-and-limits.md"

# The examples, by their fenced block's info string: the language and the file each example is.
EXAMPLES = {
    "topology": 'yaml title="topology.yaml"',
    "model-profile": 'yaml title="alexnet.yaml"',
    "trace": 'csv title="trace.csv"',
    "helios-trace": 'csv title="cluster_log.csv"',
    "sweep-spec": 'yaml title="sweeps/example.yaml"',
}
EXAMPLE_KINDS = tuple(EXAMPLES.values())
FORMAT_SECTIONS = {
    "topology": "## Topology YAML",
    "model-profile": "## Model profile YAML",
    "trace": "## Trace CSV (canonical)",
    "helios-trace": "## Helios trace CSV",
    "sweep-spec": "## Sweep spec YAML",
}
UNITS_SECTION = "# Output tables and units"
LIMITS_SECTION = "# Errors, exit codes and limits"

SETUP_COMMANDS = [
    "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' -c .ci/constraints.txt"
    " && .venv/bin/python run_sweep.py sweeps/quick.yaml",
    ".venv/bin/python -m pytest -q",
]

# --------------------------------------------------------------------------- reading the pages


def fenced_blocks(path: Path = README_PATH) -> list[tuple[str, str]]:
    """(info string, body) of every fenced block of a page (README.md by default), in order."""
    return docs_pages.fenced_blocks(path)


def examples(kind: str, path: Path = FORMATS) -> list[str]:
    return docs_pages.examples(EXAMPLES.get(kind, kind), path)


def example(kind: str, path: Path = FORMATS) -> str:
    """A format's example (by its name in EXAMPLES, or a fenced block's whole info string)."""
    return docs_pages.example(EXAMPLES.get(kind, kind), path)


def section(heading: str, path: Path = FORMATS) -> list[str]:
    """The lines under a heading of a page (the formats reference by default)."""
    return docs_pages.section(heading, path)


def subsections(heading: str, path: Path = OUTPUTS) -> dict[str, list[str]]:
    return _subsections(heading, path)


def documented_fields(kind: str) -> dict[str, list[str]]:
    """Field name -> its table row, from the format's section of the formats reference."""
    rows = table_rows(section(FORMAT_SECTIONS[kind]))
    assert rows, f"the formats reference's {kind} section has no field table"
    return {name: cells for names, cells in rows for name in names}


def documented_default(kind: str, field: str):
    """The documented default of a field (the table's third column), parsed as YAML: the first
    word of the cell, code-span backticks removed."""
    cell = documented_fields(kind)[field][2].replace("`", "")
    return yaml.safe_load(cell.split()[0])


# --------------------------------------------------------------------------- writing the examples


def write_example(directory: Path, kind: str, name: str) -> Path:
    path = directory / name
    path.write_text(example(kind), encoding="utf-8")
    return path


def sweep_spec_in_repo_layout(tmp_path: Path) -> Path:
    """The example spec at SWEEPS/example.yaml beside links to the repository's topologies/,
    workloads/ and calibration/, so its ../ paths resolve as they would from sweeps/."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    for name in ("topologies", "workloads", "calibration"):
        (tmp_path / name).symlink_to(REPO / name, target_is_directory=True)
    (tmp_path / "sweeps").mkdir()
    return write_example(tmp_path / "sweeps", "sweep-spec", "example.yaml")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ARTIST_CACHE_DIR", str(tmp_path / "cache"))


# --------------------------------------------------------------------------- (a) examples load


def test_the_formats_reference_has_an_example_of_every_format():
    infos = [info for info, _ in fenced_blocks(FORMATS)]
    for kind in EXAMPLE_KINDS:
        assert kind in infos, f"{FORMATS.name} has no ```{kind} example"


def test_topology_example_loads_with_documented_units_and_defaults(tmp_path):
    from artist.topology import Topology

    path = write_example(tmp_path, "topology", "topology.yaml")
    data = yaml.safe_load(path.read_text())
    topo = Topology.from_yaml(path)
    assert topo.gpus == data["racks"] * data["machines_per_rack"] * data["gpus_per_machine"]
    for tier in ("machine", "rack", "spine"):
        raw = data["tiers"][tier]
        # units of the table: Gb/s per link per direction, microseconds
        assert topo.tier(tier).bandwidth_bps == pytest.approx(raw["bandwidth_gbps"] * 1e9)
        assert topo.tier(tier).link_latency_s == pytest.approx(raw["link_latency_us"] * 1e-6)
        assert topo.tier(tier).switch_latency_s == pytest.approx(raw["switch_latency_us"] * 1e-6)
    # The example leaves oversubscription out: the loader uses the documented default.
    assert "oversubscription" not in data and "oversubscription" not in data["tiers"]["spine"]
    assert topo.oversubscription == documented_default("topology", "oversubscription")
    assert topo.gpu_type(data["gpu_type"]).relative_speed == data["gpu_types"][data["gpu_type"]]["relative_speed"]


def test_model_profile_example_loads_with_documented_defaults(tmp_path):
    from artist.workload import ModelProfile

    path = write_example(tmp_path, "model-profile", "model.yaml")
    data = yaml.safe_load(path.read_text())
    profile = ModelProfile.from_yaml(path)
    assert profile.total_bytes == data["params_total"] * data["gradient_dtype_bytes"]
    assert profile.compute_seconds == data["compute"]["seconds_per_iteration"]
    assert profile.reference_gpu == data["compute"]["reference_gpu"]
    for field, value in (("forward_fraction", profile.forward_fraction),
                         ("bucket_cap_bytes", profile.bucket_cap_bytes)):
        assert field not in data, f"the example should leave {field} to its default"
        assert value == pytest.approx(documented_default("model-profile", field), rel=1e-3)
    assert profile.bucket_cap_bytes == 25 * 2**20  # "25 MiB" in the table
    # A shipped profile, shown unchanged: the example is that file's content.
    shipped = ModelProfile.from_yaml(REPO / "workloads" / "models" / f"{profile.name}.yaml")
    assert profile == shipped


def test_trace_example_loads(tmp_path):
    from artist.workload import read_jobs_csv

    path = write_example(tmp_path, "trace", "trace.csv")
    rows = list(csv.DictReader(path.read_text().splitlines()))
    jobs = read_jobs_csv(path, load_models())
    assert len(jobs) == len(rows)
    # sorted by (arrival, job_id), as documented
    in_order = sorted(rows, key=lambda r: (float(r["arrival"]), r["job_id"]))
    assert [j.job_id for j in jobs] == [r["job_id"] for r in in_order]
    by_id = {r["job_id"]: r for r in rows}
    for job in jobs:
        assert job.arrival == float(by_id[job.job_id]["arrival"])
        assert job.gpus == int(by_id[job.job_id]["gpus"])
    # The example has no vc column: the documented default.
    assert "vc" not in rows[0]
    assert {j.vc for j in jobs} == {documented_default("trace", "vc")}


def test_helios_trace_example_loads(tmp_path):
    from datetime import datetime, timezone

    from artist.workload import read_helios_csv
    from artist.workload.spec import jobs_from_spec

    path = write_example(tmp_path, "helios-trace", "cluster_log.csv")
    rows = list(csv.DictReader(path.read_text().splitlines()))
    models = load_models()
    jobs = read_helios_csv(path, sorted(models), seed=0, models=models)
    gpu_rows = [r for r in rows if int(r["gpu_num"]) > 0]
    assert len(gpu_rows) < len(rows), "the example should show a CPU job (gpu_num 0), which is skipped"
    assert [j.job_id for j in jobs] == [r["job_id"] for r in gpu_rows]

    def stamp(text):
        return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()

    t0 = stamp(gpu_rows[0]["submit_time"])
    for job, row in zip(jobs, gpu_rows):
        assert job.arrival == stamp(row["submit_time"]) - t0
        assert job.gpus == int(row["gpu_num"])
        assert job.iterations == max(1, round(float(row["duration"]) / models[job.model].compute_seconds))
    # recognised by its header as a workload
    assert [j.job_id for j in jobs_from_spec(str(path), models, 0)] == [j.job_id for j in jobs]


def test_sweep_spec_example_loads_and_expands(tmp_path):
    from artist.sweep.spec import load_sweep_spec

    path = sweep_spec_in_repo_layout(tmp_path)
    text = path.read_text()
    data = yaml.safe_load(text)
    spec = load_sweep_spec(path)
    stated = re.search(r"= (\d+) runs", text)
    assert stated, "the example should state its run count ('= N runs')"
    assert len(spec.runs) == int(stated.group(1))
    assert [p.label for p in spec.policies] == [p if isinstance(p, str) else p.get("label", p["name"])
                                                for p in data["policies"]]
    # Fields the example leaves out take the documented defaults.
    assert "seeds" not in data and spec.seeds == documented_default("sweep-spec", "seeds")
    assert "models" not in data and set(spec.models) == set(load_models())
    assert spec.simulator.round_interval_s == data["simulator"]["round_interval_s"]
    assert spec.simulator.restore_seconds == data["simulator"]["restore_seconds"]
    assert spec.calibrations[0].profile is not None


# --------------------------------------------------------------------------- (b) tables = loaders


@pytest.fixture
def unknown_keys_calls(monkeypatch):
    """Every Fields.unknown_keys call while the test runs: (file, line, field prefix, allowed keys)."""
    calls = []
    original = yamlio.Fields.unknown_keys

    def recording(self, allowed):
        caller = sys._getframe(1)
        calls.append((Path(caller.f_code.co_filename).resolve(), caller.f_lineno, self.prefix, frozenset(allowed)))
        return original(self, allowed)

    monkeypatch.setattr(yamlio.Fields, "unknown_keys", recording)
    return calls


def _generic(prefix: str) -> str:
    """A field prefix as the formats reference writes it: list indices as [], user-chosen keys as <...>."""
    parts = re.sub(r"\[\d+\]", "[]", prefix).split(".")
    if len(parts) > 2 and parts[0] == "tiers":
        parts[1] = "<tier>"
    if len(parts) > 2 and parts[0] == "gpu_types":
        parts[1] = "<name>"
    return ".".join(parts)


def _load_example(kind: str, tmp_path: Path):
    if kind == "topology":
        from artist.topology import Topology

        Topology.from_yaml(write_example(tmp_path, "topology", "topology.yaml"))
        import artist.topology as module
    elif kind == "model-profile":
        from artist.workload import ModelProfile

        ModelProfile.from_yaml(write_example(tmp_path, "model-profile", "model.yaml"))
        import artist.workload.model as module
    else:
        from artist.sweep.spec import load_sweep_spec

        path = sweep_spec_in_repo_layout(tmp_path)
        load_sweep_spec(path)
        assert len(load_sweep_spec(path, reduced=True).runs) == 2  # as the example's comment says
        import artist.sweep.spec as module
    return Path(module.__file__).resolve()


@pytest.mark.parametrize("kind", ["topology", "model-profile", "sweep-spec"])
def test_format_tables_match_the_fields_the_loaders_allow(kind, tmp_path, unknown_keys_calls):
    module_file = _load_example(kind, tmp_path)
    calls = [c for c in unknown_keys_calls if c[0] == module_file]
    # The example must take the loader through every allowed-keys check it has, so that the
    # sets read below are all of them.
    source = module_file.read_text().splitlines()
    sites = [i + 1 for i, line in enumerate(source) if ".unknown_keys(" in line]
    hit = {max(s for s in sites if s <= line) for _, line, _, _ in calls}
    assert hit == set(sites), (f"the formats reference's {kind} example does not reach the unknown_keys checks on "
                               f"lines {sorted(set(sites) - hit)} of {module_file.name}: extend the example")
    allowed = {_generic(prefix) + key for _, _, prefix, keys in calls for key in keys}
    documented = set(documented_fields(kind))
    missing = sorted(allowed - documented)
    assert not missing, f"fields the {kind} loader accepts but {FORMATS.name} does not list: {missing}"
    extra = sorted(d for d in documented - allowed if not any(a.startswith(d + ".") for a in allowed))
    assert not extra, f"fields {FORMATS.name} lists for {kind} that the loader refuses: {extra}"


def test_trace_tables_match_the_readers_columns():
    from artist.workload import CANONICAL_COLUMNS, HELIOS_COLUMNS, OPTIONAL_COLUMNS

    assert set(documented_fields("trace")) == set(CANONICAL_COLUMNS + OPTIONAL_COLUMNS)
    assert set(documented_fields("helios-trace")) == set(HELIOS_COLUMNS)
    for kind in ("trace", "helios-trace"):
        header = example(kind).splitlines()[0].split(",")
        assert set(header) <= set(documented_fields(kind))


# --------------------------------------------------------------------------- (c) set-up commands


def test_setup_commands_are_the_first_block_and_what_ci_runs():
    blocks = fenced_blocks()
    info, body = blocks[0]
    assert info == "bash"
    assert [line for line in body.splitlines() if line.strip()] == SETUP_COMMANDS
    before = README.split("```", 1)[0]
    assert [line for line in before.splitlines() if line.strip()] == ["# ArtISt"], \
        "the set-up commands must be the README's first lines after the title"

    install, _, rest = SETUP_COMMANDS[0].partition(" && .venv/bin/python run_sweep.py")
    assert rest, "the first command should end by running the default sweep"
    ci = [line for line in (REPO / ".ci" / "run").read_text().splitlines() if not line.lstrip().startswith("#")]
    for command in (install, SETUP_COMMANDS[1]):
        assert any(command in line for line in ci), f".ci/run does not run {command!r} verbatim"


def test_readme_is_self_contained():
    assert "../shared" not in README
    assert "DESIGN.md" not in README
    for path in sorted(PAGES.rglob("*.md")):
        assert "../shared" not in path.read_text(encoding="utf-8"), path


# --------------------------------------------------------------------------- (d) units


UNIT_TOKENS = {"s": "s", "seconds": "s", "fraction": "fraction", "pct": "percent", "gib": "GiB"}
KINDS = {"count", "ratio", "id", "boolean", "text"}


def units_tables() -> dict[str, dict[str, list[str]]]:
    """Table heading -> {column: row} of the units section."""
    out = {}
    for heading, lines in subsections(UNITS_SECTION).items():
        out[heading] = {name: cells for names, cells in table_rows(lines) for name in names}
    assert out, "the units section has no tables"
    return out


def units_table(file_name: str) -> dict[str, list[str]]:
    matches = [rows for heading, rows in units_tables().items() if f"`{file_name}`" in heading]
    assert len(matches) == 1, f"the units section should have one table headed `{file_name}`"
    return matches[0]


def _tiny_simulation(tmp_path):
    """The formats reference's trace example through FIFO on its topology example (analytical)."""
    from artist.network.analytical import AnalyticalModel
    from artist.policies.registry import make_policy
    from artist.simulator import simulate
    from artist.topology import Topology
    from artist.workload import read_jobs_csv

    topology = Topology.from_yaml(write_example(tmp_path, "topology", "topology.yaml"))
    models = load_models()
    jobs = read_jobs_csv(write_example(tmp_path, "trace", "trace.csv"), models)
    return simulate(topology, jobs, models, make_policy("fifo"), AnalyticalModel(topology))


def test_units_tables_cover_every_column_the_code_writes(tmp_path):
    import pandas as pd

    from artist.latency_table import COLUMNS as LATENCY_COLUMNS
    from artist.metrics import write_tables
    from artist.sweep.run import run_sweep
    from artist.sweep.spec import load_sweep_spec

    written = write_tables(_tiny_simulation(tmp_path), tmp_path / "sim", formats=("csv",))
    for name in ("jobs", "summary", "utilisation"):
        columns = pd.read_csv(written[f"{name}.csv"]).columns
        undocumented = sorted(set(columns) - set(units_table(f"{name}.csv")))
        assert not undocumented, f"{name}.csv columns missing from {OUTPUTS.name}'s units tables: {undocumented}"

    # A sweep's results.csv: one run of the example spec, through the real store.
    spec = load_sweep_spec(sweep_spec_in_repo_layout(tmp_path / "sweep"))
    spec.runs = spec.runs[:1]
    report = run_sweep(spec, tmp_path / "out", n_jobs=1, use_cache=False, progress=False, plots=False)
    assert not report.failed, report.failed
    columns = pd.read_csv(report.results_csv).columns
    documented = set(units_table("results.csv")) | set(units_table("summary.csv"))
    assert not sorted(set(columns) - documented), sorted(set(columns) - documented)

    latency = [rows for heading, rows in units_tables().items() if "latency-table" in heading]
    assert latency and set(LATENCY_COLUMNS) <= set(latency[0])
    from artist.hybrid_latency_table import COLUMNS as HYBRID_COLUMNS

    assert set(HYBRID_COLUMNS) == set(units_table("artist latency-table --plan"))


def test_every_documented_column_names_its_unit():
    for heading, rows in units_tables().items():
        for column, cells in rows.items():
            unit = cells[1]
            named = [UNIT_TOKENS[t] for t in column.split("_") if t in UNIT_TOKENS]
            if named:
                assert unit == named[0], f"{heading}: {column} is in {named[0]} by its name, the table says {unit!r}"
            else:
                assert unit in KINDS, (f"{heading}: {column} has no unit in its name, so the table must call it "
                                       f"one of {sorted(KINDS)}, not {unit!r}")


def test_limits_table_matches_artist_limits():
    rows = {names[0]: cells for names, cells in table_rows(section(LIMITS_SECTION, LIMITS))}
    constants = {name: value for name, value in vars(limits).items() if name.isupper()}
    assert set(rows) == set(constants)
    for name, value in constants.items():
        assert float(rows[name][1].split()[0]) == value, f"{LIMITS.name} gives {name} as {rows[name][1]!r}, not {value}"
