"""Sweep figures: the numbers they draw, and the files they write."""

from __future__ import annotations

import pandas as pd
import pytest

from artist.errors import InputError
from artist.sweep.plots import facets, network_columns, plot_sweep, series
from artist.sweep.run import run_sweep
from artist.sweep.spec import load_sweep_spec
from sweep_helpers import generated_spec

FIGURES = ("makespan", "jct", "comm_latency", "queueing_delay", "network", "jct_cdf")


def table(rows):
    base = {"topology": "t", "workload": "w", "backend": "analytical", "algorithm": "ring", "channels": 1,
            "calibration": ""}
    return pd.DataFrame([{**base, **r} for r in rows])


def test_series_are_means_over_seeds_per_policy_and_rack_count():
    t = table([
        {"policy": "fifo", "racks": 2, "seed": 0, "makespan_s": 10.0},
        {"policy": "fifo", "racks": 2, "seed": 1, "makespan_s": 14.0},
        {"policy": "fifo", "racks": 4, "seed": 0, "makespan_s": 6.0},
        {"policy": "dally", "racks": 4, "seed": 0, "makespan_s": 3.0},
        {"policy": "dally", "racks": 2, "seed": 0, "makespan_s": 8.0},
    ])
    s = series(t, "makespan_s")
    assert list(s) == ["fifo", "dally"]  # table order
    fifo = s["fifo"]
    assert list(fifo["racks"]) == [2, 4]
    assert list(fifo["mean"]) == [12.0, 6.0] and list(fifo["min"]) == [10.0, 6.0] and list(fifo["max"]) == [14.0, 6.0]
    assert list(fifo["seeds"]) == [2, 1]
    assert list(s["dally"]["racks"]) == [2, 4] and list(s["dally"]["mean"]) == [8.0, 3.0]


def test_facets_are_the_combinations_of_varying_axes():
    t = table([{"policy": "p", "racks": 2, "seed": 0, "workload": w, "backend": b}
               for w in ("w1", "w2") for b in ("ns3", "analytical")])
    keys = [k for k, _ in facets(t)]
    assert keys == [("w1", "ns3"), ("w1", "analytical"), ("w2", "ns3"), ("w2", "analytical")]
    assert facets(table([{"policy": "p", "racks": 2, "seed": 0}])) == [((), "")]


def test_plot_writes_png_and_pdf_and_replots_identically(tmp_path):
    report = run_sweep(load_sweep_spec(generated_spec(tmp_path)), tmp_path / "out", n_jobs=1, progress=False,
                       cache_dir=tmp_path / "cache", plots=False)
    written = plot_sweep(report.out_dir)
    assert sorted(p.name for p in written) == sorted(f"{n}.{e}" for n in FIGURES for e in ("png", "pdf"))
    for path in written:
        head = path.read_bytes()[:8]
        assert head == b"\x89PNG\r\n\x1a\n" if path.suffix == ".png" else head.startswith(b"%PDF-")
    first = {p.name: p.read_bytes() for p in written}
    plot_sweep(report.out_dir)
    assert {p.name: p.read_bytes() for p in written} == first


def test_plot_of_a_directory_without_results_is_a_clear_error(tmp_path):
    with pytest.raises(InputError, match="not a finished sweep directory"):
        plot_sweep(tmp_path)


class _Jobs:
    """A result store of hand-made job tables, by run id."""

    def __init__(self, tables):
        self.tables = tables

    def load_jobs(self, run_id):
        return self.tables[run_id]


def test_network_columns_by_hand():
    # run a (analytical): two finished jobs, 10 iterations x 0.5 s exposed comm each = 10 s of 40 s held
    # -> 25 %; one of them ever across racks -> 50 %; one unfinished job counts in neither.
    # run b (none): no communication; its mean JCT 100 s against a's 150 s -> ratio 1.5 for a, none for b.
    jobs_a = pd.DataFrame({
        "jct_s": [150.0, 150.0, float("nan")], "iterations": [10, 10, 10],
        "comm_seconds_per_iteration": [0.5, 0.5, float("nan")], "running_seconds": [20.0, 20.0, 5.0],
        "placement_history": ["0.000000:rack:1x2", "0.000000:machine:1;5.000000:network:2x1", "0.000000:network:2"],
    })
    jobs_b = jobs_a.assign(comm_seconds_per_iteration=[0.0, 0.0, float("nan")])
    t = table([{"run_id": "a", "policy": "fifo", "racks": 2, "seed": 0, "jct_mean_s": 150.0},
               {"run_id": "b", "policy": "fifo", "racks": 2, "seed": 0, "jct_mean_s": 100.0, "backend": "none"}])
    out = network_columns(t, _Jobs({"a": jobs_a, "b": jobs_b}))
    assert list(out["comm_share_pct"]) == [25.0, 0.0]
    assert list(out["across_racks_pct"]) == [50.0, 50.0]
    assert out["jct_vs_no_network"].iloc[0] == 1.5 and pd.isna(out["jct_vs_no_network"].iloc[1])
    # without a none run beside it there is no ratio
    assert network_columns(t.iloc[:1], _Jobs({"a": jobs_a}))["jct_vs_no_network"].isna().all()
