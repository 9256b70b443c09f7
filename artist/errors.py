"""Errors raised for bad user input: every one names where the problem is."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input file or value. The message names the file and the line or field."""

    def __init__(self, source: str, where: str | None, problem: str):
        self.source = str(source)
        self.where = where
        self.problem = problem
        location = f"{self.source}: {where}" if where else self.source
        super().__init__(f"{location}: {problem}")
