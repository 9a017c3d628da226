"""Printers of control flow, calls, custom calls and the Shardy ops they stand for."""

from __future__ import annotations

import re

from xla_spmd.ir.custom_calls import (
    ALLOWED_DIRECTION,
    DATA_FLOW_EDGE,
    FUNC_DATA_FLOW_EDGE,
    GLOBAL_TO_LOCAL,
    IN_SHARDINGS,
    LOCAL_TO_GLOBAL,
    MANUAL_AXES,
    OUT_SHARDINGS,
    PROPAGATION_BARRIER,
    SHARDING,
    SHARDING_GROUP,
    SHARDING_GROUP_ID,
)
from xla_spmd.sharding import TensorSharding
from xla_spmd.stablehlo.exporter import (
    ExportError,
    exported_frontend,
    is_manual_body_call,
    says_something,
    sharding_attr,
)
from xla_spmd.stablehlo.exporter_ops import API_NUMBERS, attr_dict, fn_type, printer, refs
from xla_spmd.stablehlo.lexer import escape
from xla_spmd.stablehlo.scope import WHILE_OPERANDS
from xla_spmd.stablehlo.types import print_type


def _elements(fx, packed):
    """The values a while/conditional tuple operand packs."""
    if packed.opcode != "tuple":
        raise ExportError(f"{packed.name}: a loop or branch operand must be a tuple "
                          "instruction to be written as StableHLO operands")
    return list(packed.operands)


@printer("while")
def _while(fx, inst, indent):
    (state,) = inst.operands
    values = _elements(fx, state)
    # values past the op's own operands are outer values its regions capture
    count = int(inst.frontend_attribute(WHILE_OPERANDS) or len(values))
    names = [fx.iter_arg() for _ in values[:count]]
    bound = names + [fx.ref(v) for v in values[count:]]
    inits = ", ".join(f"{n} = {fx.ref(v)}" for n, v in zip(names, values))
    types = ", ".join(print_type(v.shape) for v in values[:count])
    inner = indent + "  "
    cond = fx.region(inst.attrs.condition, inner,
                     bindings=fx.tuple_param_bindings(inst.attrs.condition, bound))
    body = fx.region(inst.attrs.body, inner,
                     bindings=fx.tuple_param_bindings(inst.attrs.body, bound), returns=count)
    fx.result_counts[inst] = count
    shown = inst
    if isinstance(inst.sharding, tuple):
        shown = inst.replace(sharding=inst.sharding[:count])
    shown = shown.replace(frontend_attributes=tuple(
        (k, v) for k, v in inst.frontend_attributes if k != WHILE_OPERANDS))
    sharding = attr_dict(shown, with_sharding=inst not in fx.edge_owners)
    # MLIR's form: the attribute dictionary (with its keyword) after the types
    return (f"stablehlo.while({inits}) : {types}{' attributes' + sharding if sharding else ''}"
            f"\n{indent}cond {{\n" + "\n".join(cond) + f"\n{indent}}} do {{\n"
            + "\n".join(body) + f"\n{indent}}}")


@printer("conditional")
def _conditional(fx, inst, indent):
    a = inst.attrs
    branches = a.branch_computations or (a.true_computation, a.false_computation)
    regions = []
    for branch, operand in zip(branches, inst.operands[1:]):
        (param,) = branch.parameters
        if param.shape == operand.shape and operand.opcode != "tuple":
            bindings = {param: fx.ref(operand)}
        else:
            outer = [fx.ref(v) for v in _elements(fx, operand)]
            bindings = fx.tuple_param_bindings(branch, outer)
        lines = fx.region(branch, indent + "  ", bindings=bindings)
        regions.append("{\n" + "\n".join(lines) + f"\n{indent}}}")
    name = "stablehlo.case" if a.branch_computations else "stablehlo.if"
    results = inst.shape.elements if hasattr(inst.shape, "elements") else (inst.shape,)
    result_text = ", ".join(print_type(r) for r in results)
    return (f'"{name}"({fx.ref(inst.operands[0])}) ({", ".join(regions)})'
            f"{attr_dict(inst, with_sharding=inst not in fx.edge_owners)} : "
            f"({print_type(inst.operands[0].shape)}) -> ({result_text})")


