"""The cheap collective for each pattern of issue 15 section 2, on hand-written programs with
uneven shards (padding) as well as even ones: values against the reference, and the kinds
and bytes of the collectives chosen."""

import numpy as np
import pytest
from spmd_oracle import check

from xla_spmd.ir import parse_hlo
from xla_spmd.partition import collective_table
from xla_spmd.partition.report import totals

ARGMAX = """HloModule argmax
pick {
  a = f32[] parameter(0)
  i = s32[] parameter(1)
  b = f32[] parameter(2)
  j = s32[] parameter(3)
  gt = pred[] compare(a, b), direction=GT
  eq = pred[] compare(a, b), direction=EQ
  lt = pred[] compare(i, j), direction=LT
  tie = pred[] and(eq, lt)
  first = pred[] or(gt, tie)
  v = f32[] select(first, a, b)
  k = s32[] select(first, i, j)
  ROOT t = (f32[], s32[]) tuple(v, k)
}
ENTRY e {
  x = f32[6,{n}] parameter(0), sharding={devices=[1,4,2]<=[8] last_tile_dim_replicate}
  iota = s32[6,{n}] iota(), iota_dimension=1
  lo = f32[] constant(-inf)
  zero = s32[] constant(0)
  r = (f32[6], s32[6]) reduce(x, iota, lo, zero), dimensions={1}, to_apply=pick
  ROOT idx = s32[6] get-tuple-element(r), index=1, sharding={replicated}
}
"""


@pytest.mark.parametrize("n", [16, 10, 3])
def test_argmax_over_sharded_dim_gathers_partial_pairs_not_the_operand(n):
    module = parse_hlo(ARGMAX.replace("{n}", str(n)))
    rng = np.random.default_rng(n)
    x = rng.integers(-3, 3, (6, n)).astype(np.float32)  # ties: the lowest index wins
    spmd = check(module, [x], propagate=True, expected=[np.argmax(x, axis=1).astype(np.int32)])
    rows = collective_table(spmd)
    assert [r["kind"] for r in rows] == ["all-gather", "all-gather"]
    # (value, index) partial results of 6 rows from 4 devices, not the f32[6,n] operand
    assert totals(rows)["total"] == 3 * (6 * 4 + 6 * 4)


ARGSORT = """HloModule argsort
less {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT
}
ENTRY e {
  x = f32[{rows},16] parameter(0), sharding={devices=[1,8]<=[8]}
  iota = s32[{rows},16] iota(), iota_dimension=1
  s = (f32[{rows},16], s32[{rows},16]) sort(x, iota), dimensions={1}, is_stable=true, to_apply=less
  v = f32[{rows},16] get-tuple-element(s), index=0
  k = s32[{rows},16] get-tuple-element(s), index=1
  ROOT t = (f32[{rows},16], s32[{rows},16]) tuple(v, k),
    sharding={{devices=[1,8]<=[8]}, {devices=[1,8]<=[8]}}
}
"""


@pytest.mark.parametrize("rows, kinds", [(8, ["all-to-all"] * 3), (3, ["all-gather"])])
def test_sort_along_sharded_dim_moves_its_axes_to_another_dim(rows, kinds):
    module = parse_hlo(ARGSORT.replace("{rows}", str(rows)))
    x = np.random.default_rng(rows).integers(-4, 4, (rows, 16)).astype(np.float32)
    expected = np.argsort(x, axis=1, kind="stable").astype(np.int32)
    spmd = check(module, [x], propagate=True,
                 expected=[np.take_along_axis(x, expected, axis=1), expected])
    # 8 rows: the keys all-to-all onto the rows (the iota is made where it is needed), both
    # results back; 3 rows do not split 8 ways: the sorted dim is gathered, results sliced.
    assert [r["kind"] for r in collective_table(spmd)] == kinds


TRANSPOSE = """HloModule transpose
ENTRY e {
  x = f32[{r},{c}] parameter(0), sharding={devices=[2,4]<=[8]}
  t = f32[{c},{r}] transpose(x), dimensions={1,0}
  ROOT y = f32[{c},{r}] add(t, t), sharding={devices=[2,4]<=[8]}
}
"""


@pytest.mark.parametrize("r, c, kinds", [
    # XLA splits "y", moves half by all-to-all and permutes the tile (1.5 x the tile); a
    # device receives just the two halves of its tile it lacks, one collective-permute each
    (8, 16, ["collective-permute", "collective-permute"]),
    (6, 10, None)])                                  # uneven: any plan, exact values
