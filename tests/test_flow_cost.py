"""`artist sweep --dry-run` on the flow backend: its step questions and their predicted cost (sweep/cost.py)."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

from artist.sweep.cost import FLOW_SECONDS_PER_TRANSFER, flow_cost
from artist.sweep.questions import collect_questions
from artist.sweep.spec import load_sweep_spec
from sweep_helpers import write_spec, write_topology


def flow_spec(tmp_path, contention="isolated"):
    # one rack of two 4-GPU machines; MobileNetV3 has one gradient bucket, so a step is one ring all-reduce
    write_topology(tmp_path, racks=1, machines_per_rack=2, gpus_per_machine=4)
    (tmp_path / "t.csv").write_text("job_id,arrival,model,gpus,iterations\n"
                                    "a,0,mobilenet_v3_large,8,1000\nb,5,mobilenet_v3_large,4,500\n")
    return write_spec(tmp_path, {"topology": "topo.yaml", "policies": ["fifo"], "workloads": ["t.csv"],
                                 "comm": {"backend": "flow", "algorithm": "ring", "channels": 1},
                                 "simulator": {"contention": contention}})


def test_flow_cost_counts_the_ring_transfers_of_each_distinct_step(tmp_path):
    spec = load_sweep_spec(flow_spec(tmp_path))
    cost = flow_cost(collect_questions(spec.runs, spec.models, backend="flow"))
    # a ring all-reduce on n GPUs, one channel: 2 (n - 1) rounds of n transfers; a on 8 GPUs, then b on 4
    assert cost.steps == 2 and cost.transfers == 2 * 8 * 7 + 2 * 4 * 3
    assert cost.cpu_seconds == cost.transfers * FLOW_SECONDS_PER_TRANSFER
    # the ns-3 walk finds none of them: they are the flow backend's questions
    assert collect_questions(spec.runs, spec.models).steps == set()


def test_dry_run_prints_the_flow_cost_and_what_it_cannot_predict(tmp_path):
    from artist.cli import main

    for contention, unpredicted in (("isolated", False), ("shared", True)):
        out = io.StringIO()
        with redirect_stdout(out), redirect_stderr(io.StringIO()):
            code = main(["sweep", str(flow_spec(tmp_path, contention)), "--dry-run", "-j", "2",
                         "--out", str(tmp_path / f"out-{contention}")])
        text = out.getvalue()
        assert code == 0 and "flow cost predicted" in text and "on 2 cores" in text
        assert ("shared contention" in text) == unpredicted
