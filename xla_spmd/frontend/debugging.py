"""``xs.debug.callback`` and ``xs.debug.print``: call Python, or print, from inside traced
code with the values the program computes at run time, as ``jax.debug`` does.

Under a trace the call becomes a side-effecting custom-call (``xla_spmd.debug_callback``,
see `xla_spmd.ir.custom_calls`) whose operands are the array arguments; the function is
kept in the process's callback table (``HOST_CALLBACKS``) and called by the backend when the
instruction runs. Who calls it, as JAX:

* ``partitioned=False`` (the default): once per run, on device 0 (under ``mpirun``: rank 0),
  with the global values (the operands are all-gathered first);
* ``partitioned=True``: on every device, with its own shard of each operand (under
  ``mpirun`` each rank prints its own shards);
* inside a ``shard_map`` body: on every device, with its local values.

Outside any trace it calls the function at once. Arguments that are not arrays (strings,
``None``, objects) are passed through as they are; arrays, numpy scalars and Python numbers
arrive as numpy arrays. Under ``grad`` the forward pass calls it; under ``vmap`` it is
called once per batch element. ``ordered=True`` is accepted: on each device the callbacks
run in program order.

>>> import numpy as np
>>> import xla_spmd as xs
>>> f = xs.jit(lambda x: (xs.debug.print("x = {}, sum = {s}", x, s=x.sum()), x * 2)[1])
>>> _ = f(np.arange(3, dtype=np.float32))
x = [0. 1. 2.], sum = 3.0
"""

from __future__ import annotations

import itertools
import string
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from xla_spmd.backends.reference.control import HOST_CALLBACKS
from xla_spmd.frontend.dtypes import canonical_array
from xla_spmd.frontend.pytree import tree_flatten, tree_unflatten
from xla_spmd.frontend.tracing import (
    Array,
    Tracer,
    Value,
    bind,
    current_trace,
    is_distributed,
)
from xla_spmd.ir import TupleShape
from xla_spmd.ir.custom_calls import CALLBACK_KEY, CALLBACK_MODE, DEBUG_CALLBACK

_KEYS = itertools.count()


def _is_dynamic(leaf) -> bool:
    """Whether a leaf is an array argument (JAX: it has an abstract value)."""
    return (isinstance(leaf, (Value, np.ndarray, np.generic, bool, int, float, complex))
            or is_distributed(leaf))


def _host_value(leaf) -> np.ndarray:
    if isinstance(leaf, Tracer):
        raise AssertionError("a traced value reached an eager callback")
    if isinstance(leaf, Array) or is_distributed(leaf):
        return np.asarray(leaf)
    return canonical_array(leaf)


def _bind_callback(function: Callable, dynamic: list, partitioned: bool) -> None:
    trace = current_trace()
    if trace is None:  # eager: call it now
        function(*[_host_value(x) for x in dynamic])
        return
    key = f"debug_callback.{next(_KEYS)}"
    HOST_CALLBACKS[key] = function
    mode = "each" if partitioned or trace.manual is not None else "once"
    operands = [x if isinstance(x, Value) else Array(_host_value(x)) for x in dynamic]
    bind("custom-call", *operands, shape=TupleShape(()), custom_call_target=DEBUG_CALLBACK,
         custom_call_has_side_effect=True,
         frontend_attributes=((CALLBACK_KEY, key), (CALLBACK_MODE, mode)))


def _callback_with(callback: Callable, args: tuple, kwargs: dict, partitioned: bool) -> None:
    if not callable(callback):
        raise TypeError("first argument to xs.debug.callback must be callable, but got an "
                        f"object of type {type(callback).__name__}")
    leaves, tree = tree_flatten((args, kwargs))
    static = {i: leaf for i, leaf in enumerate(leaves) if not _is_dynamic(leaf)}
    dynamic = [leaf for i, leaf in enumerate(leaves) if i not in static]

    def flat_callback(*values):
        it = iter(values)
        merged = [static[i] if i in static else next(it) for i in range(len(leaves))]
        call_args, call_kwargs = tree_unflatten(tree, merged)
        callback(*call_args, **call_kwargs)

    _bind_callback(flat_callback, dynamic, partitioned)


def callback(callback: Callable | None = None, *args: Any, ordered: bool = False,
             partitioned: bool = False, **kwargs: Any) -> Any:
    """Call ``callback(*args, **kwargs)`` with the run-time values of traced arguments (JAX's
    ``jax.debug.callback``); returns None. The two-call form ``callback(ordered=True)(fn,
    *args)`` works too.

    >>> import numpy as np
    >>> import xla_spmd as xs
    >>> seen = []
    >>> _ = xs.jit(lambda x: (xs.debug.callback(seen.append, x + 1), x)[1])(np.int32(4))
    >>> seen
    [array(5, dtype=int32)]
    """
    del ordered  # one device runs its callbacks in program order
    if callback is not None:
        _callback_with(callback, args, kwargs, partitioned)
        return None
    if args or kwargs:
        raise TypeError(f"xs.debug.callback received unexpected arguments in the two-call "
                        f"form: args={args} kwargs={kwargs}")
    return lambda fn, *a, **k: _callback_with(fn, a, k, partitioned)


class _FormatChecker(string.Formatter):
    """Checks that a format string uses every argument (as JAX's `debug.print`)."""

    def format_field(self, value, format_spec):
        return ""

    def check_unused_args(self, used_args, args, kwargs):
        unused = [arg for i, arg in enumerate(args) if i not in used_args]
        unused_kwargs = [k for k in kwargs if k not in used_args]
        if unused:
            raise ValueError(f"Unused positional arguments to `xs.debug.print`: {unused}")
        if unused_kwargs:
            raise ValueError(
                f"Unused keyword arguments to `xs.debug.print`: {unused_kwargs}. You may be "
                "passing an f-string (i.e, `f\"{x}\"`) into `xs.debug.print` and instead "
                "should pass in a regular string.")


def _print_with(fmt: str, args: tuple, kwargs: dict, partitioned: bool,
                skip_format_check: bool) -> None:
    if not skip_format_check:
        _FormatChecker().format(fmt, *args, **kwargs)
    has_placeholders = bool(fmt) and next(iter(string.Formatter().parse(fmt)))[1] is not None
    printoptions = np.get_printoptions()

    def show(*a, **k):
        if has_placeholders:
            with np.printoptions(**printoptions):
                message = fmt.format(*a, **k)
        else:
            message = " ".join((fmt, *(str(x) for x in a)))
        sys.stdout.write(message + "\n")

    _callback_with(show, args, kwargs, partitioned)


def print(fmt: str | None = None, *args: Any, ordered: bool = False, partitioned: bool = False,
          skip_format_check: bool = False, **kwargs: Any) -> Any:  # noqa: A001
    """Print ``fmt.format(*args, **kwargs)`` with the run-time values (JAX's
    ``jax.debug.print``): from inside `xs.jit`, `shard_map`, loops and transforms. Write
    ``print("x = {x}", x=x)``, not an f-string (formatting happens when the program runs).
    The two-call form ``print(ordered=True)("x = {}", x)`` works too.

    >>> import numpy as np
    >>> import xla_spmd as xs
    >>> xs.debug.print("{} and {}", np.float32(1.5), 2)
    1.5 and 2
    """
    del ordered
    if fmt is not None:
        _print_with(fmt, args, kwargs, partitioned, skip_format_check)
        return None
    if args or kwargs:
        raise TypeError(f"xs.debug.print received unexpected arguments in the two-call form: "
                        f"args={args} kwargs={kwargs}")
    return lambda f, *a, **k: _print_with(f, a, k, partitioned, skip_format_check)
