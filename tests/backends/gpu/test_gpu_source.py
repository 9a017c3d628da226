"""The CUDA C the GPU backend generates, checked without a GPU: every elementwise op x dtype
the fusions admit renders, hand-checked forms of the edge-case semantics, every fusion kind,
and all of it compiled to PTX by NVRTC (from its PyPI wheel; no GPU or driver is needed, and
the PTX tests are skipped where NVRTC is not installed)."""

import itertools
import re

import pytest

from xla_spmd.backends.cpu.fusion import fuse
from xla_spmd.backends.gpu import compiler
from xla_spmd.backends.gpu.emitter import render_source
from xla_spmd.backends.gpu.renderer import SUPPORTED, supports_instruction
from xla_spmd.errors import XlaSpmdError
from xla_spmd.ir import ArrayShape, Builder, DType, Family, Module
from xla_spmd.ir.attributes import ComparisonDirection, ComparisonType
from xla_spmd.ir.hlo_parser import parse_hlo
from xla_spmd.ir.ops import OPS

try:
    compiler.nvrtc()
    HAVE_NVRTC = True
except XlaSpmdError:
    HAVE_NVRTC = False
needs_nvrtc = pytest.mark.skipif(not HAVE_NVRTC, reason="NVRTC (nvidia-cuda-nvrtc-cu12) absent")

DTYPES = sorted(SUPPORTED, key=lambda d: d.name)
_SPECIAL = ("compare", "convert", "bitcast-convert", "select", "clamp")


def _try(b: Builder, opcode: str, *operands, **attrs):
    try:
        inst = b.op(opcode, *operands, **attrs)
    except Exception:  # noqa: BLE001 -- shape inference refuses the combination
        return None
    return inst if supports_instruction(inst, libm=True) else None


def _cases_for(dtype: DType) -> tuple[Module, list[str]]:
    """One module whose root tuple holds every elementwise op on ``dtype`` operands that the
    fusions admit (compare in every direction and type, convert and bitcast-convert to every
    target), and the names of those instructions."""
    b = Builder(f"ops_{dtype.name}")
    shape = ArrayShape(dtype, (2, 3))
    x, y, z = (b.parameter(shape, n) for n in "xyz")
    p = b.parameter(ArrayShape(DType.named("pred"), (2, 3)), "p")
    found = []
    for name, op in sorted(OPS.items()):
        if op.family not in (Family.UNARY, Family.BINARY, Family.ELEMENTWISE) or (
                name in _SPECIAL):
            continue
        operands = (x,) if op.family is Family.UNARY else (x, y)
        found.append(_try(b, name, *operands))
    for direction, kind in itertools.product(("EQ", "NE", "LT", "LE", "GT", "GE"),
                                             (None, "FLOAT", "TOTALORDER", "SIGNED",
                                              "UNSIGNED")):
        attrs = {"direction": ComparisonDirection[direction]} | (
            {"type": ComparisonType[kind]} if kind else {})
        found.append(_try(b, "compare", x, y, **attrs))
    for target in DTYPES:
        out = ArrayShape(target, (2, 3))
        found.append(_try(b, "convert", x, shape=out))
        if target.bits == dtype.bits:
            found.append(_try(b, "bitcast-convert", x, shape=out))
    found.append(_try(b, "select", p, x, y))
    found.append(_try(b, "clamp", x, y, z))
    found = [inst for inst in found if inst is not None]
    return Module.from_entry("m", b.build(b.tuple(*found))), [i.name for i in found]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_every_admitted_elementwise_op_renders_as_its_own_kernel(dtype):
    module, names = _cases_for(dtype)
    assert len(names) > 5
    fusions, _ = fuse(module.entry, libm=True)
    assert sorted(f.root.name for f in fusions) == sorted(names)
    source = render_source(fusions)
    assert source.count('extern "C" __global__ void') == len(names)
    for fusion in fusions:
        assert f"void {fusion.name}(" in source


@needs_nvrtc
def test_every_elementwise_kernel_compiles_to_ptx_with_nvrtc():
    sources = []
    for dtype in DTYPES:
        module, _ = _cases_for(dtype)
        fusions, _ = fuse(module.entry, prefix=f"{dtype.name}_", libm=True)
        sources.append(render_source(fusions))
    prelude_end = sources[0].index('extern "C"')
    combined = sources[0] + "".join(s[prelude_end:] for s in sources[1:])
    ptx = compiler.compile_ptx(combined, "compute_75")
    assert ptx.count(".entry ") == combined.count('extern "C" __global__')


def _source(text: str) -> str:
    fusions, _ = fuse(parse_hlo(text).entry, libm=True)
    return render_source(fusions)


def _binary(op: str, dtype: str, attrs: str = "") -> str:
    return _source(f"""HloModule m
ENTRY %e (a: {dtype}[4], b: {dtype}[4]) -> {dtype}[4] {{
  %a = {dtype}[4] parameter(0)
  %b = {dtype}[4] parameter(1)
  ROOT %r = {dtype}[4] {op}(%a, %b){attrs}
}}""")