@printer("call")
def _call(fx, inst, indent):
    callee = inst.attrs.to_apply
    if is_manual_body_call(inst):
        return None  # printed with its xla.sdy.LocalToGlobalShape
    named = inst.frontend_attribute("xla.sdy.named_computation")
    if named is not None:
        names = [fx.new_arg() for _ in callee.parameters]
        args = ", ".join(f"{n}: {print_type(p.shape)}" for n, p in zip(names, callee.parameters))
        lines = fx.region(callee, indent + "  ", names)
        lines[-1] = lines[-1].replace("stablehlo.return", "sdy.return", 1)
        shardings = ""
        for key, word in ((IN_SHARDINGS, "in_shardings"),
                          (OUT_SHARDINGS, "out_shardings")):
            text = inst.frontend_attribute(key)
            if text is not None:
                shardings += f" {word}={_per_value_list(text)}"
        return (f'sdy.named_computation<{escape(named)}>({refs(fx, inst.operands)})'
                f"{shardings} ({args}) {{\n" + "\n".join(lines) + f"\n{indent}}} : "
                f"{fn_type(inst)}")
    if inst.attrs.is_composite:
        return _composite(fx, inst, callee)
    return (f"call @{callee.name}({refs(fx, inst.operands)})"
            f"{attr_dict(inst)} : {fn_type(inst)}")


def _composite(fx, inst, callee) -> str:
    """A composite call (§14) as ``stablehlo.composite``; its frontend attributes become the
    composite's name, attributes and version again."""
    composite_keys = ("composite.name", "composite.attributes", "composite.version")
    name = inst.frontend_attribute("composite.name")
    if name is None:
        raise ExportError(f"{inst.name}: a composite call needs a composite.name frontend "
                          "attribute")
    items = [f"composite_attributes = {inst.frontend_attribute('composite.attributes') or '{}'}",
             f"decomposition = @{callee.name}",
             f"version = {int(inst.frontend_attribute('composite.version') or 0)} : i32"]
    others = inst.replace(frontend_attributes=tuple(
        (k, v) for k, v in inst.frontend_attributes if k not in composite_keys))
    return (f"stablehlo.composite {escape(name)} {refs(fx, inst.operands)}"
            f"{attr_dict(others, items)} : {fn_type(inst)}")


def _per_value_list(text: str) -> str:
    """``#sdy.sharding_per_value<[<...>, ...]>`` → ``[<...>, ...]``."""
    match = re.fullmatch(r"\s*#sdy\.sharding_per_value<(.*)>\s*", text, re.S)
    return match.group(1) if match else text


def _manual_axes(text: str | None) -> str:
    names = re.findall(r'"([^"]*)"', text or "")
    return "{" + ", ".join(f'"{n}"' for n in names) + "}"


def _source(inst, opcode):
    """The instruction of `opcode` behind `inst` (itself, or the tuple it is an element of)."""
    if inst.opcode == "get-tuple-element":
        inst = inst.operands[0]
    if inst.opcode != opcode:
        raise ExportError(f"{inst.name}: expected the {opcode} of a manual computation")
    return inst


