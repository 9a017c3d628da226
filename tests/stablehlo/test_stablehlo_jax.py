"""JAX's StableHLO files: import, evaluate to JAX's values, keep every sharding, round trip."""

import json
import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from xla_spmd.backends.reference import evaluate
from xla_spmd.ir import verify
from xla_spmd.mesh import print_mesh
from xla_spmd.sharding import meshes_of
from xla_spmd.stablehlo import export_stablehlo, import_stablehlo

DATA = Path(__file__).resolve().parents[1] / "data" / "jax"
CASES = {c["name"]: c for c in json.loads((DATA / "MANIFEST.json").read_text())["cases"]}
# XLA's CPU backend flushes denormals to zero; the reference evaluator keeps them.
DENORMAL_OUTPUTS = {"ew_nonfinite": {8, 11, 12}}


def _load(name):
    text = (DATA / name / f"{name}.mlir").read_text()
    return text, import_stablehlo(text, f"{name}.mlir")


def _arguments(case, data):
    args = []
    for spec in case["inputs"]:
        value = data[spec["name"]]
        args.append(value.astype(ml_dtypes.bfloat16) if spec["dtype"] == "bfloat16" else value)
    return args


@pytest.mark.parametrize("name", sorted(CASES))
def test_import_verifies_and_round_trips(name):
    _, module = _load(name)
    verify(module)
    again = import_stablehlo(export_stablehlo(module), "exported.mlir")
    assert again == module


EVALUABLE = sorted(n for n in CASES if "shard_map" not in n)


@pytest.mark.parametrize("name", EVALUABLE)
def test_evaluates_to_jax_values(name):
    case = CASES[name]
    _, module = _load(name)
    data = np.load(DATA / name / f"{name}.npz", allow_pickle=False)
    result = evaluate(module, _arguments(case, data))
    outputs = result if isinstance(result, tuple) else (result,)
    assert len(outputs) == len(case["outputs"])
    for index, spec in enumerate(case["outputs"]):
        if index in DENORMAL_OUTPUTS.get(name, ()) or not case.get("bit_reproducible", True):
            continue
        expected = data[spec["name"]]
        got = np.asarray(outputs[index])
        if expected.dtype.kind in "fc":
            np.testing.assert_allclose(got.astype(expected.dtype), expected, rtol=2e-3,
                                       atol=1e-4, equal_nan=True, err_msg=f"out{index}")
        else:
            np.testing.assert_array_equal(got, expected, err_msg=f"out{index}")


def _signature_shardings(text):
    """The sdy.sharding of each argument and result of @main, as written."""
    header = text[text.index("func.func public @main"):]
    header = header[:header.index("{\n")]
    args_text, _, results_text = header.partition(") -> (")
    sharding = re.compile(r"sdy\.sharding = (#sdy\.sharding<@\w+, \[.*?\]>)")
    found = []
    for part, separator in ((args_text, "%arg"), (results_text, "tensor<")):
        values = []
        for chunk in part.split(separator)[1:]:
            match = sharding.search(chunk)
            values.append(match.group(1) if match else None)
        found.append(values)
    return found


SHARDY = sorted(n for n in CASES if CASES[n]["sharded"] and not n.endswith("_gspmd"))


@pytest.mark.parametrize("name", SHARDY)
def test_sharded_case_keeps_every_sharding(name):
    text, module = _load(name)
    arg_shardings, result_shardings = _signature_shardings(text)
    params = module.entry.parameters
    assert [None if p.sharding is None else str(p.sharding) for p in params] == arg_shardings
    root = module.entry.root
    results = root.operands if root.opcode == "tuple" else (root,)
    got = []
    for value in results:
        is_marker = (value.opcode == "custom-call"
                     and value.attrs.custom_call_target == "xla.sdy.FuncResultSharding")
        got.append(str(value.sharding) if is_marker else None)
    assert got == result_shardings
    mesh_line = text.split("sdy.mesh @mesh = ")[1].split("\n")[0]
    mesh_text, brace, mesh_attrs = mesh_line.partition(" {")
    mesh_attrs = brace.strip() + mesh_attrs
    expected = f"xla.sdy.meshes={{mesh = #sdy.mesh{mesh_text}}}"
    if mesh_attrs:  # kept verbatim next to the mesh, and written back by the exporter
        expected += f",xla.sdy.mesh_attributes={{mesh = {mesh_attrs}}}"
        assert f"sdy.mesh @mesh = {mesh_line}\n" in export_stablehlo(module)
    assert module.header_value("frontend_attributes") == f"{{{expected}}}"
    assert print_mesh(meshes_of(module)["mesh"]) == mesh_text
    constraints = text.count("sdy.sharding_constraint")
    marked = [i for c in module.computations for i in c.instructions
              if i.opcode == "custom-call" and i.attrs.custom_call_target == "Sharding"]
    assert len(marked) == constraints
    assert all(i.sharding is not None for i in marked)


GSPMD = sorted(n for n in CASES if n.endswith("_gspmd"))


@pytest.mark.parametrize("name", GSPMD)
def test_gspmd_shardings_are_kept(name):
    text, module = _load(name)
    written = len(re.findall(r"mhlo\.sharding = ", text))
    kept = sum((i.sharding is not None or i.frontend_attribute("mhlo.sharding") is not None)
               for c in module.computations for i in c.instructions)
    assert kept == written


def test_shard_map_becomes_xla_sdy_custom_calls():
    _, module = _load("sharded_shard_map")
    targets = [i.attrs.custom_call_target for i in module.entry.instructions
               if i.opcode == "custom-call"]
    assert targets[:2] == ["xla.sdy.GlobalToLocalShape", "xla.sdy.LocalToGlobalShape"]
    to_local = next(i for i in module.entry.instructions if i.opcode == "custom-call")
    assert to_local.frontend_attribute("xla.sdy.manual_axes") == '#sdy<manual_axes{"x", "y"}>'
    assert to_local.frontend_attribute("xla.sdy.in_shardings").startswith(
        '#sdy.sharding_per_value<[<@mesh, [{"x"}, {"y"}]>')
    (call,) = [i for i in module.entry.instructions if i.opcode == "call"]
    assert call.attrs.to_apply.name.startswith("xla.sdy.manual_computation_body")
    assert call.attrs.to_apply.parameters[0].shape.dims == (4, 4)


def test_transformer_done_criterion():
    """The sharded transformer step imports with all its shardings and evaluates right."""
    name = "sharded_transformer_2x4"
    text, module = _load(name)
    arg_shardings, _ = _signature_shardings(text)
    assert all(s is not None for s in arg_shardings)
    assert [str(p.sharding) for p in module.entry.parameters] == arg_shardings
    test_evaluates_to_jax_values(name)
