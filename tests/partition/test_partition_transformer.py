"""The done-criterion: a transformer training step, sharded by annotating only its parameters
and batch, partitions for every mesh and runs exactly like the unpartitioned program."""

from pathlib import Path

import numpy as np
import pytest
from spmd_oracle import check

from xla_spmd.ir import Module, parse_hlo, rewrite
from xla_spmd.mesh import make_mesh
from xla_spmd.sharding import TensorSharding

DATA = Path(__file__).resolve().parents[1] / "data" / "jax"

MESHES = {
    "8": ({"data": 8}, "data", "data", None),
    "2x4": ({"data": 2, "model": 4}, "data", "model", None),
    "4x2": ({"data": 4, "model": 2}, "data", "model", None),
    "2x2x2": ({"data": 2, "model": 2, "seq": 2}, "data", "model", "seq"),
}
COLUMN = ("wq", "wk", "wv", "w_ff1")
ROW = ("wo", "w_ff2")


def annotate(module: Module, mesh, data, model, seq) -> Module:
    def spec(inst):
        name = inst.name
        rank = inst.shape.rank
        if name.startswith(("tokens", "targets")):
            return [[data], [seq] if seq else []]
        for key in COLUMN:
            if f"__{key}__" in name:
                return [[], [model]]
        for key in ROW:
            if f"__{key}__" in name:
                return [[model], []]
        if "__b_ff1__" in name:
            return [[model]]
        return [[] for _ in range(rank)]

    def fn(inst, operands):
        if inst.opcode != "parameter":
            return None
        return inst.replace(sharding=TensorSharding(mesh, spec(inst)))
    return module.with_entry(rewrite(module.entry, fn))


@pytest.mark.parametrize("mesh_name", sorted(MESHES))
def test_transformer_step(mesh_name):
    axes, data, model, seq = MESHES[mesh_name]
    mesh = make_mesh(axes)
    case = "transformer_step"
    module = parse_hlo((DATA / case / f"{case}.hlo").read_text())
    arrays = np.load(DATA / case / f"{case}.npz")
    args = [arrays[f"arg{i}"] for i in range(len(module.entry.parameters))]
    outs = [arrays[f"out{i}"] for i in range(sum(k.startswith("out") for k in arrays))]
    sharded = annotate(module, mesh, data, model, seq)
    check(sharded, args, propagate=True, rtol=2e-4, atol=2e-5, expected=outs)
