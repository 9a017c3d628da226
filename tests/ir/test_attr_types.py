"""`Attrs` (the static type of `Instruction.attrs`) names every attribute of the op table."""

import typing

from xla_spmd.ir import attr_types
from xla_spmd.ir.attr_types import KIND_TYPES, Attrs
from xla_spmd.ir.ops import OPS, AttrKind

# An attribute read as a different kind on some op: its annotation joins the kinds.
_JOINED = {"algorithm": "RngAlgorithm | str | None"}


def _annotations() -> dict[str, str]:
    return {name: text for name, text in Attrs.__annotations__.items()
            if not name.startswith("__")}


def test_every_attribute_of_the_op_table_is_in_attrs_and_no_other():
    names = {spec.name.replace("-", "_") for op in OPS.values() for spec in op.attrs}
    assert set(_annotations()) == names


def test_each_annotation_is_its_kinds_type():
    specs: dict[str, list] = {}
    for op in OPS.values():
        for spec in op.attrs:
            specs.setdefault(spec.name.replace("-", "_"), []).append(spec)
    for name, text in _annotations().items():
        if name in _JOINED:
            assert text == _JOINED[name]
            continue
        kinds = {spec.kind for spec in specs[name]}
        assert len(kinds) == 1, name
        expected = KIND_TYPES[kinds.pop()]
        # Optional only when no opcode requires it and its default is None everywhere.
        if all(spec.default is None for spec in specs[name]):
            expected += " | None"
        assert text == expected, name


def test_every_kind_has_a_type_that_resolves():
    assert set(KIND_TYPES) == set(AttrKind)
    hints = typing.get_type_hints(Attrs, vars(attr_types) | _namespace())
    assert hints["dimensions"] == tuple[int, ...]


def _namespace() -> dict:
    from xla_spmd.ir import attributes, module
    return vars(attributes) | {"Computation": module.Computation}


def test_a_tuple_shape_has_no_array_fields():
    import pytest

    from xla_spmd.ir import F32, ArrayShape, TupleShape

    shape = TupleShape((ArrayShape(F32, (2,)), ArrayShape(F32, ())))
    for field in ("dims", "dtype", "rank", "num_elements", "layout"):
        with pytest.raises(AttributeError, match=f"tuple shape .* has no '{field}'"):
            getattr(shape, field)
        assert getattr(shape, field, None) is None
    assert not hasattr(shape, "dims")


def test_literal_array_is_the_value_of_an_array_literal_only():
    import numpy as np
    import pytest

    from xla_spmd.errors import VerifyError
    from xla_spmd.ir.attributes import Literal

    value = np.arange(3, dtype=np.int32)
    assert Literal(value).array is value
    with pytest.raises(VerifyError, match="tuple literal has no array value"):
        _ = Literal((Literal(value),)).array
