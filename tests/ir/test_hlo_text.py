# ruff: noqa: E501  (HLO text lines are as long as XLA prints them)
"""HLO text parser and printer: every op and attribute kind, golden spellings, errors.

The JAX-generated files are covered by test_hlo_roundtrip_jax.py; this file holds hand-written
modules (short and long print styles) and the error cases with their line and column.
"""

import numpy as np
import pytest

from xla_spmd.errors import ParseError
from xla_spmd.ir import (
    F32,
    OPS,
    ArrayShape,
    Builder,
    ComparisonType,
    Module,
    Precision,
    parse_hlo,
    print_instruction,
    print_module,
    verify,
)
from xla_spmd.ir.hlo_sharding import HloSharding

EVERY_OP = r"""HloModule every_op, replica_count=1, num_partitions=4

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT sum = f32[] add(x, y)
}

less {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT
}

cond {
  state = (s32[], f32[4]{0}) parameter(0)
  i = s32[] get-tuple-element(state), index=0
  limit = s32[] constant(3)
  ROOT more = pred[] compare(i, limit), direction=LT
}

body {
  state = (s32[], f32[4]{0}) parameter(0)
  i = s32[] get-tuple-element(state), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  v = f32[4]{0} get-tuple-element(state), index=1
  ROOT out = (s32[], f32[4]{0}) tuple(next, v)
}

negate_branch {
  p = f32[4]{0} parameter(0)
  ROOT n = f32[4]{0} negate(p)
}

copy_branch {
  p = f32[4]{0} parameter(0)
  ROOT c = f32[4]{0} copy(p)
}

fused {
  p0 = f32[4]{0} parameter(0)
  p1 = f32[4]{0} parameter(1)
  ROOT m = f32[4]{0} multiply(p0, p1)
}

ENTRY main {
  x = f32[4]{0} parameter(0), sharding={devices=[4]<=[4]}, metadata={op_name="x" source_file="a \"b\".py" source_line=3}
  i = s32[4]{0} parameter(1), frontend_attributes={_xla_key="va\"l",xla.sdy.meshes={mesh = #sdy.mesh<["data"=4]>}}
  z = c64[8]{0} parameter(2)
  m = f32[3,3]{1,0} parameter(3)
  b = f32[3,2]{1,0} parameter(4)
  img = f32[1,4,4,2]{3,2,1,0} parameter(5)
  kernel = f32[3,3,2,3]{3,2,1,0} parameter(6)
  sq = f32[4,4]{0,1} parameter(7)
  ints = s32[2,1]{1,0} parameter(8)
  table = f32[4,3]{1,0} parameter(9)
  state = u64[2]{0} parameter(10)
  scalar = f32[] parameter(11)
  flag = pred[] parameter(12)
  c0 = f32[] constant(0)
  c1 = f32[2,2]{1,0} constant({ { 1, 0.1 }, { 1e+10, -inf } })
  c2 = pred[3]{0} constant({1, 0, 1})
  c3 = c64[] constant((1, -2.5))
  c4 = (f32[], s32[2]{0}) constant(( 1, {2, 3} ))
  c5 = bf16[2]{0} constant({nan, -nan})
  c6 = u64[] constant(18446744073709551615)
  c7 = f16[2,1,1,2]{3,2,1,0} constant({ { /*i0=0*/ { /*i1=0*/ { 1, 2 } } }, { /*i0=1*/ { /*i1=0*/ { 3, 4 } } } })
  iota = s32[4,3]{1,0} iota(), iota_dimension=1
  pid = u32[] partition-id()
  rid = u32[] replica-id()
  tok = token[] after-all()
  tok2 = token[] after-all(tok, tok)
  abs = f32[4]{0} abs(x)
  negate = f32[4]{0} negate(x)
  exponential = f32[4]{0} exponential(x)
  expm1 = f32[4]{0} exponential-minus-one(x)
  log = f32[4]{0} log(x)
  log1p = f32[4]{0} log-plus-one(x)
  sqrt = f32[4]{0} sqrt(x)
  rsqrt = f32[4]{0} rsqrt(x)
  cbrt = f32[4]{0} cbrt(x)
  tanh = f32[4]{0} tanh(x)
  logistic = f32[4]{0} logistic(x)
  sine = f32[4]{0} sine(x)
  cosine = f32[4]{0} cosine(x)
  tan = f32[4]{0} tan(x)
  floor = f32[4]{0} floor(x)
  ceil = f32[4]{0} ceil(x)
  rne = f32[4]{0} round-nearest-even(x)
  rafz = f32[4]{0} round-nearest-afz(x)
  sign = f32[4]{0} sign(x)
  not = s32[4]{0} not(i)
  finite = pred[4]{0} is-finite(x)
  popcnt = s32[4]{0} popcnt(i)
  clz = s32[4]{0} count-leading-zeros(i)
  real = f32[8]{0} real(z)
  imag = f32[8]{0} imag(z)
  erf = f32[4]{0} erf(x)
  copy = f32[4]{0} copy(x), control-predecessors={erf}
  add = f32[4]{0} add(x, x)
  subtract = f32[4]{0} subtract(x, x)
  multiply = f32[4]{0} multiply(x, x)
  divide = f32[4]{0} divide(x, x)
  remainder = f32[4]{0} remainder(x, x)
  power = f32[4]{0} power(x, x)
  maximum = f32[4]{0} maximum(x, x)
  minimum = f32[4]{0} minimum(x, x)
  and = s32[4]{0} and(i, i)
  or = s32[4]{0} or(i, i)
  xor = s32[4]{0} xor(i, i)
  shl = s32[4]{0} shift-left(i, i)
  sra = s32[4]{0} shift-right-arithmetic(i, i)
  srl = s32[4]{0} shift-right-logical(i, i)
  atan2 = f32[4]{0} atan2(x, x)
  complex = c64[4]{0} complex(x, x)
  compare = pred[4]{0} compare(x, x), direction=GE, type=TOTALORDER
  select = f32[4]{0} select(finite, x, x)
  clamp = f32[4]{0} clamp(c0, x, c0)
  convert = s32[4]{0} convert(x)
  bcc = s32[4]{0} bitcast-convert(x)
  rp = f32[4]{0} reduce-precision(x), exponent_bits=5, mantissa_bits=10
  broadcast = f32[4,3]{1,0} broadcast(x), dimensions={0}
  reshape = f32[2,2]{1,0} reshape(x)
  bitcast = s32[2,2]{1,0} bitcast(x)
  transpose = f32[4,4]{1,0} transpose(sq), dimensions={1,0}
  reverse = f32[4]{0} reverse(x), dimensions={0}
  slice = f32[2]{0} slice(x), slice={[0:4:2]}
  slice2 = f32[2,2]{1,0} slice(sq), slice={[1:3], [0:2]}
  i0 = s32[] constant(1)
  ds = f32[2]{0} dynamic-slice(x, i0), dynamic_slice_sizes={2}
  dus = f32[4]{0} dynamic-update-slice(x, ds, i0)
  concatenate = f32[8]{0} concatenate(x, x), dimensions={0}
  pad = f32[8]{0} pad(x, c0), padding=1_0_1
  pad2 = f32[6,4]{1,0} pad(sq, c0), padding=1_1x-1_1
  gds = s32[] get-dimension-size(x), dimensions={0}
  reduce = f32[] reduce(x, c0), dimensions={0}, to_apply=add
  rw = f32[2,2]{1,0} reduce-window(sq, c0), window={size=2x2 stride=2x2}, to_apply=add
  rw2 = f32[8,5]{1,0} reduce-window(sq, c0), window={size=2x2 pad=1_1x1_1 lhs_dilate=2x1}, to_apply=add
  src = f32[2,2]{1,0} slice(sq), slice={[0:2], [0:2]}
  sas = f32[4,4]{1,0} select-and-scatter(sq, src, c0), window={size=2x2 stride=2x2}, select=less, scatter=add
  dot = f32[4,4]{1,0} dot(sq, sq), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={high,highest}, algorithm=dot_tf32_tf32_f32
  bdot = f32[4]{0} dot(sq, sq), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  conv = f32[1,4,4,3]{3,2,1,0} convolution(img, kernel), window={size=3x3 pad=1_1x1_1 rhs_reversal=0x1}, dim_labels=b01f_01io->b01f
  gather = f32[2,3]{1,0} gather(table, ints), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}, indices_are_sorted=true
  upd = f32[2,3]{1,0} slice(table), slice={[0:2], [0:3]}
  scatter = f32[4,3]{1,0} scatter(table, ints, upd), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, unique_indices=true, to_apply=add
  sort = f32[4]{0} sort(x), dimensions={0}, is_stable=true, to_apply=less
  topk = (f32[4,2]{1,0}, s32[4,2]{1,0}) topk(table), k=2, largest=true
  fft = c64[8]{0} fft(z), fft_type=FFT, fft_length={8}
  rfft = c64[3]{0} fft(x), fft_type=RFFT, fft_length={4}
  chol = f32[3,3]{1,0} cholesky(m), lower=true
  trsm = f32[3,2]{1,0} triangular-solve(m, b), left_side=true, lower=true, transpose_a=NO_TRANSPOSE
  x2 = f32[2]{0} slice(x), slice={[0:2]}
  bni = f32[3,2]{1,0} batch-norm-inference(b, x2, x2, x2, x2), epsilon=0.001, feature_index=1
  bnt = (f32[3,2]{1,0}, f32[2]{0}, f32[2]{0}) batch-norm-training(b, x2, x2), epsilon=1e-05, feature_index=1
  bng = (f32[3,2]{1,0}, f32[2]{0}, f32[2]{0}) batch-norm-grad(b, x2, x2, x2, b), epsilon=0.1, feature_index=1
  zero = s32[] constant(0)
  init = (s32[], f32[4]{0}) tuple(zero, x)
  while = (s32[], f32[4]{0}) while(init), condition=cond, body=body, backend_config={"known_trip_count":{"n":"3"}}
  gte = f32[4]{0} get-tuple-element(while), index=1
  if = f32[4]{0} conditional(flag, x, x), true_computation=negate_branch, false_computation=copy_branch
  switch = f32[4]{0} conditional(i0, x, x), branch_computations={negate_branch, copy_branch}
  call = f32[4]{0} call(x), to_apply=negate_branch
  fusion = f32[4]{0} fusion(x, x), kind=kLoop, calls=fused
  map = f32[4]{0} map(x, x), dimensions={0}, to_apply=add
  barrier = (s32[], f32[4]{0}) opt-barrier(init)
  rbg = (u64[2]{0}, u32[4]{0}) rng-bit-generator(state), algorithm=rng_three_fry
  rng = f32[4]{0} rng(c0, scalar), distribution=rng_uniform
  infeed = ((f32[4]{0}, s32[]), token[]) infeed(tok), infeed_config="feed"
  fed = (f32[4]{0}, s32[]) get-tuple-element(infeed), index=0
  outfeed = token[] outfeed(fed, tok2), outfeed_shape=(f32[4]{0}, s32[]), outfeed_config="out"
  ar = f32[4]{0} all-reduce(x), channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=add
  ar_mesh = f32[4]{0} all-reduce(x), channel_id=2, replica_groups=mesh['a'=2,'b'=2] {'b'}, use_global_device_ids=true, to_apply=add
  ar_ids = f32[4]{0} all-reduce(x), channel_id=3, replica_groups=mesh['a'=2,'b'=2], device_ids=([2,2]T(1,0)) {'a'}, use_global_device_ids=true, to_apply=add
  ag = f32[8]{0} all-gather(x), channel_id=4, replica_groups=[2,2]<=[4], dimensions={0}, use_global_device_ids=true
  rs = f32[2]{0} reduce-scatter(x), channel_id=5, replica_groups=[2,2]<=[2,2]T(1,0), use_global_device_ids=true, dimensions={0}, to_apply=add
  a2a = f32[4]{0} all-to-all(x), channel_id=6, replica_groups={{0,1,2,3}}, dimensions={0}
  cp = f32[4]{0} collective-permute(x), channel_id=7, source_target_pairs={{0,1},{1,0}}
  cb = f32[4]{0} collective-broadcast(x), replica_groups={}
  ars = f32[4]{0} all-reduce-start(x), channel_id=8, replica_groups={{0,1,2,3}}, to_apply=add
  ard = f32[4]{0} all-reduce-done(ars)
  ags = (f32[4]{0}, f32[8]{0}) all-gather-start(x), replica_groups={{0,1},{2,3}}, dimensions={0}
  agd = f32[8]{0} all-gather-done(ags)
  cps = (f32[4]{0}, f32[4]{0}, u32[], u32[]) collective-permute-start(x), channel_id=9, source_target_pairs={{0,1}}
  cpd = f32[4]{0} collective-permute-done(cps)
  as = ((f32[4]{0}), f32[4]{0}, s32[]) async-start(x), calls=negate_branch
  ad = f32[4]{0} async-done(as), calls=negate_branch
  cs = (f32[4]{0}, f32[4]{0}, u32[]) copy-start(x)
  cd = f32[4]{0} copy-done(cs)
  cc = (f32[4]{0}, s32[]) custom-call(x, i0), custom_call_target="my\"target", custom_call_has_side_effect=true, api_version=API_VERSION_TYPED_FFI, called_computations={add}, sharding={{replicated}, {maximal device=0}}, backend_config="cfg"
  ROOT out = (f32[4]{0}, s32[4]{0}, f32[4]{0}) tuple(x, convert, ard)
}
"""


