"""The shipped golden latency tables still hold (analytical backend; see tests/golden/README.md)."""

from pathlib import Path

import pytest

from artist.latency_table import build_latency_table, read_table_csv, standard_shapes
from artist.testing import assert_latency_table
from artist.topology import load_topology
from artist.workload import load_models

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "golden"

# The analytical model is deterministic: a tight tolerance catches any change to it, the
# profiles or the topology, while leaving room for harmless floating-point reassociation.
RTOL = 1e-6

CASES = [
    ("analytical_dally-3tier_toy-models_standard.csv", GOLDEN / "models"),
    ("analytical_dally-3tier_dally-models_standard.csv", REPO / "workloads" / "models"),
]


@pytest.mark.parametrize("golden, models_dir", CASES, ids=[c[0] for c in CASES])
def test_golden_table_holds(golden, models_dir):
    topo = load_topology(REPO / "topologies" / "dally-3tier.yaml")
    measured = build_latency_table(topo, list(load_models(models_dir).values()), standard_shapes()).table
    assert_latency_table(measured, GOLDEN / golden, rtol=RTOL)


def test_golden_tables_cover_every_model_and_standard_shape():
    """A golden file that lost rows would check less than it claims."""
    for golden, models_dir in CASES:
        table = read_table_csv(GOLDEN / golden)
        assert len(table) == len(load_models(models_dir)) * len(standard_shapes())
