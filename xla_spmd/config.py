"""Process-wide options, used as JAX's ``jax.config`` is: ``xs.config.update(name, value)``
sets one, ``xs.config.<name>`` reads it (this module is the config object), and each has an
environment variable that gives its value at start-up (checked when first read, with an error
naming the variable). JAX's spellings of the shared options work too
(``xs.config.update("jax_enable_x64", True)``).

This module imports nothing of ours but ``xla_spmd.errors``, so every layer may read it.

>>> import xla_spmd as xs
>>> xs.config.max_loop_iterations > 0
True
>>> with xs.config.override(collective_timeout=5.0):
...     xs.config.collective_timeout
5.0
>>> xs.config.update("backend", "no-such-backend")
Traceback (most recent call last):
    ...
xla_spmd.errors.XlaSpmdError: backend='no-such-backend': expected one of 'reference', 'cpu', 'gpu'
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from xla_spmd.errors import XlaSpmdError


def _boolean(text: str | bool) -> bool:
    if isinstance(text, (bool, int)) and text in (0, 1):
        return bool(text)
    lowered = str(text).strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected 1/true/yes/on or 0/false/no/off")


def _timeout(text: str | float) -> float:
    """Seconds > 0; ``inf`` or ``none`` mean no timeout (math.inf). NaN is refused: it is
    no number of seconds, and a typo's way to wait forever.

    >>> _timeout("90"), _timeout("inf"), _timeout("none")
    (90.0, inf, inf)
    >>> _timeout("nan")
    Traceback (most recent call last):
    ...
    ValueError: expected a positive number of seconds, or 'inf' for no limit
    """
    expected = "expected a positive number of seconds, or 'inf' for no limit"
    if isinstance(text, str) and text.strip().lower() in ("none", "inf", "infinity"):
        return math.inf
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValueError(expected) from None
    if math.isnan(value) or value <= 0:  # -inf included
        raise ValueError(expected)
    return value


def _positive_int(text: str | int) -> int:
    try:
        value = int(text)
    except (TypeError, ValueError):
        value = 0
    if value < 1:
        raise ValueError("expected a positive integer")
    return value


def _choice(*choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = str(text).strip().lower()
        if value not in choices:
            raise ValueError("expected one of " + ", ".join(repr(c) for c in choices))
        return value
    return parse


@dataclass(frozen=True, slots=True)
class Option:
    """One option: its default, the environment variable that sets it, and its parser."""

    name: str
    default: Any
    env: str
    parse: Callable[[Any], Any]
    doc: str


OPTIONS: dict[str, Option] = {option.name: option for option in (
    Option("backend", "cpu", "XLA_SPMD_BACKEND", _choice("reference", "cpu", "gpu"),
           "the backend that compiles and runs per-device programs"),
    Option("deterministic_collectives", True, "XLA_SPMD_DETERMINISTIC", _boolean,
           "reduce floats in group order on every communicator (bit-identical in-process, "
           "under MPI and on any machine); 0 lets MPI/NCCL pick their own, faster order"),
    Option("shared_memory_collectives", True, "XLA_SPMD_SHARED_MEMORY", _boolean,
           "under MPI, ranks of one host all-reduce mid-size floats through a file in "
           "/dev/shm (the same bits, fewer round trips); 0 keeps every byte in MPI messages"),
    Option("collective_timeout", 300.0, "XLA_SPMD_COLLECTIVE_TIMEOUT", _timeout,
           "seconds a device waits in a collective before the job stops and names the "
           "devices that did not arrive; 'inf' waits forever"),
    Option("cpu_stacked", True, "XLA_SPMD_CPU_STACKED", _boolean,
           "the CPU backend runs the in-process devices of a small program as one, each "
           "value stacked over the devices and each step launched once (bit-identical); 0 "
           "launches each step once per device"),
    Option("max_loop_iterations", 10_000_000, "XLA_SPMD_MAX_LOOP_ITERATIONS", _positive_int,
           "iterations after which a `while` loop is stopped with an error"),
    Option("enable_x64", False, "XLA_SPMD_ENABLE_X64", _boolean,
           "64-bit types, as JAX's jax_enable_x64: off narrows f64/s64/u64/c128 inputs and "
           "defaults to 32 bits (Python floats become f32); on keeps them"),
    Option("default_axis_types", "explicit", "XLA_SPMD_DEFAULT_AXIS_TYPES",
           _choice("auto", "explicit"),
           "the axis type of `make_mesh` axes when `axis_types` is not given: 'explicit' "
           "(JAX 0.10's default: sharding in types) or 'auto' (propagation places "
           "values)"),
    Option("cost_profile", "", "XLA_SPMD_COST_PROFILE", str,
           "a JSON profile from `xla-spmd calibrate` that the cost model prices programs "
           "with; empty: the built-in profile"),
)}


_values: dict[str, Any] = {}
_UNSET = object()


def _parse(option: Option, value: Any, source: str) -> Any:
    try:
        return option.parse(value)
    except (TypeError, ValueError) as error:
        raise XlaSpmdError(f"{source}={value!r}: {error}") from None


def _option(name: str) -> Option | None:
    """The option `name` names; JAX's spelling (``jax_enable_x64``) is accepted too."""
    return OPTIONS.get(name) or OPTIONS.get(name.removeprefix("jax_"))


