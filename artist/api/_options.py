"""The Python API's options, checked as the command line checks them.

Each keyword of an API function is one option of an `artist` command: its default, its bounds and its choices
come from that command's own parser (artist/commands/*.py add_parser), so the two cannot drift apart, and a bad
value is the InputError the CLI would report for the option.
"""

from __future__ import annotations

import argparse
import copy
import numbers
from pathlib import Path
from typing import Any

from artist.commands._args import command_parser
from artist.errors import InputError



def _actions(command: str) -> dict[str, argparse.Action]:
    """The command's options by dest, --help left out."""
    return {a.dest: a for a in command_parser(command)._actions
            if a.dest != argparse.SUPPRESS and a.default != argparse.SUPPRESS}


def option_name(action: argparse.Action) -> str:
    """How messages name the option: its long form (--jobs, not -j), or a positional's name."""
    longs = [s for s in action.option_strings if s.startswith("--")]
    return longs[0] if longs else (action.option_strings[0] if action.option_strings else action.dest)


def command_args(command: str, **values: Any) -> argparse.Namespace:
    """The namespace `artist <command>` parses from its defaults and `values` (keyed by the options' dests: racks,
    no_cache, policy_param, ...), each value checked by the option's own type and choices."""
    actions = _actions(command)
    parser = command_parser(command)
    # (argparse's private lists of a parser's actions and set_defaults values: it has no public ones; a list default
    # is copied, as every namespace argparse parses gets its own)
    args = argparse.Namespace(**{dest: copy.copy(a.default) for dest, a in actions.items()})
    for dest, default in parser._defaults.items():  # set_defaults: func, and options a command fixes
        setattr(args, dest, default)
    for dest, value in values.items():
        if dest not in actions:
            raise TypeError(f"`artist {command}` has no option for {dest!r}")
        setattr(args, dest, _checked(actions[dest], value))
    return args


def _checked(action: argparse.Action, value: Any) -> Any:
    """value as the option takes it: a flag's bool, a repeatable option's list, else one value through the
    option's type (which parses text: numbers are given to it as their text) and choices."""
    option = option_name(action)
    if action.nargs == 0:  # a flag (store_true)
        if not isinstance(value, bool):
            raise InputError("command line", option, f"expected True or False, got {value!r}")
        return value
    if value is None:
        return None
    if isinstance(action, argparse._AppendAction) or action.nargs in ("+", "*"):
        if isinstance(value, (str, Path)) or not hasattr(value, "__iter__"):
            raise InputError("command line", option, f"expected a list of values, got {value!r}")
        return [_one(action, option, v) for v in value]
    return _one(action, option, value)


def _one(action: argparse.Action, option: str, value: Any) -> Any:
    if isinstance(value, bool) and action.type is not None:
        raise InputError("command line", option, f"expected a number, got {value!r}")  # (bool is an int)
    text = str(value) if isinstance(value, (str, Path, numbers.Real)) else value
    if not isinstance(text, str):
        raise InputError("command line", option, f"expected text or a number, got {value!r}")
    if action.type is not None:
        try:
            text = action.type(text)
        except (argparse.ArgumentTypeError, ValueError) as exc:
            raise InputError("command line", option, str(exc)) from None
    if action.choices is not None and text not in action.choices:
        raise InputError("command line", option, f"invalid choice: {text!r} (choose from "
                                                 f"{', '.join(map(str, action.choices))})")
    return text
