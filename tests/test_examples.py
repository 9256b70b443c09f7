"""The examples/ notebooks run from top to bottom in a Jupyter kernel, as a user runs them (their own asserts and
expected refusals are part of the run)."""

import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NOTEBOOKS = sorted(EXAMPLES.glob("*.ipynb"))
# A cell's budget: the slowest cell (the sweep) takes a few seconds on the analytical backend; a hang fails fast.
CELL_TIMEOUT_S = 120


def test_the_examples_folder_has_its_notebook():
    assert [p.name for p in NOTEBOOKS] == ["three_jobs.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_to_the_end(path, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")

    notebook = nbformat.read(path, as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), \
        "the notebook is kept without outputs (they would go stale)"
    client = nbclient.NotebookClient(notebook, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                                     resources={"metadata": {"path": str(EXAMPLES)}})  # cells run in examples/
    # the kernel is this interpreter (the venv that has ArtISt), whatever `python3` the kernel spec names
    client.kernel_manager_class = _kernel_manager_of(sys.executable)
    client.execute()
    errors = [output for cell in notebook.cells for output in cell.get("outputs", [])
              if output.get("output_type") == "error"]
    assert not errors
    # what each job shows: the sweep's table, the calibrated profile matching the shipped one, a caught regression
    text = "\n".join(output.get("text", "") for cell in notebook.cells for output in cell.get("outputs", []))
    assert "same as the shipped profile: True" in text
    assert "latency-table check FAILED" in text


def _kernel_manager_of(python: str):
    from jupyter_client.manager import KernelManager

    class ThisPython(KernelManager):
        def format_kernel_cmd(self, extra_arguments=None):
            cmd = super().format_kernel_cmd(extra_arguments)
            return [python, *cmd[1:]] if cmd and "python" in Path(cmd[0]).name else cmd

    return ThisPython
