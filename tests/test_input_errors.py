"""Bad input gets an error naming the file and the line or field."""

import re
import textwrap

import pytest

from artist.errors import InputError
from artist.policies.registry import make_policy
from artist.topology import load_topology
from artist.workload import ModelProfile, read_helios_csv, read_jobs_csv
from artist.workload.spec import jobs_from_spec

from conftest import REPO


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_yaml_syntax_error_names_file_and_line(tmp_path):
    path = write(tmp_path, "bad.yaml", """\
        name: x
        racks: 2
        gpus_per_machine: 8: 8
        machines_per_rack: 4
        """)
    with pytest.raises(InputError) as exc:
        load_topology(path)
    assert str(path) in str(exc.value) and "line 3" in str(exc.value)


def test_yaml_that_is_not_utf8_names_the_file_and_byte(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: caf\u00e9\n".encode("latin-1"))  # 0xe9 alone is not UTF-8; it is byte 9
    with pytest.raises(InputError, match=r"latin1\.yaml: line 1: not UTF-8 text \(byte 9 is 0xe9\)"):
        load_topology(path)


def test_missing_yaml_names_the_file(tmp_path):
    with pytest.raises(InputError, match=r"nothing\.yaml: cannot read file"):
        load_topology(tmp_path / "nothing.yaml")


def test_topology_missing_field_names_the_field(tmp_path):
    text = (REPO / "topologies" / "dally-3tier.yaml").read_text().replace("    bandwidth_gbps: 400\n", "")
    path = write(tmp_path, "t.yaml", text)
    with pytest.raises(InputError, match=r"t\.yaml: field 'tiers\.rack\.bandwidth_gbps': missing"):
        load_topology(path)


def test_topology_wrong_type_names_the_field(tmp_path):
    text = (REPO / "topologies" / "dally-3tier.yaml").read_text().replace("gpus_per_machine: 8",
                                                                          "gpus_per_machine: eight")
    path = write(tmp_path, "t.yaml", text)
    with pytest.raises(InputError, match="field 'gpus_per_machine': expected an integer"):
        load_topology(path)


def test_topology_unknown_field_is_not_ignored(tmp_path):
    text = (REPO / "topologies" / "dally-3tier.yaml").read_text() + "rackz: 3\n"
    path = write(tmp_path, "t.yaml", text)
    with pytest.raises(InputError, match="field 'rackz': unknown field"):
        load_topology(path)


def test_bad_csv_row_names_file_line_and_column(tmp_path):
    path = write(tmp_path, "jobs.csv", """\
        job_id,arrival,model,gpus,iterations
        a,0,resnet50,8,100
        b,10,resnet50,four,100
        """)
    with pytest.raises(InputError, match=r"jobs\.csv: line 3, column 'gpus': not a number: 'four'"):
        read_jobs_csv(path)


def test_ragged_csv_row(tmp_path):
    path = write(tmp_path, "jobs.csv", "job_id,arrival,model,gpus,iterations\na,0,m,8\n")
    with pytest.raises(InputError, match="line 2: has 4 cells, header has 5"):
        read_jobs_csv(path)


def test_unknown_model_in_trace(tmp_path):
    path = write(tmp_path, "jobs.csv", "job_id,arrival,model,gpus,iterations\na,0,gpt9,8,100\n")
    with pytest.raises(InputError, match="line 2, column 'model': unknown model 'gpt9'"):
        read_jobs_csv(path, models={"resnet50"})


def test_csv_missing_column(tmp_path):
    path = write(tmp_path, "jobs.csv", "job_id,arrival,gpus,iterations\na,0,8,100\n")
    with pytest.raises(InputError, match="line 1: missing column.*model"):
        read_jobs_csv(path)


def test_helios_bad_timestamp(tmp_path):
    header = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
    path = write(tmp_path, "log.csv", header + "1,u,v,8,8,1,COMPLETED,yesterday,,,100,0\n")
    with pytest.raises(InputError, match="line 2, column 'submit_time'"):
        read_helios_csv(path, ["m"], seed=0)


def test_model_profile_errors_name_the_field(tmp_path):
    path = write(tmp_path, "m.yaml", """\
        name: m
        tensors: [[fc.weight, 10], [fc.bias, -1]]
        compute: {reference_gpu: A100, seconds_per_iteration: 0.1, source: test}
        """)
    with pytest.raises(InputError, match=r"field 'tensors\[1\]'"):
        ModelProfile.from_yaml(path)


def test_unknown_policy_lists_the_known_ones():
    with pytest.raises(KeyError, match="unknown policy 'lifo'.*fifo"):
        make_policy("lifo")


def test_unknown_policy_parameter():
    with pytest.raises(KeyError, match="has no parameter 'speed'"):
        make_policy("fifo", speed=3)


def test_generator_spec_errors():
    models = {"m": ModelProfile("m", (10,), 1.0, "A100")}
    with pytest.raises(InputError, match="parameter 'nn'"):
        jobs_from_spec("poisson:nn=3", models, 0)
    with pytest.raises(InputError, match="no such trace file"):
        jobs_from_spec("nowhere.csv", models, 0)


@pytest.mark.parametrize("spec, where, problem", [
    ("batch:gpu_weights=1|2", "gpu_weights", "2 weights for 6 GPU counts"),
    ("batch:gpus=1|2,gpu_weights=1|x", "gpu_weights", "expected numbers separated by '|'"),
    ("batch:gpus=1|2,gpu_weights=1|-1", "gpu_weights", ">= 0 and not all 0"),
    ("batch:gpus=1|2,gpu_weights=0|0", "gpu_weights", ">= 0 and not all 0"),
    ("batch:gpus=1|2,gpu_weights=1|nan", "gpu_weights", "finite"),
    ("batch:interarrival_gpus=256", "interarrival_gpus", "unknown"),  # a batch has no arrival rate
    ("poisson:interarrival_gpus=0", "interarrival_gpus", "must be in [1,"),
    ("poisson:interarrival_gpus=256", "interarrival_gpus", "cluster's size, which is not known here"),
])
def test_generator_weights_and_scaling_are_checked(spec, where, problem):
    models = {"m": ModelProfile("m", (10,), 1.0, "A100")}
    with pytest.raises(InputError, match=rf"parameter '{where}'.*{re.escape(problem)}"):
        jobs_from_spec(spec, models, 0)


def test_poisson_interarrival_scales_with_the_cluster_and_weights_shape_the_demand():
    models = {"m": ModelProfile("m", (10,), 1.0, "A100")}
    stated = jobs_from_spec("poisson:n=50,interarrival=60,interarrival_gpus=256", models, 3, 256)
    half = jobs_from_spec("poisson:n=50,interarrival=60,interarrival_gpus=256", models, 3, 128)
    plain = jobs_from_spec("poisson:n=50,interarrival=60", models, 3, 128)
    assert [j.arrival for j in stated] == [j.arrival for j in plain]  # stated for 256 GPUs: 60 s there
    assert [j.arrival for j in half] == pytest.approx([2 * j.arrival for j in stated])  # half the GPUs, half the rate
    assert [(j.gpus, j.iterations) for j in half] == [(j.gpus, j.iterations) for j in stated]
    only_8 = jobs_from_spec("batch:n=50,gpus=1|8,gpu_weights=0|1", models, 0)
    assert {j.gpus for j in only_8} == {8}


# ---- switch hierarchies (topology `levels` and `switches`) ------------------------------------------
HIERARCHY_YAML = """\
name: deep
switches: s.csv
machines_per_rack: 2
gpus_per_machine: 1
gpu_type: A100
tiers:
  machine: {bandwidth_gbps: 100, link_latency_us: 0, switch_latency_us: 0, source: test}
  rack: {bandwidth_gbps: 100, link_latency_us: 0, switch_latency_us: 0, source: test}
  spine: {bandwidth_gbps: 100, link_latency_us: 0, switch_latency_us: 0, source: test}
levels:
  - {name: core, bandwidth_gbps: 100, link_latency_us: 0, switch_latency_us: 0, oversubscription: 1, source: test}
"""
HIERARCHY_CSV = ["name,level,parent", "core0,core,", "agg0,spine,core0", "agg1,spine,core0", "r0,rack,agg0",
                 "r1,rack,agg1", "h0,host,r0"]


def _cli_error(tmp_path, capsys, yaml_text=HIERARCHY_YAML, csv_lines=HIERARCHY_CSV) -> str:
    """`artist simulate` on the topology: exit 2 and exactly one stderr line, no traceback."""
    from artist.cli import main

    (tmp_path / "s.csv").write_text("\n".join(csv_lines) + "\n")
    path = write(tmp_path, "deep.yaml", yaml_text)
    assert main(["simulate", "--topology", str(path), "--workload", "batch:n=2", "--backend", "analytical"]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_hierarchy_that_loads(tmp_path):
    (tmp_path / "s.csv").write_text("\n".join(HIERARCHY_CSV) + "\n")
    topo = load_topology(write(tmp_path, "deep.yaml", HIERARCHY_YAML))
    assert topo.racks == 2 and topo.hierarchy.names == (("r0", "r1"), ("agg0", "agg1"))


@pytest.mark.parametrize("csv_lines, expected", [
    (HIERARCHY_CSV + ["h0,host,r1"],  # a host on two ToRs
     r"s\.csv: line 8, column 'parent': host 'h0' is under 'r1' here and under 'r0' on line 7"),
    (HIERARCHY_CSV[:3] + ["agg1,spine,r1"] + HIERARCHY_CSV[4:],  # r1 -> agg1 -> r1
     r"s\.csv: line 4, column 'parent': cycle: agg1 -> r1 -> agg1"),
    (HIERARCHY_CSV[:5] + ["r1,rack,"] + HIERARCHY_CSV[6:],
     r"s\.csv: line 6, column 'parent': rack 'r1' has no spine \(missing level\)"),
    (HIERARCHY_CSV[:5] + ["r1,rack,core0"] + HIERARCHY_CSV[6:],
     r"s\.csv: line 6, column 'parent': rack 'r1' hangs under core 'core0', but the level above rack is spine"),
    (HIERARCHY_CSV[:5] + ["r1,rack,agg9"] + HIERARCHY_CSV[6:],
     r"s\.csv: line 6, column 'parent': unknown switch 'agg9'"),
    (HIERARCHY_CSV + ["h0,host,r0"],
     r"s\.csv: line 8: duplicate row \(same as line 7\)"),
    (HIERARCHY_CSV + ["core1,core,"],
     r"s\.csv: line 8: a second core 'core1': the top level is one switch"),
    (HIERARCHY_CSV + ["r0,spine,core0"],
     r"s\.csv: line 8: 'r0' is a spine here and a rack on line 5"),
    (["name,parent"] + HIERARCHY_CSV[1:],
     r"s\.csv: line 1: expected the header name,level,parent"),
])
def test_bad_switch_membership_is_one_line_naming_the_row(tmp_path, capsys, csv_lines, expected):
    line = _cli_error(tmp_path, capsys, csv_lines=csv_lines)
    assert re.search(expected, line), line


@pytest.mark.parametrize("old, new, expected", [
    ("oversubscription: 1, source", "oversubscription: 0, source",
     r"deep\.yaml: field 'levels\[0\]\.oversubscription': must be > 0, got 0"),
    ("oversubscription: 1, source", "oversubscription: -2, source",
     r"field 'levels\[0\]\.oversubscription': must be > 0"),
    ("spine: {bandwidth_gbps: 100,", "spine: {oversubscription: 0, bandwidth_gbps: 100,",
     r"field 'tiers\.spine\.oversubscription': must be > 0"),
    ("{name: core,", "{name: rack,", r"field 'levels\[0\]\.name': level name 'rack'"),
    ("switches: s.csv\n", "racks: 4\n", r"field 'tiers\.spine\.group': missing"),
    ("oversubscription: 1, source", "oversubscription: 1, group: 2, source",
     r"field 'levels\[0\]\.group': the top level joins everything"),
    ("switches: s.csv\n", "switches: s.csv\nracks: 3\n", r"field 'racks': must be <= 2, got 3"),
    ("  - {name: core", "  - {name: agg, bandwidth_gbps: 100, link_latency_us: 0, switch_latency_us: 0, "
     "source: test}\n  - {name: core", r"s\.csv: line 3, column 'parent': spine 'agg0' hangs under core 'core0', "
                                        r"but the level above spine is agg \(missing level\)"),
])
def test_bad_levels_are_one_line_naming_the_field(tmp_path, capsys, old, new, expected):
    assert old in HIERARCHY_YAML
    line = _cli_error(tmp_path, capsys, yaml_text=HIERARCHY_YAML.replace(old, new))
    assert re.search(expected, line), line


def test_regular_hierarchy_needs_whole_blocks_and_a_group_below_the_top(tmp_path, capsys):
    regular = HIERARCHY_YAML.replace("switches: s.csv\n", "racks: 3\n").replace(
        "source: test}\nlevels", "source: test, group: 2}\nlevels")
    assert re.search(r"field 'racks': 3 racks do not fill whole blocks of 2", _cli_error(tmp_path, capsys, regular))
    two_levels = regular.replace("racks: 3", "racks: 4").replace(
        "  - {name: core", "  - {name: agg, bandwidth_gbps: 100, link_latency_us: 0, switch_latency_us: 0, "
                           "source: test}\n  - {name: core")
    assert re.search(r"field 'levels\[0\]\.group': missing", _cli_error(tmp_path, capsys, two_levels))