@pytest.fixture(scope="module")
def every_op():
    return parse_hlo(EVERY_OP, "every_op.hlo")


def opcodes(module: Module) -> set[str]:
    return {i.op.name for c in module.computations for i in c.instructions}


def test_every_op_is_covered(every_op):
    assert set(OPS) - opcodes(every_op) == set()


def test_every_op_round_trips(every_op):
    text = print_module(every_op)
    again = parse_hlo(text)
    assert again == every_op
    assert print_module(again) == text
    verify(again)


def test_every_op_prints_as_written(every_op):
    assert print_module(every_op).strip() == EVERY_OP.strip()


def test_typed_attribute_values(every_op):
    main = every_op.entry
    assert main.instruction("compare").attrs.type is ComparisonType.TOTALORDER
    assert main.instruction("dot").attrs.operand_precision == (Precision.HIGH,
                                                               Precision.HIGHEST)
    assert main.instruction("ar_mesh").attrs.replica_groups.groups == ((0, 1), (2, 3))
    assert main.instruction("ar_ids").attrs.replica_groups.groups == ((0, 1), (2, 3))
    assert main.instruction("ar_mesh").attrs.replica_groups == \
        main.instruction("ar").attrs.replica_groups
    assert main.instruction("rs").attrs.replica_groups.groups == ((0, 2), (1, 3))
    conv = main.instruction("conv").attrs
    assert conv.dim_labels.to_labels() == "b01f_01io->b01f"
    assert [d.reversal for d in conv.window.dims] == [False, True]
    assert main.instruction("cc").attrs.custom_call_target == 'my"target'
    assert main.instruction("cc").extras == (("backend_config", '"cfg"'),)
    assert main.instruction("x").extras[0][0] == "metadata"
    assert main.instruction("i").frontend_attributes == (
        ("_xla_key", 'va"l'), ("xla.sdy.meshes", '{mesh = #sdy.mesh<["data"=4]>}'))
    assert main.instruction("copy").extras == (("control-predecessors", "{erf}"),)
    assert str(main.instruction("x").sharding) == "{devices=[4]<=[4]}"
    assert isinstance(main.instruction("x").sharding, HloSharding)
    assert main.instruction("sq").shape.layout == (0, 1)
    assert main.instruction("table").shape.layout is None  # the default layout
    assert main.instruction("c4").attrs.literal.value[1].value.tolist() == [2, 3]
    assert every_op.header == (("replica_count", "1"), ("num_partitions", "4"))


