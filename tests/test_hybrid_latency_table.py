"""`artist latency-table --model M --plan P`: the LLM zoo's placement sensitivity. The named layouts put
exactly the ranks they promise where they promise; the TP-across-machines row costs what the hand α-β
says (tests/test_hybrid_step.py's ring times); bad input is one line with a non-zero exit."""

from __future__ import annotations

import csv
import io

import pytest
import yaml
from conftest import make_topology, small_topology_mapping
from test_hybrid_step import _ring_all_reduce_in_one_machine, _ring_all_reduce_over_two_machines

from artist.cli import main
from artist.hybrid_latency_table import COLUMNS
from artist.parallel.layouts import LAYOUT_NAMES, layout_gpus
from artist.parallel.plan import ParallelPlan

TOPO = make_topology(gpus_per_machine=8)  # 2 racks x 2 machines x 8 GPUs


@pytest.fixture
def topo_file(tmp_path):
    path = tmp_path / "topo.yaml"
    path.write_text(yaml.safe_dump(small_topology_mapping(gpus_per_machine=8)))
    return str(path)


def _machine(g):
    return g // 8


def _rack(g):
    return g // 16


def test_layouts_put_each_dimension_where_they_say():
    plan = ParallelPlan(dp=2, tp=4, pp=2, microbatches=2)
    ranks = [(d, p, t) for d in range(2) for p in range(2) for t in range(4)]
    packed = layout_gpus(TOPO, plan, "packed")
    assert packed == tuple(range(16))
    split = dict(zip(ranks, layout_gpus(TOPO, plan, "tp-split")))
    for d in range(2):
        for p in range(2):
            machines = [_machine(split[(d, p, t)]) for t in range(4)]
            assert machines[:2] == [machines[0]] * 2 and machines[2:] == [machines[2]] * 2
            assert machines[0] != machines[2]  # every TP group spans two machines, half on each
    pp = dict(zip(ranks, layout_gpus(TOPO, plan, "pp-racks")))
    dp = dict(zip(ranks, layout_gpus(TOPO, plan, "dp-racks")))
    for (d, p, t) in ranks:
        assert _rack(pp[(d, p, t)]) == p and _rack(dp[(d, p, t)]) == d
    for name in LAYOUT_NAMES:
        assert len(set(layout_gpus(TOPO, plan, name))) == plan.gpus


def test_layouts_refuse_what_does_not_fit():
    with pytest.raises(ValueError, match="even tp"):
        layout_gpus(TOPO, ParallelPlan(dp=2, tp=1, pp=1), "tp-split")
    with pytest.raises(ValueError, match="does not fit in 16 GPUs per rack"):
        layout_gpus(TOPO, ParallelPlan(dp=1, tp=8, pp=6), "pp-racks")


def test_tp_split_row_costs_the_hand_alpha_beta(topo_file, capsys):
    assert main(["latency-table", "--topology", topo_file, "--no-cache", "--model", "gpt3-1.3b",
                 "--plan", "dp=1,tp=8,pp=1,microbatches=2", "--layout", "packed", "--layout", "tp-split",
                 "--shape", "[[8]]"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert tuple(rows[0]) == COLUMNS
    packed, split, shape = rows
    assert (packed["placement"], split["placement"], shape["placement"]) == ("packed", "tp-split", "[[8]]")
    assert (packed["tier"], split["tier"]) == ("machine", "rack")
    compute = float(packed["compute_seconds"])
    activation = 2048 * 2048 * 2  # sequence 2048 x hidden 2048 x 2 bytes
    count = 24 * 2 * (2 + 4)  # blocks x micro-batches x (forward 2 + backward with recomputation 4) all-reduces
    inside = compute + count * _ring_all_reduce_in_one_machine(activation)
    over_two = compute + count * _ring_all_reduce_over_two_machines(activation)
    assert float(packed["step_seconds"]) == pytest.approx(inside, rel=1e-9)
    assert float(split["step_vs_packed"]) == pytest.approx(over_two / inside, rel=1e-9)
    assert float(split["exposed_tp_seconds"]) == pytest.approx(over_two - compute, rel=1e-9)
    assert float(shape["step_seconds"]) == float(packed["step_seconds"])  # [[8]] is the packed placement


@pytest.mark.parametrize("argv, problem", [
    (["--model", "gpt3-1.3b", "--layout", "packed"], "--layout: only with --plan"),
    (["--model", "gpt3-1.3b", "--model", "gpt3-2.7b", "--plan", "tp=8", "--plan", "tp=4", "--plan", "tp=2"],
     "3 plans for 2 models"),
    (["--model", "gpt3-1.3b", "--plan", "dp=1,tp=8,pp=1", "--shape", "[[4]]"], "4 GPUs; plan"),
    (["--model", "gpt3-1.3b", "--plan", "dp=2,tp=1,pp=1", "--layout", "tp-split"], "even tp"),
    (["--model", "no-such-model", "--plan", "tp=8"], "no-such-model"),
    (["--model", "gpt3-1.3b", "--plan", "tp=8", "--standard"], "--standard: not with --plan"),
])
def test_bad_hybrid_table_input_is_one_line(topo_file, capsys, argv, problem):
    assert main(["latency-table", "--topology", topo_file, "--no-cache", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert problem in err and len(err.splitlines()) == 1 and "Traceback" not in err
