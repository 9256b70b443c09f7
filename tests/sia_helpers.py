"""A small heterogeneous run of Sia in the elastic loop (1 x 4 T4 + 1 x 8 A100, measured tables), shared
by the Sia tests."""

import numpy as np

from artist.elastic.applications import heterogeneous_applications
from artist.elastic.cluster import CLUSTERS_DIR, ElasticCluster, PooledStepTimer, load_cluster
from artist.elastic.exact import simulate_elastic
from artist.elastic.jobs import ElasticJobSpec
from artist.policies.sia.scheduler import SiaScheduler
from artist.workload import load_models
from artist.workload.traces.pollux import APPLICATIONS


def small_cluster() -> ElasticCluster:
    """One t4 machine and one a100 machine, each pool's links as topologies/clusters/sia-hetero-64.yaml."""
    full = load_cluster(CLUSTERS_DIR / "sia-hetero-64.yaml")
    pools = [p for p in full.pools if p.gpu_type in ("t4", "a100")]
    import dataclasses
    pools = [dataclasses.replace(p, topology=dataclasses.replace(p.topology, machines_per_rack=1)) for p in pools]
    return ElasticCluster.of("small", pools)


def timer_for(cluster, apps):
    models = load_models()
    return PooledStepTimer(cluster, {k: a for k, (a, _) in apps.items()}, {k: models[APPLICATIONS[k][0]] for k in apps})


class Recording:
    """Wraps an allocator; records the GPU types of every non-empty allocation it returns."""

    def __init__(self, inner, node_types):
        self.inner, self.node_types, self.types = inner, node_types, []
        self.wants_profiles = getattr(inner, "wants_profiles", False)

    def allocate(self, jobs):
        out = self.inner.allocate(jobs)
        for row in out.values():
            if np.asarray(row).sum():
                self.types.append({self.node_types[i] for i in np.flatnonzero(row)})
        return out


def small_hetero_run():
    cluster = small_cluster()
    apps = {k: v for k, v in heterogeneous_applications().items() if k in ("cifar10", "ncf")}
    # one job of each Sia class: adaptive, strong-scaling (batch fixed), rigid (GPUs and batch fixed)
    jobs = [ElasticJobSpec("c0", 0.0, "cifar10"), ElasticJobSpec("n0", 60.0, "ncf", batch=32768),
            ElasticJobSpec("c2", 400.0, "cifar10", gpus=2, batch=256)]
    sched = Recording(SiaScheduler(cluster.capacity, cluster.node_types), cluster.node_types)
    result = simulate_elastic(cluster, jobs, apps, timer_for(cluster, apps), sched)
    rows = [(j.spec.job_id, j.finish, j.progress.restarts, j.gpu_type, round(j.profile_gpu_seconds, 9))
            for j in result.jobs]
    return rows, sched.types