def test_small_integer_arithmetic_wraps_through_unsigned_int():
    assert "((signed char)((unsigned int)(t1) + (unsigned int)(t2)))" in _binary("add", "s8")
    # s64 through unsigned long long: no signed overflow anywhere.
    assert "((long long)((unsigned long long)(t1) * (unsigned long long)(t2)))" in (
        _binary("multiply", "s64"))


def test_integer_division_follows_xla_at_zero_and_overflow():
    text = _binary("divide", "s32")
    assert "((t2) == 0 ? (int)-1 : ((t1) == ((int)-2147483648) && (t2) == (int)-1) ? " \
           "((int)-2147483648) : (int)((t1) / (t2)))" in text
    assert "((t2) == 0 ? (t1) :" in _binary("remainder", "u16")


def test_shifts_past_the_width_give_zero_or_the_sign():
    text = _binary("shift-right-arithmetic", "s16")
    assert "(((unsigned short)(t2) >= 16u) ? ((short)(t1) < 0 ? (short)-1 : (short)0)" in text


def test_bf16_and_f16_compute_in_f32_and_round_once_per_op():
    text = _binary("multiply", "bf16")
    assert "xs_bf16_to_f32(in0[i])" in text
    assert "xs_round_bf16(((t1) * (t2)))" in text
    assert "out[i] = xs_f32_to_bf16(t3)" in text
    assert "xs_round_f16(" in _binary("add", "f16")


def test_float_max_propagates_nan_and_orders_signed_zeros():
    assert "xs_fmax<float>(t1, t2)" in _binary("maximum", "f32")
    assert "xs_fmin<double>(t1, t2)" in _binary("minimum", "f64")


def test_float_to_int_converts_saturate():
    text = _source("""HloModule m
ENTRY %e (a: f32[4]) -> s8[4] {
  %a = f32[4] parameter(0)
  ROOT %r = s8[4] convert(%a)
}""")
    assert "xs_f2i<signed char, float>(t1, ((signed char)-128), ((signed char)127), " \
           "__int_as_float(0xc3000000), __int_as_float(0x43000000))" in text


def test_index_ops_fuse_into_one_loop_kernel():
    text = _source("""HloModule m
ENTRY %e (a: f32[3,4], c: f32[4]) -> f32[4,3] {
  %a = f32[3,4] parameter(0)
  %c = f32[4] parameter(1)
  %t = f32[4,3] transpose(%a), dimensions={1,0}
  %r = f32[4,3] reverse(%t), dimensions={0}
  %b = f32[4,3] broadcast(%c), dimensions={0}
  %i = f32[4,3] iota(), iota_dimension=1
  %s = f32[4,3] add(%r, %b)
  ROOT %o = f32[4,3] multiply(%s, %i)
}""")
    assert text.count("__global__") == 1
    body = text[text.index('extern "C"'):]
    assert "i < 12LL" in body and "% 3LL" in body and "3 - " in body


def test_reduce_kernel_folds_into_its_accumulator_in_row_major_order():
    text = _source("""HloModule m
%mx (a: f16[], b: f16[]) -> f16[] {
  %a = f16[] parameter(0)
  %b = f16[] parameter(1)
  ROOT %m = f16[] maximum(%a, %b)
}
ENTRY %e (x: f16[5,6,7], i: f16[]) -> f16[6] {
  %x = f16[5,6,7] parameter(0)
  %i = f16[] parameter(1)
  %n = f16[5,6,7] negate(%x)
  ROOT %r = f16[6] reduce(%n, %i), dimensions={0,2}, to_apply=%mx
}""")
    kernel = text[text.index('extern "C"'):]
    assert kernel.startswith('extern "C" __global__ void fusion_0_r(float *__restrict__ out')
    assert "float acc = out[i];" in kernel and "j < 35LL" in kernel
    assert "acc = xs_fmax<float>(acc, " in kernel and "out[i] = acc;" in kernel


@needs_nvrtc
def test_float_kernels_are_not_contracted_into_fma():
    text = _source("""HloModule m
ENTRY %e (a: f32[4], b: f32[4], c: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0)
  %b = f32[4] parameter(1)
  %c = f32[4] parameter(2)
  %m = f32[4] multiply(%a, %b)
  ROOT %r = f32[4] add(%m, %c)
}""")
    ptx = compiler.compile_ptx(text, "compute_80")
    assert "mul.rn.f32" in ptx and "add.rn.f32" in ptx
    assert not re.search(r"\bfma\.", ptx)


@needs_nvrtc
def test_ptx_is_cached_by_fingerprint():
    text = _binary("xor", "u32")
    before = dict(compiler.STATS)
    first = compiler.cached_ptx(text, "compute_75")
    second = compiler.cached_ptx(text, "compute_75")
    assert first == second and ".entry fusion_0_r" in first.read_text()
    assert compiler.STATS["compiles"] == before.get("compiles", 0) + 1
    assert compiler.STATS["memory_hits"] == before.get("memory_hits", 0) + 1


@needs_nvrtc
def test_a_compile_error_names_nvrtc_and_shows_its_log():
    with pytest.raises(XlaSpmdError, match="(?s)NVRTC compile .* failed.*is undefined"):
        compiler.compile_ptx('extern "C" __global__ void k() { undefined_thing(); }',
                             "compute_75")
