"""A JAX transformer training step propagated from shardings on its parameters and batch only.

Checks what a practitioner writes by hand: every gradient is sharded like its weight, the
residual stream is batch-sharded, the MLP hidden and attention heads are model-sharded
(Megatron), activations stay batch-sharded while weights are gathered (FSDP).
"""

from pathlib import Path

import pytest

from xla_spmd.ir import Module, map_computations, rewrite
from xla_spmd.mesh import make_mesh
from xla_spmd.propagation import propagate
from xla_spmd.sharding import TensorSharding

DATA = Path(__file__).resolve().parent.parent / "data" / "jax"
MESH = make_mesh({"data": 2, "model": 4})
COLUMN = ("wq", "wk", "wv", "w_ff1")     # Megatron: output features on "model"
ROW = ("wo", "w_ff2")                    # Megatron: input features on "model"

parse_hlo = pytest.importorskip("xla_spmd.ir.hlo_parser").parse_hlo


def load(name):
    return parse_hlo((DATA / name / f"{name}.hlo").read_text())


def annotate(module: Module, shardings: dict) -> Module:
    """Put shardings on entry parameters, by parameter name."""
    def fn(inst, operands):
        if inst.op.name == "parameter" and inst.name in shardings:
            return inst.replace(sharding=shardings[inst.name])
        return None

    def rebuild(c, replaced):
        return rewrite(c, fn) if c is module.entry else c
    return map_computations(module, rebuild)


def sharding_of(name, rank, *dims):
    return TensorSharding(MESH, [list(d) for d in dims] + [[]] * (rank - len(dims)))


def params(module):
    return {p.name: p for p in module.entry.parameters}


def megatron(module):
    out = {}
    for name, p in params(module).items():
        short = name.removeprefix("p__").split("__")[0]
        rank = p.shape.rank
        if name.startswith(("tokens", "targets")):
            out[name] = sharding_of(name, rank, ["data"])
        elif short in COLUMN:
            out[name] = sharding_of(name, rank, [], ["model"])
        elif short in ROW:
            out[name] = sharding_of(name, rank, ["model"])
        elif short == "b_ff1":
            out[name] = sharding_of(name, rank, ["model"])
        else:
            out[name] = sharding_of(name, rank)
    return out


def fsdp(module):
    return {name: sharding_of(name, p.shape.rank, ["data"]) for name, p in params(module).items()}


def two_d(module):
    """FSDP over "data" on the dim Megatron leaves free, Megatron over "model"."""
    out = megatron(module)
    for name, _p in params(module).items():
        short = name.removeprefix("p__").split("__")[0]
        if short in COLUMN:
            out[name] = sharding_of(name, 2, ["data"], ["model"])
        elif short in ROW:
            out[name] = sharding_of(name, 2, ["model"], ["data"])
    return out


def axes(sharding):
    return [tuple(a.name if not a.is_sub_axis else str(a) for a in d.axes) for d in sharding.dims]


def gradient_pairs(module):
    """(parameter, gradient) from the SGD update ``p - grad * lr`` at the end of the step."""
    for inst in module.entry.instructions:
        if inst.op.name == "subtract" and inst.operands[0].op.name == "parameter":
            update = inst.operands[1]
            grad = update.operands[0] if update.op.name == "multiply" else update
            yield inst.operands[0], grad


def check_gradients_like_weights(out):
    pairs = list(gradient_pairs(out))
    assert len(pairs) == 13
    for param, grad in pairs:
        assert axes(grad.sharding) == axes(param.sharding), (param.name, grad.name)


def activations(out, dims):
    return [i for i in out.entry.instructions
            if not i.shape.is_tuple and i.shape.dims == dims and i.op.name != "parameter"]


