"""XLA-style fusion of one computation: loop fusion and reduction input fusion.

A *fusion* is a set of instructions computed by one generated kernel: its root (the one value
it writes), the members it computes on the way, and its inputs (the operands it reads). Two
kinds:

* **loop**: the root is an elementwise op (unary, binary, compare, select, clamp, convert,
  bitcast-convert of one width); members are elementwise ops and the producers XLA fuses
  into loops: broadcast, iota, scalar constants, and the index-only shape ops reshape,
  bitcast (row-major), transpose, slice and reverse.
* **reduce**: the root is a ``reduce`` of one array with a plain add/multiply/max/min/and/or
  reducer (not float add/multiply: numpy's pairwise kernel runs those, bit-identical to the
  reference); its data operand's producers are fused as in a loop fusion (input fusion).
* **window** (only with ``windows=True``: the CPU backend): the root is a ``reduce-window`` of
  one array with such a reducer (float sums too: the reference folds each window in order), no
  window reversal and no empty window; it reads its operand and init as inputs.
* **rng** (with ``windows=True`` too): an ``rng-bit-generator`` (``random.render``); its
  result is the tuple (new state, bits), the state computed on the host.

Invariants: a member other than the root has every user inside its fusion, except cheap
producers (scalar constants, iota, broadcast), which are duplicated into each consumer as XLA
does; the computation's root is never an inner member; every dtype is one the renderer
handles (``renderer.SUPPORTED``). Instructions outside every fusion run as single kernels.

Example: ``y = exp(x * broadcast(c)) ; s = reduce(y, add)`` where ``y`` has no other user
gives one reduce fusion ``{broadcast, multiply, exp, reduce}`` with inputs ``x, c, init``.
"""

from __future__ import annotations

from dataclasses import dataclass

from xla_spmd.backends.cpu.random import can_generate
from xla_spmd.backends.cpu.renderer import SUPPORTED, supports_instruction
from xla_spmd.backends.reference.reduction import binary_reducer
from xla_spmd.ir import ArrayShape, Computation, Family, Instruction

_ELEMENTWISE = (Family.UNARY, Family.BINARY, Family.ELEMENTWISE)
_INDEX_OPS = ("reshape", "bitcast", "transpose", "slice", "reverse", "broadcast")
_CHEAP = ("constant", "iota", "broadcast")
REDUCERS = ("add", "multiply", "maximum", "minimum", "and", "or")


@dataclass(frozen=True, slots=True)
class Fusion:
    """One generated kernel: ``kind`` is ``"loop"`` or ``"reduce"``; ``members`` are in
    topological order and end with ``root``; ``inputs`` are the values it reads. ``inplace``:
    the position of the input whose buffer the output is written into (``program.plan``
    with ``inplace=True``); the kernel reads that input through its output pointer."""

    name: str
    kind: str
    root: Instruction
    members: tuple[Instruction, ...]
    inputs: tuple[Instruction, ...]
    inplace: int | None = None

    def aligned_inputs(self) -> tuple[int, ...]:
        """Positions of the inputs of the output's shape and dtype that a loop fusion reads
        only at the output's own index: every path from the root down to the input goes
        through elementwise members of the output's dims (no broadcast, reshape, transpose,
        slice or reverse), so writing the output over the input changes no element before
        it is read. The candidates for ``inplace``.

        >>> from xla_spmd.ir import parse_hlo
        >>> m = parse_hlo('''HloModule m
        ... ENTRY %e (x: f32[4], y: f32[4]) -> f32[4] {
        ...   %x = f32[4] parameter(0)
        ...   %y = f32[4] parameter(1)
        ...   %r = f32[4] reverse(%y), dimensions={0}
        ...   ROOT %z = f32[4] add(%x, %r)
        ... }''')
        >>> fusions, _ = fuse(m.entry)
        >>> [fusions[0].inputs[j].name for j in fusions[0].aligned_inputs()]  # y is reversed
        ['x']
        """
        root = self.root
        if self.kind != "loop" or root.op.family not in _ELEMENTWISE:
            return ()
        users: dict[int, list[Instruction]] = {}
        for member in self.members:
            for operand in member.operands:
                users.setdefault(id(operand), []).append(member)
        aligned = {id(root)}

        def read_aligned(value: Instruction) -> bool:
            return all(id(u) in aligned and u.op.family in _ELEMENTWISE
                       for u in users.get(id(value), ()))
        # Users come after producers: walk back from the root.
        for member in reversed(self.members[:-1]):
            if member.shape.dims == root.shape.dims and read_aligned(member):
                aligned.add(id(member))
        members = {id(m) for m in self.members}
        return tuple(j for j, value in enumerate(self.inputs)
                     if id(value) not in members and value.shape == root.shape
                     and read_aligned(value))

    @property
    def reducer(self) -> str | None:
        if self.kind not in ("reduce", "window"):
            return None
        return binary_reducer(self.root.attrs.to_apply)


def _array(inst: Instruction) -> bool:
    return isinstance(inst.shape, ArrayShape) and inst.shape.dtype in SUPPORTED


def _default_layout(shape: ArrayShape) -> bool:
    return shape.layout is None or tuple(shape.layout) == tuple(range(shape.rank - 1, -1, -1))


def can_be_window(inst: Instruction) -> bool:
    """Whether ``inst`` is a reduce-window a window kernel computes."""
    if inst.op.name != "reduce-window" or len(inst.operands) != 2:
        return False
    if not _array(inst) or any(not _array(o) for o in inst.operands):
        return False
    dims = inst.attrs.window.dims
    return (binary_reducer(inst.attrs.to_apply) in REDUCERS
            and all(not d.reversal and d.size > 0 for d in dims)
            and len(dims) == inst.shape.rank)


