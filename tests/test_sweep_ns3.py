"""A sweep on the ns-3 backend from parallel workers, and a second identical sweep answered from the cache."""

from __future__ import annotations

import pytest

from artist.sweep.run import run_sweep
from artist.sweep.spec import load_sweep_spec
from sweep_helpers import write_spec, write_topology

pytestmark = pytest.mark.ns3


def test_ns3_sweep_in_two_workers_then_all_from_the_cache(tmp_path):
    pytest.importorskip("artist.network.ns3")
    write_topology(tmp_path, racks=1, machines_per_rack=2, gpus_per_machine=4)
    # Small models and 2-4 GPU jobs keep each packet-level simulation to about a second.
    (tmp_path / "t.csv").write_text("job_id,arrival,model,gpus,iterations\n"
                                    "a,0,mobilenet_v3_large,2,1000\nb,0,resnet18,4,1000\nc,10,mobilenet_v3_large,4,500\n")
    spec_path = write_spec(tmp_path, {"topology": "topo.yaml", "racks": [1, 2], "policies": ["fifo"],
                                      "workloads": ["t.csv"], "comm": "ns3"})
    cache = tmp_path / "cache"
    # -j 2: loky workers, each building its own Ns3Model (and ns-3 worker process).
    first = run_sweep(load_sweep_spec(spec_path), tmp_path / "one", n_jobs=2, cache_dir=cache, progress=False,
                      plots=False)
    assert first.failed == [], first.failed[0][1] if first.failed else ""
    assert first.cache_misses > 0
    second = run_sweep(load_sweep_spec(spec_path), tmp_path / "two", n_jobs=2, cache_dir=cache, progress=False,
                       plots=False)
    assert second.cache_misses == 0 and second.cache_hits > 0
    assert (second.out_dir / "results.csv").read_bytes() == (first.out_dir / "results.csv").read_bytes()
    import pandas as pd

    table = pd.read_csv(first.results_csv)
    assert (table["backend"] == "ns3").all() and (table["comm_latency_mean_s"] > 0).all()