def test_megatron_data_parallel_2x4():
    module = load("transformer_step")
    out = propagate(annotate(module, megatron(module)))
    check_gradients_like_weights(out)
    residual = activations(out, (2, 8, 16))
    assert residual and all(axes(i.sharding)[0] == ("data",) for i in residual)
    dots = [i for i in out.entry.instructions if i.op.name == "dot"
            and i.attrs.rhs_contracting_dims == (0,)]      # forward: x @ W
    hidden = [i for i in dots if i.shape.dims == (2, 8, 32)]
    assert hidden and all(axes(i.sharding) == [("data",), (), ("model",)] for i in hidden)
    projections = [i for i in dots if i.shape.dims == (2, 8, 16)
                   and any(o.name.startswith(("p__wq", "p__wk", "p__wv")) for o in i.operands)]
    assert len(projections) == 3
    assert all(axes(i.sharding) == [("data",), (), ("model",)] for i in projections)
    # row-parallel outputs are partial sums over "model": the result dim is not sharded
    row = [i for i in dots if any(o.name.startswith(("p__wo", "p__w_ff2")) for o in i.operands)]
    assert row and all(axes(i.sharding) == [("data",), (), ()] for i in row)


def test_fsdp_8_way():
    module = load("transformer_step")
    mesh8 = make_mesh({"data": 8})
    shardings = {name: TensorSharding(mesh8, [["data"] if d == 0 else [] for d in
                                              range(p.shape.rank)])
                 for name, p in params(module).items()}
    shardings = {k: v for k, v in shardings.items()
                 if not params(module)[k].shape.dims or params(module)[k].shape.dims[0] % 8 == 0
                 or k.startswith(("tokens", "targets"))}
    out = propagate(annotate(module, shardings), mesh=mesh8)
    for param, grad in gradient_pairs(out):
        if param.name in shardings:
            assert axes(grad.sharding) == axes(param.sharding), param.name


def test_fsdp_data_axis_only():
    module = load("transformer_step")
    out = propagate(annotate(module, fsdp(module)))
    check_gradients_like_weights(out)
    for inst in activations(out, (2, 8, 16)) + activations(out, (2, 8, 32)):
        assert axes(inst.sharding) == [("data",), (), ()], inst.name


def test_two_d_fsdp_and_megatron():
    module = load("transformer_step")
    out = propagate(annotate(module, two_d(module)))
    check_gradients_like_weights(out)
    hidden = [i for i in out.entry.instructions if i.op.name == "dot"
              and i.shape.dims == (2, 8, 32)]
    assert hidden and all(axes(i.sharding) == [("data",), (), ("model",)] for i in hidden)


@pytest.mark.parametrize("name", ["sharded_mlp_dp8", "sharded_mlp_fsdp8",
                                  "sharded_mlp_megatron_2x4", "sharded_mlp_megatron_2x4_gspmd",
                                  "sharded_transformer_2x4", "sharded_transformer_dp8"])
def test_jax_sharded_programs(name):
    out = propagate(load(name))
    check = list(gradient_pairs(out))
    assert check
    for param, grad in check:
        assert axes(grad.sharding) == axes(param.sharding), (param.name, grad.name)
    for inst in out.entry.instructions:
        if not inst.shape.is_tuple:
            assert isinstance(inst.sharding, TensorSharding), inst.name


def test_data_parallel_only_batch_sharded():
    module = load("transformer_step")
    shardings = {name: sharding_of(name, p.shape.rank,
                                   ["data"] if name.startswith(("tokens", "targets")) else [])
                 for name, p in params(module).items()}
    out = propagate(annotate(module, shardings))
    check_gradients_like_weights(out)         # replicated weights, replicated gradients
    batched = [i for i in out.entry.instructions if not i.shape.is_tuple
               and i.shape.rank >= 2 and i.shape.dims[:2] == (2, 8)]
    assert len(batched) > 100
    for inst in batched:
        assert axes(inst.sharding)[0] == ("data",), inst.name
        assert not any(axes(inst.sharding)[1:]), inst.name
