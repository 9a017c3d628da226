"""The pretty (custom-assembly) forms of ops, read into the generic form.

Most pretty ops share one shape: operands, ``keyword = value`` items and positional words
(``compare LT, %a, %b, SIGNED``), an optional attribute dict and a type signature; they are
read by `_items` and renamed with `KEYWORDS` to their generic attribute names. The ops with
their own syntax (reduce, while, convolution, custom_call, call, Shardy's ops) have a reader
each in `SPECIAL`.
"""

from __future__ import annotations

import re

from xla_spmd.sharding import parse_sharding
from xla_spmd.stablehlo.syntax_tree import Dense, OpNode, RawAttr
from xla_spmd.stablehlo.types import parse_type

# pretty keyword -> generic attribute name, per op
KEYWORDS = {
    "stablehlo.broadcast_in_dim": {"dims": "broadcast_dimensions"},
    "stablehlo.transpose": {"dims": "permutation"},
    "stablehlo.reverse": {"dims": "dimensions"},
    "stablehlo.dynamic_slice": {"sizes": "slice_sizes"},
    "stablehlo.concatenate": {"dim": "dimension"},
    "stablehlo.pad": {"low": "edge_padding_low", "high": "edge_padding_high",
                      "interior": "interior_padding"},
    "stablehlo.iota": {"dim": "iota_dimension"},
    "stablehlo.dynamic_iota": {"dim": "iota_dimension"},
    "stablehlo.get_dimension_size": {"dim": "dimension"},
    "stablehlo.rng_bit_generator": {"algorithm": "rng_algorithm"},
    "stablehlo.rng": {"distribution": "rng_distribution"},
    "stablehlo.fft": {"type": "fft_type", "length": "fft_length"},
    "stablehlo.dot_general": {"precision": "precision_config"},
    "stablehlo.dot": {"precision": "precision_config"},
    "stablehlo.sort": {"dim": "dimension"},
}
_MULTI_TYPE_RESULTS = {"stablehlo.while", "stablehlo.optimization_barrier"}
_SLICE = re.compile(r"\[([^\]]*)\]")


def parse_pretty(p, node: OpNode) -> None:
    if node.name == "call":
        node.name = "func.call"
    elif node.name in ("return",):
        node.name = "func.return"
    special = SPECIAL.get(node.name)
    if special is not None:
        special(p, node)
    else:
        _items(p, node)
        _signature(p, node)
        if node.name.startswith("check.") and p.s.peek("{"):  # `: type {tolerance = ...}`
            node.attrs.update(p.attr_dict())


def _keyword_value(p):
    s = p.s
    if s.peek("["):
        text = s.balanced("[", "]")
        if s.accept_word("x"):
            other = s.balanced("[", "]")
            return (_int_list(text), _int_list(other))
        words = [w.strip() for w in text[1:-1].split(",") if w.strip()]
        if all(re.fullmatch(r"-?\d+", w) for w in words):
            return tuple(int(w) for w in words)
        return [w.strip("#").split()[-1] for w in words]
    if s.peek("<"):
        return RawAttr(s.balanced("<", ">"))
    number = s.try_number_text()
    if number is not None:
        return int(number) if re.fullmatch(r"[-+]?\d+", number) else float(number)
    return p.attr_value()


def _int_list(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in re.findall(r"-?\d+", text))


