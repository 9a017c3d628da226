"""Converters of Shardy (``sdy``) ops into the HLO form XLA exports them to (§16).

=========================== ==============================================================
``sdy.sharding_constraint`` custom-call ``Sharding``, sharding on the instruction
``sdy.reshard``             ``copy``, sharding on the instruction
``sdy.manual_computation``  custom-call ``xla.sdy.GlobalToLocalShape`` → ``call`` of
                            ``xla.sdy.manual_computation_body.N`` → custom-call
                            ``xla.sdy.LocalToGlobalShape``; frontend attributes
                            ``xla.sdy.in_shardings``, ``xla.sdy.out_shardings``,
                            ``xla.sdy.manual_axes``
``sdy.named_computation``   ``call`` of a computation named after it, frontend attribute
                            ``xla.sdy.named_computation``
``sdy.sharding_group``      custom-call ``xla.sdy.ShardingGroup`` (no result),
                            ``xla.sdy.sharding_group_id``
``sdy.propagation_barrier`` custom-call ``xla.sdy.PropagationBarrier``
``sdy.data_flow_edge``      custom-call ``xla.sdy.DataFlowEdge``, its ``sharding`` on the
                            instruction (the sharding of the while/case/barrier result or
                            block argument it follows)
``sdy.func_data_flow_edge`` custom-call ``xla.sdy.FuncDataFlowEdge``, sharding on it
``sdy.constant``            ``constant``
``sdy.all_gather`` & co     custom-call ``Sharding`` carrying ``out_sharding`` (on the global
                            view an explicit collective is a reshard to it), frontend
                            attributes ``xla.sdy.collective`` (the op) and
                            ``xla.sdy.collective_params`` (its axes, as written)
=========================== ==============================================================
"""

from __future__ import annotations

from xla_spmd.ir import TupleShape
from xla_spmd.ir.custom_calls import (
    ALLOWED_DIRECTION,
    DATA_FLOW_EDGE,
    FUNC_DATA_FLOW_EDGE,
    GLOBAL_TO_LOCAL,
    IN_SHARDINGS,
    LOCAL_TO_GLOBAL,
    MANUAL_AXES,
    MANUAL_BODY,
    OUT_SHARDINGS,
    PROPAGATION_BARRIER,
    SHARDING,
    SHARDING_GROUP,
    SHARDING_GROUP_ID,
)
from xla_spmd.stablehlo.importer_ops import converter, sharding_text, single_or_tuple

SDY_COLLECTIVES = ("all_gather", "all_slice", "all_reduce", "reduce_scatter", "all_to_all",
                   "collective_permute", "sharded_to_unreduced", "replicated_to_unreduced")


def manual_axes_text(axes) -> str:
    return "#sdy<manual_axes{" + ", ".join(f'"{a}"' for a in axes) + "}>"


@converter("sdy.sharding_constraint")
def _sharding_constraint(importer, scope, node, operands):
    return scope.emit("custom-call", operands, node.result_types[0],
                      sharding=node.attrs["sharding"], custom_call_target=SHARDING)


@converter("sdy.reshard")
def _reshard(importer, scope, node, operands):
    return scope.emit("copy", operands, node.result_types[0], sharding=node.attrs["sharding"])


@converter("mhlo.copy", "stablehlo.copy")
def _copy(importer, scope, node, operands):
    return scope.emit("copy", operands, node.result_types[0])


def _maybe_tuple(shapes):
    return shapes[0] if len(shapes) == 1 else TupleShape(tuple(shapes))


@converter("sdy.manual_computation")
def _manual_computation(importer, scope, node, operands):
    a = node.attrs
    axes = manual_axes_text(a.get("manual_axes", ()))
    (block,) = node.regions
    local_shapes = [shape for _, shape in block.args]
    to_local = scope.emit(
        "custom-call", operands, _maybe_tuple(local_shapes),
        frontend=((IN_SHARDINGS, sharding_text(a.get("in_shardings", ()))),
                  (MANUAL_AXES, axes)),
        custom_call_target=GLOBAL_TO_LOCAL, custom_call_has_side_effect=True)
    local_values = scope.unpack(to_local) if len(local_shapes) != 1 else [to_local]
    body = importer.region(block, MANUAL_BODY, "scalar", outer=scope)
    call = scope.emit("call", local_values, body.root.shape, to_apply=body,
                      frontend=(("inlineable", "false"),))
    results = scope.unpack(call) if len(node.result_types) != 1 else [call]
    return scope.emit(
        "custom-call", results, single_or_tuple(node),
        frontend=((MANUAL_AXES, axes),
                  (OUT_SHARDINGS, sharding_text(a.get("out_shardings", ())))),
        custom_call_target=LOCAL_TO_GLOBAL, custom_call_has_side_effect=True)


@converter("sdy.named_computation")
def _named_computation(importer, scope, node, operands):
    a = node.attrs
    body = importer.region(node.regions[0], a["name"], "scalar", outer=scope)
    frontend = [("xla.sdy.named_computation", a["name"])]
    if a.get("in_shardings"):
        frontend.append((IN_SHARDINGS, sharding_text(a["in_shardings"])))
    if a.get("out_shardings"):
        frontend.append((OUT_SHARDINGS, sharding_text(a["out_shardings"])))
    return scope.emit("call", operands, body.root.shape, to_apply=body, frontend=frontend)


@converter("sdy.sharding_group")
def _sharding_group(importer, scope, node, operands):
    group = node.attrs.get("group_id", 0)
    scope.emit("custom-call", operands, TupleShape(()),
               frontend=((SHARDING_GROUP_ID, str(group)),),
               custom_call_target=SHARDING_GROUP, custom_call_has_side_effect=True)
    return []


@converter("sdy.propagation_barrier")
def _propagation_barrier(importer, scope, node, operands):
    direction = node.attrs.get("allowed_direction", "NONE")
    return scope.emit("custom-call", operands, node.result_types[0],
                      frontend=((ALLOWED_DIRECTION, str(direction)),),
                      custom_call_target=PROPAGATION_BARRIER)


@converter("sdy.data_flow_edge")
def _data_flow_edge(importer, scope, node, operands):
    # kept even when unused (it is part of the program as written)
    return scope.emit("custom-call", operands, node.result_types[0],
                      sharding=node.attrs.get("sharding"), custom_call_target=DATA_FLOW_EDGE,
                      custom_call_has_side_effect=True)


@converter("sdy.func_data_flow_edge")
def _func_data_flow_edge(importer, scope, node, operands):
    sharding = node.attrs.get("sdy.sharding")
    if isinstance(sharding, (tuple, list)):
        (sharding,) = sharding
    return scope.emit("custom-call", operands, node.result_types[0], sharding=sharding,
                      custom_call_target=FUNC_DATA_FLOW_EDGE)


def _collective(importer, scope, node, operands):
    name = node.name[len("sdy."):]
    return scope.emit("custom-call", operands, node.result_types[0],
                      sharding=node.attrs["out_sharding"],
                      frontend=(("xla.sdy.collective", name),
                                ("xla.sdy.collective_params", node.attrs.get("params", ""))),
                      custom_call_target=SHARDING)


for _name in SDY_COLLECTIVES:
    converter(f"sdy.{_name}")(_collective)
