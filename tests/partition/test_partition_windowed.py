"""Oracle cases for halo exchange (convolution, reduce-window, select-and-scatter) and for
slice, pad, concatenate, reverse, dynamic-update-slice and grouped convolutions on sharded
dims, on meshes (8,), (2,4), (4,2), (2,2,2), with even and uneven sizes."""

import numpy as np
import pytest
from spmd_oracle import check

from xla_spmd.ir import (
    F32,
    S32,
    ArrayShape,
    Builder,
    ComparisonDirection,
    ConvDimensionNumbers,
    Module,
    PadDim,
    SliceDim,
    Window,
)
from xla_spmd.mesh import make_mesh
from xla_spmd.partition import collective_table
from xla_spmd.sharding import TensorSharding

MESHES = {"8": {"a": 8}, "2x4": {"a": 2, "b": 4}, "4x2": {"a": 4, "b": 2},
          "2x2x2": {"a": 2, "b": 2, "c": 2}}


def f32(*dims):
    return ArrayShape(F32, dims)


def kinds(spmd):
    return {r["kind"] for r in collective_table(spmd)}


def run(b, root, seed=0):
    module = Module.from_entry("m", b.build(root))
    rng = np.random.default_rng(seed)
    args = [rng.standard_normal(p.shape.dims).astype(np.float32)
            for p in module.entry.parameters]
    return check(module, args, rtol=1e-4, atol=1e-4)


def binary(op):
    b = Builder(f"r_{op}")
    p, q = b.parameter(f32()), b.parameter(f32())
    return b.build(b.op(op, p, q))


def sharding(mesh, *dims):
    return TensorSharding(mesh, [list(d) for d in dims])


def all_axes(mesh):
    return list(mesh.axis_names)


# (size, kernel, stride, padding, lhs_dilation, rhs_dilation)
WINDOWS = [
    (16, 3, 1, (1, 1), 1, 1),
    (13, 3, 1, (1, 1), 1, 1),
    (16, 3, 2, (1, 1), 1, 1),
    (19, 4, 2, (2, 1), 1, 1),
    (16, 3, 1, (2, 2), 1, 2),
    (16, 5, 3, (0, 3), 1, 1),
    (16, 3, 1, (-1, 2), 1, 1),
    (8, 3, 1, (1, 1), 2, 1),
    (11, 2, 1, (1, 1), 2, 1),
    (40, 3, 1, (1, 1), 1, 1),
]


def conv_window(case):
    _, k, stride, padding, lhs_dilation, rhs_dilation = case
    return Window.make((k,), (stride,), (padding,), (lhs_dilation,), (rhs_dilation,))


@pytest.mark.parametrize("mesh_name", MESHES)
@pytest.mark.parametrize("case", range(len(WINDOWS)))
def test_convolution_spatial_halo(mesh_name, case):
    mesh = make_mesh(MESHES[mesh_name])
    size = WINDOWS[case][0]
    window = conv_window(WINDOWS[case])
    axes = all_axes(mesh) if case % 2 else [mesh.axis_names[-1]]
    out = window.dims[0].output_size(size)
    b = Builder("main")
    x = b.parameter(f32(2, size, 3), sharding=sharding(mesh, [], axes, []))
    k = b.parameter(f32(window.dims[0].size, 3, 2), sharding=sharding(mesh, [], [], []))
    dn = ConvDimensionNumbers.from_labels("b0f_0io->b0f")
    conv = b.convolution(x, k, window=window, dim_labels=dn, shape=f32(2, out, 2),
                         sharding=sharding(mesh, [], axes, []))
    run(b, conv)


def test_convolution_halo_is_chosen_over_all_gather():
    mesh = make_mesh(MESHES["8"])
    window = Window.make((4,), (2,), ((2, 1),))
    b = Builder("main")
    x = b.parameter(f32(2, 64, 3), sharding=sharding(mesh, [], ["a"], []))
    k = b.parameter(f32(4, 3, 2), sharding=sharding(mesh, [], [], []))
    dn = ConvDimensionNumbers.from_labels("b0f_0io->b0f")
    conv = b.convolution(x, k, window=window, dim_labels=dn, shape=f32(2, 32, 2),
                         sharding=sharding(mesh, [], ["a"], []))
    assert kinds(run(b, conv)) == {"collective-permute"}