LONG = """HloModule long, entry_computation_layout={(f32[2,3]{1,0})->f32[3,2]{0,1}}

%add.1 (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %add = f32[] add(%x, %y)
}

ENTRY %main (p.0: f32[2,3], p.1: f32[2,3], p.2: f32[2,3], p.3: f32[2,3], p.4: f32[2,3], p.5: f32[2,3]) -> (f32[3,2], f32[3], f32[2,3], f32[2,3], f32[2,3], /*index=5*/f32[2,3]) {
  %p.0 = f32[2,3]{1,0} parameter(0)
  %p.1 = f32[2,3]{1,0} parameter(1)
  %p.2 = f32[2,3]{1,0} parameter(2)
  %p.3 = f32[2,3]{1,0} parameter(3)
  %p.4 = f32[2,3]{1,0} parameter(4)
  %p.5 = f32[2,3]{1,0} parameter(5)
  %t = f32[3,2]{0,1} transpose(%p.0), dimensions={1,0}
  %zero = f32[] constant(0)
  %r = f32[3]{0} reduce(%p.0, %zero), dimensions={0}, to_apply=%add.1
  ROOT %tuple = (f32[3,2]{0,1}, f32[3]{0}, f32[2,3]{1,0}, f32[2,3]{1,0}, f32[2,3]{1,0}, /*index=5*/f32[2,3]{1,0}) tuple(%t, %r, %p.1, %p.2, %p.3, /*index=5*/%p.5)
}, execution_thread="main"
"""