def __getattr__(name: str) -> Any:
    """An option's value: what ``update`` set, else its environment variable (parsed once),
    else its default."""
    option = _option(name)
    if option is None:
        raise AttributeError(f"xla_spmd.config has no option {name!r}; options: "
                             + ", ".join(sorted(OPTIONS)))
    if option.name not in _values:
        text = os.environ.get(option.env)
        _values[option.name] = (option.default if text is None or not text.strip()
                                else _parse(option, text, option.env))
    return _values[option.name]


def value(name: str) -> Any:
    """``value("collective_timeout")`` is ``config.collective_timeout``, cheaper: an attribute
    of a module that defines ``__getattr__`` is first looked up (and missed) the usual way,
    which costs microseconds; per-call paths (every collective reads its timeout) use this.

    >>> import xla_spmd.config as config
    >>> with config.override(collective_timeout=7):
    ...     value("collective_timeout"), config.collective_timeout
    (7.0, 7.0)
    """
    try:
        return _values[name]
    except KeyError:
        return __getattr__(name)


def update(name: str, value: Any) -> None:
    """Set option ``name`` for this process (overrides its environment variable)."""
    option = _option(name)
    if option is None:
        raise XlaSpmdError(f"unknown option {name!r}; options: " + ", ".join(sorted(OPTIONS)))
    _values[option.name] = _parse(option, value, name)


def reset(name: str | None = None) -> None:
    """Forget what ``update`` set (one option, or all): the environment rules again."""
    if name is None:
        _values.clear()
    else:
        _values.pop(name, None)


@contextlib.contextmanager
def override(**values: Any) -> Iterator[None]:
    """Set options for the duration of a ``with`` block."""
    names = {getattr(_option(name), "name", name) for name in values}
    saved = {name: _values.get(name, _UNSET) for name in names}
    try:
        for name, value in values.items():
            update(name, value)
        yield
    finally:
        for name, value in saved.items():
            if value is _UNSET:
                _values.pop(name, None)
            else:
                _values[name] = value


def check() -> None:
    """Read every option now, so a bad environment variable fails at start-up, naming it,
    instead of in the middle of a run. The runtime calls this on first use."""
    for name in OPTIONS:
        __getattr__(name)


def how_to_set(name: str, value: str = "VALUE") -> str:
    """How a user changes option ``name``, for error messages.

    >>> how_to_set("max_loop_iterations", "N")
    "set XLA_SPMD_MAX_LOOP_ITERATIONS=N or call xs.config.update('max_loop_iterations', N)"
    """
    return f"set {OPTIONS[name].env}={value} or call xs.config.update({name!r}, {value})"


def describe() -> str:
    """Every option, its value, and the variable that sets it."""
    return "\n".join(f"{o.name} = {__getattr__(o.name)!r}  ({o.env}): {o.doc}"
                     for o in OPTIONS.values())
