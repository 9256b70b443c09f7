"""GPU types nobody measured (Crius' A40, A10, V100): the elastic applications' compute modelled from the
measured A100 tables by datasheet throughput and memory (artist/elastic/modelled.py), checked by hand."""

import math
from dataclasses import replace

import pytest

from artist.elastic.applications import SIA_DIR, heterogeneous_applications, measured_memory_gib
from artist.elastic.cluster import CLUSTERS_DIR, Pool, PooledStepTimer, load_cluster
from artist.elastic.modelled import with_modelled_types
from artist.errors import InputError
from artist.sweep.spec import load_sweep_spec
from artist.workload import load_models
from artist.workload.traces.pollux import APPLICATIONS

# datasheet peaks (dense FP16/BF16 tensor): A100 312, A40 149.7, A10 125, V100 125 TFLOP/s; one efficiency
PEAK = {"A100": 312.0, "A40": 149.7, "A10": 125.0, "V100": 125.0}
REFERENCE_GIB = 40.0  # Sia's DGX-A100: A100 40 GB (workloads/sia/gpu_types.yaml)


@pytest.fixture(scope="module")
def crius_1280():
    apps = heterogeneous_applications()
    cluster = load_cluster(CLUSTERS_DIR / "crius-1280.yaml")
    modelled, how = with_modelled_types(apps, cluster.pools, measured_memory_gib(SIA_DIR))
    return apps, cluster, modelled, how


def test_the_reference_memory_is_the_measured_a100s():
    assert measured_memory_gib(SIA_DIR) == {"a100": REFERENCE_GIB}


@pytest.mark.parametrize("gpu_type, memory", [("A40", 48), ("A10", 24), ("V100", 32)])
def test_a_modelled_type_is_the_a100_curve_scaled_by_peak_and_its_batch_by_memory(crius_1280, gpu_type, memory):
    apps, _, modelled, how = crius_1280
    assert how[gpu_type]["from"] == "a100" and how[gpu_type]["memory_gib"] == memory
    for name, (app, _) in apps.items():
        ref, table = app.compute["a100"], modelled[name][0].compute[gpu_type]
        for batch in ref.local_batches:
            assert table(batch) == pytest.approx(ref(batch) * PEAK["A100"] / PEAK[gpu_type], rel=1e-12)
        limit, ref_limit = modelled[name][0].limits[gpu_type], app.limits["a100"]
        assert limit.min_local == ref_limit.min_local
        assert limit.max_local == min(ref_limit.max_local, math.floor(ref_limit.max_local * memory / REFERENCE_GIB))
        assert modelled[name][1].local_batch[gpu_type] == limit  # the job's spec sees the same bounds
        assert table.table is None and table.source.startswith("modelled:")


def test_crius_a100_is_the_measured_a100_table(crius_1280):
    apps, _, modelled, how = crius_1280
    assert how["A100"]["compute_factor"] == 1.0
    for name, (app, _) in apps.items():
        assert modelled[name][0].compute["A100"] is app.compute["a100"]
        assert modelled[name][0].limits["A100"] == app.limits["a100"]


def test_a_measured_cluster_is_left_as_it_is():
    apps = heterogeneous_applications()
    cluster = load_cluster(CLUSTERS_DIR / "sia-hetero-64.yaml")
    assert with_modelled_types(apps, cluster.pools, measured_memory_gib(SIA_DIR)) == (apps, {})


def test_one_gpu_step_on_a_modelled_type_is_its_modelled_compute(crius_1280):
    apps, cluster, modelled, _ = crius_1280
    models = load_models()
    profiles = {a: models[APPLICATIONS[a][0]] for a in modelled}
    timer = PooledStepTimer(cluster, {a: m for a, (m, _) in modelled.items()}, profiles)
    batch = int(apps["cifar10"][0].compute["a100"].local_batches[0])
    step, compute = timer.seconds("cifar10", "A10", [1], batch, 0)
    assert step == compute == pytest.approx(apps["cifar10"][0].compute["a100"](batch) * PEAK["A100"] / PEAK["A10"])


def test_a_type_with_no_figures_or_too_little_memory_is_refused():
    apps = heterogeneous_applications()
    topology = load_cluster(CLUSTERS_DIR / "crius-testbed.yaml").pools[0].topology
    with pytest.raises(ValueError, match="MI250"):
        with_modelled_types(apps, [Pool("MI250", topology)], {"a100": REFERENCE_GIB})
    with pytest.raises(ValueError, match="holds less than the smallest"):
        with_modelled_types(apps, [Pool("A10", topology, memory_gib=1.0)], {"a100": REFERENCE_GIB})
    with pytest.raises(ValueError, match="no measured type"):
        with_modelled_types(apps, [Pool("A10", topology)], {})


def _spec(tmp_path, extra: str = "") -> str:
    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\nloop: elastic\ntopology: {CLUSTERS_DIR / 'crius-testbed.yaml'}\n"
                    f"elastic: {{applications: {SIA_DIR}{extra}}}\npolicies: [sia]\n"
                    "workloads:\n  - {spec: 'poisson:n=3,interarrival=60,gpus=1|2,models=resnet18', label: w}\n"
                    "seeds: [0]\ncomm: analytical\n")
    return str(path)