def test_long_style_prints_as_written():
    module = parse_hlo(LONG)
    assert print_module(module).strip() == LONG.strip()
    assert ("execution_thread", '"main"') in module.entry.extras
    assert parse_hlo(print_module(module)) == module


def test_callers_before_callees_and_typed_operands():
    text = """HloModule m
ENTRY %main (a: f32[2]) -> f32[] {
  %a = f32[2]{0} parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[] reduce(f32[2]{0} %a, f32[] %z), dimensions={0}, to_apply=%sum // comment
}
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}
"""
    module = parse_hlo(text)
    assert [c.name for c in module.computations] == ["sum", "main"]
    assert module.entry.name == "main"
    assert parse_hlo(print_module(module)) == module


def test_forward_references_are_ordered():
    module = parse_hlo("""HloModule m
ENTRY e {
  ROOT n = f32[2] negate(x)
  x = f32[2] parameter(0)
}""")
    assert [i.name for i in module.entry.instructions] == ["x", "n"]
    assert module.entry.root.name == "n"


def test_print_instruction_follows_the_computation_style(every_op):
    main = every_op.entry
    inst = main.instruction("ar")
    assert print_instruction(inst, main) == (
        "ar = f32[4]{0} all-reduce(x), channel_id=1, replica_groups={{0,1},{2,3}}, "
        "use_global_device_ids=true, to_apply=add")
    assert print_instruction(inst).startswith("%ar = f32[4]{0} all-reduce(%x), ")


