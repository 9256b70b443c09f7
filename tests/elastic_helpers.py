"""Shared by the elastic-loop tests: the artifact's measured tables read directly (the tests' independent
expectation) and the T4 cluster's step timer."""

from __future__ import annotations

import csv
import statistics

from artist.elastic.applications import POLLUX_DIR, pollux_applications
from artist.elastic.steptime import NetworkStepTimer
from artist.network.analytical import AnalyticalModel
from artist.shipped import TOPOLOGIES_DIR
from artist.topology import load_topology
from artist.workload import load_models
from artist.workload.traces.pollux import APPLICATIONS


def csv_rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def measured_compute(app, batch):
    """Median compute (step - sync) of the artifact's placements table at one local batch."""
    rows = csv_rows(POLLUX_DIR / app / "placements.csv")
    return statistics.median(float(r["step_time"]) - float(r["sync_time"])
                             for r in rows if int(r["local_bsz"]) == batch)


def t4_cluster(machines: int, gpus: int = 4):
    """A one-type cluster of `machines` T4 machines of `gpus` GPUs (pollux-t4.yaml's machines and links)."""
    import dataclasses

    from artist.elastic.cluster import ElasticCluster, Pool

    topo = load_topology(TOPOLOGIES_DIR / "pollux-t4.yaml")
    topo = dataclasses.replace(topo, machines_per_rack=machines, gpus_per_machine=gpus)
    return ElasticCluster.of(topo.name, [Pool("t4", topo)])


def t4_step_timer() -> NetworkStepTimer:
    """Step times on topologies/pollux-t4.yaml with the analytical network."""
    topo = load_topology(TOPOLOGIES_DIR / "pollux-t4.yaml")
    models = load_models()
    apps = {k: a for k, (a, _) in pollux_applications().items()}
    return NetworkStepTimer(topo, AnalyticalModel(topo), apps, {k: models[APPLICATIONS[k][0]] for k in apps})
