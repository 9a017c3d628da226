"""Run files written in the StableHLO interpreter's test conventions on the reference backend.

A file holds cases separated by ``// -----`` lines; each case is a module or bare functions.
Every function without arguments is a test: its body computes values and checks them with
``check.expect_eq_const``, ``check.expect_almost_eq_const``, ``check.expect_eq``,
``check.expect_almost_eq``, ``check.expect_close`` and ``check.expect_serialized_eq``, which
compares a value with what ``interpreter.probe %x, probe_id = "p"`` recorded earlier in the
same run (iteration ``iter``, default 0; StableHLO reads these from probe files, which we do
not: a probe never recorded in this run makes the check SKIP with that reason).
``"interpreter.run_parallel"(...) {programs = [[@f, @g], [@h, @k]]}`` runs ``programs[r][p]``
as replica r, partition p (the programs may differ) with collectives between them
(`evaluate_mpmd`); its operands are every program's arguments and its results every program's
results, concatenated in row-major (replica, partition) order. ``infeed`` is not supported.

How: checks and run_parallel are imported as custom-calls (targets ``check.*`` and
``interpreter.run_parallel``) whose reference rules record the check outcomes and run the
programs with `evaluate_mpmd`; then each test function is evaluated as a module entry.

>>> report = run_text('''func.func @t() {
...   %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
...   %1 = stablehlo.add %0, %0 : tensor<2xf32>
...   check.expect_almost_eq_const %1, dense<[2.0, 4.0]> : tensor<2xf32>
...   func.return
... }''')
>>> report.ok, str(report).splitlines()[0]
(True, 'PASS case 1 @t (1 checks)')
"""

from __future__ import annotations

import queue
import re
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import xla_spmd.config as config
from xla_spmd.backends.reference import TOKEN_VALUE, evaluate
from xla_spmd.backends.reference.control import CUSTOM_CALLS
from xla_spmd.backends.reference.spmd import evaluate_mpmd
from xla_spmd.errors import ParseError, XlaSpmdError
from xla_spmd.ir import Literal, Module, TupleShape
from xla_spmd.ir.custom_calls import INTERPRETER_CHECKS
from xla_spmd.stablehlo.importer import ModuleImporter
from xla_spmd.stablehlo.importer_ops import converter
from xla_spmd.stablehlo.lexer import Scanner
from xla_spmd.stablehlo.syntax import Parser, parse_text
from xla_spmd.stablehlo.syntax_tree import Dense, Symbol
from xla_spmd.stablehlo.types import parse_dense, print_type
from xla_spmd.stablehlo.value_text import print_value

CHECKS = INTERPRETER_CHECKS
ALMOST_EQ_TOLERANCE = 1e-4  # the StableHLO interpreter's tolerance for expect_almost_eq


@dataclass
class CaseResult:
    """One test function of one case: PASS, FAIL (a check failed), ERROR or SKIP."""

    case: int
    line: int
    function: str
    status: str
    checks: int = 0
    messages: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        name = f" @{self.function}" if self.function else ""
        head = f"{self.status} case {self.case}{name} ({self.checks} checks)"
        return "\n".join([head] + [f"    {m}" for m in self.messages])


@dataclass
class InterpreterReport:
    """The outcome of every test function in a file."""

    path: str
    results: list[CaseResult]

    @property
    def ok(self) -> bool:
        return all(r.status in ("PASS", "SKIP") for r in self.results)

    @property
    def failed(self) -> list[CaseResult]:
        return [r for r in self.results if r.status not in ("PASS", "SKIP")]

    def __str__(self) -> str:
        lines = [str(r) for r in self.results]
        passed = sum(r.status == "PASS" for r in self.results)
        lines.append(f"{self.path}: {passed} passed, {len(self.failed)} failed, "
                     f"{sum(r.status == 'SKIP' for r in self.results)} skipped")
        return "\n".join(lines)


def run_interpreter_file(path: str) -> InterpreterReport:
    """Run every case of an interpreter-convention ``.mlir`` file; see the module docstring."""
    with open(path, encoding="utf-8") as file:
        return run_text(file.read(), path)


_SPLIT = re.compile(r"^//\s*-----\s*$", re.MULTILINE)
_FIRST_FUNCTION = re.compile(r'func\.func\s+(?:(?:public|private|nested)\s+)?'
                             r'@([\w$.\-]+|"[^"]*")')


