"""StableHLO MLIR text (with Shardy attributes) → an HLO `Module`.

Invariants of the result, whatever the input:

* Every op becomes HLO ops (op_semantics.md §18); multi-result ops are one tuple-shaped
  instruction followed by a get-tuple-element per result, created at once (§1.3).
* Values a while/if/case region uses from outside become explicit operands (§14): a while
  carries them in its loop tuple, a branch receives them as its parameter.
* Shardy ops take the form XLA gives them when it exports Shardy to HLO (§16):
  ``sdy.sharding_constraint`` → custom-call ``Sharding`` carrying the sharding,
  ``sdy.reshard`` → ``copy`` carrying the sharding, ``sdy.manual_computation`` →
  ``xla.sdy.GlobalToLocalShape`` + ``call`` of ``xla.sdy.manual_computation_body.N`` +
  ``xla.sdy.LocalToGlobalShape`` with ``xla.sdy.in_shardings``/``out_shardings``/
  ``manual_axes`` frontend attributes, result shardings → ``xla.sdy.FuncResultSharding``.
  Instruction shardings are `TensorSharding` values (a tuple of them for tuple results).
* Module meshes are kept in `Module.header` as XLA keeps them in HLO:
  ``("frontend_attributes", '{xla.sdy.meshes={mesh = #sdy.mesh<["x"=2]>}}')``;
  ``mhlo.num_partitions``/``mhlo.num_replicas`` become ``num_partitions``/``replica_count``.
* ``stablehlo.composite`` → ``call(...), is_composite=true`` of the decomposition with frontend
  attributes ``composite.name``/``composite.attributes``/``composite.version`` (§14); result
  ``jax.result_info = "x"`` → frontend attribute ``jax.result_info.<i>="x"`` on the root.
* Names are deterministic: ``<opcode>.<n>`` with one counter per module, in the order ops are
  read, so importing the exporter's text of an imported module gives an equal module.

>>> m = import_stablehlo('''module @m {
...   func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
...     %0 = stablehlo.negate %x : tensor<4xf32>
...     return %0 : tensor<4xf32>
...   }
... }''')
>>> [i.opcode for i in m.entry.instructions]
['parameter', 'negate']
"""

from __future__ import annotations

from xla_spmd.errors import ParseError
from xla_spmd.ir import (
    Computation,
    Instruction,
    Module,
    TupleShape,
    map_computations,
    rebind_called,
)
from xla_spmd.ir.hlo_printer import FUNCTION_ORDER
from xla_spmd.sharding.meshes import MESH_ATTRS_KEY, meshes_header
from xla_spmd.stablehlo.importer_ops import convert_op
from xla_spmd.stablehlo.importer_shardings import arg_sharding, common_gspmd_mesh, finish_results
from xla_spmd.stablehlo.lexer import Scanner
from xla_spmd.stablehlo.scope import VISIBILITY, Scope, mark_written_open
from xla_spmd.stablehlo.syntax import parse_text
from xla_spmd.stablehlo.syntax_tree import Block, FuncNode, ModuleNode, OpNode
from xla_spmd.stablehlo.types import print_type

# Attributes written after a mesh declaration (``sdy.mesh @m = <...> {stablehlo.mesh = ...}``)
# are kept verbatim in the same header entry, next to the meshes:
# ``xla.sdy.mesh_attributes={m = {stablehlo.mesh = ...}}`` (`MESH_ATTRS_KEY`).