def _items(p, node: OpNode, attrs_first: bool = True) -> None:
    """Operands, ``key = value`` items and positional words up to the signature (an attribute
    dict may come before the positional values: ``sdy.constant {...} dense<...>``)."""
    s = p.s
    names = KEYWORDS.get(node.name, {})
    positional = []
    while True:
        c = s.peek_char()
        if c == "%":
            node.operands.append(s.value_id())
            if s.peek("[") and node.name == "stablehlo.get_tuple_element":
                node.attrs["index"] = _int_list(s.balanced("[", "]"))[0]
        elif c == "[" and node.name == "stablehlo.slice":
            starts, limits, strides = [], [], []
            slice_pos = s.pos
            for part in s.balanced("[", "]")[1:-1].split(","):
                if not part.strip():
                    continue
                if not re.fullmatch(r"\s*-?\d+\s*(:\s*-?\d+\s*){1,2}", part):
                    raise s.error(f"expected start:limit or start:limit:stride in the slice "
                                  f"but found '{part.strip()}'", slice_pos)
                fields = [int(f) for f in part.split(":")]
                starts.append(fields[0])
                limits.append(fields[1])
                strides.append(fields[2] if len(fields) > 2 else 1)
            node.attrs.update(start_indices=tuple(starts), limit_indices=tuple(limits),
                              strides=tuple(strides))
        elif c == "<":
            start = s.pos
            text = s.balanced("<", ">")
            try:
                positional.append(parse_sharding("#sdy.sharding" + text, p.meshes))
            except Exception as error:
                raise s.error(f"invalid sharding: {error}", start) from None
        elif c in (":", "{", "") or c == "}":
            break
        else:
            start = s.pos
            word = s.try_bare_id()
            if word is None:
                raise s.error(f"unexpected {s.found()} in '{node.name}'")
            if word == "dense" and s.peek("<"):
                s.skip()
                body_pos = s.pos + 1
                positional.append(Dense(s.balanced("<", ">")[1:-1], pos=body_pos))
            elif s.accept("="):
                key = names.get(word, word)
                value_pos = s.pos
                if word == "sharding" and s.peek("<"):   # sdy.data_flow_edge's sharding=<..>
                    text = s.balanced("<", ">")
                    try:
                        value = parse_sharding("#sdy.sharding" + text, p.meshes)
                    except Exception as error:
                        raise s.error(f"invalid sharding: {error}", value_pos) from None
                else:
                    value = _keyword_value(p)
                if word in ("contracting_dims", "batching_dims"):
                    if not (isinstance(value, tuple) and len(value) == 2
                            and all(isinstance(v, tuple) for v in value)):
                        raise s.error(f"expected {word} = [lhs dims] x [rhs dims]", value_pos)
                    dims = node.attrs.setdefault("dot_dimension_numbers", {})
                    prefix = "contracting" if word == "contracting_dims" else "batching"
                    dims[f"lhs_{prefix}_dimensions"], dims[f"rhs_{prefix}_dimensions"] = value
                else:
                    node.attrs[key] = value
            else:
                del start
                positional.append(word)
        s.accept(",")
    if positional:
        _positional(node, positional)
    if s.peek("{"):
        node.attrs.update(p.attr_dict())
        if attrs_first and not positional and not s.peek(":"):
            _items(p, node, attrs_first=False)


def _positional(node: OpNode, values: list) -> None:
    name = node.name
    if name == "stablehlo.compare":
        node.attrs["comparison_direction"] = values[0]
        if len(values) > 1:
            node.attrs["compare_type"] = values[1]
    elif name in ("stablehlo.constant", "sdy.constant"):
        node.attrs["value"] = values[0]
    elif name in ("sdy.sharding_constraint", "sdy.reshard"):
        node.attrs["sharding"] = values[0]
    else:
        node.attrs["_positional"] = values


def _signature(p, node: OpNode) -> None:
    s = p.s
    s.expect(":", f"before the type of '{node.name}'")
    if s.peek("("):
        _, node.result_types = p.function_type()
        return
    types = [parse_type(s)]
    while s.peek(",") :
        s.accept(",")
        types.append(parse_type(s))
    if s.accept("->"):
        node.result_types = p.result_type_list()
    elif node.name in _MULTI_TYPE_RESULTS or node.name.endswith("return"):
        node.result_types = types
    else:
        node.result_types = [types[-1]]


# ---------------------------------------------------------------------------------------------
# Ops with their own syntax


def _return(p, node: OpNode) -> None:
    s = p.s
    while s.peek("%"):
        node.operands.append(s.value_id())
        if not s.accept(","):
            break
    if s.peek("{"):
        node.attrs.update(p.attr_dict())
    if s.accept(":"):
        parse_type(s)
        while s.accept(","):
            parse_type(s)