def split_input(text: str) -> list[tuple[str, int]]:
    """The cases of `text` split at ``// -----`` lines (as ``--split-input-file`` does), each
    with the file line it starts at."""
    chunks, start_line = [], 1
    for chunk in _SPLIT.split(text):
        chunks.append((chunk, start_line))
        start_line += chunk.count("\n")
    return chunks


def run_text(text: str, path: str = "<text>") -> InterpreterReport:
    """Run every case of interpreter-convention `text`; see the module docstring."""
    results = []
    for index, (chunk, start_line) in enumerate(split_input(text), start=1):
        if chunk.strip() and "func.func" in chunk:
            results.extend(_run_case(chunk, path, index, start_line))
    return InterpreterReport(path, results)


# ---------------------------------------------------------------------------------------------
# One case

class _CaseState:
    """What the check and probe rules record while one test function runs. Shared by the
    device threads of ``interpreter.run_parallel``, hence the lock."""

    def __init__(self, tree, path: str):
        self.tree, self.path = tree, path
        self.records: list[tuple[bool | None, str]] = []
        self.probes: dict[str, list[np.ndarray]] = {}
        self.lock = threading.Lock()
        # The interpreter's queues: send/recv channels (by channel id), infeed and outfeed.
        self.channels: dict[int, queue.Queue] = {}
        self.infeed: queue.Queue = queue.Queue()
        self.outfeed: list[np.ndarray] = []

    def channel(self, channel_id: int) -> queue.Queue:
        with self.lock:
            return self.channels.setdefault(channel_id, queue.Queue())


_STATE: _CaseState | None = None


def _run_case(chunk: str, path: str, index: int, start_line: int) -> list[CaseResult]:
    global _STATE
    source = "\n" * (start_line - 1) + chunk  # keep file line numbers in errors
    try:
        tree = parse_text(source, path)
    except XlaSpmdError as error:
        # Name the case by its first function, found without parsing (the text is broken).
        first = _FIRST_FUNCTION.search(source)
        name, line = "", start_line
        if first is not None:
            name = first.group(1).strip('"')
            line = source.count("\n", 0, first.start()) + 1
        return [CaseResult(index, line, name, "ERROR", messages=[str(error)])]
    programs = {p.name for f in tree.functions for op in f.body.ops
                if op.name == "interpreter.run_parallel"
                for row in [*(op.attrs.get("programs") or ()), op.attrs.get("infeed") or ()]
                for p in row if isinstance(p, Symbol)}
    tests = [f for f in tree.functions if not f.args and f.name not in programs] \
        or tree.functions[:1]
    results = []
    for function in tests:
        line = source.count("\n", 0, function.pos) + 1
        result = CaseResult(index, line, function.name, "PASS")
        _STATE = state = _CaseState(tree, path)
        try:
            module = _import(tree, path, function.name)
            evaluate(module, [])
        except XlaSpmdError as error:
            result.status = "ERROR"
            result.messages.append(str(error))
        finally:
            _STATE = None
        for ok, message in state.records:
            result.checks += ok is not None
            if ok is False:
                result.status = "FAIL" if result.status == "PASS" else result.status
                result.messages.append(message)
            elif ok is None:
                result.messages.append(message)
        if result.status == "PASS" and result.checks == 0 and any(
                ok is None for ok, _ in state.records):
            result.status = "SKIP"
        results.append(result)
    return results


def _import(tree, path: str, entry: str, devices: tuple[int, int] | None = None) -> Module:
    importer = ModuleImporter(tree, path, devices)
    computation = importer.function(entry)
    return Module.from_entry(tree.name or "case", computation, importer.header())


# ---------------------------------------------------------------------------------------------
# stablehlo-translate --interpret: run a module's entry function, hand back its results

_ARGS_USAGE = "i.e. --args=[dense<1> : tensor<2xi32>, ...]"


