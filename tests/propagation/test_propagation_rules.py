"""Factor rules per op, printed in Shardy's notation, and the registry's completeness."""

import pytest

from xla_spmd.errors import MissingRuleError
from xla_spmd.ir import (
    F32,
    PRED,
    S32,
    ArrayShape,
    Builder,
    ConvDimensionNumbers,
    PadDim,
    SliceDim,
    Window,
)
from xla_spmd.propagation import RULES, sharding_rule


def shape(*dims, dtype=F32):
    return ArrayShape(dtype, dims)


def rule_text(inst):
    return str(sharding_rule(inst))


def test_missing_rule_names_the_op():
    with pytest.raises(MissingRuleError, match="no sharding rule for 'frobnicate'"):
        RULES.lookup("frobnicate")


def test_dot_matmul():
    b = Builder("m")
    x, y = b.parameter(shape(8, 8)), b.parameter(shape(8, 16))
    dot = b.dot(x, y, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
    assert rule_text(dot) == (
        "#sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=8} reduction={k}>")


def test_dot_general_batch():
    b = Builder("m")
    x, y = b.parameter(shape(2, 4, 8)), b.parameter(shape(2, 8, 16))
    dot = b.dot(x, y, lhs_batch_dims=(0,), rhs_batch_dims=(0,), lhs_contracting_dims=(2,),
                rhs_contracting_dims=(1,))
    assert rule_text(dot) == ("#sdy.op_sharding_rule<([i, j, l], [i, l, k])->([i, j, k]) "
                              "{i=2, j=4, k=16, l=8} reduction={l}>")


@pytest.mark.parametrize("source,target,expected", [
    ((8, 4), (2, 16), "([ij, k])->([i, jk]) {i=2, j=4, k=4}"),
    ((8, 4), (32,), "([i, j])->([ij]) {i=8, j=4}"),
    ((32,), (8, 4), "([ij])->([i, j]) {i=8, j=4}"),
    # Shardy's walk (op_sharding_rule_registry.cc): 2 shared, 3 | 2 apart, then 3 for the
    # output (behind), 2 for the input to converge, 2 shared
    ((6, 4), (4, 6), "([ij, mn])->([ik, ln]) {i=2, j=3, k=2, l=3, m=2, n=2}"),
    ((3, 2), (2, 3), "([i, l])->([j, k]) {i=3, j=2, k=3, l=2}"),
    ((4, 8), (1, 4, 8, 1), "([j, k])->([i, j, k, l]) {i=1, j=4, k=8, l=1}"),
])
def test_reshape(source, target, expected):
    b = Builder("m")
    x = b.parameter(shape(*source))
    assert rule_text(b.reshape(x, shape=shape(*target))) == f"#sdy.op_sharding_rule<{expected}>"


def test_elementwise_transpose_broadcast():
    b = Builder("m")
    x = b.parameter(shape(4, 8))
    assert rule_text(b.add(x, x)) == (
        "#sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=4, j=8}>")
    assert rule_text(b.transpose(x, dimensions=(1, 0))) == (
        "#sdy.op_sharding_rule<([j, i])->([i, j]) {i=8, j=4}>")   # by result dim
    assert rule_text(b.broadcast(x, dimensions=(0, 2), shape=shape(4, 3, 8))) == (
        "#sdy.op_sharding_rule<([i, k])->([i, j, k]) {i=4, j=3, k=8}>")
    p = b.parameter(shape(4, 8, dtype=PRED))
    s = b.parameter(shape(dtype=F32))
    assert rule_text(b.select(p, x, x)) == (
        "#sdy.op_sharding_rule<([i, j], [i, j], [i, j])->([i, j]) {i=4, j=8}>")
    assert rule_text(b.clamp(s, x, s)) == (
        "#sdy.op_sharding_rule<([], [i, j], [])->([i, j]) {i=4, j=8}>")


def test_reduce_and_reduce_window():
    add = Builder("add")
    a, c = add.parameter(shape()), add.parameter(shape())
    adder = add.build(add.add(a, c))
    b = Builder("m")
    x = b.parameter(shape(4, 8, 16))
    zero = b.constant(0.0, F32)
    assert rule_text(b.reduce(x, zero, dimensions=(1,), to_apply=adder)) == (
        "#sdy.op_sharding_rule<([i, j, k], [])->([i, k]) {i=4, j=8, k=16} reduction={j}>")
    window = Window.make((1, 2, 1), (1, 2, 1))
    assert rule_text(b.reduce_window(x, zero, window=window, to_apply=adder)) == (
        "#sdy.op_sharding_rule<([i, j, k], [])->([i, j, k]) {i=4, j=4, k=16} "
        "permutation={j}>")   # sized as the result: the number of windows


def test_slice_pad_concat_reverse():
    b = Builder("m")
    x = b.parameter(shape(4, 8))
    sliced = b.slice(x, slice=(SliceDim(0, 4), SliceDim(0, 4)))
    assert rule_text(sliced) == (
        "#sdy.op_sharding_rule<([i, j])->([i, j]) {i=4, j=8} permutation={j}>")
    zero = b.constant(0.0, F32)
    padded = b.pad(x, zero, padding=(PadDim(1, 1), PadDim(0, 0)))
    assert rule_text(padded) == (
        "#sdy.op_sharding_rule<([i, j], [])->([i, j]) {i=4, j=8} permutation={i}>")
    assert rule_text(b.concatenate(x, x, dimensions=(1,))) == (
        "#sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=4, j=16} need_replication={j}>")
    assert rule_text(b.concatenate(sliced, sliced, dimensions=(1,))) == (
        "#sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=4, j=8} permutation={j}>")
    assert rule_text(b.reverse(x, dimensions=(0,))) == (
        "#sdy.op_sharding_rule<([i, j])->([i, j]) {i=4, j=8} permutation={i}>")


def test_dynamic_slice_and_update():
    b = Builder("m")
    x = b.parameter(shape(4, 8))
    i = b.parameter(shape(dtype=S32))
    ds = b.dynamic_slice(x, i, i, dynamic_slice_sizes=(4, 2))
    assert rule_text(ds) == ("#sdy.op_sharding_rule<([i, j], [], [])->([i, j]) {i=4, j=8} "
                             "need_replication={j} blocked_propagation={j}>")
    dus = b.dynamic_update_slice(x, ds, i, i)
    # as Shardy's registry (op_sharding_rule_registry.mlir): the update's own factor needs
    # replication, unless every start index is a constant
    assert rule_text(dus) == ("#sdy.op_sharding_rule<([i, j], [i, k], [], [])->([i, j]) "
                              "{i=4, j=8, k=2} need_replication={k}>")
    c = b.constant(0, S32)
    assert rule_text(b.dynamic_update_slice(x, ds, c, c)) == (
        "#sdy.op_sharding_rule<([i, j], [i, k], [], [])->([i, j]) {i=4, j=8, k=2}>")


def test_sort_need_replication():
    less = Builder("less")
    a, c = less.parameter(shape()), less.parameter(shape())
    comparator = less.build(less.compare(a, c, direction="LT"))
    b = Builder("m")
    x = b.parameter(shape(4, 8))
    assert rule_text(b.sort(x, dimensions=(1,), to_apply=comparator)) == (
        "#sdy.op_sharding_rule<([i, j])->([i, j]) {i=4, j=8} need_replication={j}>")


def test_convolution():
    b = Builder("m")
    lhs, rhs = b.parameter(shape(8, 32, 32, 3)), b.parameter(shape(3, 3, 3, 16))
    conv = b.convolution(lhs, rhs, window=Window.make((3, 3), padding=((1, 1), (1, 1))),
                         dim_labels=ConvDimensionNumbers.from_labels("b01f_01io->b01f"))
    # as Shardy: each spatial dim's windows (32) fill the lhs dim, so the window factor is
    # dropped and the kernel's spatial dims get size-1 factors of their own
    assert rule_text(conv) == (
        "#sdy.op_sharding_rule<([i, j, k, l], [n, o, l, m])->([i, j, k, m]) "
        "{i=8, j=32, k=32, l=3, m=16, n=1, o=1} reduction={l} permutation={j, k}>")


def test_gather_embedding_lookup():
    b = Builder("m")
    table, ids = b.parameter(shape(11, 16)), b.parameter(shape(2, 8, 1, dtype=S32))
    gather = b.gather(table, ids, offset_dims=(2,), collapsed_slice_dims=(0,),
                      start_index_map=(0,), index_vector_dim=2, slice_sizes=(1, 16))
    assert rule_text(gather) == (
        # Shardy's order: the result's dims (batch, batch, offset), then the collapsed dim
        "#sdy.op_sharding_rule<([l, k], [i, j, m])->([i, j, k]) {i=2, j=8, k=16, l=11, m=1} "
        "reduction={l} need_replication={m}>")


def test_collectives_and_custom_calls():
    b = Builder("m")
    x = b.parameter(shape(4, 8))
    gathered = b.all_gather(x, dimensions=(1,), replica_groups=None, shape=shape(4, 32))
    assert rule_text(gathered) == ("#sdy.op_sharding_rule<([i, j])->([i, k]) {i=4, j=8, k=32} "
                                   "need_replication={j, k}>")
    constraint = b.custom_call(x, custom_call_target="Sharding", shape=shape(4, 8))
    assert rule_text(constraint) == "#sdy.op_sharding_rule<([i, j])->([i, j]) {i=4, j=8}>"
    opaque = b.custom_call(x, custom_call_target="my_kernel", shape=shape(4, 8))
    assert sharding_rule(opaque) is None


# Custom calls and ops whose rules Shardy's registry test (op_sharding_rule_registry.mlir)
# spells out: the expected texts are copied from it.
SHARDY_REGISTRY_CASES = {
    "eigh": ("%0:2 = stablehlo.custom_call @Eigh(%arg0) : (tensor<8x4x4xf32>) -> "
             "(tensor<8x4x4xf32>, tensor<8x4xf32>)", ["tensor<8x4x4xf32>"],
             "([i, j, k])->([i, j, k], [i, k]) {i=8, j=4, k=4}"),
    "qr": ("%0:2 = stablehlo.custom_call @Qr(%arg0) : (tensor<8x5x3xf32>) -> "
           "(tensor<8x5x3xf32>, tensor<8x3xf32>)", ["tensor<8x5x3xf32>"],
           "([i, j, k])->([i, j, k], [i, l]) {i=8, j=5, k=3, l=3} need_replication={j, k, l}"),
    "householder": ("%0 = stablehlo.custom_call @ProductOfElementaryHouseholderReflectors("
                    "%arg0, %arg1) : (tensor<8x12x16xf32>, tensor<8x5xf32>) -> "
                    "tensor<8x12x16xf32>", ["tensor<8x12x16xf32>", "tensor<8x5xf32>"],
                    "([i, j, k], [i, l])->([i, j, k]) {i=8, j=12, k=16, l=5} "
                    "need_replication={j, k, l}"),
    "topk": ("%0:2 = stablehlo.custom_call @mhlo.topk(%arg0) {mhlo.attributes = {k = 2 : i64, "
             "largest = true}, mhlo.version = 1 : i64} : (tensor<16x8xf32>) -> "
             "(tensor<16x2xf32>, tensor<16x2xi32>)", ["tensor<16x8xf32>"],
             "([i, j])->([i, j], [i, j]) {i=16, j=8} need_replication={j} "
             "blocked_propagation={j}"),
    # The comparator is not in the module (nor in Shardy's test): kept by name only.
    "approx_topk": ("%0:2 = stablehlo.custom_call @ApproxTopK(%arg0, %arg1, %arg2, %arg3) "
                    "{called_computations = [@cmp]} : (tensor<8x16x4xf32>, tensor<8x16x4xf32>, "
                    "tensor<f32>, tensor<i32>) -> (tensor<8x2x4xf32>, tensor<8x2x4xf32>)",
                    ["tensor<8x16x4xf32>"] * 2 + ["tensor<f32>", "tensor<i32>"],
                    "([i, j, l], [i, j, l], [], [])->([i, k, l], [i, k, l]) "
                    "{i=8, j=16, k=2, l=4} need_replication={k} blocked_propagation={k}"),
    "x64_combine": ("%0 = stablehlo.custom_call @X64Combine(%arg0, %arg1) : (tensor<8x2xui32>, "
                    "tensor<8x2xui32>) -> tensor<8x2xui64>", ["tensor<8x2xui32>"] * 2,
                    "([i, j], [i, j])->([i, j]) {i=8, j=2}"),
    "rfft": ("%0 = stablehlo.fft %arg0, type = RFFT, length = [32, 64] : "
             "(tensor<8x32x64xf32>) -> tensor<8x32x33xcomplex<f32>>", ["tensor<8x32x64xf32>"],
             "([i, j, k])->([i, j, k]) {i=8, j=32, k=64} need_replication={j, k} "
             "blocked_propagation={k}"),
    "all_gather_variadic": ('%0:2 = "stablehlo.all_gather"(%arg0, %arg1) {all_gather_dim = 1 : '
                            "i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : "
                            "(tensor<2x2xi64>, tensor<2x2xi64>) -> (tensor<2x4xi64>, "
                            "tensor<2x4xi64>)", ["tensor<2x2xi64>"] * 2,
                            "([i, j], [i, j])->([i, k], [i, k]) {i=2, j=2, k=4} "
                            "need_replication={j, k}"),
}


@pytest.mark.parametrize("name", sorted(SHARDY_REGISTRY_CASES))
def test_rules_as_shardy_registry(name):
    from xla_spmd.stablehlo import import_stablehlo

    op, args, expected = SHARDY_REGISTRY_CASES[name]
    params = ", ".join(f"%arg{i}: {t}" for i, t in enumerate(args))
    result = op.split(" -> ")[-1]
    names = "%0#0" if op.startswith("%0:") else "%0"
    rtype = result.strip("()").split(", ")[0] if op.startswith("%0:") else result
    module = import_stablehlo(f"func.func @main({params}) -> {rtype} {{\n  {op}\n"
                              f"  return {names} : {rtype}\n}}")
    (inst,) = [i for i in module.entry.instructions
               if i.op.name not in ("parameter", "get-tuple-element", "tuple")]
    assert rule_text(inst) == f"#sdy.op_sharding_rule<{expected}>"


def test_x64_combine_rule_depends_on_its_users():
    """Shardy: an X64Combine feeding a rng_bit_generator's state is replicated and blocks
    propagation; used otherwise it is pointwise."""
    from xla_spmd.stablehlo import import_stablehlo

    module = import_stablehlo(
        "func.func @main(%arg0: tensor<2xui32>, %arg1: tensor<2xui32>) -> (tensor<4x8xui32>, "
        "tensor<2xui64>) {\n  %0 = stablehlo.custom_call @X64Combine(%arg0, %arg1) : "
        "(tensor<2xui32>, tensor<2xui32>) -> tensor<2xui64>\n  %s, %o = "
        "stablehlo.rng_bit_generator %0, algorithm = DEFAULT : (tensor<2xui64>) -> "
        "(tensor<2xui64>, tensor<4x8xui32>)\n  return %o, %0 : tensor<4x8xui32>, "
        "tensor<2xui64>\n}")
    users = module.entry.users()
    (combine,) = [i for i in module.entry.instructions if i.opcode == "custom-call"]
    assert str(sharding_rule(combine, users[combine])) == (
        "#sdy.op_sharding_rule<([i], [i])->([i]) {i=2} need_replication={i} "
        "blocked_propagation={i}>")
    others = [u for u in users[combine] if u.opcode != "rng-bit-generator"]
    assert str(sharding_rule(combine, others)) == str(sharding_rule(combine)) == \
        "#sdy.op_sharding_rule<([i], [i])->([i]) {i=2}>"


def _combiner(op):
    c = Builder(op)
    a, b = c.parameter(shape()), c.parameter(shape())
    return c.build(a if op == "set" else c.op(op, a, b))


@pytest.mark.parametrize("combiner,batch_kind", [("add", "reduction"), ("maximum", "reduction"),
                                                 ("set", "need_replication")])
def test_scatter_batch_dims_by_combiner(combiner, batch_kind):
    # Shardy's scatter rule: the updates' batch dims (i, j) are a reduction when the combiner
    # is one associative, commutative op (partial updates, then an all-reduce), else they
    # need replication; the inserted dim (l) passes through input <-> result; the index
    # vector dim (m) needs replication.
    b = Builder("m")
    table, ids = b.parameter(shape(6, 8)), b.parameter(shape(4, 2, 1, dtype=S32))
    updates = b.parameter(shape(4, 2, 8))
    sc = b.scatter(table, ids, updates, update_window_dims=(2,), inserted_window_dims=(0,),
                   scatter_dims_to_operand_dims=(0,), index_vector_dim=2,
                   to_apply=_combiner(combiner))
    kinds = "reduction={i, j} need_replication={m}" if batch_kind == "reduction" else \
        "need_replication={i, j, m}"
    assert rule_text(sc) == (
        "#sdy.op_sharding_rule<([l, k], [i, j, m], [i, j, k])->([l, k]) "
        f"{{i=4, j=2, k=8, l=6, m=1}} {kinds}>")


def test_conservative_rules():
    # Shardy's conservative-propagation rules: no factor for the concatenated dim (each
    # tensor gets a size-1 factor of its own there), blocked permutation factors
    from xla_spmd.propagation import conservative_propagation
    b = Builder("m")
    x = b.parameter(shape(4, 8))
    with conservative_propagation():
        assert rule_text(b.concatenate(x, x, dimensions=(1,))) == (
            "#sdy.op_sharding_rule<([i, j], [i, k])->([i, l]) {i=4, j=1, k=1, l=1}>")
        assert rule_text(b.slice(x, slice=(SliceDim(0, 4), SliceDim(0, 4)))) == (
            "#sdy.op_sharding_rule<([i, j])->([i, j]) {i=4, j=8} permutation={j} "
            "blocked_propagation={j}>")
    assert rule_text(b.concatenate(x, x, dimensions=(1,))) == (
        "#sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=4, j=16} need_replication={j}>")


@pytest.mark.parametrize("left_side,transpose,expected", [
    (True, "NO_TRANSPOSE", "([i, j, l], [i, j, k])->([i, l, k]) {i=8, j=3, k=5, l=3}"),
    (False, "TRANSPOSE", "([i, k, l], [i, j, k])->([i, j, l]) {i=8, j=5, k=3, l=3}"),
])
def test_triangular_solve(left_side, transpose, expected):
    # Shardy's rule: batch dims shared; a's non-contracting dim with b's, b's free dim with
    # the result's, a's contracting dim with the result's other dim; all need replication
    b = Builder("m")
    a = b.parameter(shape(8, 3, 3))
    rhs = b.parameter(shape(8, 3, 5) if left_side else shape(8, 5, 3))
    solve = b.triangular_solve(a, rhs, left_side=left_side, lower=True, unit_diagonal=False,
                               transpose_a=transpose)
    assert rule_text(solve) == (f"#sdy.op_sharding_rule<{expected} "
                                "need_replication={j, k, l}>")


@pytest.mark.parametrize("opcode, vectors, grad, expected", [
    ("batch-norm-inference", 4, False, "([i, j, k, l], [k], [k], [k], [k])->([i, j, k, l])"),
    ("batch-norm-training", 2, False, "([i, j, k, l], [k], [k])->([i, j, k, l], [k], [k])"),
    ("batch-norm-grad", 3, True,
     "([i, j, k, l], [k], [k], [k], [i, j, k, l])->([i, j, k, l], [k], [k])"),
])
def test_batch_norm(opcode, vectors, grad, expected):
    """Shardy's batch_norm_inference rule (op_sharding_rule_registry.mlir); training and grad
    (no rule in Shardy) follow the same scheme."""
    b = Builder("m")
    x = b.parameter(shape(4, 8, 16, 32))
    vs = [b.parameter(shape(16)) for _ in range(vectors)]
    inst = b.op(opcode, x, *vs, *([x] if grad else []), epsilon=0.001, feature_index=2)
    assert rule_text(inst) == (f"#sdy.op_sharding_rule<{expected} "
                               "{i=4, j=8, k=16, l=32}>")
