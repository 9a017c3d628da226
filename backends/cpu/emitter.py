"""Emit the LLVM IR function of a fusion: the loop nest and the value of each member at an
index (the index arithmetic of broadcast, iota, reshape, transpose, slice and reverse).

Each member's value is computed at a multi-index over its own shape; ``_value`` memoises
``(member, index)`` so a producer used twice at one index is computed once. Indices are i64
SSA names or Python ints (folded while emitting).

A loop fusion whose members are all elementwise, with every input of the output's shape or a
scalar, is emitted as one flat loop over the elements (the best case for the vectorizer).
A loop fusion that reads some input along the output's innermost dim with a stride but along
another dim contiguously (a transpose, maybe behind reshapes) runs those two dims in
``TILE`` x ``TILE`` blocks (``_tiled``), so the strided reads stay in cache; every element is
computed as before, so the results are unchanged.

>>> from xla_spmd.ir import parse_hlo
>>> from xla_spmd.backends.cpu.fusion import fuse
>>> m = parse_hlo('''HloModule m
... ENTRY %e (x: f32[4]) -> f32[4] {
...   %x = f32[4] parameter(0)
...   ROOT %y = f32[4] add(%x, %x)
... }''')
>>> fusions, _ = fuse(m.entry)
>>> "fadd float" in render_module(fusions)
True
"""

from __future__ import annotations

from collections.abc import Mapping

from xla_spmd.backends.cpu import random
from xla_spmd.backends.cpu import renderer as r
from xla_spmd.backends.cpu.fusion import Fusion
from xla_spmd.backends.cpu.index_map import INDEX_OPS, OperandIndexing
from xla_spmd.ir import Instruction
from xla_spmd.ir.dtypes import F32, S64

Index = tuple  # of str (SSA i64) or int
TILE = 64  # the block edge of a tiled loop nest (see ``renderer.loop_function``)
UNROLL_MAX_BYTES = 1 << 20
"""A loop fusion whose output and inputs take more bytes than this is not unrolled (see
``_FusionEmitter._unroll``)."""
ENTRY_ATTRIBUTES = "nounwind noinline optnone"
"""The stacked entries are not optimised (``optnone``, fast instruction selection): they
only read data pointers and call the fusion's function, and LLVM's passes over one thin
entry cost about what they cost over a kernel."""


