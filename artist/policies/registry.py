"""Policy names -> classes. A new policy is one module that calls @register."""

from __future__ import annotations

import importlib
import inspect

from artist.policies.base import Policy

_REGISTRY: dict[str, type[Policy]] = {}

# Modules whose import registers policies; listed so that the registry is
# complete without importing the world at start-up of unrelated commands.
POLICY_MODULES = (
    "artist.policies.fifo",
    "artist.policies.gandiva",
    "artist.policies.tiresias",
    "artist.policies.dally",
)


def _from_plugin(cls) -> bool:
    return cls.__module__.startswith("artist_plugin_")  # the module names plugins.load_plugin gives


def register(name: str):
    def wrap(cls):
        old = _REGISTRY.get(name)
        # an edited plugin file imported again in one process replaces its older version; nothing may
        # shadow a built-in policy or another module's name
        if old is not None and old is not cls and not (_from_plugin(old) and _from_plugin(cls)):
            raise ValueError(f"policy name {name!r} registered twice")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return wrap


def _load_all() -> None:
    for module in POLICY_MODULES:
        importlib.import_module(module)


def policy_names() -> list[str]:
    _load_all()
    return sorted(_REGISTRY)


def builtin_policy_names() -> list[str]:
    """The suite's own policies: neither a user's plugin file nor one a test registered."""
    _load_all()
    return sorted(n for n, cls in _REGISTRY.items() if cls.__module__.startswith("artist.policies."))


def make_policy(name: str, **params) -> Policy:
    _load_all()
    if name not in _REGISTRY:
        raise KeyError(f"unknown policy {name!r}; known policies: {', '.join(sorted(_REGISTRY))}")
    cls = _REGISTRY[name]
    accepted = set(inspect.signature(cls.__init__).parameters) - {"self"}
    unknown = sorted(set(params) - accepted)
    if unknown:
        raise KeyError(f"policy {name!r} has no parameter {unknown[0]!r}; "
                       f"parameters: {', '.join(sorted(accepted)) or 'none'}")
    return cls(**params)


def make_policy_checked(name: str, params: dict, source: str, where: str) -> Policy:
    """make_policy, with every problem (unknown policy or parameter, a value the policy rejects, a
    number that is not finite) an InputError naming the source and field."""
    import math

    from artist.errors import InputError

    for key, value in params.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        if any(isinstance(v, float) and not math.isfinite(v) for v in values):
            raise InputError(source, f"{where} {key}", f"must be a finite number, got {value!r}")
    try:
        return make_policy(name, **params)
    except KeyError as exc:
        raise InputError(source, where, exc.args[0]) from None
    except (TypeError, ValueError) as exc:
        raise InputError(source, where, f"rejected by policy {name!r}: {exc}") from None