def import_stablehlo(text: str, filename: str | None = None,
                     value_names: dict[str, str] | None = None) -> Module:
    """Import StableHLO MLIR text (as ``jax.jit(f).lower(...).as_text()`` prints it).

    Malformed input raises `ParseError` naming file:line:column and what was expected. A
    `value_names` dict receives, per instruction name, the MLIR value it was imported from
    (``%0``, ``%arg1``; ``%0 in @f`` outside the entry function).

    >>> names = {}
    >>> m = import_stablehlo("func.func @main(%a: tensor<f32>) -> tensor<f32> {"
    ...                      " %0 = stablehlo.negate %a : tensor<f32>"
    ...                      " return %0 : tensor<f32> }", value_names=names)
    >>> sorted(names.values())
    ['%0', '%a']
    """
    tree = parse_text(text, filename)
    importer = ModuleImporter(tree, filename)
    module = importer.run()
    if value_names is not None:
        value_names.update(importer.value_names)
    return module


def module_mesh_attributes(module: Module) -> dict[str, str]:
    """The verbatim attribute dictionaries (``{stablehlo.mesh = ...}``) that followed mesh
    declarations in the imported text, by mesh name (see `MESH_ATTRS_KEY`)."""
    text = module.header_value("frontend_attributes") or ""
    start = text.find(MESH_ATTRS_KEY + "={")
    attrs: dict[str, str] = {}
    if start < 0:
        return attrs
    s = Scanner(text)
    s.pos = start + len(MESH_ATTRS_KEY) + 2
    while not s.accept("}"):
        name = s.string() if s.peek('"') else s.bare_id()
        s.expect("=")
        attrs[name] = s.balanced("{", "}")
        s.accept(",")
    return attrs


def _text_order(module: Module, text_order: list[str]) -> Module:
    """`module` with each function's place in the text (`FUNCTION_ORDER`) when the
    exporter's default order (the entry, then callees first) is not the text's: only an
    order that needs saying is kept, so that a module printed and read back is the same."""
    default = [module.entry.name] + [c.name for c in module.computations
                                     if c is not module.entry and c.name in text_order]
    if [n for n in text_order if n in default] == default:
        return module

    def mark(computation: Computation, replaced: dict) -> Computation:
        extras = computation.extras
        if computation.name in text_order:
            extras = tuple(extras) + ((FUNCTION_ORDER, str(text_order.index(computation.name))),)
        new: dict[Instruction, Instruction] = {}
        for inst in computation.instructions:
            rebound = rebind_called(inst, replaced)
            operands = tuple(new.get(o, o) for o in inst.operands)
            new[inst] = rebound if operands == inst.operands else \
                rebound.replace(operands=operands)
        return Computation(computation.name, tuple(new.values()), new[computation.root],
                           extras)
    return map_computations(module, mark)


