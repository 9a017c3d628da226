"""XLA's own SPMD partitioner tests (``xla/service/spmd/spmd_partitioner_test.cc``), replayed.

`extract_modules(text)` finds, in each ``TEST_P``/``TEST_F`` of the C++ file, the HLO module
(the raw string ``R"(...)"`` assigned to ``hlo_string``) and the number of devices it is
partitioned over (``PartitionComputation(hlo_string, /*num_devices=*/N, ...)``).
`run_module(case)` parses it with `xla_spmd.ir.parse_hlo`, partitions it over N devices as
XLA's test does (the module's shardings as written, no propagation; a value without one is
replicated), runs it on N in-process devices with random inputs (seeded by the test's name;
integers within [0, 4), so that indices are in range) and compares the assembled results
with the unpartitioned module (`spmd_oracle.check`), both run on the compiled CPU backend or
the reference evaluator: exactly for integers and predicates, to 1e-4 for floats (2e-2 for bf16
results, 2e-3 for f16), relative to the result's largest magnitude (a partitioned sum adds
in another order). A module with manual parts is compared device by device
(`manual_oracle`); one with an order-dependent float scatter gets inputs whose sums are exact
in any order (`random_inputs`). See docs/xla_spmd_conformance.md.

>>> cc = 'TEST_P(T, Add) {\\n  absl::string_view hlo_string = R"(\\nHloModule m\\n)";\\n' \\
...      '  PartitionComputation(hlo_string, /*num_devices=*/2));\\n}\\n'
>>> [(c.name, c.num_devices) for c in extract_modules(cc)]
[('Add', 2)]
"""

from __future__ import annotations

import ctypes
import json
import math
import os
import re
import resource
import select
import signal
import zlib
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

_TEST = re.compile(r"^TEST_[PF]\(\s*\w+\s*,\s*(\w+)\s*\)", re.M)
_RAW = re.compile(r'(\w+)\s*=\s*R"(\w*)\((.*?)\)\2"', re.S)
_REFUSED = re.compile(r"EXPECT_FALSE\(\s*\w+\.status\(\)\.ok\(\)\s*\)")
_SUBSTR = re.compile(r'HasSubstr\(((?:\s*"(?:[^"\\]|\\.)*")+)\s*\)')
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_PARTITION = re.compile(r"PartitionComputation\(\s*(\w+)\s*,\s*(?:/\*\s*num_devices\s*=\s*\*/)?"
                        r"\s*(\d+)")


@dataclass(frozen=True)
class XlaCase:
    """One test's module: the test's name, its HLO text and its number of devices;
    `refused` is None, or (for a test that expects ``PartitionComputation`` to fail) the
    text XLA's error must hold ('' when the test names none)."""

    name: str
    hlo: str
    num_devices: int
    refused: str | None = None


@dataclass(frozen=True)
class XlaResult:
    """How one case went: status PASS, PARSE (the parser refused it), UNSUPPORTED (the
    partitioner or evaluator refused it), MISMATCH (it ran, the results differ), CRASH,
    TIMEOUT or TOO_LARGE (out of memory), RANGE (a module with ``rng``, whose values are
    implementation-defined: its random results agree by shape, type and range, its others
    exactly); `message` is the first line of why."""

    name: str
    status: str
    message: str = ""


def extract_modules(text: str) -> list[XlaCase]:
    """Every test of `text` that partitions a raw-string HLO module: the string passed to
    its first ``PartitionComputation`` call, with that call's device count."""
    starts = [m.start() for m in _TEST.finditer(text)] + [len(text)]
    cases = []
    for start, end in zip(starts, starts[1:]):
        body = text[start:end]
        match = _TEST.match(body)
        assert match is not None
        strings = {m.group(1): m.group(3) for m in _RAW.finditer(body)}
        call = _PARTITION.search(body)
        if call is None or call.group(1) not in strings:
            continue
        refused = None
        if _REFUSED.search(body):  # the text of HasSubstr("..." "..."), adjacent literals joined
            substr = _SUBSTR.search(body)
            refused = "".join(_STRING.findall(substr.group(1))) if substr else ""
        cases.append(XlaCase(match.group(1), strings[call.group(1)], int(call.group(2)),
                             refused))
    return cases


MEMORY_LIMIT = 6 << 30  # the address space an isolated case may take (more: TOO_LARGE)
MAX_INPUT_BYTES = MEMORY_LIMIT
"""The entry parameters' size above which a case is TOO_LARGE without being tried (they are
held for the whole case) where no memory cap is given; under a cap, a case is refused
untried where its `MemoryNeed.least` exceeds the cap."""