class _FusionEmitter(OperandIndexing):
    def __init__(self, fusion: Fusion):
        self.fusion = fusion
        self.w = r._Writer()
        self.inputs = {id(inst): j for j, inst in enumerate(fusion.inputs)}
        self.members = {id(inst) for inst in fusion.members}
        self.memo: dict[tuple, str] = {}
        self.flat: str | None = None

    def linear(self, index: Index, dims: tuple) -> str | int:
        if self.flat is not None:  # a flat loop: every array is read at the loop index
            return self.flat if index else 0
        return self.w.linear(index, dims)

    def delinearize(self, linear, dims: tuple) -> Index:
        return self.w.delinearize(linear, dims)

    # Values.
    def value(self, inst: Instruction, index: Index) -> str:
        key = (id(inst), index)
        cached = self.memo.get(key)
        if cached is None:
            cached = self.memo[key] = self._compute(inst, index)
        return cached

    def _compute(self, inst: Instruction, index: Index) -> str:
        w, dtype = self.w, inst.shape.dtype
        if id(inst) not in self.members:
            j = self.inputs[id(inst)]
            # The input the output is written over is read through the output's pointer.
            pointer = "%out" if j == self.fusion.inplace else f"%in{j}"
            return r.load(w, dtype, pointer, str(self.linear(index, inst.shape.dims)))
        name, attrs = inst.op.name, inst.attrs
        if name == "constant":
            return r.constant_text(attrs.literal.value, dtype)
        if name == "iota":
            value = index[attrs.iota_dimension]
            value = str(value) if isinstance(value, int) else value
            return r.round_to(w, dtype, r.convert(w, S64, dtype, value))
        if name in INDEX_OPS:
            (operand,) = inst.operands
            return self.value(operand, self._operand_index(inst, operand, index))
        values = [self.value(o, index if o.shape.rank else ()) for o in inst.operands]
        return r.round_to(w, dtype, self._elementwise(inst, values))

    # Index arithmetic (OperandIndexing).
    def _add(self, a, b):
        return self.w.add(a, b)

    def _mul(self, a, b):
        return self.w.mul(a, b)

    def _from_last(self, last: int, i):
        return self.w.emit(f"sub nsw i64 {last}, {i}")

    def _reshaped_index(self, inst: Instruction, operand: Instruction, index: Index) -> Index:
        if self.flat is not None:  # a flat loop reads everything at the linear index
            return (self.flat,) * operand.shape.rank
        return super()._reshaped_index(inst, operand, index)

    def _elementwise(self, inst: Instruction, values: list[str]) -> str:
        w, name, dtype = self.w, inst.op.name, inst.shape.dtype
        if name == "compare":
            return r.compare(w, inst, *values)
        if name == "select":
            t = r.compute_type(dtype)
            return w.emit(f"select i1 {values[0]}, {t} {values[1]}, {t} {values[2]}")
        if name == "clamp":
            low, x, high = values
            return r.binary(w, "minimum", dtype, r.binary(w, "maximum", dtype, x, low), high)
        if name == "convert":
            return r.convert(w, inst.operands[0].shape.dtype, dtype, values[0])
        if name == "bitcast-convert":
            return r.bitcast_convert(w, inst.operands[0].shape.dtype, dtype, values[0])
        if name == "is-finite":
            return r.is_finite(w, inst.operands[0].shape.dtype, values[0])
        if len(values) == 1:
            return r.unary(w, name, dtype, values[0])
        return r.binary(w, name, dtype, *values)

    # Functions.
    def _flat(self) -> bool:
        """Whether every input is read at the output's linear index (or is a scalar): the
        members are elementwise ops, scalar constants, broadcasts of scalars and reshapes
        (which keep the row-major order), so one flat loop over the elements computes it."""
        root = self.fusion.root
        if self.fusion.kind != "loop":
            return False
        for m in self.fusion.members:
            name = m.op.name
            if m.op.family.value in ("unary", "binary", "elementwise") or name in (
                    "constant", "reshape", "bitcast"):
                continue
            if name == "broadcast" and m.operands[0].shape.rank == 0:
                continue
            return False
        return all(i.shape.rank == 0 or i.shape.num_elements == root.shape.num_elements
                   for i in self.fusion.inputs)

    def render(self, ranged: str | None = None) -> str:
        """The fusion's function; ``ranged`` (``"rows"`` or ``"columns"``): its ranged form
        (see ``render_range``)."""
        fusion, w = self.fusion, self.w
        root = fusion.root
        params = ", ".join([f"ptr {_noalias(fusion, None)}%out"] + [
            f"ptr {_noalias(fusion, j)}%in{j}" for j in range(len(fusion.inputs))])
        name, ranges = fusion.name, None
        if ranged is not None:
            assert fusion.kind == "loop" and root.shape.rank  # range_unit said so
            name = range_name(fusion, ranged)
            ranges = {0 if ranged == "rows" else root.shape.rank - 1: ("%lo", "%hi")}
            params += ", i64 %lo, i64 %hi"
        if fusion.kind == "window":
            return self._render_window(params)
        if fusion.kind == "reduce":
            data = root.operands[0]
            dims = data.shape.dims
        elif self._flat() and ranged != "columns":
            dims = (root.shape.num_elements,) if root.shape.rank else ()
        else:
            dims = root.shape.dims
        index = tuple(f"%i{k}" for k in range(len(dims)))
        if fusion.kind == "reduce":
            reduced = set(root.attrs.dimensions)
            kept = tuple(index[d] for d in range(len(dims)) if d not in reduced)
            target = str(self.linear(kept, root.shape.dims))
            x = self.value(data, index)
            accumulator = F32 if r.accumulator_dtype(root.shape.dtype) == F32.numpy else (
                root.shape.dtype)
            old = r.load(w, accumulator, "%out", target)
            assert fusion.reducer is not None  # a reduce fusion's binary reducer
            new = r.binary(w, fusion.reducer, root.shape.dtype, old, x)
            r.store(w, accumulator, new, "%out", target)
        elif len(dims) == 1 and len(root.shape.dims) != 1:  # flat loop over all elements
            self._flat_body(index[0])
        else:
            value = self.value(root, index)
            r.store(w, root.shape.dtype, value, "%out", str(self.linear(index, dims)))
            tiled = self._tiled()
            return r.loop_function(name, params, dims, w.lines, tiled, TILE,
                                   unroll=tiled is not None or self._unroll(), ranges=ranges)
        return r.loop_function(name, params, dims, w.lines, unroll=self._unroll(),
                               ranges=ranges)

    def _unroll(self) -> bool:
        """Whether LLVM may unroll the loops: in reductions and windows (a loop-carried
        accumulator), in tiled nests (their short inner loops; ``render`` decides) and where
        the fusion's arrays fit in ``UNROLL_MAX_BYTES`` (cached data, so compute-bound); not
        in a loop fusion streaming more than that through memory, where unrolled copies of
        a wide vector body only cost compile time."""
        if self.fusion.kind != "loop":
            return True
        arrays = (self.fusion.root, *self.fusion.inputs)
        return sum(i.shape.num_elements * i.shape.dtype.array_dtype.itemsize
                   for i in arrays) <= UNROLL_MAX_BYTES

    def _read_strides(self) -> set[tuple[int, ...]]:
        """For each place an input is read: its element stride along each output dim (0
        along dims of size 1), found by following the origin and a unit step along each dim
        through the index ops (exact for transposes, slices, reverses and broadcasts; the
        local stride through a reshape)."""
        dims = self.fusion.root.shape.dims
        probes = ((0,) * len(dims),) + tuple(
            tuple(int(n > 1 and j == k) for j in range(len(dims))) for k, n in enumerate(dims))
        strides: set[tuple[int, ...]] = set()
        seen: set[tuple] = set()

        def visit(inst: Instruction, indices: tuple[Index, ...]) -> None:
            if (id(inst), indices) in seen:
                return
            seen.add((id(inst), indices))
            if id(inst) not in self.members:
                offsets = [self.linear(i, inst.shape.dims) for i in indices]
                assert all(isinstance(o, int) for o in offsets)  # integer probes fold
                strides.add(tuple(int(o) - int(offsets[0]) for o in offsets[1:]))
            elif inst.op.name in INDEX_OPS:
                (operand,) = inst.operands
                visit(operand, tuple(self._operand_index(inst, operand, i) for i in indices))
            else:
                for o in inst.operands:
                    visit(o, indices if o.shape.rank else ((),) * len(indices))

        visit(self.fusion.root, probes)
        return strides

    def _tiled(self) -> tuple[int, int] | None:
        """The dims ``(a, b)`` to run in blocks: ``b`` the output's innermost dim (of size
        above 1) and ``a`` another, when some input is read with a stride other than 0 or
        +-1 along ``b`` but +-1 along ``a`` (a transpose, maybe through reshapes); else None.
        """
        big = [k for k, n in enumerate(self.fusion.root.shape.dims) if n > 1]
        if len(big) < 2:
            return None
        b = big[-1]
        for strides in sorted(self._read_strides()):
            if abs(strides[b]) > 1:
                a = next((k for k in big[:-1] if abs(strides[k]) == 1), None)
                if a is not None:
                    return a, b
        return None

    def _render_window(self, params: str) -> str:
        """A reduce-window: loops over the output, then over the window (row-major), each
        tap folded into the output's accumulator (pre-filled with the init) where it lands on
        the input (padding and base dilation skipped), as the reference folds its taps."""
        w, root = self.w, self.fusion.root
        data = root.operands[0]
        out_dims = root.shape.dims
        window = root.attrs.window.dims
        rank = len(out_dims)
        dims = out_dims + tuple(d.size for d in window)
        valid, index = "true", []
        for d, (spec, n) in enumerate(zip(window, data.shape.dims)):
            i, k = f"%i{d}", f"%i{rank + d}"
            u = w.emit(f"mul nsw i64 {i}, {spec.stride}")
            u = w.emit(f"add nsw i64 {u}, {w.emit(f'mul nsw i64 {k}, {spec.rhs_dilation}')}")
            u = w.emit(f"sub nsw i64 {u}, {spec.padding_low}")
            ok = w.emit(f"icmp sge i64 {u}, 0")
            if spec.lhs_dilation > 1:
                remainder = w.emit(f"srem i64 {u}, {spec.lhs_dilation}")
                ok = w.emit(f"and i1 {ok}, {w.emit(f'icmp eq i64 {remainder}, 0')}")
                u = w.emit(f"sdiv i64 {u}, {spec.lhs_dilation}")
            ok = w.emit(f"and i1 {ok}, {w.emit(f'icmp slt i64 {u}, {n}')}")
            valid = ok if valid == "true" else w.emit(f"and i1 {valid}, {ok}")
            index.append(w.emit(f"select i1 {ok}, i64 {u}, i64 0"))
        target = str(self.linear(tuple(f"%i{d}" for d in range(rank)), out_dims))
        x = self.value(data, tuple(index))
        accumulator = F32 if r.accumulator_dtype(root.shape.dtype) == F32.numpy else (
            root.shape.dtype)
        old = r.load(w, accumulator, "%out", target)
        assert self.fusion.reducer is not None  # a window fusion's binary reducer
        new = r.binary(w, self.fusion.reducer, root.shape.dtype, old, x)
        t = r.compute_type(accumulator)
        chosen = w.emit(f"select i1 {valid}, {t} {new}, {t} {old}")
        r.store(w, accumulator, chosen, "%out", target)
        return r.loop_function(self.fusion.name, params, dims, w.lines)

    def _flat_body(self, i: str) -> None:
        """The flat loop: every value at the linear index (inputs read at ``i``)."""
        root = self.fusion.root
        self.flat = i
        value = self.value(root, (i,) * root.shape.rank)
        r.store(self.w, root.shape.dtype, value, "%out", i)


