"""Hypothesis: random programs of elementwise, broadcast, reduce, reshape, transpose and dot
ops evaluate equal to the same computation written directly in numpy.

Each drawn step applies one op both to an IR value (through the Builder) and to its numpy
twin, so the numpy formulation is the independent oracle.
"""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xla_spmd.backends.reference import evaluate
from xla_spmd.ir import F32, ArrayShape, Builder, Module, verify
from xla_spmd.ir.hlo_parser import parse_hlo
from xla_spmd.ir.hlo_printer import print_module

UNARY = {"negate": np.negative, "tanh": np.tanh, "abs": np.abs, "sine": np.sin,
         "logistic": lambda x: 1 / (1 + np.exp(-x))}
BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
          "maximum": np.maximum, "minimum": np.minimum}
REDUCERS = {"add": (np.sum, 0.0), "maximum": (np.max, -np.inf)}


def _scalar_computation(opcode: str):
    b = Builder(f"reduce_{opcode}")
    x = b.parameter(ArrayShape(F32, ()), "x")
    y = b.parameter(ArrayShape(F32, ()), "y")
    return b.build(b.op(opcode, x, y))


class ProgramDraw:
    """Grows a program and its numpy twin one drawn op at a time."""

    def __init__(self, data, rng):
        self.data, self.rng = data, rng
        self.builder = Builder("main")
        self.values = []   # (instruction, numpy value)
        self.args = []
        self.reducers = {name: _scalar_computation(name) for name in REDUCERS}

    def parameter(self, dims):
        value = self.rng.standard_normal(dims).astype(np.float32)
        inst = self.builder.parameter(ArrayShape(F32, tuple(dims)), f"arg{len(self.args)}")
        self.args.append(value)
        self.values.append((inst, value.astype(np.float64)))
        return self.values[-1]

    def pick(self):
        return self.data.draw(st.sampled_from(self.values))

    def step(self):
        kind = self.data.draw(st.sampled_from(
            ["unary", "binary", "broadcast", "reduce", "reshape", "transpose", "dot"]))
        inst, value = self.pick()
        b = self.builder
        if kind == "unary":
            name = self.data.draw(st.sampled_from(sorted(UNARY)))
            self.values.append((b.op(name, inst), UNARY[name](value)))
        elif kind == "binary":
            name = self.data.draw(st.sampled_from(sorted(BINARY)))
            other, other_value = self.parameter(value.shape)
            self.values.append((b.op(name, inst, other), BINARY[name](value, other_value)))
        elif kind == "broadcast" and value.ndim < 3:
            size = self.data.draw(st.integers(1, 3))
            position = self.data.draw(st.integers(0, value.ndim))
            dims = list(value.shape)
            dims.insert(position, size)
            kept = tuple(d for d in range(len(dims)) if d != position)
            out = b.broadcast(inst, dimensions=kept, shape=ArrayShape(F32, tuple(dims)))
            self.values.append((out, np.broadcast_to(np.expand_dims(value, position), dims)))
        elif kind == "reduce" and value.ndim:
            name = self.data.draw(st.sampled_from(sorted(REDUCERS)))
            dims = tuple(sorted(self.data.draw(st.sets(st.integers(0, value.ndim - 1),
                                                       min_size=1))))
            fn, init = REDUCERS[name]
            out = b.reduce(inst, b.constant(np.float32(init)), dimensions=dims,
                           to_apply=self.reducers[name])
            self.values.append((out, fn(value, axis=dims)))
        elif kind == "reshape":
            dims = self._factorization(value.size)
            out = b.reshape(inst, shape=ArrayShape(F32, dims))
            self.values.append((out, value.reshape(dims)))
        elif kind == "transpose" and value.ndim > 1:
            perm = tuple(self.data.draw(st.permutations(range(value.ndim))))
            self.values.append((b.transpose(inst, dimensions=perm), value.transpose(perm)))
        elif kind == "dot" and 0 < value.ndim <= 2:
            contract = value.ndim - 1
            width = self.data.draw(st.integers(1, 4))
            rhs, rhs_value = self.parameter((value.shape[contract], width))
            out = b.dot(inst, rhs, lhs_contracting_dims=(contract,), rhs_contracting_dims=(0,))
            self.values.append((out, np.tensordot(value, rhs_value, axes=([contract], [0]))))

    def _factorization(self, size):
        dims, rest = [], size
        for factor in (2, 3, 2, 5):
            if rest % factor == 0 and self.data.draw(st.booleans()):
                dims.append(factor)
                rest //= factor
        dims.append(rest)
        self.rng.shuffle(dims)
        return tuple(dims)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.lists(st.integers(1, 4), min_size=1, max_size=3), st.integers(1, 8))
def test_random_program_matches_numpy(data, dims, steps):
    draw = ProgramDraw(data, np.random.default_rng(len(dims) * 100 + steps))
    draw.parameter(tuple(dims))
    for _ in range(steps):
        draw.step()
    root, expected = draw.values[-1]
    module = Module.from_entry("random", draw.builder.build(root))
    verify(module)
    result = evaluate(module, draw.args)
    np.testing.assert_allclose(result, expected, rtol=2e-4, atol=2e-5)
    # The printed program means the same thing.
    reparsed = parse_hlo(print_module(module))
    assert reparsed == module
