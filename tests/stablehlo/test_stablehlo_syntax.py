"""Importer details: syntax forms, errors, representations of Shardy ops, decompositions."""

import numpy as np
import pytest

from xla_spmd.backends.reference import evaluate
from xla_spmd.errors import ParseError
from xla_spmd.mesh import Mesh
from xla_spmd.sharding import meshes_of
from xla_spmd.stablehlo import export_stablehlo, import_stablehlo


def wrap(body: str, args: str = "%x: tensor<2x3xf32>", results: str = "tensor<2x3xf32>",
         meshes: str = "") -> str:
    return (f"module @m attributes {{mhlo.num_partitions = 4 : i32}} {{\n{meshes}\n"
            f"  func.func public @main({args}) -> ({results}) {{\n{body}\n  }}\n}}\n")


def round_trip(module):
    again = import_stablehlo(export_stablehlo(module))
    assert again == module
    return again


def opcodes(module):
    return [i.opcode for i in module.entry.instructions]


def test_pretty_and_generic_forms_agree():
    pretty = import_stablehlo(wrap(
        "    %0 = stablehlo.transpose %x, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>\n"
        "    return %0 : tensor<3x2xf32>", results="tensor<3x2xf32>"))
    generic = import_stablehlo(wrap(
        '    %0 = "stablehlo.transpose"(%x) <{permutation = array<i64: 1, 0>}> : '
        "(tensor<2x3xf32>) -> tensor<3x2xf32>\n"
        '    "func.return"(%0) : (tensor<3x2xf32>) -> ()', results="tensor<3x2xf32>"))
    assert pretty == generic


def test_locations_are_ignored():
    text = wrap('    %0 = stablehlo.abs %x : tensor<2x3xf32> loc(#loc3)\n'
                '    return %0 : tensor<2x3xf32> loc("f.py":1:2)',
                args='%x: tensor<2x3xf32> loc("x")') + '#loc3 = loc("f.py":3:4)\n'
    assert opcodes(import_stablehlo(text)) == ["parameter", "abs"]


def test_unknown_op_names_line_column_and_op():
    text = wrap("    %0 = stablehlo.frobnicate %x : tensor<2x3xf32>\n"
                "    return %0 : tensor<2x3xf32>")
    with pytest.raises(ParseError) as error:
        import_stablehlo(text, "bad.mlir")
    assert error.value.line == 4 and error.value.column == 10
    assert "stablehlo.frobnicate" in str(error.value) and "bad.mlir:4:10" in str(error.value)


@pytest.mark.parametrize("body", [
    "    %0 = stablehlo.add %x, : tensor<2x3xf32>\n    return %0 : tensor<2x3xf32>",
    "    %0 = stablehlo.add %x, %y : tensor<2x3xf32>\n    return %0 : tensor<2x3xf32>",
    "    %0 = stablehlo.add %x, %x : tensor<2x3xf32>\n",
    "    %0 = stablehlo.add %x, %x : tensor<2x4xf32>\n    return %0 : tensor<2x4xf32>",
])
def test_malformed_text_raises_parse_error(body):
    with pytest.raises(ParseError) as error:
        import_stablehlo(wrap(body))
    assert error.value.line is not None


def test_dense_literal_forms():
    text = wrap(
        '    %0 = stablehlo.constant dense<"0x0000803F000000400000404000008040000000000000000'
        '0"> : tensor<2x3xf32>\n'
        "    %1 = stablehlo.constant dense<[[0x7F800000, -0.000000e+00, 1.5], [2, 3, 4]]>"
        " : tensor<2x3xf32>\n"
        "    %2 = stablehlo.constant dense<[true, false]> : tensor<2xi1>\n"
        "    %3 = stablehlo.constant dense<[1.5, 0xFF80]> : tensor<2xbf16>\n"
        "    %4 = stablehlo.constant dense<(1.0, -2.0)> : tensor<2xcomplex<f32>>\n"
        "    %5 = stablehlo.constant dense<18446744073709551615> : tensor<ui64>\n"
        "    %6 = stablehlo.add %0, %1 : tensor<2x3xf32>\n"
        "    return %6 : tensor<2x3xf32>")
    module = round_trip(import_stablehlo(text))
    literals = [i.attrs.literal.value for i in module.entry.instructions
                if i.opcode == "constant"]
    np.testing.assert_array_equal(literals[0], [[1, 2, 3], [4, 0, 0]])
    assert np.isinf(literals[1][0, 0]) and np.signbit(literals[1][0, 1])
    np.testing.assert_array_equal(literals[2], [True, False])
    assert literals[3].dtype.name == "bfloat16" and np.isneginf(float(literals[3][1]))
    assert literals[4][1] == 1 - 2j and literals[5] == 2**64 - 1


