"""The Dally experiment script, shrunk: every policy and workload gets a row, reruns are byte-identical."""

import pandas as pd

from artist.experiments import dally_policies


def test_small_experiment_writes_a_complete_deterministic_table(tmp_path):
    args = ["--racks", "1", "--batch-jobs", "12", "--poisson-jobs", "12", "--interarrival", "600"]
    assert dally_policies.main(["--out", str(tmp_path / "a"), *args]) == 0
    table = pd.read_csv(tmp_path / "a" / "summary.csv")
    assert sorted(map(tuple, table[["workload", "policy"]].values)) == sorted(
        (w, p) for w in ("batch", "poisson") for p in dally_policies.POLICIES)
    assert (table["finished"] == 12).all()
    assert "| 1 | dally-nowait |" in (tmp_path / "a" / "summary.md").read_text()
    # A second output directory, computed afresh: the same bytes.
    assert dally_policies.main(["--out", str(tmp_path / "b"), *args]) == 0
    assert (tmp_path / "a" / "summary.csv").read_bytes() == (tmp_path / "b" / "summary.csv").read_bytes()
    # Restarting in the same directory reuses the finished runs and gives the same table.
    assert dally_policies.main(["--out", str(tmp_path / "a"), *args]) == 0
    assert (tmp_path / "a" / "summary.csv").read_bytes() == (tmp_path / "b" / "summary.csv").read_bytes()