def _reduce(p, node: OpNode) -> None:
    s = p.s
    inputs, inits = [], []
    while s.accept("("):
        inputs.append(s.value_id())
        s.expect("init")
        s.expect(":")
        inits.append(s.value_id())
        s.expect(")")
        if not s.accept(","):
            break
    node.operands = inputs + inits
    if s.accept_word("applies"):
        node.attrs["_applies"] = s.bare_id()
    s.expect("across")
    s.expect("dimensions")
    s.expect("=")
    node.attrs["dimensions"] = _keyword_value(p)
    if s.peek("{"):
        node.attrs.update(p.attr_dict())
    _signature(p, node)
    if s.accept_word("reducer"):
        groups = []
        while s.accept("("):
            group = []
            while True:
                name = s.value_id()
                s.expect(":")
                group.append((name, parse_type(s)))
                if s.accept(")"):
                    break
                s.expect(",")
            groups.append(group)
        args = [g[0] for g in groups] + [g[1] for g in groups]
        node.regions.append(p.region(args))


def _while(p, node: OpNode) -> None:
    s = p.s
    s.expect("(")
    names = []
    if not s.accept(")"):
        while True:
            names.append(s.value_id())
            s.expect("=")
            node.operands.append(s.value_id())
            if s.accept(")"):
                break
            s.expect(",")
    if s.accept_word("attributes"):
        node.attrs.update(p.attr_dict())
    _signature(p, node)
    if s.accept_word("attributes"):     # MLIR prints them here, after the types
        node.attrs.update(p.attr_dict())
    args = list(zip(names, node.result_types))
    s.expect("cond")
    node.regions.append(p.region(args))
    s.expect("do")
    node.regions.append(p.region(args))


def _operand_list(p, node: OpNode) -> None:
    s = p.s
    s.expect("(")
    if not s.accept(")"):
        while True:
            if s.peek("%"):
                node.operands.append(s.value_id())
            else:
                key = s.bare_id()
                s.expect("=")
                node.attrs[key] = p.attr_value()
            if s.accept(")"):
                break
            s.expect(",")


def _convolution(p, node: OpNode) -> None:
    s = p.s
    _operand_list(p, node)
    while not s.peek(":") and not s.peek("{"):
        key = s.bare_id()
        s.expect("=")
        if key == "dim_numbers":
            text = s.match(re.compile(r"\[[^\]]*\]\s*x\s*\[[^\]]*\]\s*->\s*\[[^\]]*\]"),
                           "convolution dimension numbers")
            node.attrs["dimension_numbers"] = RawAttr(text)
        elif key == "window":
            body = s.balanced("{", "}")[1:-1]
            for match in re.finditer(r"(\w+)\s*=\s*(\[(?:[^\[\]]|\[[^\]]*\])*\])", body):
                field, value = match.group(1), match.group(2)
                if field == "reverse":
                    node.attrs["window_reversal"] = tuple(
                        w.strip() in ("true", "1") for w in value[1:-1].split(","))
                elif field == "pad":
                    node.attrs["padding"] = [list(_int_list(m)) for m in
                                             re.findall(r"\[[^\[\]]*\]", value[1:-1])]
                else:
                    node.attrs[{"stride": "window_strides", "lhs_dilate": "lhs_dilation",
                                "rhs_dilate": "rhs_dilation"}.get(field, field)] = \
                        _int_list(value)
        else:
            node.attrs[key] = p.attr_value()
        s.accept(",")
    if s.peek("{"):
        node.attrs.update(p.attr_dict())
    _signature(p, node)


def _operands_attrs_signature(p, node: OpNode) -> None:
    """``(%a, %b) {attrs} : (...) -> ...``, the attribute dictionary optional."""
    _operand_list(p, node)
    if p.s.peek("{"):
        node.attrs.update(p.attr_dict())
    _signature(p, node)


