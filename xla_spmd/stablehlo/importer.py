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

from xla_spmd.errors import ParseError, XlaSpmdError
from xla_spmd.ir import Computation, Instruction, Module, TupleShape
from xla_spmd.ir.module import make_instruction
from xla_spmd.ir.ops import op_named
from xla_spmd.mesh import Mesh, print_mesh
from xla_spmd.stablehlo.syntax import Block, FuncNode, ModuleNode, OpNode, parse_text

MESHES_KEY = "xla.sdy.meshes"
# A function result's ``jax.result_info`` is kept as frontend attribute
# ``jax.result_info.<result index>`` of the function's root, which HLO text carries.
RESULT_INFO = "jax.result_info"


def import_stablehlo(text: str, filename: str | None = None) -> Module:
    """Import StableHLO MLIR text (as ``jax.jit(f).lower(...).as_text()`` prints it)."""
    tree = parse_text(text, filename)
    return ModuleImporter(tree, filename).run()


def module_meshes(module: Module) -> dict[str, Mesh]:
    """The named meshes of a module: XLA's ``frontend_attributes={xla.sdy.meshes={name =
    #sdy.mesh<[...]>, ...}}`` header entry (what the importer writes, and what XLA's HLO
    dumps of Shardy programs carry)."""
    from xla_spmd.mesh import parse_mesh
    from xla_spmd.stablehlo.lexer import Scanner

    text = module.header_value("frontend_attributes") or ""
    start = text.find(MESHES_KEY + "={")
    meshes: dict[str, Mesh] = {}
    if start < 0:
        return meshes
    s = Scanner(text)
    s.pos = start + len(MESHES_KEY) + 2
    while not s.accept("}"):
        name = s.string() if s.peek('"') else s.bare_id()
        s.expect("=")
        s.expect("#sdy.mesh")
        meshes[name] = parse_mesh(s.balanced("<", ">"))
        s.accept(",")
    return meshes


def meshes_header(meshes: dict[str, Mesh]) -> tuple[str, str]:
    """The ``frontend_attributes`` header pair that declares `meshes`."""
    body = ", ".join(f"{name} = #sdy.mesh{print_mesh(mesh)}" for name, mesh in meshes.items())
    return ("frontend_attributes", f"{{{MESHES_KEY}={{{body}}}}}")


class Scope:
    """One computation being built: its instructions and the SSA values visible in it."""

    def __init__(self, importer: ModuleImporter, name: str):
        self.importer = importer
        self.name = name
        self.instructions: list[Instruction] = []
        self.values: dict[str, Instruction] = {}
        self.num_parameters = 0
        self.node: OpNode | None = None

    def emit(self, opcode: str, operands=(), shape=None, sharding=None, frontend=(), extras=(),
             name: str | None = None, **attrs) -> Instruction:
        op = op_named(opcode)
        try:
            attr_value = op.make_attrs(**attrs)
            inst = make_instruction(name or self.importer.fresh(opcode), op, operands,
                                    attr_value, shape, sharding=sharding,
                                    frontend_attributes=tuple(frontend), extras=tuple(extras))
        except XlaSpmdError as error:
            raise self.importer.error(self.node, str(error)) from None
        self.instructions.append(inst)
        return inst

    def parameter(self, shape, base: str = "Arg") -> Instruction:
        number = self.num_parameters
        self.num_parameters += 1
        return self.emit("parameter", shape=shape, parameter_number=number,
                         name=self.importer.fresh(f"{base}_{number}"))

    def unpack(self, inst: Instruction) -> list[Instruction]:
        """get-tuple-element of every element of a tuple-shaped instruction."""
        return [self.emit("get-tuple-element", (inst,), index=i)
                for i in range(len(inst.shape.elements))]

    def lookup(self, name: str) -> Instruction:
        try:
            return self.values[name]
        except KeyError:
            raise self.importer.error(self.node, f"use of undefined value {name}") from None

    def build(self, root: Instruction, extras=()) -> Computation:
        return Computation(self.name, tuple(self.instructions), root, tuple(extras))


