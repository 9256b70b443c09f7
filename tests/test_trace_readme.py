"""The formats reference's "Supported trace formats" section (docs/pages/reference/formats.md) against the
readers: the columns each format uses and drops, the model tables of the workload files, the category table,
the options."""

from __future__ import annotations

import re

from artist.workload.traces import mapping
from artist.workload.traces.formats import FORMATS
from artist.workload.traces.options import OPTION_KEYS

from test_readme import section, table_rows

HEADING = "## Supported trace formats"


def rows_with(cells_count: int):
    return [cells for _, cells in table_rows(section(HEADING)) if len(cells) == cells_count]


def test_format_table_lists_the_fields_each_reader_uses_and_drops():
    table = {re.findall(r"`([^`]+)`", cells[0])[0]: cells for cells in rows_with(5)}
    assert set(table) == set(FORMATS)
    for name, fmt in FORMATS.items():
        used = set(re.findall(r"`([^`]+)`", table[name][2]))
        dropped = set(re.findall(r"`([^`]+)`", table[name][3]))
        assert used == set(fmt.fields_used), name
        assert dropped == set(fmt.fields_dropped), name


def test_model_table_is_the_readers_mapping():
    documented: dict[str, dict[str, str]] = {}
    for cells in rows_with(4):
        names = re.findall(r"`([^`]+)`", cells[0])
        if names and cells[1] in FORMATS:
            documented.setdefault(cells[1], {})[names[0]] = cells[2]
    for name, fmt in FORMATS.items():
        if fmt.model_table:
            assert documented[name] == {k: v[0] for k, v in fmt.model_table.items()}, name


def test_category_models_speeds_and_options_are_documented():
    text = " ".join(" ".join(section(HEADING)).split())  # line breaks as spaces
    for category, models in mapping.CATEGORY_MODELS.items():
        assert f"{category} " + ", ".join(f"`{m}`" for m in models) in text, category
    for gpu, (speed, _) in mapping.GPU_SPEEDS.items():
        assert re.search(rf"{gpu} {speed:g}\b", text) or f"{gpu} {speed:.6f}" in text, gpu
    options = {re.findall(r"`([^`]+)`", cells[0])[0] for cells in rows_with(3)}
    assert options == {"path", *OPTION_KEYS}