def range_name(fusion: Fusion, axis: str = "rows") -> str:
    """The name of ``fusion``'s ranged function over ``axis`` (``render_range``)."""
    return f"{fusion.name}_{axis}"


def range_unit(fusion: Fusion) -> int | None:
    """The output elements one step of a ranged function's outermost loop covers (1 for a
    flat loop, a row of the output for a loop nest), or None where ``fusion`` has no ranged
    form: not a loop fusion, a scalar, or a nest tiled along dim 0."""
    root = fusion.root
    if fusion.kind != "loop" or root.shape.rank == 0 or root.shape.num_elements == 0:
        return None
    emitter = _FusionEmitter(fusion)
    if emitter._flat():
        return 1
    tiled = emitter._tiled()
    if tiled is not None and 0 in tiled:
        return None
    return root.shape.num_elements // root.shape.dims[0]


def has_column_range(fusion: Fusion) -> bool:
    """Whether ``fusion`` has a ranged form over its last dim (``render_range(...,
    "columns")``): a loop fusion of rank 2 or more whose loop nest is not tiled (a tiled nest
    blocks the last dim)."""
    root = fusion.root
    if fusion.kind != "loop" or root.shape.rank < 2 or root.shape.num_elements == 0:
        return False
    return _FusionEmitter(fusion)._tiled() is None


