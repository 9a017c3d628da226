"""Emit the CUDA C kernel of a fusion: one thread per output element, the index arithmetic of
broadcast, iota, reshape, transpose, slice and reverse, and each member's value at an index.

Invariants:

* A loop kernel is ``extern "C" __global__ void f(OUT *out, const IN0 *in0, ...)``: a
  grid-stride loop over the output's elements in row-major order; element ``i`` is delinearised
  into the output's multi-index and every member's value is computed there (``_value``
  memoises ``(member, index)``, so a producer used twice at one index is computed once). Every
  input is a C-contiguous buffer of its instruction's shape.
* A reduce kernel has the same signature with ``acc`` (the output in its accumulation type,
  f32 for f16/bf16, already filled with the init value) as first argument: one thread per
  output element folds the reduced elements in row-major order of the reduced dims, as the
  CPU's reduce kernel does (only reducers whose result does not depend on the order are
  fused, see ``cpu.fusion``).
* A loop fusion whose members are all elementwise, with every input of the output's shape or a
  scalar, reads its inputs at the linear index (no delinearisation).

>>> from xla_spmd.ir import parse_hlo
>>> from xla_spmd.backends.cpu.fusion import fuse
>>> m = parse_hlo('''HloModule m
... ENTRY %e (x: f32[4]) -> f32[4] {
...   %x = f32[4] parameter(0)
...   ROOT %y = f32[4] add(%x, %x)
... }''')
>>> fusions, _ = fuse(m.entry, libm=True)
>>> "out[i] = ((t1) + (t1))" in render_source(fusions).replace("const float t2 = ", "out[i] = ")
True
"""

from __future__ import annotations

from xla_spmd.backends.cpu.fusion import Fusion
from xla_spmd.backends.cpu.index_map import INDEX_OPS, OperandIndexing
from xla_spmd.backends.gpu import renderer as r
from xla_spmd.ir import Instruction
from xla_spmd.ir.dtypes import S64

Index = tuple  # of str (a C long long expression) or int