def test_builder_module_golden():
    b = Builder("main")
    a = b.parameter(ArrayShape(F32, (2, 3)), "a")
    c = b.parameter(ArrayShape(F32, (3, 4)), "b")
    d = b.dot(a, c, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,), name="dot")
    module = Module.from_entry("m", b.build(d))
    assert print_instruction(d) == ("%dot = f32[2,4]{1,0} dot(%a, %b), "
                                    "lhs_contracting_dims={1}, rhs_contracting_dims={0}")
    assert print_module(module) == """HloModule m

ENTRY main {
  a = f32[2,3]{1,0} parameter(0)
  b = f32[3,4]{1,0} parameter(1)
  ROOT dot = f32[2,4]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    assert parse_hlo(print_module(module)) == module


GOLDEN = [
    ("f32[4]{0} transpose(x), dimensions={0}", None),
    ("f32[2]{0} slice(x), slice={[0:4:2]}", None),
    ("f32[8]{0} pad(x, c), padding=1_0_1", None),
    ("f32[4]{0} reduce-window(x, c), window={size=3 pad=1_1}, to_apply=add", None),
    ("pred[4]{0} compare(x, x), direction=EQ", None),
    ("f32[4]{0} all-reduce(x), replica_groups=[1,4]<=[4], to_apply=add", None),
    ("f32[] constant(0.1)", None),
    ("f32[3]{0} constant({1, 2.5, -0})", None),
    ("f32[3]{0} slice(x), slice={[0:3:1]}", "f32[3]{0} slice(x), slice={[0:3]}"),
    ("f32[4]{0} sort(x), dimensions={0}, is_stable=false, to_apply=less",
     "f32[4]{0} sort(x), dimensions={0}, to_apply=less"),
    ("pred[] constant(1)", "pred[] constant(true)"),
    ("f32[] constant(1.000)", "f32[] constant(1)"),
    ("f32[4]{0} reduce-window(x, c), window={size=3 stride=1 pad=0_0}, to_apply=add",
     "f32[2]{0} reduce-window(x, c), window={size=3}, to_apply=add"),
]


@pytest.mark.parametrize("line,expected", GOLDEN)
def test_golden_spelling(line, expected):
    if expected is not None and "reduce-window" in line:
        line = line.replace("f32[4]{0} reduce-window", "f32[2]{0} reduce-window")
    text = f"""HloModule m
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}
less {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = pred[] compare(a, b), direction=LT
}}
ENTRY e {{
  x = f32[4]{{0}} parameter(0)
  c = f32[] constant(0)
  ROOT r = {line}
}}"""
    module = parse_hlo(text)
    printed = print_module(module)
    assert f"  ROOT r = {expected or line}\n" in printed
    assert parse_hlo(printed) == module


def test_stack_frames_and_header_kept():
    text = """HloModule m, is_scheduled=true, entry_computation_layout={(f32[2]{0})->f32[2]{0}}

FileNames
1 "a.py"

StackFrames
1 {file_location_id=1 parent_frame_id=1}


ENTRY %e (x: f32[2]) -> f32[2] {
  ROOT %x = f32[2]{0} parameter(0), metadata={op_name="x" stack_frame_id=1}
}
"""
    module = parse_hlo(text)
    assert print_module(module) == text
    assert module.header[0] == ("is_scheduled", "true")


@pytest.mark.parametrize("sharding, column, message", [
    ("{devices=[3]0,1}", 60, "tile assignment [3] needs 3 devices but lists 2"),
    ("{foo}", 46, "unknown sharding attribute 'foo'"),
    ("{frobnicated 3}", 46, "unknown sharding attribute 'frobnicated'"),
    ("{maximal device=-1}", 46, "device must be a non-negative device id, got device=-1"),
])
def test_invalid_sharding_is_a_parse_error(sharding, column, message):
    text = f"""HloModule m
