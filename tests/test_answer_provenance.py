"""Results say how they were made (artist/network/provenance.py): which path answered each network question,
what a calibration profile corrected and what it left as the backend gave it, the same whatever the cache
held."""

from pathlib import Path

import pandas as pd
import pytest
import yaml

from artist.cli import main
from artist.network.base import CommResult
from artist.network.provenance import ANSWER_PATHS, AnswerCounts, answer_path

ROOT = Path(__file__).resolve().parent.parent
PROFILE = ROOT / "calibration" / "profiles" / "stas00-a100-analytical.yaml"  # fitted on one machine


@pytest.mark.parametrize("result, path", [
    (CommResult("analytical"), "analytical"),
    (CommResult("flow"), "flow"),
    (CommResult("ns3", packets=900, details={"path": "ns3"}), "ns3_packet"),
    (CommResult("ns3", details={"path": "ns3-message-level"}), "ns3_message_level"),
    (CommResult("ns3", packets=900, details={"path": "ns3", "composed_from": 3}), "ns3_reuse"),
    (CommResult("ns3", packets=900, details={"path": "ns3", "accelerated": True}), "ns3_steady_state"),
    (CommResult("ns3", details={"path": "none"}), "no_traffic"),
    (CommResult("flow", details={"contention_model": "phase"}), "phase"),
    (CommResult("none"), "none"),
    (CommResult("my-backend"), "other"),
])
def test_each_answer_is_counted_under_the_path_that_computed_it(result, path):
    assert answer_path(result) == path
    cached = result.replace(cache_hit=True, packets=0)  # read back from the cache: the same path
    counts = AnswerCounts()
    counts.record(result)
    counts.record(cached)
    columns = counts.columns()
    assert columns[f"answers_{path}"] == 2
    assert sum(columns[f"answers_{p}"] for p in ANSWER_PATHS + ("other",)) == 2
    assert counts.cost() == {"answers_from_cache": 1, "packets_simulated": result.packets}
    assert columns["calibrated_tiers"] == "none" and columns["uncalibrated"] == "all"


def _tiers_of(jobs: pd.DataFrame) -> set[str]:
    """The tiers of every placement a job of two or more GPUs held (one GPU has no collective)."""
    tiers = set()
    for _, job in jobs[jobs.gpus >= 2].iterrows():
        tiers.update(entry.split(":")[1] for entry in job.placement_history.split(";"))
    return tiers


def test_a_profile_of_one_machine_leaves_the_rack_tier_uncalibrated_and_the_run_says_so(tmp_path):
    """The profile corrects the machine tier and marks rack and network uncalibrated (its file says so); the
    run's summary names the tiers corrected and the rack / network all-reduces left as the backend gave
    them, as the placements its jobs held require."""
    assert main(["simulate", "--topology", "dally-3tier", "--racks", "2", "--channels", "8", "--calibration",
                 str(PROFILE), "--quiet", "--out", str(tmp_path)]) == 0
    jobs, row = pd.read_csv(tmp_path / "jobs.csv"), pd.read_csv(tmp_path / "summary.csv").iloc[0]
    tiers = yaml.safe_load(PROFILE.read_text())["tiers"]
    left = {t for t, v in tiers.items() if "uncalibrated" in v}
    assert left == {"rack", "network"}
    used = _tiers_of(jobs)
    assert "rack" in used  # the trace's 16-GPU jobs span two machines of a rack
    assert row.calibrated_tiers == ";".join(sorted(used - left))
    assert row.uncalibrated == ";".join(sorted(f"{t}:all_reduce" for t in used & left))
    answers = sum(row[f"answers_{p}"] for p in ANSWER_PATHS + ("other",))
    assert answers == row.answers_analytical == row.answers_calibrated > 0


def test_a_sweep_row_is_the_same_with_a_warm_cache_and_run_json_says_what_came_from_it(tmp_path, monkeypatch):
    spec = tmp_path / "s.yaml"
    spec.write_text(f"name: prov\ntopology: {ROOT / 'topologies/dally-3tier.yaml'}\nracks: [2]\npolicies: [fifo]\n"
                    "workloads:\n  - {spec: 'batch:n=12,gpus=1|4|8|16,min_iter=100,max_iter=1000', label: b}\n"
                    "seeds: [0]\ncomm: {backend: analytical}\n")
    monkeypatch.chdir(tmp_path)
    cache = str(tmp_path / "cache")
    rows, infos = [], []
    for out in ("cold", "warm"):
        assert main(["sweep", "s.yaml", "-j", "1", "--quiet", "--no-plots", "--cache-dir", cache, "--out", out]) == 0
        rows.append((tmp_path / out / "results.csv").read_bytes())
        run_dir = next((tmp_path / out / "runs").iterdir())
        infos.append(pd.read_json(run_dir / "run.json", typ="series"))
    assert rows[0] == rows[1]  # the answers' paths, not where they were read from
    table = pd.read_csv(tmp_path / "cold" / "results.csv").iloc[0]
    assert table.answers_analytical > 0 and table.uncalibrated == "all"
    assert infos[0].answers_from_cache == 0 and infos[1].answers_from_cache == table.answers_analytical


@pytest.mark.ns3
def test_the_quick_sweeps_settings_say_ns3_answered_and_what_was_calibrated(tmp_path, monkeypatch):
    """The README's quick sweep (ns-3, 8 rings, the H100 profile on dgx-h100) on 6 jobs: every question is
    answered by ns-3 (the message-level fast path where no link is shared: one job at a time here), every
    answer is corrected by the profile, which covers each tier the jobs use."""
    pytest.importorskip("artist.network.ns3")
    quick = yaml.safe_load((ROOT / "sweeps" / "quick.yaml").read_text())
    quick.update(name="quick-mini", racks=[2], policies=["fifo"], topology=str(ROOT / "topologies" / "dgx-h100.yaml"),
                 calibration=str(ROOT / "calibration" / "profiles" / "h100-ns3.yaml"),
                 workloads=[{"label": "b", "spec": "batch:n=6,gpus=4|8|16,min_iter=100,max_iter=200,models=resnet18"}])
    (tmp_path / "q.yaml").write_text(yaml.safe_dump(quick))
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "q.yaml", "-j", "1", "--quiet", "--no-plots", "--no-cache"]) == 0
    row = pd.read_csv(tmp_path / "results" / "quick-mini" / "results.csv").iloc[0]
    ns3 = row.answers_ns3_packet + row.answers_ns3_message_level + row.answers_ns3_reuse + row.answers_no_traffic
    assert ns3 == sum(row[f"answers_{p}"] for p in ANSWER_PATHS + ("other",)) > 0
    assert row.answers_analytical == row.answers_flow == 0
    assert row.answers_calibrated == ns3 and row.uncalibrated == "none" and row.calibrated_tiers != "none"