def reads_at_output_index(fusion: Fusion, input_index: int) -> bool:
    """Whether every read of input ``input_index`` of a loop fusion is at the output's own
    row-major linear index (so output elements ``a .. b-1`` read only its elements ``a ..
    b-1``, and the fusion may run in place on its buffer): true of every full-size input of
    a flat loop; in a loop nest, checked at the origin, the last element and a unit step
    along each dim, through the index ops."""
    root, target = fusion.root, fusion.inputs[input_index]
    size = root.shape.num_elements
    if target.shape.num_elements != size or fusion.kind != "loop" or not size:
        return False
    emitter = _FusionEmitter(fusion)
    if emitter._flat():
        return True
    dims = root.shape.dims
    probes = [(0,) * len(dims), tuple(n - 1 for n in dims)] + [
        tuple(int(j == k) for j in range(len(dims))) for k, n in enumerate(dims) if n > 1]
    found: list[bool] = []
    seen: set[tuple] = set()

    def visit(inst: Instruction, index: Index, at: int) -> None:
        if (id(inst), index, at) in seen:
            return
        seen.add((id(inst), index, at))
        if inst is target and id(inst) not in emitter.members:
            found.append(emitter.linear(index, inst.shape.dims) == at)
        elif id(inst) in emitter.members and inst.op.name in INDEX_OPS:
            (operand,) = inst.operands
            visit(operand, emitter._operand_index(inst, operand, index), at)
        elif id(inst) in emitter.members:
            for o in inst.operands:
                visit(o, index if o.shape.rank else (), at)

    for probe in probes:
        visit(root, probe, int(emitter.linear(probe, dims)))
    return bool(found) and all(found)


def render_range(fusion: Fusion, axis: str = "rows") -> str:
    """``@<name>_rows(out, in0, ..., i64 lo, i64 hi)``: ``fusion`` on the steps ``lo ..
    hi-1`` of its outermost loop only (``range_unit`` elements each), every element computed
    as the whole function computes it; ``axis="columns"``: ``@<name>_columns``, on columns
    ``lo .. hi-1`` of its last dim, every row (``has_column_range``). A fusion written over
    an input (``Fusion.inplace``) reads it through ``out`` in these forms too."""
    return _FusionEmitter(fusion).render(ranged=axis)