ENTRY e {{
  ROOT x = f32[2]{{0}} parameter(0), sharding={sharding}
}}"""
    with pytest.raises(ParseError) as info:
        parse_hlo(text, filename="m.hlo")
    assert (info.value.file, info.value.line, info.value.column) == ("m.hlo", 3, column)
    assert message in info.value.message and "%x" in info.value.message
    assert str(info.value).startswith(f"m.hlo:3:{column}: ")


@pytest.mark.parametrize("numbers, message", [
    ((0, 0), "parameter number 0 of %p1 is already used by %p0 in computation e"),
    ((0, 2), "parameter number 2 of %p1 is out of range: computation e has 2 parameters"),
    ((-1, 0), "parameter number -1 of %p0 is out of range"),
])
def test_parameter_numbers_must_be_0_to_n(numbers, message):
    first, second = numbers
    text = f"""HloModule m
ENTRY e {{
  p0 = f32[4] parameter({first})
  p1 = f32[4] parameter({second})
  ROOT a = f32[4] add(p0, p1)
}}"""
    with pytest.raises(ParseError) as info:
        parse_hlo(text, filename="m.hlo")
    assert message in info.value.message
    line = 3 if "%p0" in message.split(" is ")[0] else 4
    assert (info.value.line, info.value.column) == (line, 3)


def test_parameters_numbered_out_of_text_order_are_fine():
    module = parse_hlo("""HloModule m
ENTRY e {
  p1 = f32[4] parameter(1)
  p0 = f32[4] parameter(0)
  ROOT a = f32[4] subtract(p0, p1)
}""")
    assert [p.name for p in module.entry.parameters] == ["p0", "p1"]


@pytest.mark.parametrize("groups, message", [
    ("{{0,1},{1,2}}", "id 1 appears in groups {0,1} and {1,2}"),
    ("{{0,0}}", "id 0 appears twice in group {0,0}"),
    ("{{0,1},{}}", "mix empty and non-empty groups"),
])
def test_replica_groups_must_not_overlap(groups, message):
    text = f"""HloModule m
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}
ENTRY e {{
  p = f32[4] parameter(0)
  ROOT ar = f32[4] all-reduce(p), replica_groups={groups}, to_apply=add
}}"""
    with pytest.raises(ParseError) as info:
        parse_hlo(text, filename="m.hlo")
    assert message in info.value.message and "ar" in info.value.message
    assert info.value.line == 9


def test_verifier_rejects_overlapping_replica_groups():
    from xla_spmd.errors import VerifyError
    from xla_spmd.ir import F32, ArrayShape, Builder, Module, ReplicaGroups, verify

    add = Builder("add")
    a, b = (add.parameter(ArrayShape(F32, ()), n) for n in "ab")
    add = add.build(add.add(a, b))
    entry = Builder("e")
    x = entry.parameter(ArrayShape(F32, (2,)), "x")
    with pytest.raises(VerifyError, match=r"id 1 appears in groups \{0,1\} and \{1,2\}"):
        verify(Module.from_entry("m", entry.build(entry.all_reduce(
            x, to_apply=add, replica_groups=ReplicaGroups.listed([[0, 1], [1, 2]])))))


def test_collective_permute_sources_and_targets_are_unique():
    text = """HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  ROOT cp = f32[4] collective-permute(p), source_target_pairs={{0,1},{0,2}}
}"""
    with pytest.raises(ParseError, match="source 0 appears in more than one pair"):
        parse_hlo(text)


def test_constant_values():
    module = parse_hlo("""HloModule m
