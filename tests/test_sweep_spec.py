"""Sweep specs: expansion into runs, run identities, and clear errors before any run starts."""

from __future__ import annotations

import pytest

from artist.errors import InputError
from artist.policies.fifo import Fifo
from artist.policies.registry import builtin_policy_names, policy_names, register
from artist.sweep.run import run_sweep
from artist.sweep.spec import load_sweep_spec
from sweep_helpers import generated_spec, tiny_spec, write_spec, write_topology


if "test-fifo-param" not in policy_names():
    @register("test-fifo-param")
    class _FifoWithParam(Fifo):
        """FIFO with a parameter that must be positive: a second policy for the policy axis."""

        def __init__(self, patience: float = 1.0):
            if not patience > 0:
                raise ValueError(f"patience must be > 0, got {patience}")
            self.patience = patience


def test_expansion_is_the_cross_product_of_the_axes(tmp_path):
    write_topology(tmp_path, "a.yaml")
    write_topology(tmp_path, "b.yaml", name="other", gpus_per_machine=8)
    spec = load_sweep_spec(write_spec(tmp_path, {
        "topology": ["a.yaml", "b.yaml"], "racks": [1, 2, 4],
        "policies": ["fifo", {"name": "test-fifo-param", "params": {"patience": 2.0}}],
        "workloads": ["batch:n=5,gpus=1|2", "poisson:n=5,interarrival=60,gpus=1|2"],
        "seeds": [0, 1, 2],
        "comm": {"backend": "analytical", "algorithm": ["ring", "hierarchical"], "channels": [1, 2]},
    }))
    # 2 topologies x 3 rack counts x 2 policies x 2 workloads x 3 seeds x 2 algorithms x 2 channel counts
    assert len(spec.runs) == 2 * 3 * 2 * 2 * 3 * 2 * 2 == 288
    assert len({r.run_id for r in spec.runs}) == 288
    assert [r.index for r in spec.runs] == list(range(288))
    # Every combination appears exactly once.
    combos = {(r.axes["topology"], r.axes["racks"], r.axes["policy"], r.axes["workload"], r.axes["seed"],
               r.axes["algorithm"], r.axes["channels"]) for r in spec.runs}
    assert len(combos) == 288
    assert {r.topology.racks for r in spec.runs} == {1, 2, 4}
    assert all(r.topology.gpus == r.axes["racks"] * r.topology.gpus_per_rack for r in spec.runs)


def test_defaults_one_run_per_policy_and_workload(tmp_path):
    write_topology(tmp_path, racks=3)
    spec = load_sweep_spec(write_spec(tmp_path, {"topology": "topo.yaml", "policies": ["fifo"],
                                                 "workloads": ["batch:n=4,gpus=1"]}))
    assert len(spec.runs) == 1
    run = spec.runs[0]
    assert run.axes["racks"] == 3 and run.axes["seed"] == 0 and run.comm.backend == "analytical"
    assert run.comm.algorithm == "ring" and run.comm.channels == 1 and run.axes["calibration"] == ""
    assert spec.name == "spec"


def test_run_identity_follows_parameters_not_labels_or_paths(tmp_path):
    base = load_sweep_spec(tiny_spec(tmp_path)).runs
    again = load_sweep_spec(tiny_spec(tmp_path)).runs
    assert [r.run_id for r in base] == [r.run_id for r in again]

    # A label is a name only.
    relabelled = load_sweep_spec(tiny_spec(tmp_path, workloads=[{"spec": "tiny.csv", "label": "renamed"}])).runs
    assert [r.run_id for r in relabelled] == [r.run_id for r in base]

    # The same file under another path: the identity holds its content, not its path.
    other = tmp_path / "moved"
    other.mkdir()
    (other / "tiny.csv").write_text((tmp_path / "tiny.csv").read_text())
    (other / "topo.yaml").write_text((tmp_path / "topo.yaml").read_text())
    moved = load_sweep_spec(tiny_spec(other)).runs
    assert [r.run_id for r in moved] == [r.run_id for r in base]

    # Each parameter change gives new ids.
    changed = {
        "seed": dict(seeds=[1]),
        "simulator": dict(simulator={"round_interval_s": 60, "restore_seconds": 30}),
        "algorithm": dict(comm={"backend": "analytical", "algorithm": "hierarchical"}),
        "channels": dict(comm={"backend": "analytical", "channels": 2}),
    }
    for what, override in changed.items():
        runs = load_sweep_spec(tiny_spec(tmp_path, **override)).runs
        assert not {r.run_id for r in runs} & {r.run_id for r in base}, what
    path = tiny_spec(tmp_path)
    (tmp_path / "tiny.csv").write_text("job_id,arrival,model,gpus,iterations\na,0,resnet50,1,1001\n")
    edited = load_sweep_spec(path).runs
    assert not {r.run_id for r in edited} & {r.run_id for r in base}