class _KernelEmitter(OperandIndexing):
    def __init__(self, fusion: Fusion):
        self.fusion = fusion
        self.lines: list[str] = []
        self.inputs = {id(inst): j for j, inst in enumerate(fusion.inputs)}
        self.members = {id(inst) for inst in fusion.members}
        self.memo: dict[tuple, str] = {}
        self.flat: str | None = None
        self._count = 0

    def emit(self, ctype: str, expression: str) -> str:
        self._count += 1
        name = f"t{self._count}"
        self.lines.append(f"    const {ctype} {name} = {expression};")
        return name

    # Index arithmetic, folding constants.
    def _mul(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        if a == 1 or b == 0:
            return b
        if b == 1 or a == 0:
            return a
        return self.emit("long long", f"{a} * {b}LL")

    def _add(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if a == 0:
            return b
        if b == 0:
            return a
        return self.emit("long long", f"{a} + {b}")

    def linear(self, index: Index, dims: tuple):
        if self.flat is not None:
            return self.flat if index else 0
        total, stride = 0, 1
        for i, n in zip(reversed(index), reversed(dims)):
            if n != 1:
                total = self._add(total, self._mul(i, stride))
            stride *= n
        return total

    def delinearize(self, linear, dims: tuple) -> Index:
        index, stride = [], 1
        for n in reversed(dims):
            if n == 1:
                index.append(0)
            elif isinstance(linear, int):
                index.append(linear // stride % n)
            else:
                quotient = linear if stride == 1 else f"({linear} / {stride}LL)"
                index.append(self.emit("long long", f"{quotient} % {n}LL"))
            stride *= n
        return tuple(reversed(index))

    # Values.
    def value(self, inst: Instruction, index: Index) -> str:
        key = (id(inst), index)
        cached = self.memo.get(key)
        if cached is None:
            cached = self.memo[key] = self._compute(inst, index)
        return cached

    def _compute(self, inst: Instruction, index: Index) -> str:
        dtype = inst.shape.dtype
        ctype = r.compute_type(dtype)
        if id(inst) not in self.members:
            element = f"in{self.inputs[id(inst)]}[{self.linear(index, inst.shape.dims)}]"
            return self.emit(ctype, r.load_expression(dtype, element))
        name, attrs = inst.op.name, inst.attrs
        if name == "constant":
            return r.constant_text(attrs.literal.value, dtype)
        if name == "iota":
            position = index[attrs.iota_dimension]
            value = f"{position}LL" if isinstance(position, int) else position
            return self.emit(ctype, r.round_to(dtype, r.convert(S64, dtype, value)))
        if name in INDEX_OPS:
            (operand,) = inst.operands
            return self.value(operand, self._operand_index(inst, operand, index))
        values = [self.value(o, index if o.shape.rank else ()) for o in inst.operands]
        return self.emit(ctype, r.round_to(dtype, r.elementwise(inst, values)))

    def _from_last(self, last: int, i):
        return self.emit("long long", f"{last} - {i}")

    # Kernels.
    def _flat(self) -> bool:
        root = self.fusion.root
        elementwise = all(m.op.family.value in ("unary", "binary", "elementwise")
                          or m.op.name == "constant" for m in self.fusion.members)
        return elementwise and all(i.shape.rank == 0 or i.shape.dims == root.shape.dims
                                   for i in self.fusion.inputs)

    def render(self) -> str:
        fusion = self.fusion
        root = fusion.root
        if fusion.kind == "reduce":
            out_dtype = r.accumulator_type(root.shape.dtype)
            body, count = self._reduce_body(out_dtype), root.shape.num_elements
        else:
            out_dtype = root.shape.dtype
            body, count = self._loop_body(), root.shape.num_elements
        params = [f"{r.storage_type(out_dtype)} *__restrict__ out"] + [
            f"const {r.storage_type(i.shape.dtype)} *__restrict__ in{j}"
            for j, i in enumerate(fusion.inputs)]
        return "\n".join([
            f'extern "C" __global__ void {fusion.name}({", ".join(params)}) {{',
            f"  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; "
            f"i < {count}LL; i += (long long)gridDim.x * blockDim.x) {{",
            *body, "  }", "}"])

    def _loop_body(self) -> list[str]:
        root = self.fusion.root
        if self._flat():
            self.flat = "i"
            index = ("i",) * root.shape.rank
        else:
            index = self.delinearize("i", root.shape.dims)
        value = self.value(root, index)
        self.lines.append(f"    out[i] = {r.store_expression(root.shape.dtype, value)};")
        return self.lines

    def _reduce_body(self, accumulator) -> list[str]:
        root = self.fusion.root
        data = root.operands[0]
        reduced = sorted(root.attrs.dimensions)
        kept = [d for d in range(data.shape.rank) if d not in reduced]
        kept_index = self.delinearize("i", root.shape.dims)
        reduced_dims = tuple(data.shape.dims[d] for d in reduced)
        count = 1
        for n in reduced_dims:
            count *= n
        ctype = r.compute_type(accumulator)
        self.lines.append(f"    {ctype} acc = {r.load_expression(accumulator, 'out[i]')};")
        self.lines.append(f"    for (long long j = 0; j < {count}LL; ++j) {{")
        outer, self.lines = self.lines, []
        self.memo = {}
        inner_index = self.delinearize("j", reduced_dims)
        index = [0] * data.shape.rank
        for d, position in zip(kept, kept_index):
            index[d] = position
        for d, position in zip(reduced, inner_index):
            index[d] = position
        x = self.value(data, tuple(index))
        assert self.fusion.reducer is not None  # a reduce fusion's binary reducer
        folded = r.binary(self.fusion.reducer, accumulator, "acc", x)
        inner = ["  " + line for line in self.lines]
        return outer + inner + [f"      acc = {folded};", "    }",
                                f"    out[i] = {r.store_expression(accumulator, 'acc')};"]


def render_kernel(fusion: Fusion) -> str:
    """The CUDA C kernel of one fusion (named ``fusion.name``)."""
    return _KernelEmitter(fusion).render()


def render_source(fusions: list[Fusion]) -> str:
    """The CUDA C source of every fusion: the prelude and one kernel each."""
    return "\n\n".join([r.PRELUDE + r.TOTAL_ORDER] + [render_kernel(f) for f in fusions]) + "\n"