def test_convolution_2d_both_spatial_dims_sharded():
    mesh = make_mesh(MESHES["2x4"])
    b = Builder("main")
    x = b.parameter(f32(1, 10, 13, 2), sharding=sharding(mesh, [], ["a"], ["b"], []))
    k = b.parameter(f32(3, 3, 2, 4), sharding=sharding(mesh, [], [], [], []))
    dn = ConvDimensionNumbers.from_labels("b01f_01io->b01f")
    window = Window.make((3, 3), (2, 1), ((1, 1), (1, 1)))
    conv = b.convolution(x, k, window=window, dim_labels=dn, shape=f32(1, 5, 13, 4),
                         sharding=sharding(mesh, [], ["a"], ["b"], []))
    assert kinds(run(b, conv)) == {"collective-permute"}


# max on every window; add (the same halo code, another identity) on a third of them.
REDUCE_WINDOW_CASES = [(case, "maximum") for case in range(len(WINDOWS))] + [
    (case, "add") for case in range(0, len(WINDOWS), 3)]


@pytest.mark.parametrize("mesh_name", MESHES)
@pytest.mark.parametrize("case, op", REDUCE_WINDOW_CASES)
def test_reduce_window_halo(mesh_name, case, op):
    mesh = make_mesh(MESHES[mesh_name])
    size = WINDOWS[case][0]
    window = conv_window(WINDOWS[case])
    window = Window(window.dims + Window.make((1,)).dims)
    axes = all_axes(mesh) if case % 2 else [mesh.axis_names[0]]
    out = window.dims[0].output_size(size)
    b = Builder("main")
    x = b.parameter(f32(size, 3), sharding=sharding(mesh, axes, []))
    init = b.constant(np.float32(-np.inf if op == "maximum" else 0))
    rw = b.reduce_window(x, init, window=window, to_apply=binary(op), shape=f32(out, 3),
                         sharding=sharding(mesh, axes, []))
    run(b, rw)


def select_ge():
    b = Builder("select")
    p, q = b.parameter(f32()), b.parameter(f32())
    return b.build(b.compare(p, q, direction=ComparisonDirection.GE))


# (size, kernel, stride, padding)
SELECT_WINDOWS = [(16, 2, 2, (0, 0)), (16, 3, 2, (1, 1)), (13, 3, 1, (1, 1)),
                  (21, 3, 2, (0, 1)), (24, 2, 1, (0, 1))]


@pytest.mark.parametrize("mesh_name", MESHES)
@pytest.mark.parametrize("case", range(len(SELECT_WINDOWS)))
def test_select_and_scatter_halo(mesh_name, case):
    mesh = make_mesh(MESHES[mesh_name])
    size, k, stride, padding = SELECT_WINDOWS[case]
    window = Window.make((k, 1), (stride, 1), (padding, (0, 0)))
    out = window.dims[0].output_size(size)
    axes = all_axes(mesh) if case % 2 else [mesh.axis_names[-1]]
    b = Builder("main")
    x = b.parameter(f32(size, 2), sharding=sharding(mesh, axes, []))
    src = b.parameter(f32(out, 2), sharding=sharding(mesh, axes, []))
    zero = b.constant(np.float32(0))
    ss = b.select_and_scatter(x, src, zero, window=window, select=select_ge(),
                              scatter=binary("add"), sharding=sharding(mesh, axes, []))
    spmd = run(b, ss)
    if size % mesh.size == 0 and size // mesh.size >= k:
        assert "all-gather" not in kinds(spmd)