ENTRY e {
  a = f32[2,2] constant({{1,2},{3,4}})
  ROOT b = f32[2,2]{1,0} add(a, a)
}""")
    np.testing.assert_array_equal(module.entry.instruction("a").attrs.literal.value,
                                  [[1, 2], [3, 4]])


# ---------------------------------------------------------------------------------------------
# Errors: line, column and message

HEAD = "HloModule m\nENTRY e {\n  x = f32[2,3]{1,0} parameter(0)\n"
ERRORS = [
    (HEAD + "  ROOT y = f32[2,3]{1,0} negate(x foo)\n}", 4, 35,
     "expected ',' or ')' after operand, found 'foo'"),
    (HEAD + "  ROOT y = f32[2,3]{1,0} frobnicate(x)\n}", 4, 26, "unknown opcode 'frobnicate'"),
    (HEAD + "  ROOT y = f32[2,3]{1,0} negate(w)\n}", 4, 33,
     "unknown instruction %w used as operand of %y"),
    (HEAD + "  ROOT y = f32[3,2]{1,0} transpose(x), dimension={1,0}\n}", 4, 40,
     "'transpose' has no attribute 'dimension'"),
    (HEAD + "  ROOT y = f32[3,3]{1,0} negate(x)\n}", 4, 8, "differs from the inferred"),
    (HEAD + "  ROOT y = f32[2,3]{1,0} constant({...})\n}", 4, 35,
     "constant elided by the printer cannot be parsed"),
    (HEAD + "  ROOT y = f32[2]{0} constant({1, 2, 3})\n}", 4, 39,
     "expected 2 elements in this dimension, found 3"),
    (HEAD + "  ROOT y = f32[2,3]{1,0} reduce(x, x), dimensions={0}, to_apply=nope\n}", 4, 65,
     "unknown computation nope"),
    (HEAD + "  ROOT y = f32[3,2]{1,0} transpose(x), dimensions={1 0}\n}", 4, 54,
     "expected '}' or ',' in a list of integers, found '0'"),
    (HEAD + "  ROOT y = g32[2,3]{1,0} negate(x)\n}", 4, 12, "unknown element type 'g32'"),
    (HEAD + "  ROOT y = f32[<=2,3]{1,0} negate(x)\n}", 4, 16, "dynamic dimensions"),
    (HEAD + "  ROOT y = pred[2,3]{1,0} compare(x, x), direction=LTE\n}", 4, 52,
     "'LTE' is not a valid 'direction'"),
    (HEAD + "  ROOT y = f32[2,3]{1,0} negate(x), metadata={op_name=\"a}\n}", 4, 55,
     "unterminated string"),
    ("HloModul m\n", 1, 1, "expected 'HloModule'"),
    (HEAD + "  x = f32[2,3]{1,0} negate(x)\n}", 4, 3, "instruction name x is used twice"),
    (HEAD + "  ROOT y f32[2,3]{1,0} negate(x)\n}", 4, 10,
     "expected '=' after instruction name y, found 'f32'"),
    ("HloModule m\nc {\n  ROOT x = f32[] call(), to_apply=c\n}", 3, 35,
     "computation c calls itself"),
    (HEAD + "  ROOT y = f32[2,3]{1,0} all-reduce(x), replica_group={}, to_apply=c\n}", 4, 41,
     "'all-reduce' has no attribute 'replica_group'; did you mean 'replica_groups'?"),
    (HEAD + "  ROOT y = f32[2,3]{2,0} negate(x)\n}", 4, 12, "not a permutation"),
]


@pytest.mark.parametrize("text,line,column,message", ERRORS)
def test_errors_name_line_and_column(text, line, column, message):
    with pytest.raises(ParseError) as info:
        parse_hlo(text, "bad.hlo")
    error = info.value
    assert message in error.message
    assert (error.line, error.column) == (line, column), str(error)
    assert error.file == "bad.hlo"
    assert error.source_line == text.splitlines()[line - 1]


def test_omitted_shape_in_a_reducer_is_inferred():
    from xla_spmd.backends.reference import evaluate

    module = parse_hlo("""HloModule m
min_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT min = minimum(a, b)
}
ENTRY e {
  p = f32[4] parameter(0)
  init = f32[] constant(inf)
  ROOT r = f32[] reduce(p, init), dimensions={0}, to_apply=min_f32
}""")
    reducer = next(c for c in module.computations if c.name == "min_f32")
    assert str(reducer.root.shape) == "f32[]"
    assert evaluate(module, [np.array([3, 1, 2, 5], np.float32)]) == 1.0


def test_omitted_shape_with_a_sharding_is_checked_once_inferred():
    """XLA's ReshardCrash test: ``copy = copy(p), sharding=...`` with the shape left out."""
    module = parse_hlo("""HloModule m
ENTRY e {
  p = f32[8,32,4] parameter(0), sharding={devices=[4,2,1]0,2,1,3,4,6,5,7}
  ROOT copy = copy(p), sharding={devices=[2,2,2]<=[8]}
}""")
    assert str(module.entry.root.shape) == "f32[8,32,4]"
    assert str(module.entry.root.sharding) == "{devices=[2,2,2]<=[8]}"
    with pytest.raises(ParseError, match=r"4:8: %c: .*of rank 1"):
        parse_hlo("HloModule m\nENTRY e {\n  p = f32[8] parameter(0)\n"
                  "  ROOT c = copy(p), sharding={devices=[2,2]<=[4]}\n}")


def test_omitted_shape_of_a_parameter_is_an_error():
    with pytest.raises(ParseError, match=r"3:7: parameter p needs its shape"):
        parse_hlo("HloModule m\nENTRY e {\n  p = parameter(0)\n}")



