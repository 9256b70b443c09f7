"""Reading README.md and the documentation pages (docs/pages/) as the tests check them: fenced blocks,
sections by heading, table rows, and running a tutorial's files and commands."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGES = REPO / "docs" / "pages"
README_PATH = REPO / "README.md"
TUTORIALS = PAGES / "tutorials"


def page(name: str | Path) -> Path:
    """A documentation page by its path under docs/pages/ (README.md is the repository's)."""
    return README_PATH if str(name) == "README.md" else PAGES / name


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def fenced_blocks(path: Path) -> list[tuple[str, str]]:
    """(info string, body) of every fenced block, in order."""
    blocks, info, body = [], None, []
    for line in read(path).splitlines():
        if line.startswith("```"):
            if info is None:
                info, body = line[3:].strip(), []
            else:
                blocks.append((info, "\n".join(body) + "\n"))
                info = None
        elif info is not None:
            body.append(line)
    assert info is None, f"{path.name} has an unclosed fenced block"
    return blocks


def examples(kind: str, path: Path) -> list[str]:
    return [body for info, body in fenced_blocks(path) if info == kind]


def example(kind: str, path: Path) -> str:
    found = examples(kind, path)
    assert found, f"{path.name} has no ```{kind} example"
    return found[0]


def section(heading: str, path: Path) -> list[str]:
    """The lines under a heading (an exact line), up to the next heading of the same or a higher
    level; fenced blocks are kept but never taken for headings."""
    lines = read(path).splitlines()
    assert heading in lines, f"{path.name} has no heading {heading!r}"
    level = len(heading) - len(heading.lstrip("#"))
    out, in_fence = [], False
    for line in lines[lines.index(heading) + 1:]:
        if line.startswith("```"):
            in_fence = not in_fence
        elif not in_fence:
            m = re.match(r"(#+) ", line)
            if m and len(m.group(1)) <= level:
                break
        out.append(line)
    return out


def subsections(heading: str, path: Path) -> dict[str, list[str]]:
    """The next-level subsections of a section, by heading line."""
    level = len(heading) - len(heading.lstrip("#")) + 1
    out: dict[str, list[str]] = {}
    current, in_fence = None, False
    for line in section(heading, path):
        if line.startswith("```"):
            in_fence = not in_fence
        if not in_fence and line.startswith("#" * level + " "):
            current = line
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return out


def split_row(line: str) -> list[str]:
    """A table row's cells as the site's Markdown reads them: a `|` inside a code span or escaped as `\\|`
    does not separate cells."""
    cells, cell, i = [], [], 0
    while i < len(line):
        ch = line[i]
        if ch == "`":
            j = i
            while j < len(line) and line[j] == "`":
                j += 1
            end = line.find(line[i:j], j)
            if end < 0:
                cell.append(line[i:])
                break
            cell.append(line[i:end + j - i])
            i = end + j - i
        elif ch == "\\" and line[i + 1:i + 2] == "|":
            cell.append("|")
            i += 2
        elif ch == "|":
            cells.append("".join(cell))
            cell, i = [], i + 1
        else:
            cell.append(ch)
            i += 1
    cells.append("".join(cell))
    return [c.strip() for c in cells[1:-1]]


def table_rows(lines: list[str]) -> list[tuple[list[str], list[str]]]:
    """(names in the first cell's code spans, cells) of every table row outside fenced blocks whose
    first cell names something in backticks (header and separator rows have none)."""
    rows, in_fence = [], False
    for line in lines:
        if line.startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence or not line.startswith("|"):
            continue
        cells = split_row(line.strip())
        names = re.findall(r"`([^`]+)`", cells[0])
        if names:
            rows.append((names, cells))
    return rows


# --------------------------------------------------------------------------- running a tutorial

TITLE = re.compile(r'^\S+\s+title="([^"]+)"$')


def tutorial_steps(path: Path) -> list[tuple[str, str, str]]:
    """A tutorial's steps in page order: ("file", PATH, content) for a block titled with the file it is
    (```yaml title="my_sweeps/racks.yaml"), ("bash", "", commands) for every ```bash block, and ("text", "",
    output) for every ```text block: what the commands before it print. Other blocks are not steps."""
    steps = []
    for info, body in fenced_blocks(path):
        titled = TITLE.match(info)
        if titled:
            steps.append(("file", titled.group(1), body))
        elif info in ("bash", "text"):
            steps.append((info, "", body))
    return steps


# What differs from run to run in a command's output: times, temporary paths, digests of the code.
VOLATILE = [
    (re.compile(r"\b\d+(\.\d+)?s\b"), "<t>s"),  # pytest's "in 1.92s"
    (re.compile(r"\b(in|simulated in) \d+(\.\d+)? s\b"), r"\1 <t> s"),
    (re.compile(r"\(cache [^;)]*"), "(cache <path>"),
    (re.compile(r"\b[0-9a-f]{16}\b"), "<hex>"),
]


def normalised(line: str) -> str:
    for pattern, replacement in VOLATILE:
        line = pattern.sub(replacement, line)
    return " ".join(line.split())


def missing_output(shown: str, printed: str) -> list[str]:
    """The lines of a page's output block that the commands did not print (each line is looked for within
    one printed line, spaces and volatile parts aside; lines with "..." stand for what the page leaves out)."""
    printed_lines = [normalised(line) for line in printed.splitlines()]
    return [line for line in shown.splitlines()
            if line.strip() and "..." not in line
            and not any(normalised(line) in p for p in printed_lines)]


def tutorial_workdir(root: Path) -> Path:
    """A directory laid out as the repository root a reader works in: its shipped inputs, read-only."""
    root.mkdir(parents=True, exist_ok=True)
    for name in ("topologies", "workloads", "calibration", "sweeps"):
        (root / name).symlink_to(REPO / name, target_is_directory=True)
    return root


def tutorial_env(cache_dir: Path) -> dict[str, str]:
    """This interpreter's `artist` and `python` first on PATH, a private latency cache, no ns-3 worker pool
    beyond one process (two cores are shared with the rest of the suite)."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["ARTIST_CACHE_DIR"] = str(cache_dir)
    env.setdefault("ARTIST_NS3_WORKERS", "1")
    env["MPLBACKEND"] = "Agg"
    return env


def run_tutorial(path: Path, root: Path) -> list[subprocess.CompletedProcess]:
    """Write the tutorial's files and run its commands, in page order, in a repository-like directory, and
    check that what each command block prints shows the output the page gives after it. Every bash block runs
    with `set -euo pipefail`: a command that fails fails the block."""
    workdir = tutorial_workdir(root / "work")
    env = tutorial_env(root / "cache")
    done: list[subprocess.CompletedProcess] = []
    for kind, name, body in tutorial_steps(path):
        if kind == "file":
            target = workdir / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(body, encoding="utf-8")
        elif kind == "bash":
            result = subprocess.run(["bash", "-c", "set -euo pipefail\n" + body], cwd=workdir, env=env,
                                    capture_output=True, text=True)
            assert result.returncode == 0, (f"{path.name}: a command block failed (exit {result.returncode}):\n"
                                            f"{body}\n--- stdout\n{result.stdout[-3000:]}\n"
                                            f"--- stderr\n{result.stderr[-3000:]}")
            done.append(result)
        else:
            assert done, f"{path.name}: an output block before any command"
            missing = missing_output(body, done[-1].stdout + "\n" + done[-1].stderr)
            assert not missing, (f"{path.name}: the page shows output the commands did not print:\n"
                                 + "\n".join(missing) + f"\n--- printed\n{done[-1].stdout[-3000:]}"
                                 f"\n--- stderr\n{done[-1].stderr[-2000:]}")
    return done
