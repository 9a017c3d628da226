"""Manual regions are read from the boundary attributes the IR carries, so a program traced
here and the same program read back from text (as XLA writes it) take the same path."""

import numpy as np
import pytest

import xla_spmd as xs
from xla_spmd import pipeline
from xla_spmd.errors import ShardingError
from xla_spmd.ir import parse_hlo, print_module
from xla_spmd.ir.custom_calls import GLOBAL_TO_LOCAL, LOCAL_TO_GLOBAL
from xla_spmd.mesh import parse_sdy_meshes
from xla_spmd.runtime import Runner
from xla_spmd.sharding.manual import manual_region

MESH = xs.make_mesh({"data": 2, "model": 4})
X = np.arange(64.0, dtype=np.float32).reshape(8, 8)
Y = np.arange(32.0, dtype=np.float32).reshape(4, 8) - 7


def region_program(mesh=MESH):
    body = xs.shard_map(lambda a, b: (xs.lax.psum(a * b, "model"), a), mesh,
                        in_specs=(xs.P("data", "model"), xs.P(None, "model")),
                        out_specs=(xs.P("data"), xs.P("data", "model")))
    return xs.jit(body)


def test_regions_read_from_the_traced_module():
    module = region_program().lower(X, Y).module
    meshes = parse_sdy_meshes(module.header_value("frontend_attributes"))
    assert meshes == {"mesh": MESH}  # the program declares the mesh its regions name
    (call,) = [i for i in module.entry.instructions if i.opcode == "call"]
    region = manual_region(call, meshes)
    assert region.mesh == MESH and region.axes == ("data", "model")
    assert [str(s) for s in region.in_shardings] == [
        '#sdy.sharding<@mesh, [{"data"}, {"model"}]>', '#sdy.sharding<@mesh, [{}, {"model"}]>']
    (exit_,) = [i for i in module.entry.instructions
                if i.opcode == "custom-call" and i.attrs.custom_call_target == LOCAL_TO_GLOBAL]
    assert [str(s) for s in manual_region(exit_, meshes).out_shardings] == [
        '#sdy.sharding<@mesh, [{"data"}, {}]>', '#sdy.sharding<@mesh, [{"data"}, {"model"}]>']
    (entry,) = [i for i in module.entry.instructions
                if i.opcode == "custom-call" and i.attrs.custom_call_target == GLOBAL_TO_LOCAL]
    assert manual_region(entry, meshes).in_shardings == region.in_shardings
    assert manual_region(module.entry.parameters[0], meshes) is None


def test_a_program_read_back_from_text_runs_as_the_traced_one():
    f = region_program()
    traced = [np.asarray(r) for r in f(X, Y)]
    # Each data block's rows times Y, summed over the four model blocks of columns.
    np.testing.assert_array_equal(traced[0], sum(np.split(X * np.vstack([Y, Y]), 4, axis=1)))
    np.testing.assert_array_equal(traced[1], X)
    text = print_module(f.lower(X, Y).module)
    program = pipeline.compile(parse_hlo(text))
    read_back = Runner(program.module, program.executable)([X, Y])
    for got, want in zip(read_back, traced):
        np.testing.assert_array_equal(np.asarray(got), want)


def test_two_meshes_of_one_name_in_a_program_are_an_error():
    other = xs.make_mesh({"data": 4, "model": 2})

    def f(x):
        a = xs.shard_map(lambda v: v, MESH, xs.P("data"), xs.P("data"))(x)
        return xs.shard_map(lambda v: v, other, xs.P("data"), xs.P("data"))(a)

    with pytest.raises(ShardingError, match="two meshes named 'mesh' in one program"):
        xs.jit(f).lower(X)