def test_meshes_kept_in_header():
    meshes = ('  sdy.mesh @a = <["x"=2, "y"=2]>\n  sdy.mesh @b = <["z"=4], device_ids=[3, 2, 1, 0]>'
              '\n  sdy.mesh @maximal = <[], device_ids=[3]>\n  sdy.mesh @empty = <[]>')
    module = round_trip(import_stablehlo(wrap("    return %x : tensor<2x3xf32>",
                                              meshes=meshes)))
    found = meshes_of(module)
    assert list(found) == ["a", "b", "maximal", "empty"]
    assert found["b"].device_ids == (3, 2, 1, 0)
    assert found["maximal"] == Mesh((), (), device_ids=(3,))
    assert module.num_partitions == 4


SDY_MESH = '  sdy.mesh @mesh = <["x"=2, "y"=2]>'


def test_sharding_constraint_and_reshard():
    body = ('    %0 = sdy.sharding_constraint %x <@mesh, [{"x"}, {?}]> : tensor<2x3xf32>\n'
            '    %1 = sdy.reshard %0 <@mesh, [{}, {"y"}]> : tensor<2x3xf32>\n'
            '    %2 = stablehlo.negate %1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, '
            '[{"x", ?}, {?}]>]>} : tensor<2x3xf32>\n'
            "    return %2 : tensor<2x3xf32>")
    module = round_trip(import_stablehlo(wrap(body, meshes=SDY_MESH)))
    constraint, reshard, negate = module.entry.instructions[1:]
    assert constraint.attrs.custom_call_target == "Sharding"
    assert str(constraint.sharding) == '#sdy.sharding<@mesh, [{"x"}, {?}]>'
    assert reshard.opcode == "copy" and str(reshard.sharding) == \
        '#sdy.sharding<@mesh, [{}, {"y"}]>'
    assert str(negate.sharding) == '#sdy.sharding<@mesh, [{"x", ?}, {?}]>'


def test_manual_computation_representation():
    body = ('    %0 = sdy.manual_computation(%x) in_shardings=[<@mesh, [{"x"}, {}]>] '
            'out_shardings=[<@mesh, [{"x"}, {}]>] manual_axes={"x"} (%l: tensor<1x3xf32>) {\n'
            "      %1 = stablehlo.negate %l : tensor<1x3xf32>\n"
            "      sdy.return %1 : tensor<1x3xf32>\n"
            "    } : (tensor<2x3xf32>) -> tensor<2x3xf32>\n"
            "    return %0 : tensor<2x3xf32>")
    module = round_trip(import_stablehlo(wrap(body, meshes=SDY_MESH)))
    to_local, call, to_global = module.entry.instructions[1:]
    assert to_local.attrs.custom_call_target == "xla.sdy.GlobalToLocalShape"
    assert to_local.shape.dims == (1, 3)
    assert to_local.frontend_attribute("xla.sdy.manual_axes") == '#sdy<manual_axes{"x"}>'
    assert call.attrs.to_apply.name.startswith("xla.sdy.manual_computation_body")
    assert to_global.frontend_attribute("xla.sdy.out_shardings") == \
        '#sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>'


def test_other_sdy_ops():
    body = ('    %0 = sdy.propagation_barrier %x allowed_direction=FORWARD : tensor<2x3xf32>\n'
            "    sdy.sharding_group %0 group_id=3 : tensor<2x3xf32>\n"
            '    %1 = sdy.all_slice [{"x"}, {}] %0 out_sharding=<@mesh, [{"x"}, {}]> : '
            "tensor<2x3xf32>\n"
            '    %2 = sdy.named_computation<"foo">(%1) (%a: tensor<2x3xf32>) {\n'
            "      sdy.return %a : tensor<2x3xf32>\n"
            "    } : (tensor<2x3xf32>) -> tensor<2x3xf32>\n"
            "    return %2 : tensor<2x3xf32>")
    module = round_trip(import_stablehlo(wrap(body, meshes=SDY_MESH)))
    targets = [i.attrs.custom_call_target for i in module.entry.instructions
               if i.opcode == "custom-call"]
    assert targets == ["xla.sdy.PropagationBarrier", "xla.sdy.ShardingGroup", "Sharding"]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(evaluate(module, [x]), x)


def test_gspmd_shardings_get_a_common_mesh():
    body = ('    %0 = stablehlo.custom_call @Sharding(%x) {backend_config = "", mhlo.sharding = '
            '"{devices=[1,4]<=[4]}"} : (tensor<2x3xf32>) -> tensor<2x3xf32>\n'
            "    return %0 : tensor<2x3xf32>")
    module = round_trip(import_stablehlo(wrap(
        body, args='%x: tensor<2x3xf32> {mhlo.sharding = "{devices=[2,2]<=[4]}"}',
        results='tensor<2x3xf32> {mhlo.sharding = "{manual}"}')))
    param, constraint, result = module.entry.instructions
    assert str(param.sharding) == '#sdy.sharding<@mesh, [{"_axis_0"}, {"_axis_1"}]>'
    assert str(constraint.sharding) == \
        '#sdy.sharding<@mesh, [{}, {"_axis_0", "_axis_1"}]>'
    assert result.frontend_attribute("mhlo.sharding") == "{manual}"