class ModuleImporter:
    def __init__(self, tree: ModuleNode, filename: str | None):
        self.tree = tree
        self.filename = filename
        self.counter = 0
        self.functions = {f.name: f for f in tree.functions}
        self.converted: dict[str, Computation] = {}
        self.in_progress: set[str] = set()
        self.computation_names = set(self.functions)
        self.region_counter = 0
        self.meshes = tree.meshes
        self.gspmd_mesh = None
        if not self.meshes:
            from xla_spmd.stablehlo.importer_shardings import common_gspmd_mesh
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

    def error(self, node: OpNode | None, message: str) -> ParseError:
        if node is None:
            return ParseError(message, file=self.filename)
        return ParseError(f"'{node.name}': {message}", file=self.filename, line=node.line,
                          column=node.column)

    # ----- module -----
    def run(self) -> Module:
        tree = self.tree
        if not tree.functions:
            raise ParseError("the module has no func.func", file=self.filename)
        entry_node = self.functions.get("main") or next(
            (f for f in tree.functions if f.visibility == "public"), tree.functions[0])
        entry = self.function(entry_node.name)
        extra = [self.function(f.name) for f in tree.functions if f.name != entry_node.name]
        module = Module.from_entry(tree.name or "module", entry, self.header())
        reachable = {c.name for c in module.computations}
        unreachable = sorted((c for c in extra if c.name not in reachable), key=lambda c: c.name)
        if unreachable:  # text order does not matter: sort by name
            module = Module.from_entry(module.name, entry, module.header, unreachable)
        return module

    def header(self) -> tuple[tuple[str, str], ...]:
        """Module attributes as HLO header pairs, then the meshes."""
        header = []
        for key, value in self.tree.attrs.items():
            if key == "mhlo.num_partitions":
                header.append(("num_partitions", str(value)))
            elif key == "mhlo.num_replicas":
                header.append(("replica_count", str(value)))
        if self.meshes:
            header.append(meshes_header(self.meshes))
        return tuple(header)

    def function(self, name: str) -> Computation:
        if name in self.converted:
            return self.converted[name]
        if name not in self.functions:
            raise ParseError(f"call of unknown function @{name}", file=self.filename)
        if name in self.in_progress:
            raise ParseError(f"function @{name} calls itself; recursion is not supported",
                             file=self.filename)
        self.in_progress.add(name)
        node: FuncNode = self.functions[name]
        from xla_spmd.stablehlo.importer_shardings import arg_sharding, finish_results

        scope = Scope(self, name)
        for arg_name, shape, attrs in node.args:
            param = scope.parameter(shape)
            sharding, frontend = arg_sharding(self, attrs, shape)
            if sharding is not None or frontend:
                param = param.replace(sharding=sharding, frontend_attributes=frontend)
                scope.instructions[-1] = param
            scope.values[arg_name] = param
        results = self.block_ops(scope, node.body)
        root, extras = finish_results(self, scope, node, results)
        computation = scope.build(root, extras)
        self.converted[name] = computation
        self.in_progress.discard(name)
        return computation

    def block_ops(self, scope: Scope, block: Block) -> list[Instruction]:
        """Convert a block's ops; returns the values its terminator returns."""
        from xla_spmd.stablehlo import importer_control, importer_sdy  # noqa: F401 (rules)
        from xla_spmd.stablehlo.importer_ops import convert_op

        for node in block.ops:
            scope.node = node
            if node.name in ("func.return", "stablehlo.return", "sdy.return"):
                return [scope.lookup(v) for v in node.operands]
            convert_op(self, scope, node)
        raise self.error(block.ops[-1] if block.ops else None,
                         "a block must end with a return")

    # ----- regions -----
    def region(self, block: Block, base: str, mode: str, captures=(), outer: Scope = None,
               extra_shapes=()) -> Computation:
        """A region as a computation.

        mode "scalar": one parameter per block argument (reducers, comparators, bodies of
        manual computations); "tuple": one tuple parameter holding the block arguments and
        the captures (while); "branch": the captures only, as one parameter (if/case)."""
        scope = Scope(self, self.computation_name(base))
        scope.node = outer.node if outer else None
        shapes = [shape for _, shape in block.args]
        capture_shapes = [outer.lookup(c).shape for c in captures]
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
        root = results[0] if len(results) == 1 else scope.emit("tuple", results)
        return scope.build(root)


def free_values(block: Block) -> list[str]:
    """SSA names a block uses but does not define (in order of first use), nested regions
    included."""
    used: list[str] = []
    seen: set[str] = set()

    def visit(b: Block, outer: set[str]):
        defined = set(outer)
        defined.update(name for name, _ in b.args)
        for op in b.ops:
            for operand in op.operands:
                if operand not in defined and operand.split("#")[0] not in defined \
                        and operand not in seen:
                    seen.add(operand)
                    used.append(operand)
            for region in op.regions:
                visit(region, defined)
            for result in op.results:
                defined.add(result)
                defined.add(result.split("#")[0])

    visit(block, set())
    return used
