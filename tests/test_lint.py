"""The repository passes `ruff check` with the configuration in pyproject.toml ([tool.ruff])."""

import importlib.util
import subprocess
import sys

import pytest

from conftest import REPO


def test_ruff_check_finds_nothing():
    if importlib.util.find_spec("ruff") is None:
        pytest.skip("ruff is not installed; pip install -e '.[test]' -c .ci/constraints.txt installs it")
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=REPO, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