def test_backend_options_are_checked_and_part_of_the_identity(tmp_path):
    pytest.importorskip("artist.network.ns3")  # imports the Python side only; ns-3 itself is not started
    plain = load_sweep_spec(tiny_spec(tmp_path, comm="ns3")).runs
    tcp = load_sweep_spec(tiny_spec(tmp_path, comm={"backend": "ns3", "options": {"ns3": {"transport": "tcp"}}})).runs
    assert tcp[0].comm.options == (("transport", "tcp"),) and plain[0].comm.options == ()
    assert not {r.run_id for r in tcp} & {r.run_id for r in plain}
    with pytest.raises(InputError, match=r"field 'comm.options.ns3'.*pigeon"):
        load_sweep_spec(tiny_spec(tmp_path, comm={"backend": "ns3", "options": {"ns3": {"transport": "pigeon"}}}))


def test_policy_parameters_are_part_of_the_identity(tmp_path):
    spec = load_sweep_spec(tiny_spec(tmp_path, policies=[
        {"name": "test-fifo-param", "params": {"patience": 1.0}},
        {"name": "test-fifo-param", "params": {"patience": 2.0}, "label": "patient"}]))
    assert len(spec.runs) == 4 and len({r.run_id for r in spec.runs}) == 4
    assert {r.axes["policy"] for r in spec.runs} == {'test-fifo-param("patience":1.0)', "patient"}


BAD_SPECS = [
    # (override of the tiny spec, field named in the error, words of the problem)
    (dict(racks=[1, 0]), "racks[1]", "must be >= 1"),
    (dict(racks=["two"]), "racks[0]", "expected an integer"),
    (dict(policies=["fifo", "no-such-policy"]), "policies[1].name", "unknown policy"),
    (dict(policies=[{"name": "fifo", "params": {"bogus": 1}}]), "policies[0].params", "bogus"),
    (dict(policies=[{"name": "test-fifo-param", "params": {"patience": -1}}]), "policies[0].params", "patience"),
    (dict(policies=[{"name": "fifo", "colour": "red"}]), "policies[0].colour", "unknown field"),
    (dict(policies=[]), "policies", "non-empty"),
    (dict(workloads=["tiny.csv", "missing.csv"]), "workloads[1].spec", "no such trace file"),
    (dict(workloads=["batch:n=5,wrong=3"]), "workloads[0]", "wrong"),
    (dict(workloads=["batch:n=5,gpus=1|4"]), "workloads[0]", "asks for 4 GPUs"),
    (dict(workloads=["tiny.csv", {"spec": "batch:n=2,gpus=1", "label": "tiny"}]), "workloads[1]", "listed twice"),
    (dict(seeds=[0, 0]), "seeds", "listed twice"),
    (dict(seeds=[-1]), "seeds[0]", "must be >= 0"),
    (dict(topology="nowhere.yaml"), "topology", "no such topology file"),
    (dict(comm="carrier-pigeon"), "comm.backend[0]", "unknown backend"),
    (dict(comm={"backend": "analytical", "algorithm": "tree-of-life"}), "comm.algorithm[0]", "unknown algorithm"),
    (dict(comm={"backend": "analytical", "channels": 0}), "comm.channels[0]", "must be >= 1"),
    (dict(comm={"backend": "analytical", "options": {"analytical": {"speed": 3}}}), "comm.options.analytical",
     "rejected by the analytical backend"),
    (dict(comm={"backend": "analytical", "options": {"quantum": {}}}), "comm.options.quantum", "unknown backend"),
    (dict(simulator={"restore_seconds": -5}), "simulator.restore_seconds", "must be >= 0"),
    (dict(simulator={"round_interval": 5}), "simulator.round_interval", "unknown field"),
    (dict(calibration="no-profile.yaml"), "calibration[0]", "no such calibration profile"),
    (dict(models="no-models-here"), "models", "no such directory"),
    (dict(speed="fast"), "speed", "unknown field"),
]