@pytest.mark.parametrize("direction", ["GE", "GT", "LE", "LT"])
@pytest.mark.parametrize("special", [-np.inf, np.inf, np.nan])
@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_select_and_scatter_halo_never_selects_the_padding(direction, special, backend):
    """The halo scheme's padding (edges, uneven tail) is never selected, whatever the values:
    it was -inf (GE/GT) or +inf (LE/LT), so a window [padding, -inf] under GE (or [-inf,
    padding] under GT, or [NaN, padding]) selected the padding and its source was lost."""
    mesh = make_mesh({"a": 4})
    size, k, stride, padding = 13, 3, 2, (1, 1)
    window = Window.make((k,), (stride,), (padding,))
    out = window.dims[0].output_size(size)
    b = Builder("main")
    x = b.parameter(f32(size), sharding=sharding(mesh, ["a"]))
    src = b.parameter(f32(out), sharding=sharding(mesh, ["a"]))
    sb = Builder("select")
    p, q = sb.parameter(f32()), sb.parameter(f32())
    select = sb.build(sb.compare(p, q, direction=ComparisonDirection[direction]))
    ss = b.select_and_scatter(x, src, b.constant(np.float32(0)), window=window,
                              select=select, scatter=binary("add"),
                              sharding=sharding(mesh, ["a"]))
    rng = np.random.default_rng(0)
    operand = rng.standard_normal(size).astype(np.float32)
    operand[[0, 3, 4, size - 1]] = special  # at the edges and at shard boundaries
    source = np.arange(1, out + 1, dtype=np.float32)
    spmd = check(Module.from_entry("m", b.build(ss)), [operand, source], backend=backend)
    assert "all-gather" not in kinds(spmd)


def test_select_and_scatter_halo_never_selects_the_padding_of_integers():
    """As above for s32: the padding was the lowest s32, tied with a real one under GE."""
    mesh = make_mesh({"a": 4})
    window = Window.make((3,), (2,), ((1, 1),))
    out = window.dims[0].output_size(13)
    b = Builder("main")
    x = b.parameter(ArrayShape(S32, (13,)), sharding=sharding(mesh, ["a"]))
    src = b.parameter(ArrayShape(S32, (out,)), sharding=sharding(mesh, ["a"]))
    sb = Builder("select")
    p, q = sb.parameter(ArrayShape(S32, ())), sb.parameter(ArrayShape(S32, ()))
    select = sb.build(sb.compare(p, q, direction=ComparisonDirection.GE))
    ab = Builder("add")
    u, v = ab.parameter(ArrayShape(S32, ())), ab.parameter(ArrayShape(S32, ()))
    ss = b.select_and_scatter(x, src, b.constant(np.int32(0)), window=window, select=select,
                              scatter=ab.build(ab.add(u, v)), sharding=sharding(mesh, ["a"]))
    operand = np.full(13, np.iinfo(np.int32).min, np.int32)
    check(Module.from_entry("m", b.build(ss)), [operand, np.arange(1, out + 1, dtype=np.int32)])


@pytest.mark.parametrize("mesh_name", MESHES)
@pytest.mark.parametrize("size", [16, 13, 5])
def test_reverse_mirrors_shards(mesh_name, size):
    mesh = make_mesh(MESHES[mesh_name])
    axes = all_axes(mesh)
    b = Builder("main")
    x = b.parameter(f32(size, 3), sharding=sharding(mesh, axes, []))
    r = b.reverse(x, dimensions=(0, 1), sharding=sharding(mesh, axes, []))
    spmd = run(b, r)
    if size == 16:
        assert kinds(spmd) == {"collective-permute"}


SLICES = [(16, 1, 16, 1), (16, 0, 15, 1), (13, 2, 13, 1), (16, 1, 16, 2), (30, 3, 27, 1)]