def _parameter_bytes(module) -> int:
    from xla_spmd.partition.values import shape_leaves

    return sum(int(np.prod(leaf.dims)) * leaf.dtype.itemsize
               for param in module.entry.parameters for leaf in shape_leaves(param.shape))


@dataclass(frozen=True)
class MemoryNeed:
    """What a case holds at once, in bytes, from the liveness plans of the compiled CPU
    backend (``plan_module``: each value dropped after its last use, fusions' insides never
    made, a reduction's accumulator counted; kernels' other scratch not). `parameters`: the
    global inputs, held for the whole case (the devices' shards are views of them where
    unpadded). `device`: the most one device holds beside its arguments; `devices`: that
    times the devices (they run together). `results`: every device's results, held while
    the unpartitioned module runs, which holds at most `global_own` beside its parameters.

    `least` is a lower bound of the case's need (one device at its peak beside the inputs;
    the unpartitioned run beside the devices' results); `planned` has every device at its
    peak at once (as they run, in step at their collectives). Neither counts the address
    space the process takes beside its arrays (code, thread stacks, allocator arenas).

    >>> need = MemoryNeed(parameters=4, device=3, devices=6, results=2, global_own=2)
    >>> need.least, need.planned
    (8, 10)
    """

    parameters: int
    device: int
    devices: int
    results: int
    global_own: int

    @property
    def least(self) -> int:
        return self.parameters + max(self.device, self.global_own + self.results)

    @property
    def planned(self) -> int:
        return self.parameters + max(self.devices, self.global_own + self.results)

    def describe(self) -> str:
        gib = 1 << 30
        return (f"needs at least {self.least / gib:.1f} GiB, {self.planned / gib:.1f} GiB "
                f"planned: parameters {self.parameters / gib:.2f} GiB, each device's own "
                f"{self.device / gib:.2f} GiB, the devices' results {self.results / gib:.2f} "
                f"GiB, the unpartitioned run's own {self.global_own / gib:.2f} GiB")


def memory_need(parsed, program) -> MemoryNeed:
    """`MemoryNeed` of a case: `parsed` its module as written, `program` it lowered
    (`spmd_oracle.partition`: the imported module and its partitioned `spmd_module`)."""
    from xla_spmd.backends.cpu.executable import plan_module

    spmd, devices = program.spmd_module, program.mesh.size
    module = program.module
    return MemoryNeed(parameters=_parameter_bytes(parsed),
                      device=_own_peak(plan_module(spmd)[id(spmd.entry)]),
                      devices=devices * _own_peak(plan_module(spmd)[id(spmd.entry)]),
                      results=devices * _nbytes(spmd.entry.root.shape),
                      global_own=_own_peak(plan_module(module)[id(module.entry)]))


def _nbytes(shape) -> int:
    from xla_spmd.partition.values import shape_leaves

    return sum(leaf.byte_size for leaf in shape_leaves(shape) if not leaf.is_token)


def _own_peak(program) -> int:
    """The largest sum of live bytes a CPU plan holds beside its parameters (which its
    caller holds throughout), walking its steps as ``program._assign_lifetimes`` does."""
    from xla_spmd.backends.cpu.program import _SHARING
    from xla_spmd.backends.cpu.renderer import accumulator_dtype

    parameters = set(program.parameter_slots)
    live: dict[int, int] = {}
    peak = 0
    for step in program.steps:
        if step.kind == "start":
            continue
        shares = step.inst.op.name in _SHARING and step.kind == "kernel" and step.folded is None
        live[step.slot] = 0 if shares or step.slot in parameters else _nbytes(step.inst.shape)
        scratch = 0
        if step.kind == "fusion" and step.fused.kind in ("reduce", "window"):
            scratch = step.inst.shape.num_elements * accumulator_dtype(
                step.inst.shape.dtype).itemsize
        peak = max(peak, sum(live.values()) + scratch)
        for slot in step.frees:
            live.pop(slot, None)
    return peak