def test_broadcast_size_one_expansion_and_captures():
    body = ("    %c = stablehlo.constant dense<2.0> : tensor<f32>\n"
            "    %s = stablehlo.slice %x [0:2, 0:1] : (tensor<2x3xf32>) -> tensor<2x1xf32>\n"
            "    %b = stablehlo.broadcast_in_dim %s, dims = [0, 1] : (tensor<2x1xf32>) -> "
            "tensor<2x3xf32>\n"
            "    %t = stablehlo.constant dense<true> : tensor<i1>\n"
            '    %r = "stablehlo.if"(%t) ({\n'
            "      %m = stablehlo.multiply %b, %b : tensor<2x3xf32>\n"
            "      stablehlo.return %m : tensor<2x3xf32>\n"
            "    }, {\n"
            "      stablehlo.return %x : tensor<2x3xf32>\n"
            "    }) : (tensor<i1>) -> tensor<2x3xf32>\n"
            "    return %r : tensor<2x3xf32>")
    module = round_trip(import_stablehlo(wrap(body)))
    assert opcodes(module)[3:5] == ["reshape", "broadcast"]
    conditional = module.entry.root
    assert conditional.opcode == "conditional" and len(conditional.operands) == 3
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(evaluate(module, [x]), np.repeat(x[:, :1] ** 2, 3, 1))


def test_all_to_all_with_different_dims_is_decomposed():
    body = ('    %0 = "stablehlo.all_to_all"(%x) <{concat_dimension = 1 : i64, replica_groups = '
            "dense<[[0]]> : tensor<1x1xi64>, split_count = 1 : i64, split_dimension = 0 : i64}>"
            " : (tensor<2x3xf32>) -> tensor<2x3xf32>\n    return %0 : tensor<2x3xf32>")
    module = round_trip(import_stablehlo(wrap(body)))
    assert opcodes(module)[1:] == ["all-to-all", "reshape", "transpose", "reshape"]


@pytest.mark.parametrize("text", [
    # MLIR's forms, read and printed back as they are
    'func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<8x2xf32>) -> tensor<4x2xf32> {\n'
    '  %0 = stablehlo.dot %arg0, %arg1, precision = [DEFAULT, HIGH] : (tensor<4x8xf32>, '
    'tensor<8x2xf32>) -> tensor<4x2xf32>\n  return %0 : tensor<4x2xf32>\n}',
    'func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<8x2xf32>) -> tensor<4x2xf32> {\n'
    '  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : '
    '(tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>\n  return %0 : tensor<4x2xf32>\n}',
    'func.func @main(%arg0: tensor<2xi32>) -> tensor<2xi32> {\n'
    '  %c = stablehlo.constant dense<1> : tensor<2xi32>\n  %c_0 = stablehlo.constant '
    'dense<2> : tensor<2xi32>\n  %cst = stablehlo.constant dense<1.000000e+00> : '
    'tensor<2xf32>\n  %0 = stablehlo.add %c, %c_0 : tensor<2xi32>\n'
    '  return %0 : tensor<2xi32>\n}',
    'func.func @main(%arg0: tensor<8x3x3xf32>, %arg1: tensor<8x3x5xf32>) -> tensor<8x3x5xf32> {\n'
    '  %0 = "stablehlo.triangular_solve"(%arg0, %arg1) <{left_side = true, lower = true, '
    'transpose_a = #stablehlo<transpose TRANSPOSE>, unit_diagonal = false}> : '
    '(tensor<8x3x3xf32>, tensor<8x3x5xf32>) -> tensor<8x3x5xf32>\n'
    '  return %0 : tensor<8x3x5xf32>\n}',
    'func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> (tensor<4xf32>, '
    'tensor<4xf32>) {\n  %0:2 = stablehlo.optimization_barrier %arg0, %arg1 : tensor<4xf32>, '
    'tensor<4xf32>\n  return %0#0, %0#1 : tensor<4xf32>, tensor<4xf32>\n}',
    # rng_bit_generator's results are named as MLIR names them.
    'func.func @main(%arg0: tensor<2xui64>) -> tensor<4x8xui32> {\n  %output_state, %output = '
    'stablehlo.rng_bit_generator %arg0, algorithm = DEFAULT : (tensor<2xui64>) -> '
    '(tensor<2xui64>, tensor<4x8xui32>)\n  return %output : tensor<4x8xui32>\n}',
    # An empty backend_config and a called computation the module lacks print as written.
    'func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = stablehlo.custom_call '
    '@MoveToHost(%arg0) {backend_config = "", called_computations = [@absent]} : '
    '(tensor<4xf32>) -> tensor<4xf32>\n  return %0 : tensor<4xf32>\n}',
])
def test_printed_forms_round_trip(text):
    module = import_stablehlo(text)
    printed = export_stablehlo(module)
    assert import_stablehlo(printed) == module
    for line in text.split("\n")[1:-2]:
        assert line.strip() in printed
