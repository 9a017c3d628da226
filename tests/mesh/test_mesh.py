"""Mesh: construction, errors, coordinates, sub-axes, device groups, iota forms, text."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xla_spmd.errors import ParseError, ShardingError
from xla_spmd.mesh import (
    AxisRef,
    DeviceGroups,
    IotaForm,
    Mesh,
    find_iota,
    make_mesh,
    parse_mesh,
    parse_mesh_decl,
    print_mesh,
    print_mesh_decl,
)


def test_make_mesh_and_repr():
    mesh = make_mesh({"data": 2, "model": 4})
    assert repr(mesh) == "Mesh('data': 2, 'model': 4)"
    assert mesh.shape == {"data": 2, "model": 4}
    assert mesh.size == 8 and mesh.is_iota
    assert mesh.devices.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert hash(mesh) == hash(make_mesh({"data": 2, "model": 4}))
    assert mesh == make_mesh([("data", 2), ("model", 4)])
    assert mesh != make_mesh({"model": 4, "data": 2})


def test_device_ids_and_coordinates():
    mesh = make_mesh({"x": 4}, device_ids=[3, 2, 1, 0])
    assert mesh.device_ids == (3, 2, 1, 0)
    assert [mesh.device_coords(d) for d in range(4)] == [(3,), (2,), (1,), (0,)]
    assert make_mesh({"x": 2}, device_ids=[0, 1]).device_ids is None  # iota is normalized
    mesh = make_mesh({"a": 2, "b": 3}, device_ids=[5, 4, 3, 2, 1, 0])
    for coords in itertools.product(range(2), range(3)):
        assert mesh.device_coords(mesh.device_at(coords)) == coords
    assert "Mesh('a': 2, 'b': 3; device_ids=[5, 4, 3, 2, 1, 0])" == repr(mesh)


@pytest.mark.parametrize("build, message", [
    (lambda: make_mesh({"x": 2, "y": 0}), "axis 'y' must have a positive integer size"),
    (lambda: make_mesh({"x": -1}), "positive"),
    (lambda: Mesh(("x", "x"), (2, 2)), "duplicate mesh axis name 'x'"),
    (lambda: make_mesh({"x": 4}, device_ids=[0, 1, 2]), "has 4 devices but device_ids lists 3"),
    (lambda: make_mesh({"x": 4}, device_ids=[0, 1, 1, 2]), "repeat device(s) [1]"),
    (lambda: make_mesh({"x": 2}, device_ids=[0, 5]), "permutation of 0..1"),
    (lambda: make_mesh({"": 2}), "non-empty string"),
    (lambda: make_mesh({"x": 2}).axis_index("z"), "unknown mesh axis 'z'"),
    (lambda: make_mesh({"x": 2}).device_coords(7), "device 7 is not in mesh"),
    (lambda: make_mesh({"x": 2}).device_at((2,)), "outside mesh"),
])
def test_mesh_errors(build, message):
    with pytest.raises(ShardingError) as error:
        build()
    assert message in str(error.value)


def test_maximal_and_empty_mesh():
    assert make_mesh({}).size == 1 and not make_mesh({}).is_maximal
    maximal = Mesh((), (), device_ids=(3,))
    assert maximal.is_maximal and maximal.all_device_ids == (3,)
    assert print_mesh(maximal) == "<[], device_ids=[3]>"
    assert print_mesh(make_mesh({})) == "<[]>"


def test_axis_ref_printing_and_overlap():
    assert str(AxisRef("x")) == '"x"' and str(AxisRef("x", (2, 4))) == '"x":(2)4'
    assert AxisRef("x").overlaps(AxisRef("x", (2, 2)))
    assert not AxisRef("x").overlaps(AxisRef("y"))
    assert AxisRef("x", (1, 4)).overlaps(AxisRef("x", (2, 2)))
    assert not AxisRef("x", (1, 2)).overlaps(AxisRef("x", (2, 3)))
    assert AxisRef("x", (1, 2)).overlaps(AxisRef("x", (3, 2)))  # incompatible factorizations
    with pytest.raises(ShardingError, match="does not divide the size 4"):
        make_mesh({"x": 4}).axis_size(AxisRef("x", (2, 3)))
    with pytest.raises(ShardingError, match="spans the whole axis"):
        make_mesh({"x": 4}).axis_size(AxisRef("x", (1, 4)))
    with pytest.raises(ShardingError, match="size >= 2"):
        AxisRef("x", (1, 1))


def test_sub_axis_coordinates():
    mesh = make_mesh({"x": 8})
    # x:(1)2 is the major bit, x:(2)2 the middle, x:(4)2 the minor.
    assert [mesh.axis_coord(d, AxisRef("x", (1, 2))) for d in range(8)] == [0] * 4 + [1] * 4
    assert [mesh.axis_coord(d, AxisRef("x", (2, 2))) for d in range(8)] == [0, 0, 1, 1] * 2
    assert [mesh.axis_coord(d, AxisRef("x", (4, 2))) for d in range(8)] == [0, 1] * 4


def test_device_groups_examples():
    mesh = make_mesh({"x": 2, "y": 2})
    assert mesh.device_groups(["y"]).explicit_text() == "{{0,1},{2,3}}"
    assert mesh.device_groups(["y"]).iota_text() == "[2,2]<=[4]"
    assert mesh.device_groups(["x"]).iota_text() == "[2,2]<=[2,2]T(1,0)"
    assert mesh.device_groups(["y", "x"]).explicit_text() == "{{0,2,1,3}}"
    assert make_mesh({"a": 2, "b": 4}).device_groups(["b"]).iota_text() == "[2,4]<=[8]"
    groups = make_mesh({"a": 4, "b": 8}).device_groups(["a"])
    assert groups.iota_text() == "[8,4]<=[4,8]T(1,0)"
    assert DeviceGroups(((0, 3), (1, 2))).iota_text() is None
    assert DeviceGroups(((0, 3), (1, 2))).text() == "{{0,3},{1,2}}"
    with pytest.raises(ShardingError, match="overlap"):
        mesh.device_groups(["x", "x"])


def _reference_groups(mesh, refs):
    """Brute force: group devices by their coordinates outside ``refs``."""
    def key(device, inside):
        values = [mesh.axis_coord(device, ref) for ref in refs]
        outside = []
        for name in mesh.axis_names:
            # Coordinates of the whole axis that the refs do not cover identify the group.
            mine = [r for r in refs if r.name == name]
            coord = mesh.axis_coord(device, name)
            covered = sum(mesh.axis_coord(device, r) * (mesh.shape[name] // r.next_pre_size(
                mesh.shape[name])) for r in mine)
            outside.append(coord - covered)
        return tuple(values) if inside else tuple(outside)
    table = {}
    for device in mesh.all_device_ids:
        table.setdefault(key(device, False), []).append(device)
    return [sorted(group, key=lambda d: key(d, True)) for _, group in sorted(table.items())]


@st.composite
def mesh_and_refs(draw):
    sizes = draw(st.lists(st.sampled_from([1, 2, 3, 4, 6, 8]), min_size=1, max_size=3))
    names = [f"a{i}" for i in range(len(sizes))]
    count = int(np.prod(sizes))
    permuted = draw(st.booleans())
    ids = draw(st.permutations(range(count))) if permuted else None
    mesh = make_mesh(dict(zip(names, sizes, strict=True)), device_ids=ids)
    refs = []
    for name, size in zip(names, sizes, strict=True):
        digits = [size] if size in (1, 2, 3) else draw(st.sampled_from(
            [[size], [2, size // 2], [size // 2, 2]]))
        pre = 1
        for digit in digits:
            if draw(st.booleans()) and digit > 1:
                refs.append(AxisRef(name) if digit == size else AxisRef(name, (pre, digit)))
            pre *= digit
    return mesh, draw(st.permutations(refs))


@settings(max_examples=60, deadline=None)
@given(mesh_and_refs())
def test_device_groups_match_brute_force(case):
    mesh, refs = case
    groups = mesh.device_groups(refs)
    assert [list(g) for g in groups] == _reference_groups(mesh, refs)
    form = groups.iota()
    if mesh.is_iota:
        assert form is not None
    if form is not None:
        assert form.to_array().tolist() == [list(g) for g in groups]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data())
def test_find_iota_inverts_iota(reshape, data):
    perm = data.draw(st.permutations(range(len(reshape))))
    size = int(np.prod(reshape))
    form = IotaForm((size,), tuple(reshape), tuple(perm))
    found = find_iota(form.to_array(), (size,))
    assert found == form  # canonical forms are unique
    assert str(found) == str(form)


def test_iota_reference_examples():
    assert IotaForm((4, 4, 1), (4, 2, 2), (1, 0, 2)).to_array().ravel().tolist() == [
        0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15]
    assert str(IotaForm((4, 8), (2, 4, 4), (2, 0, 1))) == "[4,8]<=[8,4]T(1,0)"
    assert find_iota([0, 2, 1, 3, 4], (5,)) is None


@pytest.mark.parametrize("text", [
    '<["data"=2, "model"=4]>', '<["x"=4], device_ids=[3, 2, 1, 0]>', "<[]>",
    "<[], device_ids=[3]>",
])
def test_mesh_text_round_trip(text):
    assert print_mesh(parse_mesh(text)) == text
    assert parse_mesh(text.replace(", ", ",")) == parse_mesh(text)


def test_mesh_decl_and_errors():
    assert parse_mesh_decl('sdy.mesh @m = <["x"=2]>') == ("m", make_mesh({"x": 2}))
    assert print_mesh_decl("m", make_mesh({"x": 2})) == 'sdy.mesh @m = <["x"=2]>'
    with pytest.raises(ParseError, match="duplicate mesh axis name 'x'"):
        parse_mesh('<["x"=2, "x"=2]>')
    with pytest.raises(ParseError, match="expected an integer"):
        parse_mesh('<["x"=a]>')
    with pytest.raises(ParseError, match=r"expected '>'"):
        parse_mesh('<["x"=2]')
    with pytest.raises(ParseError, match="repeat device"):
        parse_mesh('<["x"=2], device_ids=[1, 1]>')


def test_device_groups_with_a_size_one_axis():
    mesh = make_mesh({"x": 2, "y": 1, "z": 4})
    assert mesh.device_groups(["y"]).groups == tuple((d,) for d in range(8))
    assert mesh.device_groups(["x", "y"]).groups == tuple((z, z + 4) for z in range(4))
