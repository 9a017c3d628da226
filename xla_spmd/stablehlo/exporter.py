"""An HLO `Module` → StableHLO MLIR text with Shardy attributes, in the form JAX prints.

The exporter undoes what the importer does: tuple operands of while/conditional become
the op's operand lists again (block arguments and implicit captures), get-tuple-element of a
multi-result op becomes ``%N#i``, the Shardy custom-calls become Shardy ops again
(``Sharding`` → ``sdy.sharding_constraint``, the manual-computation triple →
``sdy.manual_computation``, ``xla.sdy.FuncResultSharding`` at the root → a result
``sdy.sharding``), and module meshes in the header become ``sdy.mesh`` declarations. So
``import_stablehlo(export_stablehlo(m)) == m`` for every imported module `m`.

>>> from xla_spmd.stablehlo import import_stablehlo
>>> text = '''module @m {
...   func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
...     %0 = stablehlo.negate %x : tensor<4xf32>
...     return %0 : tensor<4xf32>
...   }
... }'''
>>> m = import_stablehlo(text)
>>> import_stablehlo(export_stablehlo(m)) == m
True
"""

from __future__ import annotations

from xla_spmd.errors import XlaSpmdError
from xla_spmd.ir import Computation, Instruction, Module, TupleShape
from xla_spmd.ir.custom_calls import DATA_FLOW_EDGE, FUNC_RESULT_SHARDING, MANUAL_BODY
from xla_spmd.ir.hlo_printer import FUNCTION_ORDER
from xla_spmd.ir.lowered import LOWERED_KEYS, lowered_groups
from xla_spmd.sharding import (
    TensorSharding,
    axis_shardings,
    is_unconstrained,
    print_sharding_per_value,
)
from xla_spmd.stablehlo.lexer import escape
from xla_spmd.stablehlo.registry import NAME_HINTS, PRINTERS
from xla_spmd.stablehlo.scope import OPEN_AS_WRITTEN, RESULT_INFO, VISIBILITY
from xla_spmd.stablehlo.types import print_type


def is_manual_body_call(inst) -> bool:
    """Whether `inst` calls the body of an ``sdy.manual_computation`` still framed by its
    ``xla.sdy.GlobalToLocalShape`` (a partitioned program calls the body as a function)."""
    if not inst.attrs.to_apply.name.startswith(MANUAL_BODY):
        return False
    sources = [o.operands[0] if o.opcode == "get-tuple-element" else o for o in inst.operands]
    return all(o.opcode == "custom-call" and o.attrs.custom_call_target
               == "xla.sdy.GlobalToLocalShape" for o in sources)


class ExportError(XlaSpmdError):
    """A module construct with no StableHLO spelling."""


def export_stablehlo(module: Module) -> str:
    """StableHLO MLIR text of `module`, with ``sdy`` meshes and shardings."""
    return ModuleExporter(module).run()


def sharding_attr(inst: Instruction) -> str:
    """``#sdy.sharding_per_value<[...]>`` of an instruction's sharding (one or a tuple)."""
    return print_sharding_per_value(axis_shardings(inst))


def says_something(inst: Instruction, scalars: bool = True) -> bool:
    """Whether `inst` has a sharding worth printing: some leaf constrains something (an
    all-open, unsharded sharding is what no sharding means, and Shardy prints none; nor,
    unless `scalars`, a scalar's ``[]``, which propagation gives every scalar op), unless
    the user wrote it so (`OPEN_AS_WRITTEN`). An op
    with no results prints the one it was given (``<@mesh, []>``, where it runs)."""
    no_results = inst.shape.is_tuple and not inst.shape.leaves()
    if inst.frontend_attribute(OPEN_AS_WRITTEN) is not None and inst.sharding is not None:
        return True   # all-open as the user wrote it (Shardy keeps what was written)
    return any(isinstance(s, TensorSharding) and not is_unconstrained(s)
               and (scalars or no_results or s.rank > 0 or s.replicated or s.unreduced)
               for s in inst.sharding_leaves())