@pytest.mark.parametrize("mesh_name", MESHES)
@pytest.mark.parametrize("case", range(len(SLICES)))
def test_slice_keeps_sharded_dim(mesh_name, case):
    mesh = make_mesh(MESHES[mesh_name])
    size, start, limit, stride = SLICES[case]
    axes = all_axes(mesh) if case % 2 else [mesh.axis_names[0]]
    out = -(-(limit - start) // stride)
    b = Builder("main")
    x = b.parameter(f32(size, 2), sharding=sharding(mesh, axes, []))
    s = b.slice(x, slice=(SliceDim(start, limit, stride), SliceDim(0, 2)),
                sharding=sharding(mesh, axes, []))
    spmd = run(b, b.negate(s, shape=f32(out, 2), sharding=sharding(mesh, axes, [])))
    if case == 0 and mesh_name == "8":
        assert kinds(spmd) == {"collective-permute"}


PADS = [(16, 1, 1, 0), (16, 2, -1, 0), (13, 1, 2, 0), (8, 0, 0, 1), (8, 1, 1, 1),
        (16, -2, 3, 0)]


@pytest.mark.parametrize("mesh_name", MESHES)
@pytest.mark.parametrize("case", range(len(PADS)))
def test_pad_keeps_sharded_dim(mesh_name, case):
    mesh = make_mesh(MESHES[mesh_name])
    size, low, high, interior = PADS[case]
    axes = all_axes(mesh) if case % 2 else [mesh.axis_names[-1]]
    padding = PadDim(low, high, interior)
    out = padding.output_size(size)
    b = Builder("main")
    x = b.parameter(f32(size, 2), sharding=sharding(mesh, axes, []))
    value = b.constant(np.float32(7))
    p = b.pad(x, value, padding=(padding, PadDim(0, 0)), shape=f32(out, 2),
              sharding=sharding(mesh, axes, []))
    spmd = run(b, p)
    if case == 0 and mesh_name == "8":
        assert kinds(spmd) == {"collective-permute"}


@pytest.mark.parametrize("mesh_name", MESHES)
@pytest.mark.parametrize("sizes", [(16, 16), (8, 24), (5, 9, 2)])
def test_concatenate_on_sharded_dim(mesh_name, sizes):
    mesh = make_mesh(MESHES[mesh_name])
    axes = all_axes(mesh)
    b = Builder("main")
    xs = [b.parameter(f32(n, 2), sharding=sharding(mesh, axes, [])) for n in sizes]
    c = b.concatenate(*xs, dimensions=(0,), shape=f32(sum(sizes), 2),
                      sharding=sharding(mesh, axes, []))
    run(b, c)


@pytest.mark.parametrize("mesh_name", MESHES)
@pytest.mark.parametrize("case", [(16, 4, 5), (13, 3, 11), (16, 16, 0), (10, 7, -3)])
def test_dynamic_update_slice_keeps_operand_sharded(mesh_name, case):
    mesh = make_mesh(MESHES[mesh_name])
    size, update, start = case
    axes = all_axes(mesh)
    b = Builder("main")
    x = b.parameter(f32(size, 6), sharding=sharding(mesh, axes, []))
    u = b.parameter(f32(update, 3), sharding=sharding(mesh, [], []))
    i = b.constant(np.int32(start))
    j = b.constant(np.int32(2))
    dus = b.dynamic_update_slice(x, u, i, j, sharding=sharding(mesh, axes, []))
    spmd = run(b, dus)
    assert "all-gather" not in kinds(spmd)


@pytest.mark.parametrize("mesh_name", MESHES)
def test_feature_grouped_convolution(mesh_name):
    mesh = make_mesh(MESHES[mesh_name])
    first, rest = [mesh.axis_names[0]], list(mesh.axis_names[1:]) or []
    b = Builder("main")
    x = b.parameter(f32(4, 9, 16), sharding=sharding(mesh, rest, [], first))   # b 0 f
    k = b.parameter(f32(3, 2, 16), sharding=sharding(mesh, [], [], first))    # 0 i o
    dn = ConvDimensionNumbers.from_labels("b0f_0io->b0f")
    conv = b.convolution(x, k, window=Window.make((3,), padding=((1, 1),)), dim_labels=dn,
                         feature_group_count=8, shape=f32(4, 9, 16),
                         sharding=sharding(mesh, rest, [], first))
    spmd = run(b, conv)
    assert "all-gather" not in kinds(spmd)


@pytest.mark.parametrize("mesh_name", MESHES)
def test_batch_grouped_convolution(mesh_name):
    mesh = make_mesh(MESHES[mesh_name])
    first = [mesh.axis_names[0]]
    b = Builder("main")
    x = b.parameter(f32(16, 6, 3), sharding=sharding(mesh, first, [], []))   # b 0 f
    k = b.parameter(f32(2, 3, 8), sharding=sharding(mesh, [], [], first))    # 0 i o
    dn = ConvDimensionNumbers.from_labels("b0f_0io->b0f")
    conv = b.convolution(x, k, window=Window.make((2,)), dim_labels=dn, batch_group_count=8,
                         shape=f32(2, 5, 8), sharding=sharding(mesh, [], [], first))
    spmd = run(b, conv)
    assert "all-gather" not in kinds(spmd)