def _symbol_call(key: str):
    """The reader of ``op @symbol(%a, %b) {attrs} : ...``, the symbol stored as `key`."""
    def read(p, node: OpNode) -> None:
        node.attrs[key] = p.s.symbol()
        _operands_attrs_signature(p, node)
    return read


def _composite(p, node: OpNode) -> None:
    """``stablehlo.composite "ns.name" %a, %b {composite_attributes = {...}, decomposition =
    @f, version = 1 : i32} : (...) -> ...``."""
    node.attrs["name"] = p.s.string()
    _items(p, node)
    _signature(p, node)


def _chlo_call_like(p, node: OpNode) -> None:
    if p.s.peek("("):
        _operands_attrs_signature(p, node)
    else:
        _items(p, node)
        _signature(p, node)


def _sharding_list(p) -> list:
    s = p.s
    start = s.pos
    text = s.balanced("[", "]")
    shardings = []
    for match in re.finditer(r"<(?:[^<>]|<[^<>]*>)*>", text[1:-1]):
        try:
            shardings.append(parse_sharding("#sdy.sharding" + match.group(), p.meshes))
        except Exception as error:
            raise s.error(f"invalid sharding: {error}", start) from None
    return shardings


def _region_with_args(p):
    p.s.expect("(")
    return p.region(p.typed_values())


def _computation(p, node: OpNode, manual: bool) -> None:
    """Operands, ``in_shardings``/``out_shardings`` (and ``manual_axes`` when `manual`), the
    body region and the signature of a manual or named computation."""
    s = p.s
    _operand_list(p, node)
    while True:
        if s.accept_word("in_shardings"):
            s.expect("=")
            node.attrs["in_shardings"] = _sharding_list(p)
        elif s.accept_word("out_shardings"):
            s.expect("=")
            node.attrs["out_shardings"] = _sharding_list(p)
        elif manual and s.accept_word("manual_axes"):
            s.expect("=")
            node.attrs["manual_axes"] = tuple(
                re.findall(r'"([^"]*)"', s.balanced("{", "}")))
        else:
            break
    node.regions.append(_region_with_args(p))
    _signature(p, node)


def _manual_computation(p, node: OpNode) -> None:
    _computation(p, node, manual=True)


def _named_computation(p, node: OpNode) -> None:
    s = p.s
    s.expect("<")
    node.attrs["name"] = s.string()
    s.expect(">")
    _computation(p, node, manual=False)


def _sdy_collective(p, node: OpNode) -> None:
    s = p.s
    s.skip()
    start = s.pos
    end = s.text.find("%", start)
    if end < 0:
        raise s.error(f"'{node.name}' needs an operand")
    node.attrs["params"] = " ".join(s.text[start:end].split())
    s.pos = end
    node.operands.append(s.value_id())
    s.expect("out_sharding")
    s.expect("=")
    begin = s.pos
    text = s.balanced("<", ">")
    try:
        node.attrs["out_sharding"] = parse_sharding("#sdy.sharding" + text, p.meshes)
    except Exception as error:
        raise s.error(f"invalid sharding: {error}", begin) from None
    if s.peek("{"):
        node.attrs.update(p.attr_dict())
    _signature(p, node)


SPECIAL = {
    "func.return": _return, "stablehlo.return": _return, "sdy.return": _return,
    "stablehlo.reduce": _reduce, "stablehlo.while": _while,
    "stablehlo.convolution": _convolution,
    "stablehlo.custom_call": _symbol_call("call_target_name"),
    "func.call": _symbol_call("callee"), "chlo.top_k": _chlo_call_like,
    "stablehlo.composite": _composite,
    "sdy.manual_computation": _manual_computation,
    "sdy.named_computation": _named_computation,
    **{f"sdy.{name}": _sdy_collective for name in (
        "all_gather", "all_slice", "all_reduce", "reduce_scatter", "all_to_all",
        "collective_permute", "sharded_to_unreduced", "replicated_to_unreduced")},
}