def can_be_root(inst: Instruction, libm: bool = False) -> bool:
    """Whether ``inst`` may be the root of a generated kernel (``libm``: transcendentals
    too, see ``renderer.TRANSCENDENTAL``)."""
    if not _array(inst) or any(not _array(o) for o in inst.operands):
        return False
    if inst.op.family in _ELEMENTWISE:
        return supports_instruction(inst, libm)
    if inst.op.name == "reduce" and len(inst.operands) == 2:
        reducer = binary_reducer(inst.attrs.to_apply)
        # Float sums and products run in numpy's (pairwise) order, as the reference's do.
        if inst.shape.dtype.is_float and reducer in ("add", "multiply"):
            return False
        return reducer in REDUCERS
    return False


def can_be_producer(inst: Instruction, libm: bool = False) -> bool:
    """Whether ``inst`` may be computed inside a consumer's kernel."""
    if not _array(inst) or any(not _array(o) for o in inst.operands):
        return False
    name = inst.op.name
    if name == "constant":
        return inst.shape.rank == 0
    if name == "iota":
        return True
    if name in _INDEX_OPS:
        if name == "bitcast":
            shape, operand = inst.shape, inst.operands[0].shape
            assert isinstance(shape, ArrayShape) and isinstance(operand, ArrayShape)  # _array
            return (_default_layout(shape) and _default_layout(operand)
                    and inst.shape.num_elements == inst.operands[0].shape.num_elements)
        return True
    return inst.op.family in _ELEMENTWISE and supports_instruction(inst, libm)


def fuse(computation: Computation, prefix: str = "", libm: bool = False,
         windows: bool = False, keep_out: frozenset[int] = frozenset()
         ) -> tuple[list[Fusion], dict[int, Fusion]]:
    """The fusions of ``computation`` and, by id of each root, its fusion (kernel names start
    with ``prefix``; ``libm``: fuse transcendentals too; ``windows``: reduce-windows become
    window kernels; ``keep_out``: ids of instructions never fused into a consumer, such as
    the transposes a dot kernel computes). Instructions no fusion computes for its
    consumers stay single kernels."""
    users = computation.users()
    owner: dict[int, Fusion] = {}      # id(member) -> fusion that owns it exclusively
    fusions: list[Fusion] = []
    root = computation.root
    for inst in reversed(computation.instructions):
        if id(inst) in owner:
            continue
        single = None if not windows else ("window" if can_be_window(inst) else
                                           "rng" if can_generate(inst) else None)
        if single is not None:
            fusions.append(Fusion(f"{prefix}fusion_{len(fusions)}_{_clean(inst.name)}",
                                  single, inst, (inst,), tuple(inst.operands)))
            owner[id(inst)] = fusions[-1]
            continue
        if not can_be_root(inst, libm):
            continue
        banned: set[int] = set()
        excluded = {id(i) for i in computation.instructions
                    if not can_be_producer(i, libm)} | keep_out
        while True:
            members = _grow(inst, users, owner, banned | excluded, root)
            shared = _shared_members(inst, members, users, computation)
            if not shared:
                break
            banned |= shared
        order = [i for i in computation.instructions if id(i) in members]
        inputs: dict[int, Instruction] = {}
        for member in order:
            for k, operand in enumerate(member.operands):
                init = member is inst and inst.op.name == "reduce" and k == 1
                if id(operand) not in members or init:  # a reduce reads its init as input
                    inputs.setdefault(id(operand), operand)
        kind = "reduce" if inst.op.name == "reduce" else "loop"
        fusion = Fusion(f"{prefix}fusion_{len(fusions)}_{_clean(inst.name)}", kind, inst,
                        tuple(order), tuple(inputs.values()))
        fusions.append(fusion)
        for member in order:
            if member is inst or member.op.name not in _CHEAP:
                owner[id(member)] = fusion
    fusions.reverse()
    return fusions, {id(f.root): f for f in fusions}


def _grow(inst: Instruction, users: dict, owner: dict, banned: set, root: Instruction) -> dict:
    """The members of the fusion rooted at ``inst``: producers absorbed while every user is
    inside (cheap ones always), never a ``banned`` one."""
    members = {id(inst): inst}
    frontier = list(inst.operands[:1] if inst.op.name == "reduce" else inst.operands)
    changed = True
    while changed:
        changed = False
        for operand in list(frontier):
            if (id(operand) in members or id(operand) in owner or id(operand) in banned
                    or operand is root):
                continue
            inside = all(id(u) in members for u in users[operand])
            if not inside and operand.op.name not in _CHEAP:
                continue
            members[id(operand)] = operand
            frontier.extend(operand.operands)
            changed = True
    return members


def _shared_members(inst: Instruction, members: dict, users: dict,
                    computation: Computation) -> set[int]:
    """Non-cheap members some of whose users reach them through a duplicated (cheap) member
    that is needed outside: they must stay outside the fusion."""
    exclusive = {id(inst)}
    shared = set()
    for member in reversed(computation.instructions):
        if id(member) not in members or member is inst:
            continue
        if all(id(u) in exclusive for u in users[member]):
            exclusive.add(id(member))
        elif member.op.name not in _CHEAP:
            shared.add(id(member))
    return shared


def _clean(name: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)