def parse_arguments(text: str) -> list[Dense]:
    """The values of stablehlo-translate's ``--args``: an array of ``dense<...> : type``.

    >>> [a.value.tolist() for a in parse_arguments("[dense<1> : tensor<2xi32>]")]
    [[1, 1]]
    """
    parser = Parser(Scanner(text, "--args"))
    try:
        value = parser.attr_value()
        parser.s.skip()
        if not parser.s.at_end():
            raise parser.s.error(f"expected the end of the array but found {parser.s.found()}")
    except ParseError as error:
        value = error
    if not isinstance(value, list):
        detail = f": {value}" if isinstance(value, ParseError) else f"; got {text!r}"
        # stablehlo-translate's words, misspelling included: its tests check them.
        raise XlaSpmdError(f"--args: expectected array attribute string for args, "
                           f"{_ARGS_USAGE}{detail}")
    for index, item in enumerate(value):
        if not isinstance(item, Dense) or item.shape is None:
            found = f"dense<{item.body}> without a type" if isinstance(item, Dense) \
                else repr(item)
            raise XlaSpmdError(f"--args: expected dense elements attribute for args elements, "
                               f"{_ARGS_USAGE}; argument {index} is {found}")
    return value


def run_main(text: str, path: str = "<text>", arguments=(), first_line: int = 1) -> list:
    """Run a module as ``stablehlo-translate --interpret`` does and return its results as
    (value, type) pairs: the function named ``main`` (or the module's only function) on
    `arguments` (`Dense` values, as `parse_arguments` returns). Checks, probes, prints and
    run_parallel work as in `run_text`; a failing check stops the run with an error.
    `first_line` is the line of the file `text` starts at, for error locations.

    >>> program = '''func.func @main(%a: tensor<2xi32>) -> tensor<2xi32> {
    ...   %0 = stablehlo.add %a, %a : tensor<2xi32>
    ...   func.return %0 : tensor<2xi32>
    ... }'''
    >>> arguments = parse_arguments("[dense<[1, 2]> : tensor<2xi32>]")
    >>> [(v.tolist(), str(t)) for v, t in run_main(program, arguments=arguments)]
    [([2, 4], 's32[2]')]
    """
    global _STATE
    source = "\n" * (first_line - 1) + text
    tree = parse_text(source, path)
    if not tree.functions:
        return []
    seen: set[str] = set()
    for function in tree.functions:
        if function.name in seen:
            line = source.count("\n", 0, function.pos) + 1
            raise XlaSpmdError(f"{path}:{line}: redefinition of symbol @{function.name} (to "
                               "run '// -----' cases as modules of their own, split the input)")
        seen.add(function.name)
    entry = next((f for f in tree.functions if f.name == "main"), None)
    if entry is None and len(tree.functions) == 1:
        entry = tree.functions[0]
    if entry is None:
        raise XlaSpmdError(f"{path}: module must have entry func with name main (it has "
                           f"{', '.join('@' + f.name for f in tree.functions)})")
    where = f"{path}:{source.count(chr(10), 0, entry.pos) + 1}: @{entry.name}"
    types = [arg[1] for arg in entry.args]
    if len(arguments) != len(types):
        raise XlaSpmdError(f"{where}: incorrect number of arguments specified, provided "
                           f"{len(arguments)} inputs but function expected {len(types)} "
                           f"(give them with --args)")
    for index, (argument, expected) in enumerate(zip(arguments, types)):
        if print_type(argument.shape) != print_type(expected):
            raise XlaSpmdError(f"{where}: invalid input argument type at index {index}, input "
                               f"type was {print_type(argument.shape)} but entry function "
                               f"expected {print_type(expected)}")
    _STATE = state = _CaseState(tree, path)
    try:
        values: Any = evaluate(_import(tree, path, entry.name), [a.value for a in arguments])
    finally:
        _STATE = None
    failed = [message for ok, message in state.records if ok is False]
    if failed:
        raise XlaSpmdError(f"{where}: " + "; ".join(failed))
    results = (values,) if len(entry.result_types) == 1 else values
    return list(zip(results, entry.result_types))


# ---------------------------------------------------------------------------------------------
# Import: checks and run_parallel as custom calls


def _check_converter(importer, scope, node, operands):
    kind = node.name[len("check."):]
    positional = node.attrs.get("_positional", [])
    args = list(operands)
    config = ""
    dense = next((p for p in positional if isinstance(p, Dense)), None)
    if kind.endswith("_const") and dense is None:
        raise importer.error(node, "expected a dense<...> expected value")
    if dense is not None:
        shape = node.result_types[-1]
        value = parse_dense(dense.body, shape)
        args.append(scope.emit("constant", (), shape, literal=Literal(value)))
    if "max_ulp_difference" in node.attrs:
        config = str(node.attrs["max_ulp_difference"])
    if "tolerance" in node.attrs and kind.startswith("expect_almost_eq"):
        config = str(float(node.attrs["tolerance"]))
    if kind == "expect_serialized_eq":
        config = f"{node.attrs.get('probe_id', '')}#{int(node.attrs.get('iter', 0))}"
    scope.emit("custom-call", args, TupleShape(()), frontend=(("check.config", config),),
               custom_call_target=f"check.{kind}", custom_call_has_side_effect=True)
    return []


