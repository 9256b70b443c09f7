"""mkdocs hook: appends every `artist` command's --help, rendered from the argparse parsers
(artist.cli.build_parser), to the command-line reference page, so the page cannot drift from the code."""

from __future__ import annotations

import argparse
import os

PAGE = "reference/cli.md"
WIDTH = "100"  # argparse wraps help text to $COLUMNS


def _commands(parser: argparse.ArgumentParser):
    """(prog, parser) of every sub-command, depth first, in the order the CLI registers them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield sub.prog, sub
                yield from _commands(sub)


def render() -> str:
    from artist.cli import build_parser

    fixed = {"COLUMNS": WIDTH, "NO_COLOR": "1", "PYTHON_COLORS": "0"}  # width; no terminal colours (Python 3.14)
    saved = {name: os.environ.get(name) for name in fixed}
    os.environ.update(fixed)
    try:
        parser = build_parser()
        parts = ["## Every command's options", "",
                 "Generated from the parsers when this site is built: the text of `artist <command> --help`.", ""]
        for prog, sub in _commands(parser):
            level = "###" if prog.count(" ") == 1 else "####"
            parts += [f"{level} `{prog}`", "", "```text", sub.format_help().rstrip(), "```", ""]
        return "\n".join(parts)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def on_page_markdown(markdown: str, page, config, files) -> str:
    if page.file.src_uri != PAGE:
        return markdown
    return markdown.rstrip() + "\n\n" + render() + "\n"