class ModuleExporter:
    def __init__(self, module: Module):
        self.module = module
        self.functions: list[Computation] = []

    def run(self) -> str:
        module = self.module
        attrs = []
        header = dict(module.header)
        if "num_partitions" in header:
            attrs.append(f"mhlo.num_partitions = {header['num_partitions']} : i32")
        if "replica_count" in header:
            attrs.append(f"mhlo.num_replicas = {header['replica_count']} : i32")
        lines = [f"module @{_symbol(module.name)}"
                 + (f" attributes {{{', '.join(attrs)}}}" if attrs else "") + " {"]
        from xla_spmd.mesh import print_mesh
        from xla_spmd.sharding import declared_meshes
        from xla_spmd.stablehlo.importer import module_mesh_attributes
        mesh_attrs = module_mesh_attributes(module)
        for name, mesh in declared_meshes(module).items():
            kept = f" {mesh_attrs[name]}" if name in mesh_attrs else ""
            lines.append(f"  sdy.mesh @{name} = {print_mesh(mesh)}{kept}")
        functions = [module.entry] + sorted(
            (c for c in module.computations if c is not module.entry and self._is_function(c)),
            key=function_order)
        if function_order(module.entry) != float("inf"):   # the text's order, entry too
            functions.sort(key=function_order)
        for computation in functions:
            lines.extend(FunctionExporter(self).function(computation,
                                                         computation is module.entry))
        lines.append("}")
        return "\n".join(lines) + "\n"

    def _is_function(self, computation: Computation) -> bool:
        called = False
        for c in self.module.computations:
            for inst in c.instructions:
                if inst.opcode == "call" and inst.attrs.to_apply is computation:
                    return not (is_manual_body_call(inst)
                                or inst.frontend_attribute("xla.sdy.named_computation"))
                if inst.opcode == "custom-call" and computation in (
                        inst.attrs.called_computations or ()):
                    return True
                called = called or computation in inst.called_computations()
        return not called   # a function nothing calls (regions are always called)


def function_order(computation: Computation) -> float:
    """Where `computation` stood in the StableHLO text it came from (functions print in that
    order; others after them, as they come)."""
    order = next((v for k, v in computation.extras if k == FUNCTION_ORDER), None)
    return float(order) if order is not None else float("inf")


def _symbol(name: str) -> str:
    import re
    return name if re.fullmatch(r"[\w$.\-]+", name) else escape(name)