for _kind in CHECKS:
    converter(f"check.{_kind}")(_check_converter)


@converter("interpreter.run_parallel")
def _run_parallel_converter(importer, scope, node, operands):
    programs = node.attrs.get("programs")
    if not programs or not all(isinstance(row, (list, tuple)) for row in programs):
        raise importer.error(node, "expected programs = [[@f, ...], ...] (rows are replicas, "
                                   "columns partitions)")
    infeed = node.attrs.get("infeed") or ()
    if not all(isinstance(f, Symbol) for f in infeed):
        raise importer.error(node, "expected infeed = [@f, ...] (functions whose results "
                                   "fill the infeed queue, in order)")
    rows = [[p.name if isinstance(p, Symbol) else str(p) for p in row] for row in programs]
    if len({len(row) for row in rows}) != 1:
        raise importer.error(node, f"programs must be a rectangular grid, got rows of sizes "
                                   f"{[len(row) for row in rows]}")
    text = ";".join(",".join(row) for row in rows)
    inst = scope.emit("custom-call", operands, TupleShape(tuple(node.result_types)),
                      frontend=(("programs", text),
                                ("infeed", ",".join(f.name for f in infeed))),
                      custom_call_target="interpreter.run_parallel",
                      custom_call_has_side_effect=True)
    return scope.unpack(inst)


@converter("interpreter.print")
def _print_converter(importer, scope, node, operands):
    if len(operands) != 1:
        raise importer.error(node, f"expected one operand, got {len(operands)}")
    name = next((found for f in importer.tree.functions
                 if (found := _printed_name(f.body, 0, {}, node)) is not None),
                node.operands[0])
    scope.emit("custom-call", operands, TupleShape(()), frontend=(("name", name),),
               custom_call_target="interpreter.print", custom_call_has_side_effect=True)
    return []


def _printed_name(block, first_id: int, visible: dict, target) -> str | None:
    """How MLIR's printer names the operand of the print op `target` when it prints the op
    defining it, if `target` is inside `block`: each function numbers its ops' results from
    %0, a region's own ops first, then each nested region continuing from where its parent
    region's numbering ended; an op with k > 1 results prints as ``%N:k``. A block argument
    (which MLIR does not print as ``%name = ``) keeps its name in the source."""
    visible = dict(visible)
    next_id = first_id
    for op in block.ops:
        for result in op.results:
            visible[result] = f"%{next_id}" + (f":{len(op.results)}" if len(op.results) > 1
                                               else "")
        next_id += bool(op.results)
    for op in block.ops:
        if op is target:
            return visible.get(op.operands[0], op.operands[0])
        for region in op.regions:
            found = _printed_name(region, next_id, visible, target)
            if found is not None:
                return found
    return None


@converter("interpreter.probe")
def _probe_converter(importer, scope, node, operands):
    (operand,) = operands
    return scope.emit("custom-call", operands, operand.shape,
                      frontend=(("probe_id", str(node.attrs.get("probe_id", ""))),),
                      custom_call_target="interpreter.probe", custom_call_has_side_effect=True)


# ---------------------------------------------------------------------------------------------
# Evaluation rules


def _record(ok, message):
    state = _STATE
    if state is not None:
        with state.lock:
            state.records.append((ok, message))


