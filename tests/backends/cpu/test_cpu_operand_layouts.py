"""Dots and float sums whose operands the CPU backend holds in another memory layout than the
reference evaluator gave other bits: numpy's matmul picks its BLAS call (gemv or gemm, the
transpose flags) and its sums their order from the operands' strides. Found by random
programs on random normal inputs (``test_cpu_random_programs.py``); each case is compared bit
for bit with the reference."""

import sys
from pathlib import Path

import numpy as np
import pytest

from xla_spmd.backends.cpu import CpuBackend
from xla_spmd.backends.reference import evaluate
from xla_spmd.collectives import LocalWorld
from xla_spmd.ir.hlo_parser import parse_hlo

sys.path[:0] = [str(Path(__file__).resolve().parent)]

from cpu_bits import exact_bits  # noqa: E402


def _broadcast_module(n: int, partitions: int = 1) -> str:
    return f"""HloModule m, num_partitions={partitions}
%add (p: f32[], q: f32[]) -> f32[] {{
  %p = f32[] parameter(0)
  %q = f32[] parameter(1)
  ROOT %o = f32[] add(%p, %q)
}}
ENTRY %e (v: f32[{n}], w: f32[{n},{n}]) -> (f32[{n}], f32[{n}], f32[{n}], f32[{n},{n}],
                                           f32[{n},1]) {{
  %v = f32[{n}] parameter(0)
  %w = f32[{n},{n}] parameter(1)
  %b = f32[{n},{n}] broadcast(%v), dimensions={{1}}
  %z = f32[] constant(0)
  %r0 = f32[{n}] reduce(%b, %z), dimensions={{0}}, to_apply=%add
  %r1 = f32[{n}] reduce(%b, %z), dimensions={{1}}, to_apply=%add
  %c = f32[{n},{n}] broadcast(%v), dimensions={{0}}
  %r2 = f32[{n}] reduce(%c, %z), dimensions={{0}}, to_apply=%add
  %d = f32[{n},{n}] dot(%b, %w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  %h = f32[] constant(0.5)
  %hh = f32[{n},{n}] broadcast(%h), dimensions={{}}
  %col = f32[{n},1] slice(%w), slice={{[0:{n}], [0:1]}}
  %g = f32[{n},1] dot(%hh, %col), lhs_contracting_dims={{0}}, rhs_contracting_dims={{0}}
  ROOT %t = (f32[{n}], f32[{n}], f32[{n}], f32[{n},{n}], f32[{n},1]) tuple(%r0, %r1, %r2, %d,
                                                                         %g)
}}"""


def _want(module, args) -> list[bytes]:
    return [exact_bits(x) for x in evaluate(module, [a.copy() for a in args])]


@pytest.mark.parametrize("n", [6, 100, 300])
def test_dots_and_sums_of_broadcasts_give_the_references_bits(n):
    # The broadcast was a stride-0 view: its dot took another BLAS call and its sums another
    # order than the reference's over its C-contiguous copy.
    module = parse_hlo(_broadcast_module(n))
    rng = np.random.default_rng(n)
    args = [rng.standard_normal(n).astype(np.float32),
            rng.standard_normal((n, n)).astype(np.float32)]
    got = CpuBackend().compile(module, (0,)).run(0, args, None)
    assert [exact_bits(x) for x in got] == _want(module, args)


def test_a_broadcast_to_a_scalar_and_to_size_one_dims_keeps_its_shape():
    module = parse_hlo("""HloModule m
ENTRY %e (p: f32[]) -> (f32[], f32[1,3], f32[1,1]) {
  %p = f32[] parameter(0)
  %b = f32[] broadcast(%p), dimensions={}
  %c = f32[1,3] broadcast(%p), dimensions={}
  %d = f32[1,1] broadcast(%p), dimensions={}
  ROOT %r = (f32[], f32[1,3], f32[1,1]) tuple(%b, %c, %d)
}""")
    args = [np.array(-2.5, np.float32)]
    got = CpuBackend().compile(module, (0,)).run(0, args, None)
    assert [exact_bits(x) for x in got] == _want(module, args)


@pytest.mark.parametrize("stack", [True, False])
def test_stacked_broadcasts_give_the_references_bits(stack):
    n = 100
    module = parse_hlo(_broadcast_module(n, partitions=2))
    rng = np.random.default_rng(1)
    args = {d: [rng.standard_normal(n).astype(np.float32),
                rng.standard_normal((n, n)).astype(np.float32)] for d in (0, 1)}
    executable = CpuBackend().compile(module, (0, 1))
    world = LocalWorld(2)
    got = executable.run_together(args, {d: world.communicator(d) for d in (0, 1)},
                                  stack=stack)
    single = parse_hlo(_broadcast_module(n))
    for d in (0, 1):
        assert [exact_bits(x) for x in got[d]] == _want(single, args[d])


# The reference's elementwise rules write row-major results, as the backend's fusions do:
# numpy's ufuncs alone would keep a transposed operand's layout (order K), so negate(transpose(
# x)) was F-ordered there, and a float sum over it added in another order.
def test_sums_over_an_elementwise_op_of_a_transpose_give_the_references_bits():
    n = 100
    module = parse_hlo(f"""HloModule m
%add (p: f32[], q: f32[]) -> f32[] {{
  %p = f32[] parameter(0)
  %q = f32[] parameter(1)
  ROOT %o = f32[] add(%p, %q)
}}
ENTRY %e (v: f32[{n},{n}]) -> (f32[{n}], f32[{n}]) {{
  %v = f32[{n},{n}] parameter(0)
  %t = f32[{n},{n}] transpose(%v), dimensions={{1,0}}
  %g = f32[{n},{n}] negate(%t)
  %z = f32[] constant(0)
  %r0 = f32[{n}] reduce(%g, %z), dimensions={{0}}, to_apply=%add
  %r1 = f32[{n}] reduce(%g, %z), dimensions={{1}}, to_apply=%add
  ROOT %r = (f32[{n}], f32[{n}]) tuple(%r0, %r1)
}}""")
    args = [np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)]
    got = CpuBackend().compile(module, (0,)).run(0, args, None)
    assert [exact_bits(x) for x in got] == _want(module, args)