@pytest.mark.parametrize("opcode", ["partition-id", "replica-id"])
@pytest.mark.parametrize("written", ["s32[]", "u32[]", "f32[4]"])
def test_partition_and_replica_id_ignore_the_written_shape(opcode, written):
    """XLA's parser builds partition-id and replica-id as u32[] whatever shape is written
    (its ManualPartitionId test writes ``s32[] partition-id()``); printed back as u32[]."""
    module = parse_hlo(f"HloModule m\nENTRY e {{\n  ROOT i = {written} {opcode}()\n}}")
    assert str(module.entry.root.shape) == "u32[]"
    assert "ROOT i = u32[] " + opcode + "()" in print_module(module)
    verify(module)

SUB_AXIS_GROUPS = """HloModule m, num_partitions=8

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}

ENTRY e {
  p = f32[4]{0} parameter(0)
  ROOT r = f32[4]{0} all-reduce(p), channel_id=1, replica_groups=GROUPS, use_global_device_ids=true, to_apply=add
}
"""


@pytest.mark.parametrize("groups, expected", [
    # 'x' = 4 splits into (1)2 (major) and (2)2 (minor); device = 2 * x + y.
    ("mesh['x'=4,'y'=2] {'x':(2)2}", ((0, 2), (1, 3), (4, 6), (5, 7))),
    ("mesh['x'=4,'y'=2] {'x':(1)2}", ((0, 4), (1, 5), (2, 6), (3, 7))),
    ("mesh['x'=4,'y'=2] {'y','x':(2)2}", ((0, 2, 1, 3), (4, 6, 5, 7))),
    ("mesh['x'=4,'y'=2], device_ids=([2,4]T(1,0)) {'x':(2)2}",
     ((0, 1), (4, 5), (2, 3), (6, 7))),
])
def test_mesh_replica_groups_with_sub_axes(groups, expected):
    text = SUB_AXIS_GROUPS.replace("GROUPS", groups)
    module = parse_hlo(text)
    assert module.entry.root.attrs.replica_groups.explicit == expected
    assert print_module(module).strip() == text.strip()


def test_mesh_replica_group_sub_axis_must_divide_its_axis():
    with pytest.raises(ParseError, match=r"sub-axis 'x':\(3\)2 does not divide mesh axis 'x'"):
        parse_hlo(SUB_AXIS_GROUPS.replace("GROUPS", "mesh['x'=4,'y'=2] {'x':(3)2}"))


@pytest.mark.parametrize("dtype, values, doubled", [
    ("s2", "{1, -2, 0, -1}", [-2, 0, 0, -2]),           # 2-bit integers wrap around
    ("u2", "{3, 0, 1, 2}", [2, 0, 2, 0]),
    ("f8e3m4", "{1, 0.5, -2, 3.5}", [2, 1, -4, 7]),
    ("f8e4m3", "{1, 0.5, -2, 3.5}", [2, 1, -4, 7]),
    ("f6e2m3fn", "{1, 0.5, -2, 3}", [2, 1, -4, 6]),
    ("f6e3m2fn", "{1, 0.5, -2, 3}", [2, 1, -4, 6]),
    ("f4e2m1fn", "{1, 0.5, -2, 3}", [2, 1, -4, 6]),     # 6 is the largest f4e2m1fn
    ("f8e8m0fnu", "{1, 0.5, 2, 4}", [2, 1, 4, 8]),      # powers of two only
])
def test_narrow_element_types(dtype, values, doubled):
    from xla_spmd.backends.reference import evaluate

    text = f"HloModule m\n\nENTRY e {{\n  c = {dtype}[4]{{0}} constant({values})\n" \
           f"  ROOT a = {dtype}[4]{{0}} add(c, c)\n}}\n"
    module = parse_hlo(text)
    assert print_module(module).strip() == text.strip()
    np.testing.assert_array_equal(np.asarray(evaluate(module, [])).astype(np.float64), doubled)


def test_sub_axis_replica_groups_run_on_devices():
    from xla_spmd.backends.reference import evaluate_spmd

    module = parse_hlo(SUB_AXIS_GROUPS.replace("GROUPS", "mesh['x'=4,'y'=2] {'x':(2)2}"))
    inputs = [[np.full(4, 10.0 ** d, np.float32)] for d in range(8)]
    results = evaluate_spmd(module, inputs, 8)
    # groups {0, 2}, {1, 3}, {4, 6}, {5, 7}
    partner = {0: 2, 2: 0, 1: 3, 3: 1, 4: 6, 6: 4, 5: 7, 7: 5}
    for device, result in enumerate(results):
        np.testing.assert_array_equal(result, np.full(4, 10.0 ** device + 10.0 ** partner[device],
                                                      np.float32))