class FunctionExporter:
    """Prints one function; value names are numbered through the function and its regions."""

    def __init__(self, parent: ModuleExporter):
        self.parent = parent
        self.counter = 0
        self.arg_counter = 0
        self.names: dict[Instruction, str] = {}
        self.multi: set[Instruction] = set()
        # tuple-shaped instructions printed as several ops: the value of each element
        self.elements: dict[Instruction, list[str]] = {}
        # while/case/barrier ops whose results go through sdy.data_flow_edge ops: the edges
        # hold their shardings (Shardy prints none on the op itself)
        self.edge_owners: set[Instruction] = set()
        self.result_counts: dict[Instruction, int] = {}  # results printed, where fewer
        # names given from hints (MLIR's getAsmResultNames / getAsmBlockArgumentNames) and
        # the conflict counter they share, as MLIR's SSANameState keeps them per function
        self.hinted: set[str] = set()
        self.conflicts = 0

    def named(self, hint: str) -> str:
        """A value named after `hint` as MLIR's printer names it: the hint, or on a clash
        the hint with ``_N`` added, N from one counter for the whole function.

        >>> fx = FunctionExporter(None)
        >>> [fx.named("c"), fx.named("cst"), fx.named("c"), fx.named("iterArg"),
        ...  fx.named("iterArg")]
        ['%c', '%cst', '%c_0', '%iterArg', '%iterArg_1']
        """
        name = hint
        while name in self.hinted:
            name = f"{hint}_{self.conflicts}"
            self.conflicts += 1
        self.hinted.add(name)
        return f"%{name}"

    def iter_arg(self) -> str:
        """The next loop-carried value's name, as MLIR names them."""
        return self.named("iterArg")

    def new_value(self) -> str:
        name = f"%{self.counter}"
        self.counter += 1
        return name

    def new_arg(self) -> str:
        name = f"%arg{self.arg_counter}"
        self.arg_counter += 1
        return name

    def ref(self, inst: Instruction) -> str:
        try:
            return self.names[inst]
        except KeyError:
            raise ExportError(f"{inst.name} ({inst.opcode}) is used but has no StableHLO "
                              "value (a tuple used as a value?)") from None

    # ----- functions -----
    def function(self, computation: Computation, is_entry: bool) -> list[str]:
        args = []
        for param in computation.parameters:
            name = self.new_arg()
            self.names[param] = name
            args.append(f"{name}: {print_type(param.shape)}{_value_attrs(param)}")
        results = self._root_values(computation)
        info = {k[len(RESULT_INFO) + 1:]: v for k, v in computation.root.frontend_attributes
                if k.startswith(RESULT_INFO + ".")}
        result_texts = []
        skip = set()
        returned = []
        for i, value in enumerate(results):
            attrs = []
            if str(i) in info:
                attrs.append(f"jax.result_info = {escape(info[str(i)])}")
            if value.opcode == "custom-call" and \
                    value.attrs.custom_call_target == FUNC_RESULT_SHARDING:
                skip.add(value)
                attrs.extend(_sharding_items(value))
                value = value.operands[0]
            returned.append(value)
            text = print_type(value.shape)
            result_texts.append(text + (" {" + ", ".join(attrs) + "}" if attrs else ""))
        # MLIR's form: public is the default and not printed; one result without
        # attributes is not parenthesised.
        public = is_entry or (VISIBILITY, "public") in computation.extras
        visibility = "" if public else "private "
        name = "main" if is_entry and computation.name.startswith("main") else computation.name
        results_text = (result_texts[0] if len(result_texts) == 1 and "{" not in result_texts[0]
                        else f"({', '.join(result_texts)})")
        signature = (f"  func.func {visibility}@{_symbol(name)}({', '.join(args)}) -> "
                     f"{results_text} {{")
        lines = [signature]
        self.body(computation, lines, "    ", skip)
        lines.append(f"    return {', '.join(self.ref(v) for v in returned)} : "
                     f"{', '.join(print_type(v.shape) for v in returned)}"
                     if returned else "    return")
        lines.append("  }")
        return lines

    def _root_values(self, computation: Computation) -> list[Instruction]:
        root = computation.root
        if root.opcode == "tuple":
            return list(root.operands)
        return [root]

    # ----- bodies -----
    def body(self, computation: Computation, lines: list[str], indent: str, skip=()) -> None:
        users = computation.users()
        root = computation.root
        # StableHLO ops the importer wrote as chains of HLO ops print as the one op again
        groups = lowered_groups(computation)
        hidden = {inst for group in groups.values() for inst in group.hidden}
        for inst in computation.instructions:
            if inst.opcode == "custom-call" and inst.operands and \
                    inst.attrs.custom_call_target == DATA_FLOW_EDGE:
                owner = inst.operands[0]
                self.edge_owners.add(owner.operands[0] if owner.opcode == "get-tuple-element"
                                     else owner)
        for inst in computation.instructions:
            if inst in skip and inst not in self.names:
                # a result's sharding wrapper, printed on the signature: other users (dead
                # code a program may keep) read its operand
                self.names[inst] = self.ref(inst.operands[0])
            if inst.opcode == "parameter" or inst in skip or inst in self.names \
                    or inst in hidden:
                continue
            if inst in groups:
                self._lowered(groups[inst], lines, indent, users)
                continue
            if inst.opcode == "tuple" and self._implicit_tuple(inst, users[inst], root):
                continue
            if inst.opcode == "custom-call" and \
                    inst.attrs.custom_call_target == FUNC_RESULT_SHARDING:
                # Not a function result here (XLA's HLO may route it through a reshape or a
                # call): on the global view it is its operand.
                self.names[inst] = self.ref(inst.operands[0])
                continue
            emit(self, inst, lines, indent, users)

    def _lowered(self, group, lines: list[str], indent: str, users) -> None:
        """One StableHLO op for the chains of HLO ops the importer made of it: its results
        are the chains' results (``%0#k`` where there are several)."""
        virtual = group.virtual
        emit(self, virtual, lines, indent, users)
        name = self.names[virtual]
        if len(group.results) == 1:
            self.names[group.results[0]] = name
        else:
            for k, result in enumerate(group.results):
                self.names[result] = f"{name}#{k}"

    def _implicit_tuple(self, inst, users, root) -> bool:
        implicit_users = all(u.opcode in ("while", "conditional", "opt-barrier") for u in users)
        return implicit_users and (users or inst is root)

    def region(self, computation: Computation, indent: str, arg_names=None,
               bindings=None, returns: int | None = None) -> list[str]:
        """The lines of a region's body (ops and return); `arg_names` names the parameters
        (scalar regions), `bindings` maps instructions to outer names, `returns` is how
        many of the root's values the region returns (all by default)."""
        lines: list[str] = []
        for inst in computation.instructions:  # a computation used twice prints twice
            self.names.pop(inst, None)
        for inst, name in (bindings or {}).items():
            self.names[inst] = name
        if arg_names is not None:
            for param, name in zip(computation.parameters, arg_names):
                self.names[param] = name
        self.body(computation, lines, indent)
        returned = self._root_values(computation)[:returns]
        lines.append(f"{indent}stablehlo.return {', '.join(self.ref(v) for v in returned)} : "
                     f"{', '.join(print_type(v.shape) for v in returned)}")
        return lines

    def scalar_region(self, computation: Computation, indent: str, terminator=None) -> str:
        """``({ ^bb0(%a: T, ...): ... })`` body text (without the parentheses)."""
        names = [self.new_arg() for _ in computation.parameters]
        args = ", ".join(f"{n}: {print_type(p.shape)}"
                         for n, p in zip(names, computation.parameters))
        lines = self.region(computation, indent + "  ", names)
        if terminator:
            lines[-1] = lines[-1].replace("stablehlo.return", terminator, 1)
        head = f"{{\n{indent}^bb0({args}):\n" if names else "{\n"
        return head + "\n".join(lines) + f"\n{indent}}}"

    def tuple_param_bindings(self, computation: Computation, names) -> dict:
        """Bind get-tuple-element(param, i) to names[i] (while and branch regions)."""
        (param,) = computation.parameters
        bindings = {}
        for inst in computation.instructions:
            if inst.opcode == "get-tuple-element" and inst.operands[0] is param:
                bindings[inst] = names[inst.attrs.index]
        for inst in computation.instructions:
            if param in inst.operands and inst.opcode != "get-tuple-element":
                raise ExportError(f"{computation.name}: the tuple parameter is used as a "
                                  f"value by {inst.name}; StableHLO regions take its elements")
        return bindings