def _noalias(fusion: Fusion, j: int | None) -> str:
    """The ``noalias`` attribute of the output (``j`` None) or of input ``j``: on every
    pointer but the output and the input it is written over (``Fusion.inplace``), which the
    caller passes the same buffer for (the kernel reads that input through ``%out``)."""
    return "" if fusion.inplace is not None and j in (None, fusion.inplace) else "noalias "


def render_module(fusions: list[Fusion], data_offset: int | None = None,
                  ranges: Mapping[str, tuple[str, ...]] | None = None) -> str:
    """The LLVM IR module of every fusion, one function each (named ``fusion.name``), and,
    when ``data_offset`` is given, each one's stacked entry (``render_stacked_entry``: with
    ``n = 1`` it is the entry of a single call too).

    Fusions whose functions are identical but for their names (the same update of several
    weights, the same norm forward and backward) are compiled once: a repeat's names are
    aliases of the first one's functions. ``ranges`` maps the name of a fusion run in ranges
    (a dot's epilogue, a fusion split over threads) to the axes of its ``render_range``
    forms: those are rendered too, and a fusion with a rows form is run whole as its rows
    form over every row (its loop body compiled once): its entry calls the rows form, and
    its own function (``fusion.name``) is rendered only without entries, as a call of it.
    Every function is a few milliseconds of a cold compile, however thin.

    >>> from xla_spmd.ir import parse_hlo
    >>> from xla_spmd.backends.cpu.fusion import fuse
    >>> m = parse_hlo('''HloModule m
    ... ENTRY %e (x: f32[4], y: f32[4]) -> (f32[4], f32[4]) {
    ...   %x = f32[4] parameter(0)
    ...   %y = f32[4] parameter(1)
    ...   %a = f32[4] negate(%x)
    ...   %b = f32[4] negate(%y)
    ...   ROOT %t = (f32[4], f32[4]) tuple(%a, %b)
    ... }''')
    >>> fusions, _ = fuse(m.entry)
    >>> text = render_module(fusions)
    >>> text.count("define void"), text.count(" = alias ")
    (1, 1)
    >>> text = render_module(fusions, 16, {fusions[0].name: ("rows",)})
    >>> [line.split("(")[0][12:] for line in text.splitlines() if line.startswith("define")]
    ['@fusion_1_a_rows', '@fusion_1_a_stacked', '@fusion_0_b', '@fusion_0_b_stacked']
    """
    declarations: set[str] = set()
    functions = []
    first: dict[str, Fusion] = {}  # a fusion's functions, named "@F", -> the first such
    for fusion in fusions:
        axes = (ranges or {}).get(fusion.name, ())
        whole = data_offset is None or "rows" not in axes  # fusion.name is defined
        if fusion.kind == "rng":
            texts = [random.render(fusion.name, fusion.root)]
        else:
            texts = []
            if "rows" in axes:  # the whole is its rows form over every row
                if data_offset is None:
                    texts.append(_whole_by_rows(fusion))
            else:
                emitter = _FusionEmitter(fusion)
                texts.append(emitter.render())
                declarations |= emitter.w.declarations
            for axis in axes:
                ranged = _FusionEmitter(fusion)
                texts.append(ranged.render(ranged=axis))
                declarations |= ranged.w.declarations
        if data_offset is not None:
            texts.append(render_stacked_entry(fusion, data_offset, by_rows="rows" in axes))
        key = "\n".join(texts).replace(f"@{fusion.name}(", "@F(").replace(
            f"@{fusion.name}_", "@F_")
        original = first.setdefault(key, fusion)
        if original is fusion:
            functions += texts
        else:
            functions.append(_aliases(fusion, original, data_offset is not None, axes, whole))
    return r.number_loops("\n".join(sorted(declarations)) + "\n\n" + "\n\n".join(functions)
                          + "\n")


def _rows_call(fusion: Fusion, pointers: list[str]) -> str:
    """The call of ``fusion``'s rows form over all of its rows, on ``pointers``."""
    unit = range_unit(fusion)
    assert unit is not None, f"{fusion.name} has no ranged form"
    steps = fusion.root.shape.num_elements // unit
    arguments = ", ".join(f"ptr {p}" for p in pointers)
    return f"  call void @{range_name(fusion)}({arguments}, i64 0, i64 {steps})"