def _manual_computation(fx, inst, indent):
    call = _source(inst.operands[0], "call")
    to_local = _source(call.operands[0], "custom-call") if call.operands else None
    operands = to_local.operands if to_local is not None else ()
    body = call.attrs.to_apply
    names = [fx.new_arg() for _ in body.parameters]
    args = ", ".join(f"{n}: {print_type(p.shape)}" for n, p in zip(names, body.parameters))
    lines = fx.region(body, indent + "  ", names)
    lines[-1] = lines[-1].replace("stablehlo.return", "sdy.return", 1)
    in_shardings = _per_value_list(to_local.frontend_attribute(IN_SHARDINGS)
                                   or "[]") if to_local is not None else "[]"
    out_shardings = _per_value_list(inst.frontend_attribute(OUT_SHARDINGS) or "[]")
    axes = _manual_axes(inst.frontend_attribute(MANUAL_AXES))
    return (f"sdy.manual_computation({refs(fx, operands)}) in_shardings={in_shardings} "
            f"out_shardings={out_shardings} manual_axes={axes} ({args}) {{\n"
            + "\n".join(lines) + f"\n{indent}}} : {fn_type(inst, operands)}")


@printer("custom-call")
def _custom_call(fx, inst, indent):
    a = inst.attrs
    target = a.custom_call_target
    if target == GLOBAL_TO_LOCAL:
        return None
    if target == LOCAL_TO_GLOBAL:
        return _manual_computation(fx, inst, indent)
    operand = fx.ref(inst.operands[0]) if len(inst.operands) == 1 else None
    if target == SHARDING and isinstance(inst.sharding, TensorSharding) and operand:
        collective = inst.frontend_attribute("xla.sdy.collective")
        if collective is not None:
            params = inst.frontend_attribute("xla.sdy.collective_params") or ""
            return (f"sdy.{collective} {params + ' ' if params else ''}{operand} out_sharding="
                    f"<{inst.sharding.body_text()}> : {print_type(inst.shape)}")
        if not exported_frontend(inst):
            return (f"sdy.sharding_constraint {operand} <{inst.sharding.body_text()}> : "
                    f"{print_type(inst.shape)}")
    if target == SHARDING_GROUP and operand:
        group = inst.frontend_attribute(SHARDING_GROUP_ID) or "0"
        return (f"sdy.sharding_group {operand} group_id={group} : "
                f"{print_type(inst.operands[0].shape)}")
    if target == DATA_FLOW_EDGE and operand:
        sharding = (f" sharding=<{inst.sharding.body_text()}>"
                    if says_something(inst, scalars=False) else "")
        return f"sdy.data_flow_edge {operand}{sharding} : {print_type(inst.shape)}"
    if target == FUNC_DATA_FLOW_EDGE and operand:
        return f"sdy.func_data_flow_edge {operand}{attr_dict(inst)} : {print_type(inst.shape)}"
    if target == PROPAGATION_BARRIER and operand:
        direction = inst.frontend_attribute(ALLOWED_DIRECTION) or "NONE"
        plain = inst.replace(frontend_attributes=tuple(
            (k, v) for k, v in inst.frontend_attributes if k != ALLOWED_DIRECTION))
        return (f"sdy.propagation_barrier {operand} allowed_direction={direction}"
                f"{attr_dict(plain)} : {print_type(inst.shape)}")
    items = []
    for key, value in inst.extras:
        if key == "backend_config":
            items.append(f"backend_config = {escape(value)}")
    if a.custom_call_has_side_effect:
        items.append("has_side_effect = true")
    if a.api_version is not None:
        items.append(f"api_version = {API_NUMBERS.get(a.api_version, 1)} : i32")
    if a.called_computations:
        items.append("called_computations = [" + ", ".join(
            f"@{c.name}" for c in a.called_computations) + "]")
    unresolved = dict(inst.extras).get("called_computations")
    if unresolved is not None:
        items.append(f"called_computations = [{unresolved}]")
    gspmd = inst.frontend_attribute("mhlo.sharding")
    if gspmd is not None:
        items.append(f"mhlo.sharding = {escape(gspmd)}")
    return (f"stablehlo.custom_call @{target}({refs(fx, inst.operands)})"
            f"{attr_dict(inst, items)} : {fn_type(inst)}")


__all__ = ["sharding_attr"]
