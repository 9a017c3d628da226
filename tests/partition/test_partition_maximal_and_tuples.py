# ruff: noqa: E501  (HLO text lines are as long as XLA prints them)
"""Programs from XLA's partitioner tests: values placed on one device ({maximal device=k},
alone or in tuples) and tuple-shaped entry parameters, run on devices and compared with the
global evaluator."""

import numpy as np
import pytest

from xla_spmd.backends.reference import evaluate
from xla_spmd.cli import main
from xla_spmd.ir import parse_hlo
from xla_spmd.pipeline import lower

MAXIMAL = {
    "mixed": """HloModule m, num_partitions=4
ENTRY e {
  p0 = f32[8,8] parameter(0), sharding={devices=[2,2]<=[4]}
  p1 = f32[8,8] parameter(1), sharding={maximal device=2}
  copy = f32[8,8] copy(p0), sharding={maximal device=1}
  add = f32[8,8] add(copy, p1), sharding={maximal device=1}
  t = (f32[8,8], f32[8,8]) tuple(add, copy), sharding={{maximal device=0}, {maximal device=3}}
  g = f32[8,8] get-tuple-element(t), index=0, sharding={maximal device=0}
  ROOT mul = f32[8,8] multiply(g, p0), sharding={devices=[2,2]<=[4]}
}""",
    "only_maximal": """HloModule m, num_partitions=4
ENTRY e {
  p1 = f32[8,8] parameter(1), sharding={maximal device=2}
  p0 = f32[8,8] parameter(0), sharding={maximal device=0}
  add = f32[8,8] add(p0, p1), sharding={maximal device=1}
  ROOT t = (f32[8,8], f32[8,8]) tuple(add, p0), sharding={{maximal device=3}, {maximal device=0}}
}""",
    "maximal_first": """HloModule m, num_partitions=4
ENTRY e {
  p0 = f32[8,8] parameter(0), sharding={maximal device=1}
  p1 = f32[8,8] parameter(1), sharding={devices=[4,1]<=[4]}
  add = f32[8,8] add(p0, p1), sharding={devices=[4,1]<=[4]}
  ROOT t = (f32[8,8], f32[8,8]) tuple(add, p0), sharding={{devices=[1,4]<=[4]}, {maximal device=0}}
}""",
}

TUPLE_PARAMETER = """HloModule m, num_partitions=4
ENTRY e {
  p = ((f32[8,4], f32[4]), s32[]) parameter(0), sharding={{devices=[4,1]<=[4]}, {replicated}, {replicated}}
  inner = (f32[8,4], f32[4]) get-tuple-element(p), index=0
  a = f32[8,4] get-tuple-element(inner), index=0
  b = f32[4] get-tuple-element(inner), index=1
  n = s32[] get-tuple-element(p), index=1
  nf = f32[] convert(n)
  bb = f32[8,4] broadcast(b), dimensions={1}
  s = f32[8,4] broadcast(nf), dimensions={}
  x = f32[8,4] add(a, bb)
  ROOT r = f32[8,4] multiply(x, s), sharding={devices=[1,4]<=[4]}
}"""


def _run(tmp_path, text, arrays):
    program, inputs, out = tmp_path / "p.hlo", tmp_path / "in.npz", tmp_path / "out.npz"
    program.write_text(text)
    np.savez(inputs, **{f"arg{i}": a for i, a in enumerate(arrays)})
    assert main(["run", str(program), "--inputs", str(inputs), "--devices", "4",
                 "--output", str(out)]) == 0
    with np.load(out) as data:
        return [data[f"out{i}"] for i in range(len(data.files))]


@pytest.mark.parametrize("name", sorted(MAXIMAL))
def test_maximal_shardings_run_on_devices(name, tmp_path):
    x = np.arange(64, dtype=np.float32).reshape(8, 8) - 7
    y = np.linspace(-2, 3, 64, dtype=np.float32).reshape(8, 8)
    got = _run(tmp_path, MAXIMAL[name], [x, y])
    want = evaluate(parse_hlo(MAXIMAL[name]), [x, y])
    want = list(want) if isinstance(want, tuple) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_a_value_on_one_device_is_whole_in_the_spmd_program():
    spmd = lower(parse_hlo(MAXIMAL["maximal_first"])).spmd_module
    p0 = next(p for p in spmd.entry.parameters if p.attrs.parameter_number == 0)
    assert p0.shape.dims == (8, 8)


def test_tuple_parameters_run_on_devices(tmp_path):
    a = np.arange(32, dtype=np.float32).reshape(8, 4)
    b = np.array([0.5, -1, 2, 4], np.float32)
    n = np.array(3, np.int32)
    (got,) = _run(tmp_path, TUPLE_PARAMETER, [a, b, n])
    np.testing.assert_array_equal(got, (a + b) * 3)
