"""Sweep figures: the numbers they draw, and the files they write."""

from __future__ import annotations

import pandas as pd
import pytest

from artist.errors import InputError
from artist.sweep.plots import facets, plot_sweep, series
from artist.sweep.run import run_sweep
from artist.sweep.spec import load_sweep_spec
from sweep_helpers import generated_spec

FIGURES = ("makespan", "jct", "comm_latency", "queueing_delay", "jct_cdf")


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