@pytest.mark.parametrize("override, field, words", BAD_SPECS, ids=[b[1] + ":" + b[2] for b in BAD_SPECS])
def test_bad_spec_names_file_and_field(tmp_path, override, field, words):
    path = tiny_spec(tmp_path, **override)
    with pytest.raises(InputError) as info:
        load_sweep_spec(path)
    message = str(info.value)
    assert str(path) in message and f"field '{field}'" in message and words in message, message


def test_bad_yaml_names_the_line(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text("name: x\npolicies: [fifo\n")
    with pytest.raises(InputError, match=r"spec\.yaml: line \d+"):
        load_sweep_spec(path)


def test_a_bad_entry_late_in_the_spec_stops_the_sweep_before_any_run(tmp_path):
    # The last workload is bad; loading fails, so nothing can have been run or written.
    path = generated_spec(tmp_path, workloads=["batch:n=5,gpus=1", "batch:n=5,gpus=1|2",
                                                "poisson:n=5,interarrival=-3"])
    out = tmp_path / "out"
    with pytest.raises(InputError, match="workloads\\[2\\]"):
        run_sweep(load_sweep_spec(path), out, n_jobs=1, progress=False, plots=False)
    assert not out.exists()


def _h100_profile_spec(tmp_path, **overrides):
    from conftest import REPO

    profile = REPO / "calibration" / "profiles" / "h100-analytical.yaml"
    if not profile.is_file():
        pytest.skip("no shipped h100-analytical calibration profile")
    body = {"topology": str(REPO / "topologies" / "h100-dgx.yaml"), "racks": [1], "policies": ["fifo"],
            "workloads": ["batch:n=4,gpus=8|16,min_iter=10,max_iter=100"], "calibration": [None, str(profile)]}
    body.update(overrides)
    return write_spec(tmp_path, body)


def test_calibration_profile_fitted_for_other_settings_is_rejected(tmp_path):
    pytest.importorskip("artist.calibration")
    # The profile was fitted for the analytical backend with 8 channels (one ring per NIC).
    path = _h100_profile_spec(tmp_path, comm={"backend": "analytical", "channels": 1})
    with pytest.raises(InputError,
                       match=r"field 'calibration\[1\]'.*fitted for analytical/ring/8ch, not analytical/ring/1ch"):
        load_sweep_spec(path)


def test_calibration_is_an_axis_and_changes_the_answers(tmp_path):
    pytest.importorskip("artist.calibration")
    path = _h100_profile_spec(tmp_path, comm={"backend": "analytical", "channels": 8})
    spec = load_sweep_spec(path)
    assert len(spec.runs) == 2 and spec.runs[0].run_id != spec.runs[1].run_id
    report = run_sweep(spec, tmp_path / "out", n_jobs=1, progress=False, plots=False, cache_dir=tmp_path / "cache")
    assert report.failed == [], report.failed[0][1] if report.failed else ""
    import pandas as pd

    table = pd.read_csv(report.results_csv, keep_default_na=False)
    assert list(table["calibration"]) == ["", spec.runs[1].calibration.label] and spec.runs[1].calibration.label
    plain, calibrated = table["comm_latency_mean_s"]
    assert plain > 0 and calibrated > 0 and calibrated != plain  # the profile corrects every multi-GPU answer


def test_shipped_sweeps_load_and_expand():
    from conftest import REPO

    quick = load_sweep_spec(REPO / "sweeps" / "quick.yaml")
    assert len(quick.runs) == 2 * 3  # racks [1, 2] x FIFO, Tiresias, Dally
    assert {r.comm.backend for r in quick.runs} == {"ns3"}
    assert sorted({r.axes["racks"] for r in quick.runs}) == [1, 2]
    assert {r.policy.name for r in quick.runs} == {"fifo", "tiresias", "dally"}
    # The default sweep runs calibrated (issue 5): the H100 ns-3 profile, with the channel count
    # it was fitted with, on a topology whose links are the calibration topology's.
    assert {r.calibration.label for r in quick.runs} == {"h100-ns3"}
    assert {(r.calibration.profile.backend["backend"], r.calibration.profile.backend["channels"], r.comm.channels)
            for r in quick.runs} == {("ns3", 8, 8)}
    assert {r.topology.gpus_per_machine * r.topology.machines_per_rack * r.axes["racks"]
            for r in quick.runs} == {256, 512}
    full = load_sweep_spec(REPO / "sweeps" / "dally-racks.yaml")
    assert sorted({r.axes["racks"] for r in full.runs}) == [2, 4, 8, 16]
    suite = builtin_policy_names()  # tests and plugin files register their own
    assert sorted({r.policy.name for r in full.runs}) == sorted(suite) and len(suite) == 7
    assert len(full.runs) == 4 * 7 * 2 * 3
    sizes = {r.axes["workload"]: len(r.jobs) for r in full.runs}
    assert sizes == {"batch-500": 500, "poisson-400": 400}


def test_a_sweep_says_when_its_calibration_is_extrapolated():
    from conftest import REPO

    # The default sweep's models train with DDP's 25 MiB buckets (and smaller remainders); the H100
    # logs start at 32 MiB, so part of its calibrated latencies are extrapolated, and it says so.
    quick = load_sweep_spec(REPO / "sweeps" / "quick.yaml")
    (note,) = quick.notes
    assert "'h100-ns3'" in note and "outside" in note and "32 MiB" in note
    # Without a calibration there is nothing to say.
    assert load_sweep_spec(REPO / "sweeps" / "dally-racks.yaml").notes == []


def test_reduced_congested_sweep_loads_and_expands():
    from conftest import REPO

    small = load_sweep_spec(REPO / "sweeps" / "dally-congested-small.yaml")
    assert len(small.runs) == 2 * 3 * 3  # 4:1 spines of 800 / 100 Gb/s ports x racks [2, 4, 8] x 3 policies
    assert {(r.comm.backend, r.comm.channels) for r in small.runs} == {("flow", 8)}
    assert {r.topology.oversubscription for r in small.runs} == {4.0}
    assert {r.topology.spine.bandwidth_bps for r in small.runs} == {800e9, 100e9}
    assert {r.topology.spine_model for r in small.runs} == {"ecmp"}
    assert small.simulator.contention == "shared"
    assert {len(r.jobs) for r in small.runs} == {40}
    assert {j.model for r in small.runs for j in r.jobs} <= {"alexnet", "resnet18", "resnet50", "vgg11"}


def test_bare_names_are_the_shipped_files_as_on_the_command_line(tmp_path):
    # a spec naming the shipped topology, profile and trace loads exactly the files of the paths
    from artist import shipped
    from artist.sweep.identity import sha256_file

    by_name = load_sweep_spec(write_spec(tmp_path, {
        "topology": "dgx-h100", "racks": [1], "policies": ["fifo"], "workloads": ["small"],
        "calibration": "h100-analytical", "comm": {"backend": "analytical", "channels": 8}}, name="by-name.yaml"))
    by_path = load_sweep_spec(write_spec(tmp_path, {
        "topology": str(shipped.TOPOLOGIES_DIR / "dgx-h100.yaml"), "racks": [1], "policies": ["fifo"],
        "workloads": [str(shipped.TRACES_DIR / "small.csv")],
        "calibration": str(shipped.PROFILES_DIR / "h100-analytical.yaml"),
        "comm": {"backend": "analytical", "channels": 8}}, name="by-path.yaml"))
    a, b = by_name.runs[0], by_path.runs[0]
    assert a.topology == b.topology and a.jobs == b.jobs
    assert sha256_file(shipped.TOPOLOGIES_DIR / "dgx-h100.yaml") in str(a.identity)
    # a bare name that is neither a file beside the spec nor shipped: one line naming what is shipped
    with pytest.raises(InputError, match=r"field 'topology': no such topology file: .*nope, and not a shipped one "
                                         r"\(shipped: .*dally-3tier.*\)"):
        load_sweep_spec(write_spec(tmp_path, {"topology": "nope", "policies": ["fifo"], "workloads": ["small"]}))
