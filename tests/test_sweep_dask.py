"""A sweep on a Dask cluster (a LocalCluster started here, reached by its address as a remote one
would be) gives the same table as the local run."""

from __future__ import annotations

import json
import os

import pytest

from artist.sweep.run import run_sweep
from artist.sweep.spec import load_sweep_spec
from sweep_helpers import generated_spec

distributed = pytest.importorskip("distributed")


def test_dask_cluster_sweep_gives_the_local_table(tmp_path):
    spec_path = generated_spec(tmp_path)
    local = run_sweep(load_sweep_spec(spec_path), tmp_path / "local", n_jobs=1, progress=False, plots=False,
                      cache_dir=tmp_path / "cache-local")
    # Worker processes (not threads): each builds its own CommModel and opens the cache itself.
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  host="127.0.0.1") as cluster:
        remote = run_sweep(load_sweep_spec(spec_path), tmp_path / "dask", n_jobs=-1, executor="dask",
                           address=cluster.scheduler_address, progress=False, plots=False,
                           cache_dir=tmp_path / "cache-dask")
    assert remote.failed == [] and len(remote.executed) == len(local.executed) == 8
    pids = {json.loads((remote.out_dir / "runs" / i / "run.json").read_text())["pid"] for i in remote.executed}
    assert os.getpid() not in pids  # the cluster's workers ran them, not this process
    for name in ("results.csv", "results.parquet"):
        assert (remote.out_dir / name).read_bytes() == (local.out_dir / name).read_bytes(), name


def test_cluster_backends_need_an_address(tmp_path):
    from artist.errors import InputError

    with pytest.raises(InputError, match="--address"):
        run_sweep(load_sweep_spec(generated_spec(tmp_path)), tmp_path / "out", executor="dask", progress=False,
                  plots=False, cache_dir=tmp_path / "cache")
    assert not (tmp_path / "out").exists()  # refused before anything was written


def test_ns3_runs_need_dask_workers_that_may_start_a_child(tmp_path):
    """The ns-3 backend runs in a child process of the worker; Dask's workers are daemonic by
    default and may not have children: the run fails naming the setting, and with it set the
    table is the local one."""
    import dask

    spec_path = generated_spec(tmp_path, racks=[1], seeds=[0], comm={"backend": "ns3"},
                               workloads=["batch:n=3,gpus=2|4,min_iter=100,max_iter=200,models=resnet18"])
    local = run_sweep(load_sweep_spec(spec_path), tmp_path / "local", n_jobs=1, progress=False, plots=False,
                      cache_dir=tmp_path / "cache-local")
    outcomes = {}
    for daemon in (True, False):
        with dask.config.set({"distributed.worker.daemon": daemon}), distributed.LocalCluster(
                n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None, host="127.0.0.1") as cluster:
            outcomes[daemon] = run_sweep(load_sweep_spec(spec_path), tmp_path / f"dask-{daemon}", executor="dask",
                                         address=cluster.scheduler_address, progress=False, plots=False,
                                         cache_dir=tmp_path / f"cache-{daemon}")
    ((_, error),) = outcomes[True].failed
    assert "DASK_DISTRIBUTED__WORKER__DAEMON=False" in error
    assert outcomes[False].failed == [] and len(outcomes[False].executed) == len(local.executed) == 1
    assert (outcomes[False].out_dir / "results.csv").read_bytes() == (local.out_dir / "results.csv").read_bytes()
