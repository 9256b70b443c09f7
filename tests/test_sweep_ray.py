"""A sweep through Ray (a local Ray instance started here, joined by its address as a cluster
would be) gives the same table as the local run. Skipped where Ray is not installed
(pip install -e '.[ray]')."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from artist.sweep.run import run_sweep
from artist.sweep.spec import load_sweep_spec
from sweep_helpers import generated_spec

ray = pytest.importorskip("ray")


def test_ray_sweep_gives_the_local_table(tmp_path):
    spec_path = generated_spec(tmp_path)
    local = run_sweep(load_sweep_spec(spec_path), tmp_path / "local", n_jobs=1, progress=False, plots=False,
                      cache_dir=tmp_path / "cache-local")
    # A head node of our own, started as on a cluster (`ray start --head`) and reached by its address.
    port = _free_port()
    ray_cli = [sys.executable, "-m", "ray.scripts.scripts"]
    subprocess.run([*ray_cli, "start", "--head", f"--port={port}", "--num-cpus=2", "--include-dashboard=false",
                    "--disable-usage-stats"], check=True, capture_output=True, timeout=120)
    try:
        remote = run_sweep(load_sweep_spec(spec_path), tmp_path / "ray", n_jobs=-1, executor="ray",
                           address=f"127.0.0.1:{port}", progress=False, plots=False, cache_dir=tmp_path / "cache-ray")
    finally:
        subprocess.run([*ray_cli, "stop", "--force"], capture_output=True, timeout=120)
    assert remote.failed == [] and len(remote.executed) == len(local.executed) == 8
    pids = {json.loads((remote.out_dir / "runs" / i / "run.json").read_text())["pid"] for i in remote.executed}
    assert os.getpid() not in pids  # Ray's workers ran them, not this process
    for name in ("results.csv", "results.parquet"):
        assert (remote.out_dir / name).read_bytes() == (local.out_dir / name).read_bytes(), name


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_ray_client_address_without_ray_client_installed_is_one_line(tmp_path, capsys):
    """`ray://` needs the ray[client] extra (grpc), which `pip install ray` leaves out: a server that answers
    there (here a bare socket) gets one line naming --address and what to install, exit 2, no run started."""
    import importlib.util
    import threading

    from artist.cli import main

    if importlib.util.find_spec("grpc") is not None:
        pytest.skip("ray[client] is installed here: the case cannot arise")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    threading.Thread(target=lambda: server.accept(), daemon=True).start()
    try:
        code = main(["sweep", str(generated_spec(tmp_path)), "--executor", "ray", "--out", str(tmp_path / "out"),
                     "--address", f"ray://127.0.0.1:{server.getsockname()[1]}", "--quiet"])
    finally:
        server.close()
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--address" in err[0] and "ray[client]" in err[0], err
    assert not (tmp_path / "out" / "runs").exists() or not any((tmp_path / "out" / "runs").iterdir())