def _show(array) -> str:
    return np.array2string(np.asarray(array), threshold=64, separator=", ").replace("\n", " ")


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Units in the last place between same-typed floats, exactly, as ``uint64``.

    Sign-magnitude bit patterns map onto an ordered integer line (-0 one below +0). The
    distance is below 2**64, so unsigned wrap-around subtraction is exact; float64 keys would
    round 64-bit patterns to multiples of 512. NaNs are the caller's to handle.

    >>> int(ulp_distance(np.float64([1.0]), np.nextafter(np.float64([1.0]), 2))[0])
    1
    """
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    ka, kb = (np.where(k < 0, k ^ np.iinfo(bits).max, k).astype(np.int64)
              for k in (a.view(bits), b.view(bits)))
    return np.maximum(ka, kb).view(np.uint64) - np.minimum(ka, kb).view(np.uint64)


def _compare(kind: str, actual: np.ndarray, expected: np.ndarray, config: str) -> bool:
    if actual.shape != expected.shape:
        return False
    if kind in ("expect_eq_const", "expect_eq") or actual.dtype.kind not in "fcV":
        if actual.dtype.kind in "fcV":
            return bool(np.array_equal(actual.astype(np.float64) if actual.dtype.kind == "V"
                                       else actual, expected.astype(actual.dtype)
                                       if actual.dtype.kind != "V" else
                                       expected.astype(np.float64), equal_nan=True))
        return bool(np.array_equal(actual, expected))
    if kind == "expect_close":
        limit = int(config or 3)
        a = np.asarray(actual)
        b = np.asarray(expected, a.dtype)
        if a.dtype.kind == "c":
            return _compare("expect_close", np.real(a), np.real(b), config) and \
                _compare("expect_close", np.imag(a), np.imag(b), config)
        nan = np.isnan(a.astype(np.float64)) & np.isnan(b.astype(np.float64))
        return bool(np.all(nan | (ulp_distance(a, b) <= limit)))
    a = np.asarray(actual).astype(np.complex128 if actual.dtype.kind == "c" else np.float64)
    b = np.asarray(expected).astype(a.dtype)
    tolerance = float(config) if config else ALMOST_EQ_TOLERANCE
    return bool(np.allclose(a, b, rtol=tolerance, atol=tolerance, equal_nan=True))


def _check_rule(inst, operands, ctx):
    kind = inst.attrs.custom_call_target[len("check."):]
    config = inst.frontend_attribute("check.config") or ""
    if kind == "expect_serialized_eq":
        # StableHLO compares `expected` with what interpreter.probe serialized under probe_id
        # at iteration `iter`; the probes of this run are kept in memory instead of files.
        probe_id, iteration = config.rsplit("#", 1)
        state = _STATE
        values = state.probes.get(probe_id, []) if state is not None else []
        if int(iteration) >= len(values):
            _record(None, f"skipped check.expect_serialized_eq: probe {probe_id!r} iteration "
                          f"{iteration} was not recorded by an interpreter.probe in this run "
                          "(serialized probe files from other runs are not read)")
            return ()
        expected, actual = np.asarray(operands[0]), values[int(iteration)]
        kind = "expect_eq"
    else:
        actual, expected = (np.asarray(v) for v in operands[:2])
    ok = _compare(kind, actual, expected, config)
    message = "" if ok else (f"check.{kind} failed on {inst.operands[0].name}: got "
                             f"{_show(actual)}, expected {_show(expected)}")
    _record(ok, message)
    return ()


def _probe_rule(inst, operands, ctx):
    state = _STATE
    if state is not None:
        with state.lock:
            state.probes.setdefault(inst.frontend_attribute("probe_id") or "", []).append(
                np.array(operands[0], copy=True))
    return operands[0]


_PRINT_LOCK = threading.Lock()  # one value printed at a time, whichever device thread prints


def _print_rule(inst, operands, ctx):
    """``interpreter.print %x``: ``%N = <the value>`` on stdout, as the StableHLO interpreter
    prints it (%N: the name MLIR's printer gives %x, see `_printed_name`)."""
    text = print_value(operands[0], inst.operands[0].shape)
    with _PRINT_LOCK:
        sys.stdout.write(f"{inst.frontend_attribute('name')} = {text}\n")
        sys.stdout.flush()
    return ()


def _run_parallel_rule(inst, operands, ctx):
    """Device (r, p) runs ``programs[r][p]``; operands and results are every device's
    arguments and results, concatenated in row-major (replica, partition) order."""
    rows = [row.split(",") for row in inst.frontend_attribute("programs").split(";")]
    names = [name for row in rows for name in row]
    state = _STATE
    if state is None:
        raise XlaSpmdError("interpreter.run_parallel runs only under the interpreter "
                           "(run_interpreter_file)")
    for name in filter(None, (inst.frontend_attribute("infeed") or "").split(",")):
        values = evaluate(_import(state.tree, state.path, name), [])
        for value in values if isinstance(values, tuple) else (values,):
            state.infeed.put(np.asarray(value))
    devices = (len(rows), len(rows[0]))
    entries = {name: _import(state.tree, state.path, name, devices).entry
               for name in set(names)}
    computations = [entries[name] for name in names]
    per_device, start = [], 0
    for computation in computations:
        count = len(computation.parameters)
        per_device.append(list(operands[start:start + count]))
        start += count
    if start != len(operands):
        raise XlaSpmdError(f"interpreter.run_parallel: the programs {names} take {start} "
                           f"arguments in all, got {len(operands)}")
    outputs = evaluate_mpmd(computations, per_device, len(rows), len(rows[0]),
                            ctx.max_loop_iterations)
    flat = []
    for name, value in zip(names, outputs):
        results = len(_function_node(state.tree, name).result_types)
        flat.extend(value if results != 1 else (value,))
    return tuple(flat)


def _function_node(tree, name: str):
    return next(f for f in tree.functions if f.name == name)


# ---------------------------------------------------------------------------------------------
# send / recv / infeed / outfeed against the interpreter's queues: a send puts its values on
# its channel's queue, a recv takes the oldest values sent on its channel (waiting for them),
# infeed takes from the queue that run_parallel's `infeed` functions fill, outfeed appends.


def _queue_converter(importer, scope, node, operands):
    kind = node.name[len("stablehlo."):]
    channel = node.attrs.get("channel_handle")
    channel_id = int(channel.get("handle", 0)) if isinstance(channel, dict) else 0
    shape = node.result_types[0] if len(node.result_types) == 1 \
        else TupleShape(tuple(node.result_types))
    inst = scope.emit("custom-call", operands, shape,
                      frontend=(("channel_id", str(channel_id)),),
                      custom_call_target=f"interpreter.{kind}",
                      custom_call_has_side_effect=True)
    return inst if len(node.result_types) == 1 else scope.unpack(inst)


for _kind in ("send", "recv", "infeed", "outfeed"):
    converter(f"stablehlo.{_kind}")(_queue_converter)


def _queue_state(inst) -> _CaseState:
    state = _STATE
    if state is None:
        raise XlaSpmdError(f"{inst.attrs.custom_call_target} runs only under the "
                           "interpreter (run_interpreter_file)")
    return state


def _send_rule(inst, operands, ctx):
    state = _queue_state(inst)
    channel = state.channel(int(inst.frontend_attribute("channel_id")))
    channel.put([np.array(v, copy=True) for v in operands[:-1]])
    return TOKEN_VALUE


def _take(inst, source: queue.Queue, what: str):
    try:
        return source.get(timeout=config.collective_timeout)
    except queue.Empty:
        raise XlaSpmdError(f"{inst.name}: nothing arrived on {what} within "
                           f"{config.collective_timeout:g} s (collective_timeout)") from None


def _recv_rule(inst, operands, ctx):
    state = _queue_state(inst)
    channel_id = int(inst.frontend_attribute("channel_id"))
    values = _take(inst, state.channel(channel_id), f"channel {channel_id}")
    return tuple(values) + (TOKEN_VALUE,)


def _infeed_rule(inst, operands, ctx):
    state = _queue_state(inst)
    count = len(inst.shape.elements) - 1
    return tuple(_take(inst, state.infeed, "the infeed queue") for _ in range(count)) \
        + (TOKEN_VALUE,)


def _outfeed_rule(inst, operands, ctx):
    state = _queue_state(inst)
    with state.lock:
        state.outfeed.extend(np.array(v, copy=True) for v in operands[:-1])
    return TOKEN_VALUE


for _kind, _rule in (("send", _send_rule), ("recv", _recv_rule), ("infeed", _infeed_rule),
                     ("outfeed", _outfeed_rule)):
    if f"interpreter.{_kind}" not in CUSTOM_CALLS:
        CUSTOM_CALLS.register(f"interpreter.{_kind}")(_rule)

for _kind in CHECKS:
    if f"check.{_kind}" not in CUSTOM_CALLS:
        CUSTOM_CALLS.register(f"check.{_kind}")(_check_rule)
if "interpreter.run_parallel" not in CUSTOM_CALLS:
    CUSTOM_CALLS.register("interpreter.run_parallel")(_run_parallel_rule)
if "interpreter.print" not in CUSTOM_CALLS:
    CUSTOM_CALLS.register("interpreter.print")(_print_rule)
if "interpreter.probe" not in CUSTOM_CALLS:
    CUSTOM_CALLS.register("interpreter.probe")(_probe_rule)