def test_transpose_of_2d_sharded_array_moves_only_the_missing_pieces(r, c, kinds):
    module = parse_hlo(TRANSPOSE.replace("{r}", str(r)).replace("{c}", str(c)))
    x = np.random.default_rng(r).standard_normal((r, c)).astype(np.float32)
    spmd = check(module, [x], propagate=True, expected=[2 * x.T])
    rows = collective_table(spmd)
    if kinds is not None:
        assert [row["kind"] for row in rows] == kinds
        local = r * c // 8 * 4
        assert totals(rows)["total"] == local  # some device holds none of its tile


CONCAT = """HloModule concat
ENTRY e {
  a = f32[{n},{m}] parameter(0), sharding={devices=[8,1]<=[8]}
  b = f32[{k},{m}] parameter(1), sharding={devices=[8,1]<=[8]}
  ROOT c = f32[{t},{m}] concatenate(a, b), dimensions={0}, sharding={devices=[8,1]<=[8]}
}
"""


def _concat_least_bytes(sizes, m, n=8):
    """The most rows of its result tile any of `n` devices lacks, times a row's bytes."""
    starts = np.cumsum([0] + list(sizes))
    lacking = 0
    for d in range(n):
        have = {int(starts[j]) + r for j, size in enumerate(sizes)
                for r in range(d * size // n, (d + 1) * size // n)}
        tile = sum(sizes) // n
        lacking = max(lacking, len(set(range(d * tile, (d + 1) * tile)) - have))
    return lacking * m * 4


@pytest.mark.parametrize("n, k, m, kinds", [
    # XLA parks the rows' axis on the columns (three all-to-alls, 1344 B); a device receives
    # only the rows of its result it lacks: three pieces of 4 rows, one permute each
    (64, 32, 16, ["collective-permute"] * 3),
    (24, 40, 2, "least"),              # pieces of 1 row (gcd of 3, 5 and 8)
    (13, 6, 3, None)])                 # uneven rows, 3 columns: halo or gather, exact
def test_concatenate_along_sharded_dim(n, k, m, kinds):
    text = CONCAT
    for key, value in {"n": n, "k": k, "m": m, "t": n + k}.items():
        text = text.replace("{" + key + "}", str(value))
    rng = np.random.default_rng(n)
    a, b = (rng.standard_normal((r, m)).astype(np.float32) for r in (n, k))
    spmd = check(parse_hlo(text), [a, b], propagate=True,
                 expected=[np.concatenate([a, b])])
    rows = collective_table(spmd)
    if kinds is not None and kinds != "least":
        assert [row["kind"] for row in rows] == kinds
    if kinds is not None:
        assert totals(rows)["total"] == _concat_least_bytes((n, k), m)


FILTER_GRAD = """HloModule filter_grad
ENTRY e {
  x = f32[2,{h},4,3] parameter(0), sharding={devices=[1,8,1,1]<=[8]}
  dy = f32[2,{h},4,5] parameter(1), sharding={devices=[1,8,1,1]<=[8]}
  ROOT dw = f32[3,3,3,5] convolution(x, dy), window={size={h}x4 pad=1_1x1_1},
    dim_labels=f01b_i01o->01bf, sharding={replicated}
}
"""


@pytest.mark.parametrize("h", [16, 13])
def test_filter_gradient_of_spatially_sharded_conv_halo_and_one_all_reduce(h):
    module = parse_hlo(FILTER_GRAD.replace("{h}", str(h)))
    rng = np.random.default_rng(h)
    args = [rng.standard_normal(p.shape.dims).astype(np.float32)
            for p in module.entry.parameters]
    spmd = check(module, args, propagate=True, rtol=1e-4, atol=1e-4)
    kinds = [row["kind"] for row in collective_table(spmd)]
    if h == 16:  # the kernel (dy) rows split 8 ways: x halos, then the partial dw reduced
        assert sorted(set(kinds)) == ["all-reduce", "collective-permute"]
        assert kinds.count("all-reduce") == 1


RESHARD_CACHE = """HloModule cache
ENTRY e {
  x = f32[3,16] parameter(0), sharding={devices=[1,8]<=[8]}
  w = f32[16,4] parameter(1), sharding={devices=[8,1]<=[8]}
  d = f32[3,4] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0},
    sharding={devices=[8,1]<=[8]}
  ROOT n = f32[3,4] negate(d), sharding={replicated}
}
"""


def test_value_sliced_after_an_all_reduce_is_not_gathered_again():
    module = parse_hlo(RESHARD_CACHE)
    rng = np.random.default_rng(1)
    x, w = (rng.standard_normal(p.shape.dims).astype(np.float32)
            for p in module.entry.parameters)
    spmd = check(module, [x, w], propagate=True, rtol=1e-5, atol=1e-5)
    # partial sums -> rows over 8 devices (3 rows: all-reduce, then a free slice) ->
    # replicated: the all-reduced value is reused, no all-gather
    assert [row["kind"] for row in collective_table(spmd)] == ["all-reduce"]


MIXED_CHAIN = """HloModule mixed
ENTRY e {
  a = f32[16,32] parameter(0), sharding={devices=[2,4]<=[8]}
  b = f32[32,16] parameter(1), sharding={devices=[2,4]<=[8]}
  t = f32[16,32] tanh(a), sharding={devices=[4,2]<=[2,4]T(1,0)}
  bt = f32[16,32] transpose(b), dimensions={1,0}, sharding={devices=[4,2]<=[2,4]T(1,0)}
  m = f32[16,32] multiply(t, bt), sharding={devices=[4,2]<=[2,4]T(1,0)}
  ROOT r = f32[16,32] add(m, a), sharding={devices=[2,4]<=[8]}
}
"""


def test_mixed_shardings_in_an_elementwise_chain_reshard_the_odd_operand_once():
    module = parse_hlo(MIXED_CHAIN)
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal(p.shape.dims).astype(np.float32)
            for p in module.entry.parameters)
    spmd = check(module, [a, b], propagate=True, rtol=1e-5, atol=1e-5,
                 expected=[np.tanh(a) * b.T + a])
    # the chain stays in a's layout; only b.T (in the other layout) moves: the two pieces
    # of its tile a device lacks
    assert [row["kind"] for row in collective_table(spmd)] == ["collective-permute",
                                                               "collective-permute"]


JAX_ARG = """HloModule jax_arg
pick {
  a = {vt}[] parameter(0)
  i = s32[] parameter(1)
  b = {vt}[] parameter(2)
  j = s32[] parameter(3)
  better = pred[] compare(a, b), direction={dir}
  nan = pred[] compare(a, a), direction=NE
  pick_a = pred[] or(better, nan)
  v = {vt}[] select(pick_a, a, b)
  eq = pred[] compare(a, b), direction=EQ
  lt = pred[] compare(i, j), direction=LT
  tie = pred[] and(eq, lt)
  pick_i = pred[] or(pick_a, tie)
  k = s32[] select(pick_i, i, j)
  ROOT t = ({vt}[], s32[]) tuple(v, k)
}
ENTRY e {
  x = {vt}[6,{n}] parameter(0), sharding={devices=[1,4,2]<=[8] last_tile_dim_replicate}
  iota = s32[6,{n}] iota(), iota_dimension=1
  init = {vt}[] constant({init})
  zero = s32[] constant(0)
  r = ({vt}[6], s32[6]) reduce(x, iota, init, zero), dimensions={1}, to_apply=pick
  ROOT out = {out}
}
"""


def arg_reduce_case(kind, vt, n, out):
    """JAX's argmax/argmin reduce over a row sharded 4 ways, its result `out`, with ties,
    NaNs, -0.0, infinities and uneven shards; the module and its input."""
    big = {"f32": "inf", "bf16": "inf", "s32": "2147483647"}[vt]
    init = ("-" if kind == "argmax" else "") + big
    if vt == "s32" and kind == "argmax":
        init = "-2147483648"
    text = (JAX_ARG.replace("{out}", out).replace("{vt}", vt).replace("{n}", str(n))
            .replace("{init}", init))
    module = parse_hlo(text.replace("{dir}", "GT" if kind == "argmax" else "LT"))
    rng = np.random.default_rng(n)
    x = rng.integers(-3, 3, (6, n)).astype(np.float32)
    if vt != "s32":
        x[0, n // 2:] = np.nan          # the first NaN of the row wins, value NaN
        x[1, n - 1] = np.nan
        x[2] = -0.0
        x[2, n - 1] = 0.0                # -0.0 == 0.0: the lowest index wins
        x[3, 0] = -np.inf
        x[4, n - 1] = np.inf
    if vt == "bf16":
        import ml_dtypes
        x = x.astype(ml_dtypes.bfloat16)
    elif vt == "s32":
        x = x.astype(np.int32)
    return module, x


@pytest.mark.parametrize("kind", ["argmax", "argmin"])
@pytest.mark.parametrize("vt", ["f32", "bf16", "s32"])
@pytest.mark.parametrize("n", [16, 10, 3])
def test_jax_argmax_over_sharded_dim_is_one_all_reduce_of_packed_pairs(kind, vt, n):
    """Only the indices used (``jnp.argmax``): one s64 all-reduce of (value, index) pairs
    over the 4 devices holding parts of a row; ties go to the lowest index, the first NaN
    wins, -0.0 ties with 0.0."""
    module, x = arg_reduce_case(kind, vt, n, "s32[6] get-tuple-element(r), index=1")
    pick = np.argmax if kind == "argmax" else np.argmin
    index = pick(x.astype(np.float32), axis=1).astype(np.int32)
    spmd = check(module, [x], propagate=True, expected=[index], rtol=0, atol=0)
    rows = collective_table(spmd)
    assert [(r["kind"], r["dtype"], r["group_size"]) for r in rows] == [("all-reduce", "s64", 4)]
    assert totals(rows)["total"] == 2 * 3 / 4 * (6 * 8)


@pytest.mark.parametrize("kind", ["argmax", "argmin"])
@pytest.mark.parametrize("vt", ["f32", "bf16", "s32"])
@pytest.mark.parametrize("n", [16, 10, 3])
def test_arg_reduce_with_its_values_used_keeps_their_bits(kind, vt, n):
    """The values used too: float values keep the bits of the unpartitioned reduce (which
    -0.0 or NaN its fold meets), so they are gathered; integer values are still packed."""
    module, x = arg_reduce_case(kind, vt, n, "tuple(r)")
    spmd = check(module, [x], propagate=True, rtol=0, atol=0, bits=True)
    dtypes = [r["dtype"] for r in collective_table(spmd)]
    assert dtypes == (["s64"] if vt == "s32" else [vt, "s32"])


ONE_SIDED = """HloModule one_sided
ENTRY e {
  x = f32[{n},3] parameter(0), sharding={devices=[{shards},1{rep}]<=[8]{last}}
  zero = f32[] constant(-7)
  ROOT r = f32[{m},3] {op}, sharding={devices=[{shards},1{rep}]<=[8]{last}}
}
"""


@pytest.mark.parametrize("n, op, m, width", [
    # pad (3, 5) of 64 rows, 8 per device -> 9: device 6 reads 4 rows of device 7, device 1
    # two of device 0 (the sharded_pad JAX program)
    (64, "pad(x, zero), padding=3_5x0_0", 72, 4),
    # rows 3..26 of 30 (uneven: 4 per device), 3 per device: device 7 reads rows 24..26,
    # the last 4 of device 6 counted from its edge
    (30, "slice(x), slice={[3:27], [0:3]}", 24, 4),
    (30, "pad(x, zero), padding=2_-4x0_0", 28, 2),
])
@pytest.mark.parametrize("shards", [8, 4])
def test_pad_and_slice_needing_one_side_per_device_use_one_collective_permute(
        n, op, m, width, shards):
    """Each device needs rows from at most one neighbour: one collective-permute of the
    widest piece (sent rightwards from a shard's end, leftwards from its start), not one per
    side; the padding value fills the rows outside the operand."""
    rep = "" if shards == 8 else ",2"
    last = "" if shards == 8 else " last_tile_dim_replicate"
    module = parse_hlo(ONE_SIDED.replace("{n}", str(n)).replace("{m}", str(m))
                       .replace("{op}", op).replace("{shards}", str(shards))
                       .replace("{rep}", rep).replace("{last}", last))
    x = np.random.default_rng(n).standard_normal((n, 3)).astype(np.float32)
    spmd = check(module, [x], propagate=True, rtol=0, atol=0)
    rows = collective_table(spmd)
    if shards == 8:
        assert [(r["kind"], r["shape"]) for r in rows] == [
            ("collective-permute", f"f32[{width}, 3]")]
    else:  # 4 shards: some devices need both sides, halos still (one permute per side)
        assert {r["kind"] for r in rows} == {"collective-permute"}
