"""Shardings on function arguments and results: ``sdy.sharding`` as is, GSPMD
``mhlo.sharding`` strings converted to axis-based shardings where an exact form exists (else
kept verbatim as a frontend attribute), result shardings as ``FuncResultSharding`` calls."""

from __future__ import annotations

from xla_spmd.errors import ParseError, ShardingError
from xla_spmd.ir import ArrayShape, TupleShape
from xla_spmd.ir.custom_calls import FUNC_RESULT_SHARDING
from xla_spmd.ir.hlo_sharding import HloSharding
from xla_spmd.sharding import finest_mesh, hlo_to_axes
from xla_spmd.stablehlo.importer import RESULT_INFO, Scope


def _gspmd_texts(tree) -> list[str]:
    texts = []

    def visit(block):
        for op in block.ops:
            if isinstance(op.attrs.get("mhlo.sharding"), str):
                texts.append(op.attrs["mhlo.sharding"])
            for region in op.regions:
                visit(region)

    for function in tree.functions:
        for _, _, attrs in function.args:
            texts.append(attrs.get("mhlo.sharding"))
        texts.extend(attrs.get("mhlo.sharding") for attrs in function.result_attrs)
        visit(function.body)
    return [t for t in texts if isinstance(t, str)]


def common_gspmd_mesh(tree):
    """One mesh for every GSPMD sharding of a module without ``sdy.mesh``, or None."""
    parsed = []
    for text in _gspmd_texts(tree):
        try:
            parsed.append(HloSharding.parse(text))
        except ParseError:  # not a sharding we read: it is kept verbatim later
            continue
    return finest_mesh(parsed)


def _to_axes(importer, hlo, rank):
    mesh = getattr(importer, "gspmd_mesh", None)
    if mesh is not None:
        try:
            return hlo_to_axes(hlo, rank, mesh=mesh, mesh_name="mesh")
        except Exception:  # fall back to the sharding's own mesh, printed inline
            pass
    return hlo_to_axes(hlo, rank, mesh_name=None)


def gspmd_sharding(importer, text: str, shape):
    """A GSPMD ``mhlo.sharding`` string as (TensorSharding or tuple or None, frontend attrs).

    Shardings with an axis-based form become TensorShardings over an inline mesh; the others
    (manual, unknown) are kept as the ``mhlo.sharding`` frontend attribute."""
    try:
        hlo = HloSharding.parse(text)
        if hlo.is_tuple:
            leaves = shape.elements if isinstance(shape, TupleShape) else (shape,)
            converted = []
            for element, leaf in zip(hlo.elements, leaves):
                imported = _to_axes(importer, element, leaf.rank)
                if imported.manual_axes:
                    raise ShardingError("manual")
                converted.append(imported.sharding)
            return tuple(converted), ()
        rank = shape.rank if isinstance(shape, ArrayShape) else None
        imported = _to_axes(importer, hlo, rank)
        if imported.manual_axes or imported.fully_manual or imported.explicit_devices:
            raise ShardingError("manual")
        return imported.sharding, ()
    except Exception:  # keep anything without an exact axis-based form verbatim
        return None, (("mhlo.sharding", text),)


def arg_sharding(importer, attrs: dict, shape):
    sharding = attrs.get("sdy.sharding")
    frontend = []
    if sharding is None and "mhlo.sharding" in attrs:
        sharding, frontend = gspmd_sharding(importer, attrs["mhlo.sharding"], shape)
        frontend = list(frontend)
    for key, value in attrs.items():
        if key == "mhlo.frontend_attributes" and isinstance(value, dict):
            frontend.extend((k, str(v)) for k, v in value.items())
    return sharding, tuple(frontend)


def finish_results(importer, scope: Scope, node, results):
    """The root of a function: results, with result shardings as FuncResultSharding calls."""
    values = []
    extras = []
    for i, value in enumerate(results):
        attrs = node.result_attrs[i] if i < len(node.result_attrs) else {}
        sharding, frontend = arg_sharding(importer, attrs, value.shape)
        if sharding is not None or frontend:
            value = scope.emit("custom-call", (value,), value.shape, sharding=sharding,
                               frontend=frontend,
                               custom_call_target=FUNC_RESULT_SHARDING,
                               custom_call_has_side_effect=True)
        values.append(value)
    root = values[0] if len(values) == 1 else scope.emit("tuple", values)
    infos = tuple((f"{RESULT_INFO}.{i}", str(attrs["jax.result_info"]))
                  for i, attrs in enumerate(node.result_attrs[:len(results)])
                  if "jax.result_info" in attrs)
    if infos:
        root = _add_frontend(scope, root, infos)
    return root, extras


def _add_frontend(scope: Scope, inst, pairs):
    """`inst` with frontend attributes `pairs` added, replacing it in `scope` and in the
    operands of every instruction that uses it (directly or through replaced users)."""
    new = inst.replace(frontend_attributes=tuple(inst.frontend_attributes) + tuple(pairs))
    mapping = {id(inst): new}
    for index, current in enumerate(scope.instructions):
        if current is inst:
            scope.instructions[index] = new
        elif any(id(o) in mapping for o in current.operands):
            replaced = current.replace(operands=tuple(mapping.get(id(o), o)
                                                      for o in current.operands))
            mapping[id(current)] = replaced
            scope.instructions[index] = replaced
    return new