class ModuleImporter:
    def __init__(self, tree: ModuleNode, filename: str | None,
                 devices: tuple[int, int] | None = None):
        """``devices``: (replicas, partitions) the module runs on, when the caller knows them
        (``interpreter.run_parallel``); else read from ``mhlo.num_replicas`` and
        ``mhlo.num_partitions``, when the module states them."""
        self.tree = tree
        if devices is None and "mhlo.num_partitions" in tree.attrs:
            devices = (int(tree.attrs.get("mhlo.num_replicas", 1)),
                       int(tree.attrs["mhlo.num_partitions"]))
        self.devices = devices
        self.filename = filename
        self.counter = 0
        self.functions = {f.name: f for f in tree.functions}
        self.converted: dict[str, Computation] = {}
        self.in_progress: set[str] = set()
        self.entry_node = None   # the function that becomes the entry (set by run)
        self.computation_names = set(self.functions)
        # id(instruction) -> (instruction, Quantization) of quantized values (importer_quant)
        self.quantized: dict[int, tuple] = {}
        self.region_counter = 0
        self.scanner = tree.scanner
        self.current_node: OpNode | None = None
        self.meshes = tree.meshes
        self.gspmd_mesh = None
        # instruction name -> the MLIR value it came from; the functions being converted
        self.value_names: dict[str, str] = {}
        self.function_stack: list[str] = []
        if not self.meshes:
            self.gspmd_mesh = common_gspmd_mesh(tree)
            if self.gspmd_mesh is not None:
                self.meshes["mesh"] = self.gspmd_mesh

    # ----- names and errors -----
    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"{base}.{self.counter}"

    def computation_name(self, base: str) -> str:
        while True:
            name = f"{base}.{self.region_counter}"
            self.region_counter += 1
            if name not in self.computation_names:
                self.computation_names.add(name)
                return name

    def error(self, node: OpNode | FuncNode | None, message: str,
              pos: int | None = None) -> ParseError:
        """A `ParseError` at `node` (or at text offset `pos`), with the source line and a
        caret under the column."""
        if isinstance(node, OpNode):
            message = f"'{node.name}': {message}"
        if pos is None or pos < 0:
            pos = node.pos if node is not None else None
            if isinstance(node, FuncNode) and self.scanner is not None and pos is not None:
                text = self.scanner.text  # FuncNode.pos is just after 'func.func'
                while pos < len(text) and text[pos] in " \t":
                    pos += 1
        if pos is None:
            return ParseError(message, file=self.filename)
        if self.scanner is None:
            line, column = (node.line, node.column) if isinstance(node, OpNode) else (None, None)
            return ParseError(message, file=self.filename, line=line or None,
                              column=column or None)
        error = self.scanner.error(message, pos)
        return ParseError(message, file=self.filename, line=error.line, column=error.column,
                          source_line=error.source_line)

    # ----- module -----
    def run(self) -> Module:
        tree = self.tree
        if not tree.functions:
            raise self.error(None, "the module has no func.func; expected at least one "
                                   "function", pos=len(self.scanner.text) if self.scanner
                             else None)
        entry_node = self.functions.get("main") or next(
            (f for f in tree.functions if f.visibility == "public"), tree.functions[0])
        self.entry_node = entry_node
        entry = self.function(entry_node.name)
        extra = [self.function(f.name) for f in tree.functions if f.name != entry_node.name]
        module = Module.from_entry(tree.name or "module", entry, self.header())
        reachable = {c.name for c in module.computations}
        unreachable = [c for c in extra if c.name not in reachable]
        if unreachable:  # kept, in text order (MLIR prints every function, in order)
            module = Module.from_entry(module.name, entry, module.header, unreachable)
        return _text_order(module, [f.name for f in tree.functions])

    def header(self) -> tuple[tuple[str, str], ...]:
        """Module attributes as HLO header pairs, then the meshes."""
        header = []
        for key, value in self.tree.attrs.items():
            if key == "mhlo.num_partitions":
                header.append(("num_partitions", str(value)))
            elif key == "mhlo.num_replicas":
                header.append(("replica_count", str(value)))
        if self.meshes:
            header.append(meshes_header(self.meshes, self.tree.mesh_attrs))
        return tuple(header)

    def function(self, name: str) -> Computation:
        if name in self.converted:
            return self.converted[name]
        caller = self.current_node
        if name not in self.functions:
            known = ", ".join(f"@{f}" for f in self.functions)
            raise self.error(caller, f"call of unknown function @{name}; the module defines "
                                     f"{known}")
        if name in self.in_progress:
            raise self.error(caller, f"function @{name} calls itself; recursion is not "
                                     "supported")
        self.in_progress.add(name)
        self.function_stack.append(name)
        node: FuncNode = self.functions[name]

        scope = Scope(self, name)
        line = self.scanner.line_col(node.pos)[0] if self.scanner else 0
        for arg_name, shape, attrs in node.args:
            if arg_name in scope.values:
                raise self.error(node, f"@{name} has two arguments named {arg_name}")
            param = scope.parameter(shape)
            sharding, frontend = arg_sharding(self, attrs, shape)
            frontend = mark_written_open(sharding, frontend)
            if sharding is not None or frontend:
                param = param.replace(sharding=sharding, frontend_attributes=frontend)
                scope.instructions[-1] = param
            scope.define(arg_name, param, line)
        results = self.block_ops(scope, node.body)
        self.check_results(scope.node, node, results)
        root, extras = finish_results(self, scope, node, results)
        if node.visibility == "public" and self.entry_node not in (None, node):
            extras = tuple(extras) + ((VISIBILITY, "public"),)  # printed so again
        computation = scope.build(root, extras)
        self.converted[name] = computation
        self.in_progress.discard(name)
        self.function_stack.pop()
        self.current_node = caller
        return computation

    def check_results(self, return_node: OpNode | None, func: FuncNode,
                      results: list[Instruction]) -> None:
        """The returned values must match the function's declared result types."""
        declared = func.result_types
        if len(results) != len(declared):
            raise self.error(return_node, f"returns {len(results)} values but @{func.name} "
                                          f"declares {len(declared)} results")
        for index, (value, expected) in enumerate(zip(results, declared)):
            if not _same_type(value.shape, expected):
                raise self.error(return_node, f"result {index} of @{func.name} has type "
                                              f"{print_type(value.shape)} but the function "
                                              f"declares {print_type(expected)}")

    def block_ops(self, scope: Scope, block: Block) -> list[Instruction]:
        """Convert a block's ops; returns the values its terminator returns."""
        for node in block.ops:
            scope.node = node
            self.current_node = node
            if node.name in ("func.return", "stablehlo.return", "sdy.return"):
                return [scope.lookup(v) for v in node.operands]
            convert_op(self, scope, node)
        raise self.error(block.ops[-1] if block.ops else None,
                         "a block must end with a return")

    # ----- regions -----
    def region(self, block: Block, base: str, mode: str, captures=(), outer: Scope | None = None,
               extra_shapes=()) -> Computation:
        """A region as a computation.

        mode "scalar": one parameter per block argument (reducers, comparators, bodies of
        manual computations); "tuple": one tuple parameter holding the block arguments and
        the captures (while); "branch": the captures only, as one parameter (if/case)."""
        scope = Scope(self, self.computation_name(base))
        scope.node = outer.node if outer else None
        shapes = [shape for _, shape in block.args]
        if captures and outer is None:
            raise ValueError(f"region {base}: captured values need the outer scope")
        capture_shapes = [outer.lookup(c).shape for c in captures] if outer else []
        if mode == "scalar":
            for arg_name, shape in block.args:
                scope.values[arg_name] = scope.parameter(shape)
            capture_values = []
        elif mode == "tuple":
            param = scope.parameter(TupleShape(tuple(shapes + capture_shapes)))
            elements = scope.unpack(param)
            for (arg_name, _), value in zip(block.args, elements):
                scope.values[arg_name] = value
            capture_values = elements[len(shapes):]
        else:
            if len(captures) == 1:
                capture_values = [scope.parameter(capture_shapes[0])]
            else:
                param = scope.parameter(TupleShape(tuple(capture_shapes)))
                capture_values = scope.unpack(param)
        for capture, value in zip(captures, capture_values):
            scope.values[capture] = value
        results = self.block_ops(scope, block)
        if mode == "tuple" and base == "body":
            results = results + capture_values
        # A while body returns its whole loop state, a tuple even of one value.
        whole_state = mode == "tuple" and base == "body"
        root = results[0] if len(results) == 1 and not whole_state else \
            scope.emit("tuple", results)
        return scope.build(root)


def _same_type(found, declared) -> bool:
    """Whether a value's shape is the declared type (layouts aside)."""
    if isinstance(found, TupleShape) or isinstance(declared, TupleShape):
        if not (isinstance(found, TupleShape) and isinstance(declared, TupleShape)):
            return False
        return len(found.elements) == len(declared.elements) and all(
            _same_type(f, d) for f, d in zip(found.elements, declared.elements))
    if found.is_token or declared.is_token:
        return found.is_token and declared.is_token
    return found.dtype == declared.dtype and tuple(found.dims) == tuple(declared.dims)