def test_a_spec_on_a_crius_cluster_records_the_modelled_types_in_its_runs(tmp_path):
    run = load_sweep_spec(_spec(tmp_path)).runs[0]
    how = run.identity["elastic"]["modelled_compute"]
    assert sorted(how) == ["A10", "A40"] and how["A40"]["compute_factor"] == round(PEAK["A100"] / PEAK["A40"], 6)


def test_measured_step_times_are_refused_where_compute_is_modelled(tmp_path):
    with pytest.raises(InputError) as err:
        load_sweep_spec(_spec(tmp_path, ", rules: {step_time: measured}"))
    assert "rules.step_time" in str(err.value) and "A10" in str(err.value)


def test_a_pool_keeps_its_memory_and_file():
    pools = load_cluster(CLUSTERS_DIR / "crius-testbed.yaml").pools
    assert [(p.gpu_type, p.memory_gib, p.topology_file.name) for p in pools] == [
        ("A40", 48.0, "crius-testbed-a40.yaml"), ("A10", 24.0, "crius-testbed-a10.yaml")]
    assert replace(pools[0], memory_gib=None).memory_gib is None


def test_the_v100_estimate_lies_within_published_v100_a100_speed_ratios():
    """NVIDIA DeepLearningExamples, 1 GPU AMP training: V100 / A100 = 0.486 (ResNet-50 v1.5), 0.386 (BERT-large),
    as topologies/hetero-a100-v100.yaml cites them; the modelled V100 runs at 1 / compute_factor of the A100."""
    _, _, _, how = _crius_1280_once()
    assert 0.386 < 1 / how["V100"]["compute_factor"] < 0.486


def _crius_1280_once():
    apps = heterogeneous_applications()
    cluster = load_cluster(CLUSTERS_DIR / "crius-1280.yaml")
    return (apps, cluster, *with_modelled_types(apps, cluster.pools, measured_memory_gib(SIA_DIR)))


@pytest.mark.parametrize("topology, applications, expected", [
    ("pollux-t4", "pollux", "t4"),       # Pollux's own measured type ("T4" in the topology)
    ("dally-3tier", "sia", "a100"),     # Sia's measured A100 tables
    ("dgx-h100", "sia", "H100"),        # modelled from the A100's
])
def test_a_one_type_topology_runs_on_its_own_gpu_type(tmp_path, topology, applications, expected):
    from artist.shipped import ROOT, TOPOLOGIES_DIR

    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\nloop: elastic\ntopology: {TOPOLOGIES_DIR / (topology + '.yaml')}\nracks: [1]\n"
                    f"elastic: {{applications: {ROOT / 'workloads' / applications}}}\npolicies: [sia]\n"
                    "workloads:\n  - {spec: 'poisson:n=3,interarrival=60,gpus=1|2,models=resnet18', label: w}\n"
                    "seeds: [0]\ncomm: analytical\n")
    run = load_sweep_spec(str(path)).runs[0]
    assert run.elastic.gpu_type == expected
    assert ("modelled_compute" in run.identity["elastic"]) == (expected == "H100")


def test_pollux_tables_on_an_a100_topology_are_refused(tmp_path):
    from artist.shipped import ROOT, TOPOLOGIES_DIR

    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\nloop: elastic\ntopology: {TOPOLOGIES_DIR / 'dally-3tier.yaml'}\nracks: [1]\n"
                    f"elastic: {{applications: {ROOT / 'workloads/pollux'}}}\npolicies: [pollux]\n"
                    "workloads:\n  - {spec: 'poisson:n=3,interarrival=60,gpus=1|2,models=resnet18', label: w}\n"
                    "seeds: [0]\ncomm: analytical\n")
    with pytest.raises(InputError) as err:
        load_sweep_spec(str(path))
    assert "elastic.applications" in str(err.value) and "A100" in str(err.value) and "workloads/sia" in str(err.value)


def test_a_measured_type_under_another_name_is_its_table():
    """A cluster file's "T4" is the measured "t4" (case), "A100" the measured "a100" (same accelerator)."""
    apps = heterogeneous_applications()
    topology = load_cluster(CLUSTERS_DIR / "crius-testbed.yaml").pools[0].topology
    out, how = with_modelled_types(apps, [Pool("T4", topology), Pool("A100", topology)], {})
    assert how == {"T4": {"from": "t4", "compute_factor": 1.0}, "A100": {"from": "a100", "compute_factor": 1.0}}
    for name, (app, _) in apps.items():
        assert out[name][0].compute["T4"] is app.compute["t4"] and out[name][0].limits["A100"] == app.limits["a100"]


@pytest.mark.parametrize("value", ["0", "5000", "lots", "true"])
def test_a_bad_stated_memory_names_the_file_and_field(tmp_path, value):
    (tmp_path / "gpu_types.yaml").write_text(f"gpu_types:\n  a100: {{table: t.csv, machine: m, memory_gib: {value}}}\n")
    with pytest.raises(InputError) as err:
        measured_memory_gib(tmp_path)
    assert str(tmp_path / "gpu_types.yaml") in str(err.value) and "gpu_types.a100.memory_gib" in str(err.value)
