"""Helpers for users' own test suites."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from artist.latency_table import compare_tables, read_table_csv


def assert_latency_table(measured: pd.DataFrame | str | Path, golden: pd.DataFrame | str | Path,
                         rtol: float = 0.02, atol: float = 0.0) -> None:
    """Fail (AssertionError) unless every golden row is measured within tolerance and no row is extra.

    ``measured`` and ``golden`` are latency tables (artist.latency_table) or paths to their CSV.
    The message lists each row out of tolerance (measured vs golden, relative error) and each
    missing or extra row, as ``artist latency-table --check`` prints them."""
    __tracebackhide__ = True  # pytest: show the caller's line, not this one
    if not isinstance(measured, pd.DataFrame):
        measured = read_table_csv(measured)
    if not isinstance(golden, pd.DataFrame):
        golden = read_table_csv(golden)
    comparison = compare_tables(measured, golden, rtol=rtol, atol=atol)
    if not comparison.ok:
        raise AssertionError("\n".join([comparison.summary(), *comparison.report_lines()]))