def random_inputs(module, seed: int, ordered: bool = False) -> list[np.ndarray]:
    """Deterministic random values for the entry's parameters (array leaves of tuples too).
    `ordered` (a module with ``rng``, whose bounds are its parameters in order) adds 4k to
    the values of parameter k, so that each rng's low bound is below its high one.

    A module with an order-dependent scatter (a float combiner other than max/min: which of
    several updates to one element comes first is implementation-defined, and float sums
    round differently in each order) gets inputs whose sums are exact in any order: floats
    are small integers, and the scatter's index parameter spreads over the operand's whole
    scattered dims (few updates per element), not [0, 4), where thousands of bf16 updates to
    one row differ by tens between two orders (XLA's ScatterCostModelForUnmatchedSharding)."""
    rng = np.random.default_rng(seed)
    spread = _scatter_index_bounds(module)
    return [_random_value(param.shape, rng, 4 * param.attrs.parameter_number if ordered else 0,
                          exact=bool(spread), high=spread.get(param.attrs.parameter_number))
            for param in module.entry.parameters]


def _scatter_index_bounds(module) -> dict[int, int]:
    """Entry parameter number -> the exclusive bound of in-range start indices, for the index
    parameter (reached through copies) of each order-dependent float scatter of the entry;
    {} when the module has none. The bound keeps every update window in the operand: the
    smallest, over the scattered operand dims, of the dim's size minus its window's."""
    bounds: dict[int, int] = {}
    for inst in module.entry.instructions:
        if inst.opcode != "scatter" or not _order_dependent(inst):
            continue
        attrs = inst.attrs
        operand = inst.operands[0].shape
        updates = inst.operands[-1].shape
        window_dims = [d for d in range(operand.rank) if d not in attrs.inserted_window_dims
                       and d not in attrs.input_batching_dims]
        extent = {d: updates.dims[w] for d, w in zip(window_dims, attrs.update_window_dims)}
        bound = min(operand.dims[d] - extent.get(d, 1) + 1
                    for d in attrs.scatter_dims_to_operand_dims)
        indices = inst.operands[len(inst.operands) // 2]
        while indices.opcode in ("copy", "convert"):
            indices = indices.operands[0]
        if indices.opcode == "parameter" and bound > 4:
            number = indices.attrs.parameter_number
            bounds[number] = min(bound, bounds.get(number, bound))
        bounds.setdefault(-1, 0)  # the module has one: exact floats even without a spread
    return bounds


def _order_dependent(scatter) -> bool:
    dtype = scatter.operands[0].shape.leaves()[0].dtype.array_dtype
    floating = np.issubdtype(dtype, np.inexact) or dtype.kind == "V" or "float" in dtype.name
    root = scatter.attrs.to_apply.root
    return floating and root.opcode not in ("maximum", "minimum", "parameter")


def random_infeeds(module, seed: int) -> list:
    """Deterministic random values for the entry's infeeds, in order (their data's shapes)."""
    rng = np.random.default_rng(seed + 1)
    return [_random_value(inst.shape.elements[0], rng)
            for inst in module.entry.instructions if inst.opcode == "infeed"]


def _random_value(shape, rng, offset: int = 0, exact: bool = False, high: int | None = None,
                  chunk: int | None = None):
    """A random value of `shape` (plus `offset`; booleans none): an array, or a tuple of its
    leaves' arrays. `exact`: floats are integers in [-4, 4); `high`: integers are in
    [0, high), not [0, 4). Drawn `CHUNK` elements at a time straight into the result's type
    (a generator gives the same stream in pieces as at once: the values are those of one
    draw of the whole shape), without a float64 or int64 temporary the size of the value.
    The arrays are read-only: the devices share them (`shards.shard_array` cuts views).

    >>> whole = np.random.default_rng(0).standard_normal(10).astype(np.float32)
    >>> from xla_spmd.ir import parse_hlo
    >>> p = parse_hlo('HloModule m\\nENTRY e { ROOT p = f32[10] parameter(0) }').entry.root
    >>> bool(np.array_equal(_random_value(p.shape, np.random.default_rng(0), chunk=3), whole))
    True
    """
    from xla_spmd.ir import TupleShape
    from xla_spmd.partition.values import shape_leaves

    chunk = chunk or CHUNK
    leaves = []
    for leaf in shape_leaves(shape):
        dtype = leaf.dtype.array_dtype
        value = np.empty(leaf.dims, dtype)
        flat = value.reshape(-1)
        if np.issubdtype(dtype, np.complexfloating) and not exact:  # real parts, then imaginary
            for part in (flat.real, flat.imag):
                for start in range(0, flat.size, chunk):
                    size = min(chunk, flat.size - start)
                    part[start:start + size] = rng.standard_normal(size)
        else:
            for start in range(0, flat.size, chunk):
                flat[start:start + chunk] = _draw(dtype, min(chunk, flat.size - start), rng,
                                                  offset, exact, high)
        value.flags.writeable = False
        leaves.append(value)
    return tuple(leaves) if isinstance(shape, TupleShape) else leaves[0]


CHUNK = 1 << 22  # the elements drawn at a time


def _draw(dtype, size: int, rng, offset: int, exact: bool, high: int | None) -> np.ndarray:
    """`size` values of `_random_value`'s stream for an array of `dtype`, in that type."""
    if dtype == np.bool_:
        return rng.integers(0, 2, size).astype(bool)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(offset, offset + (high or 4), size).astype(dtype)
    if exact:
        return (rng.integers(-4, 4, size) + offset).astype(dtype)
    return (rng.standard_normal(size) + offset).astype(dtype)


@contextmanager
def opaque_custom_calls():
    """While active, a custom-call target with no reference rule (XLA's tests invent some:
    ``SomeCustomCall``, ``BatchableCustomCall``) evaluates as an opaque pure function: its
    results are random values seeded by a hash of the target and of its operands' values and
    shapes. A partitioned program then matches only if it runs the call on the operands the
    unpartitioned one does (XLA replicates such a call's operands)."""
    from xla_spmd.backends.reference import EVALUATE
    from xla_spmd.backends.reference.control import CUSTOM_CALLS

    known = EVALUATE["custom-call"]

    def rule(inst, operands, ctx):
        target = inst.attrs.custom_call_target
        if target in CUSTOM_CALLS:
            return known(inst, operands, ctx)
        digest = zlib.crc32(target.encode())
        for leaf in _leaves(operands):
            array = np.ascontiguousarray(leaf)
            digest = zlib.crc32(array.tobytes(), zlib.crc32(str(array.shape).encode(), digest))
        return _random_value(inst.shape, np.random.default_rng(digest))

    EVALUATE["custom-call"] = rule
    try:
        yield
    finally:
        EVALUATE["custom-call"] = known


def _leaves(value):
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [] if not isinstance(value, np.ndarray | np.generic) else [value]


class _Timeout(BaseException):  # not an Exception: no handler of a case catches it
    pass


def _alarm(signum, frame):
    raise _Timeout


BACKENDS = ("cpu", "reference")  # what runs both modules: compiled, or the numpy evaluator


def run_module(case: XlaCase, timeout: float | None = None, backend: str = "cpu",
               max_input: int = MAX_INPUT_BYTES, memory: int | None = None) -> XlaResult:
    """Parse, partition over `case.num_devices`, run and compare (see the module docstring);
    a case still running after `timeout` seconds is stopped as TIMEOUT (main thread only).
    `backend` runs the partitioned module (on N devices) and the unpartitioned one: the
    compiled CPU backend (bit-identical to the reference evaluator, much faster on large
    convolutions, dots and sorts) or the reference evaluator itself. A case whose parameters
    exceed `max_input` bytes, or whose `MemoryNeed.least` exceeds `memory` (when given), is
    TOO_LARGE untried."""
    if backend not in BACKENDS:
        raise ValueError(f"backend {backend!r} is not one of {BACKENDS}")
    if not timeout:
        return _run_module(case, backend, max_input, memory)
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        return _run_module(case, backend, max_input, memory)
    except _Timeout:
        return XlaResult(case.name, "TIMEOUT", f"still running after {timeout:g} s")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


CLOCKS = ("wall", "cpu")  # what a case's timeout counts: elapsed time, or its CPU time
WALL_PER_CPU_SECOND = 30  # with the CPU clock, the wall-clock time allowed per CPU second


def run_isolated(case: XlaCase, timeout: float | None = None, backend: str = "cpu",
                 memory: int | None = MEMORY_LIMIT, clock: str = "wall",
                 max_input: int | None = None) -> XlaResult:
    """`run_module` in a forked child process: stopped at `timeout` seconds even inside a
    long native call (a BLAS product, a sort), its address space capped at `memory` bytes so
    that a case too large for the machine is a MemoryError (TOO_LARGE), not the kernel's
    out-of-memory killer stopping the whole run. A child killed by a signal is TOO_LARGE
    too (the killer), one that exits without a result a CRASH. POSIX only.

    With ``clock="cpu"`` the timeout counts the CPU seconds the case's process uses (all its
    threads; whole seconds, rounded up), not elapsed time: verdicts that do not depend on
    how busy a shared machine is (elapsed time is still capped, at `WALL_PER_CPU_SECOND`
    times the timeout). `max_input` (default: `memory`, or `MAX_INPUT_BYTES` uncapped) is the
    parameters' size above which the case is TOO_LARGE untried; under a cap, so is a case
    whose `MemoryNeed.least` exceeds it (its message gives the need). The child keeps one
    malloc arena (`_one_arena`): the address space the cap counts is the arrays', not
    64 MiB reserved per device thread."""
    if max_input is None:
        max_input = memory if memory else MAX_INPUT_BYTES
    if backend not in BACKENDS:
        raise ValueError(f"backend {backend!r} is not one of {BACKENDS}")
    if clock not in CLOCKS:
        raise ValueError(f"clock {clock!r} is not one of {CLOCKS}")
    cpu_seconds = math.ceil(timeout) if timeout and clock == "cpu" else None
    wait = timeout * WALL_PER_CPU_SECOND if cpu_seconds else timeout
    import spmd_oracle  # noqa: F401 - imported once here, not again in every child

    if backend != "reference":  # its native libraries loaded once, before the cap
        from xla_spmd.backends import get_backend
        get_backend(backend)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, send the result, leave without any cleanup of the parent's
        code = 1
        try:
            os.close(read)
            if memory:
                _one_arena()
                resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
            if cpu_seconds:  # SIGXCPU (which ends the process) past the budget
                resource.setrlimit(resource.RLIMIT_CPU,
                                   (cpu_seconds, resource.getrlimit(resource.RLIMIT_CPU)[1]))
            try:
                result = _run_module(case, backend, max_input, memory)
            except MemoryError as error:
                result = XlaResult(case.name, "TOO_LARGE", _first_line(error))
            with os.fdopen(write, "w") as out:  # two strings, as JSON
                json.dump([result.status, result.message], out)
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "r") as pipe:
        ready, _, _ = select.select([pipe], [], [], wait)
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return XlaResult(case.name, "TIMEOUT", f"still running after {wait:g} s")
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if data:
        status_text, message = json.loads(data)
        return XlaResult(case.name, str(status_text), str(message))
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU:
        return XlaResult(case.name, "TIMEOUT", f"used over {cpu_seconds} s of CPU time")
    if os.WIFSIGNALED(status):
        return XlaResult(case.name, "TOO_LARGE", f"killed by signal {os.WTERMSIG(status)} "
                                                 f"(out of memory)")
    return XlaResult(case.name, "CRASH", f"the case's process exited with status "
                                         f"{os.WEXITSTATUS(status)} and no result")