def _whole_by_rows(fusion: Fusion) -> str:
    """``fusion``'s function as a call of its rows form over every step (one loop body
    compiled, not two: LLVM's time is most of a cold compile)."""
    arity = len(fusion.inputs)
    params = ", ".join([f"ptr {_noalias(fusion, None)}%out"] + [
        f"ptr {_noalias(fusion, j)}%in{j}" for j in range(arity)])
    pointers = ["%out"] + [f"%in{j}" for j in range(arity)]
    return "\n".join([f"define void @{fusion.name}({params}) nounwind noinline {{", "entry:",
                      _rows_call(fusion, pointers), "  ret void", "}"])


def _aliases(fusion: Fusion, original: Fusion, entries: bool, axes: tuple[str, ...] = (),
             whole: bool = True) -> str:
    """``fusion``'s function names (``whole``: its own; its ranged forms' over ``axes``;
    with ``entries``, its stacked entry's) as aliases of ``original``'s, whose functions are
    the same."""
    pointers = ", ".join(["ptr"] * (1 + len(fusion.inputs)))
    names = [(fusion.name, original.name, pointers)] if whole else []
    names += [(range_name(fusion, axis), range_name(original, axis), f"{pointers}, i64, i64")
              for axis in axes]
    if entries:
        names.append((stacked_entry_name(fusion), stacked_entry_name(original),
                      f"i64, {pointers}"))
    return "\n".join(f"@{alias} = alias void ({params}), ptr @{target}"
                     for alias, target, params in names)


def stacked_entry_name(fusion: Fusion) -> str:
    """The name of ``fusion``'s stacked entry."""
    return f"{fusion.name}_stacked"


def _buffer_bytes(inst: Instruction, accumulate: bool = False) -> int:
    """Bytes of one device's buffer of ``inst`` (its accumulator's, with ``accumulate``; the
    bits, of an rng-bit-generator)."""
    shape = inst.shape.elements[1] if inst.op.name == "rng-bit-generator" else inst.shape
    dtype = r.accumulator_dtype(shape.dtype) if accumulate else shape.dtype.array_dtype
    return shape.num_elements * dtype.itemsize


def render_stacked_entry(fusion: Fusion, data_offset: int, by_rows: bool = False) -> str:
    """``@<name>_stacked(i64 n, out, in0, ...)``: the fusion run on ``n`` devices' values at
    once, each argument the address of a numpy array object (``id(array)``) holding ``n``
    C-contiguous device buffers one after another (a ``(n, *shape)`` array), its data
    pointer read at byte ``data_offset`` of the object (``PyArrayObject.data``): device
    ``d``'s call gets each buffer at ``d`` times its byte size, so every device computes
    exactly what its own call would. With ``n = 1``, one call on arrays of the fusion's own
    shapes (taking ``ndarray.ctypes.data`` in Python costs more than a small kernel). It
    calls ``fusion.name``, or (``by_rows``) the rows form over every row."""
    names = ["%out"] + [f"%in{j}" for j in range(len(fusion.inputs))]
    sizes = [_buffer_bytes(fusion.root, fusion.kind in ("reduce", "window"))] + [
        _buffer_bytes(inst) for inst in fusion.inputs]
    lines = [f"define void @{stacked_entry_name(fusion)}(i64 %n, "
             + ", ".join(f"ptr {n}" for n in names) + f") {ENTRY_ATTRIBUTES} {{", "entry:"]
    for k, name in enumerate(names):
        lines += [f"  %field{k} = getelementptr i8, ptr {name}, i64 {data_offset}",
                  f"  %data{k} = load ptr, ptr %field{k}"]
    lines += ["  %none = icmp eq i64 %n, 0", "  br i1 %none, label %exit, label %loop",
              "loop:", "  %d = phi i64 [0, %entry], [%d.next, %loop]"]
    for k, size in enumerate(sizes):
        lines += [f"  %offset{k} = mul nuw nsw i64 %d, {size}",
                  f"  %at{k} = getelementptr i8, ptr %data{k}, i64 %offset{k}"]
    pointers = [f"%at{k}" for k in range(len(names))]
    arguments = ", ".join(f"ptr {p}" for p in pointers)
    lines += [_rows_call(fusion, pointers) if by_rows else
              f"  call void @{fusion.name}({arguments})",
              "  %d.next = add nuw nsw i64 %d, 1",
              "  %done = icmp eq i64 %d.next, %n",
              "  br i1 %done, label %exit, label %loop",
              "exit:", "  ret void", "}"]
    return "\n".join(lines)
