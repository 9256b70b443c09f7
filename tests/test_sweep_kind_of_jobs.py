"""One spec dialect: `loop:` is optional, the kind of jobs is read off the spec's fields and policies, and
a spec read that way expands to the very runs (same run ids) as the same spec with `loop:` written out."""

from pathlib import Path

import pytest
import yaml

from artist.errors import InputError
from artist.sweep.spec import kind_of_jobs, load_sweep_spec
from artist.yamlio import Fields

SWEEPS = Path(__file__).resolve().parents[1] / "sweeps"


@pytest.mark.parametrize("name, loop", [("pollux", "elastic"), ("sia", "elastic"), ("crius", "crius"),
                                        ("all-policies", "elastic"), ("quick", "rigid")])
def test_a_shipped_spec_without_its_loop_field_gives_the_same_runs(name, loop):
    path = SWEEPS / f"{name}.yaml"
    data = yaml.safe_load(path.read_text())
    assert data.get("loop", loop) == loop
    written = load_sweep_spec(path, data={**data, "loop": loop})
    data.pop("loop", None)
    assert kind_of_jobs(Fields(data, str(path)))[0] == loop
    read_off = load_sweep_spec(path, data=data)
    assert [r.run_id for r in read_off.runs] == [r.run_id for r in written.runs]
    if "reduced" not in data:
        return
    reduced = load_sweep_spec(path, data=data, reduced=True)
    assert [r.run_id for r in reduced.runs] == [r.run_id for r in load_sweep_spec(path, data={**data, "loop": loop},
                                                                                    reduced=True).runs]


BASE = {"name": "mixed", "topology": "dally-3tier", "workloads": ["batch:n=4,gpus=1|2"]}


@pytest.mark.parametrize("extra, loop", [
    ({"policies": ["fifo", "dally"]}, "rigid"),
    ({"policies": ["fifo", "pollux"]}, "elastic"),  # pollux schedules elastic jobs only
    ({"policies": [{"name": "gavel"}]}, "elastic"),  # no rigid gavel: the elastic one (Crius' is on its cluster)
    ({"policies": ["fifo"], "elastic": {"round_seconds": 60}}, "elastic"),
    ({"policies": ["fifo"], "reduced": {"policies": ["sia"]}}, "elastic"),  # one kind for a spec and its reduced
    ({"policies": ["crius"], "workloads": ["crius:jobs=4"]}, "crius"),  # Crius' LLM jobs
    ({"policies": ["fifo"], "reduced": {"workloads": [{"spec": "crius:jobs=4"}]}}, "crius"),
    ({"policies": ["pollux"], "loop": "rigid"}, "rigid"),  # written out, it is taken as written
])
def test_the_kind_of_jobs_is_read_off_fields_and_policies(extra, loop):
    assert kind_of_jobs(Fields({**BASE, **extra}, "s.yaml"))[0] == loop


def test_a_rigid_and_an_elastic_policy_run_in_one_spec_without_a_loop_field(tmp_path):
    spec = load_sweep_spec(tmp_path / "mixed.yaml", data={**BASE, "policies": ["fifo", "pollux"]})
    assert [r.axes["policy"] for r in spec.runs] == ["fifo", "pollux"]
    assert all(r.elastic is not None for r in spec.runs)  # both schedule the elastic loop's jobs


def test_a_field_the_inferred_kind_refuses_is_one_line_with_the_reason(tmp_path):
    path = tmp_path / "mixed.yaml"
    with pytest.raises(InputError) as exc:
        load_sweep_spec(path, data={**BASE, "policies": ["fifo", "pollux"], "calibration": "h100-ns3"})
    text = str(exc.value)
    assert "\n" not in text and str(path) in text and "field 'calibration'" in text
    assert "elastic jobs" in text and "'pollux'" in text and "allowed:" in text
    # written out, the same refusal stays the loader's own
    with pytest.raises(InputError) as exc:
        load_sweep_spec(path, data={**BASE, "loop": "elastic", "policies": ["pollux"], "calibration": "x"})
    assert "unknown field" in str(exc.value)


def test_an_unknown_policy_still_names_the_known_ones(tmp_path):
    with pytest.raises(InputError) as exc:
        load_sweep_spec(tmp_path / "s.yaml", data={**BASE, "policies": ["nosuch"]})
    assert "unknown policy 'nosuch'" in str(exc.value) and "fifo" in str(exc.value)


@pytest.mark.parametrize("field, where", [("cluster", "topology: NAME"), ("jobs", "crius:jobs=N"),
                                          ("depth", "{name: crius, params: {depth: D}}")])
def test_a_field_of_the_older_crius_dialect_says_where_it_went(tmp_path, field, where):
    with pytest.raises(InputError) as exc:
        load_sweep_spec(tmp_path / "s.yaml", data={**BASE, "policies": ["crius"], field: 3})
    text = str(exc.value)
    assert "\n" not in text and f"field '{field}'" in text and where in text