def _sharding_items(inst: Instruction) -> list[str]:
    items = []
    if not says_something(inst):
        pass
    elif isinstance(inst.sharding, TensorSharding):
        items.append(f"sdy.sharding = {inst.sharding}")
    elif isinstance(inst.sharding, tuple):
        items.append(f"sdy.sharding = {sharding_attr(inst)}")
    gspmd = inst.frontend_attribute("mhlo.sharding")
    if gspmd is not None:
        items.append(f"mhlo.sharding = {escape(gspmd)}")
    others = [(k, v) for k, v in exported_frontend(inst) if k != "mhlo.sharding"]
    if others and inst.opcode in ("parameter", "custom-call"):
        items.append("mhlo.frontend_attributes = {" + ", ".join(
            f"{k} = {escape(v)}" for k, v in others) + "}")
    return items


def exported_frontend(inst: Instruction) -> list[tuple[str, str]]:
    """The frontend attributes printed as ``mhlo.frontend_attributes``: all but the
    ``jax.result_info.<i>`` of a function root, which print as result attributes, and the
    importer's `OPEN_AS_WRITTEN` and `LOWERED_KEYS` marks."""
    return [(k, v) for k, v in inst.frontend_attributes
            if not k.startswith(RESULT_INFO + ".") and k != OPEN_AS_WRITTEN
            and k not in LOWERED_KEYS]


def _value_attrs(param: Instruction) -> str:
    items = _sharding_items(param)
    return " {" + ", ".join(items) + "}" if items else ""


def is_tuple(inst: Instruction) -> bool:
    return isinstance(inst.shape, TupleShape)


def emit(fx: FunctionExporter, inst: Instruction, lines: list[str], indent: str, users) -> None:
    fn = PRINTERS.get(inst.opcode)
    if fn is None:
        raise ExportError(f"no StableHLO form for '{inst.opcode}' ({inst.name})")
    reserved = fx.counter  # number results before the values of nested regions
    hint = NAME_HINTS.get(inst.opcode)
    hint = hint(inst) if hint is not None else None
    if isinstance(hint, tuple):   # one name per result (``%output_state, %output = ...``)
        names = [fx.named(h) for h in hint]
        text = fn(fx, inst, indent)
        fx.elements[inst] = names
        lines.append(f"{indent}{', '.join(names)} = {text}")
        return
    base = fx.named(hint) if hint else fx.new_value()
    text = fn(fx, inst, indent)
    if isinstance(text, list):  # whole statements; the printer named the results itself
        lines.extend(text)
        return
    if text is None:
        if not hint and fx.counter == reserved + 1:
            fx.counter = reserved
        return
    fx.names[inst] = base
    if isinstance(inst.shape, TupleShape) and inst.opcode != "tuple":
        count = fx.result_counts.get(inst, len(inst.shape.elements))
        fx.multi.add(inst)
        lhs = f"{base}:{count} = " if count else ""
    else:
        lhs = f"{base} = "
    lines.append(f"{indent}{lhs}{text}")