def _memory_need(module, program) -> MemoryNeed | None:
    """`memory_need`, or None where the CPU backend cannot plan the programs (the case runs
    and the cap decides); a MemoryError (a constant the planner makes) passes."""
    from xla_spmd.errors import XlaSpmdError

    try:
        return memory_need(module, program)
    except (XlaSpmdError, ValueError, TypeError, KeyError, IndexError, NotImplementedError):
        return None


def _one_arena() -> None:
    """Have glibc's malloc use one arena for every thread (``mallopt(M_ARENA_MAX, 1)``):
    each device thread would otherwise reserve an arena of 64 MiB of address space, which
    counts against the cap though nothing is stored there. No-op without glibc."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    m_arena_max = -8
    libc.mallopt(m_arena_max, 1)


def _run_module(case: XlaCase, backend: str, max_input: int = MAX_INPUT_BYTES,
                memory: int | None = None) -> XlaResult:
    from spmd_oracle import check, partition

    from xla_spmd.errors import ParseError, XlaSpmdError
    from xla_spmd.ir import parse_hlo

    try:
        module = parse_hlo(case.hlo, case.name)
    except ParseError as error:
        return XlaResult(case.name, "PARSE", _first_line(error))
    except Exception as error:  # noqa: BLE001 - a crash is a result to count, not to stop at
        return XlaResult(case.name, "CRASH", f"parse: {type(error).__name__}: "
                                             f"{_first_line(error)}")
    if case.refused is not None:
        return _run_refused(case, module)
    size = _parameter_bytes(module)
    if size > max_input:  # refused before any memory is taken for it
        return XlaResult(case.name, "TOO_LARGE", f"parameters need {size >> 20} MiB, over "
                                                 f"{max_input >> 20} MiB{_planned(case, module)}")
    need = None
    try:
        program = partition(module, case.num_devices)
        need = _memory_need(module, program) if memory else None
        if need is not None and need.least > memory:
            return XlaResult(case.name, "TOO_LARGE", f"{need.describe()}; over the "
                                                     f"{memory / (1 << 30):g} GiB cap")
        seed = zlib.crc32(case.name.encode())
        random = _has_rng(module)
        args = random_inputs(module, seed, ordered=random)
        tolerance = _tolerance(module)
        infeeds = random_infeeds(module, seed)
        if _has_host_transfers(module):  # infeed/outfeed queues: the reference evaluator's
            backend = "reference"
        with opaque_custom_calls():
            check(module, args, num_devices=case.num_devices, propagate=False, rtol=tolerance,
                  atol=tolerance, infeeds=infeeds, random=random, scaled=True,
                  backend=backend, expected_backend=backend, program=program)
    except AssertionError as error:
        return XlaResult(case.name, "MISMATCH", _first_line(error, skip_blank=True))
    except XlaSpmdError as error:
        if "MemoryError" in str(error):  # an evaluator's rule ran out of memory
            return _too_large(case, error, need)
        return XlaResult(case.name, "UNSUPPORTED", _first_line(error))
    except MemoryError as error:  # values larger than this machine holds: not a verdict
        return _too_large(case, error, need)
    except Exception as error:  # noqa: BLE001 - a crash is a result to count, not to stop at
        if memory and _out_of_threads(error):
            return _too_large(case, error, need)
        return XlaResult(case.name, "CRASH", f"{type(error).__name__}: {_first_line(error)}")
    if random:
        return XlaResult(case.name, "RANGE", "rng values: compared by shape, type and range")
    return XlaResult(case.name, "PASS")


def _planned(case: XlaCase, module) -> str:
    """'; it needs ...' (`MemoryNeed.describe`) for a case refused untried, or '' where the
    need cannot be planned (a partitioner error, or a constant the planner makes that is
    itself too large)."""
    from spmd_oracle import partition

    try:
        need = _memory_need(module, partition(module, case.num_devices))
    except Exception:  # noqa: BLE001 - only a message depends on it
        return ""
    return f"; it {need.describe()}" if need is not None else ""


def _too_large(case: XlaCase, error: BaseException, need: MemoryNeed | None) -> XlaResult:
    """TOO_LARGE for a case that ran out of memory under the cap: why, and what it needs."""
    planned = f"out of memory; it {need.describe()}: " if need is not None else ""
    return XlaResult(case.name, "TOO_LARGE", planned + _first_line(error))


def _out_of_threads(error: BaseException) -> bool:
    """Whether `error` (or what caused it) is a thread that could not start: under the
    address-space cap, its stack did not fit."""
    while error is not None:
        if isinstance(error, RuntimeError) and "can't start new thread" in str(error):
            return True
        error = error.__cause__ or error.__context__
    return False


def _run_refused(case: XlaCase, module) -> XlaResult:
    """A test that expects XLA's partitioner to fail passes when ours refuses the module."""
    from xla_spmd.errors import XlaSpmdError
    from xla_spmd.pipeline import lower
    from xla_spmd.propagation.importing import has_foreign_shardings, import_shardings
    from xla_spmd.sharding import program_mesh

    try:
        if has_foreign_shardings(module):
            module = import_shardings(module).module
        lower(module, mesh=program_mesh(module), propagate_shardings=False)
    except XlaSpmdError as error:
        return XlaResult(case.name, "PASS", f"refused, as XLA does: {_first_line(error)}")
    except Exception as error:  # noqa: BLE001 - a crash is a result to count, not to stop at
        return XlaResult(case.name, "CRASH", f"{type(error).__name__}: {_first_line(error)}")
    return XlaResult(case.name, "MISMATCH", f"XLA refuses this module ({case.refused!r}); "
                                            "we partitioned it")


def _has_host_transfers(module) -> bool:
    return any(inst.opcode in ("infeed", "outfeed") for c in module.computations
               for inst in c.instructions)


def _has_rng(module) -> bool:
    return any(inst.opcode == "rng" for c in module.computations for inst in c.instructions)


# Float results may differ by a reduction's order (a partitioned sum adds partial sums): the
# tolerance follows the narrowest float type of the results.
_TOLERANCES = {"bf16": 2e-2, "f16": 2e-3}


def _tolerance(module) -> float:
    from xla_spmd.partition.values import shape_leaves

    names = {leaf.dtype.name for leaf in shape_leaves(module.entry.root.shape)}
    return max([_TOLERANCES[n] for n in names if n in _TOLERANCES], default=1e-4)


def _first_line(error: BaseException, skip_blank: bool = False) -> str:
    lines = [line.strip() for line in str(error).splitlines()]
    if skip_blank:
        lines = [line for line in lines if line]
    return lines[0] if lines else type(error).__name__
