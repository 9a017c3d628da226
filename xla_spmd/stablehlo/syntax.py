"""MLIR text → a small syntax tree: modules, functions, ops, regions, attribute values.

Every op, pretty or generic, becomes one `OpNode` in generic terms: its name, result names,
operand names, attributes under their generic names (``broadcast_dimensions``, not ``dims``),
regions and result types. The importer then works on one form only. Attribute values are
plain Python: ints, floats, bools, strings, lists, dicts, `Symbol`, `Dense`, numpy-free
tuples for ``array<i64: ...>``, enums as their upper-case word, `TensorSharding` for Shardy
shardings, and `RawAttr` for anything kept verbatim. The tree's classes are in `syntax_tree`,
below this parser and the pretty forms' readers (`pretty`) it calls.

>>> tree = parse_text('func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\\n'
...                   '  %0 = stablehlo.add %a, %a : tensor<2xf32>\\n'
...                   '  return %0 : tensor<2xf32>\\n}')
>>> [(op.name, op.operands) for op in tree.functions[0].body.ops]
[('stablehlo.add', ['%a', '%a']), ('func.return', ['%0'])]
"""

from __future__ import annotations

import re

from xla_spmd.errors import MAX_NESTING, TOO_DEEP, ParseError
from xla_spmd.mesh import Mesh, parse_mesh
from xla_spmd.sharding import parse_sharding, parse_sharding_per_value
from xla_spmd.stablehlo.lexer import Scanner, strip_locations
from xla_spmd.stablehlo.pretty import parse_pretty
from xla_spmd.stablehlo.syntax_tree import (
    Block,
    Dense,
    FuncNode,
    ModuleNode,
    OpNode,
    RawAttr,
    Symbol,
)
from xla_spmd.stablehlo.types import DenseLiteralError, parse_dense, parse_type

# ---------------------------------------------------------------------------------------------
# Module level


def parse_text(text: str, filename: str | None = None) -> ModuleNode:
    """Parse MLIR text: one ``module`` (or bare functions) into a `ModuleNode`."""
    parser = Parser(Scanner(strip_locations(text), filename))
    try:
        return parser.module()
    except RecursionError:  # a nesting no explicit limit caught; the cursor is in it
        raise parser.s.error(TOO_DEEP) from None


class Parser:
    def __init__(self, scanner: Scanner):
        self.s = scanner
        self.meshes: dict[str, Mesh] = {}
        self.depth = 0  # regions and attribute values being read, one inside the other

    def _enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.s.error(TOO_DEEP)

    def module(self) -> ModuleNode:
        s = self.s
        node = ModuleNode(None, {}, self.meshes, scanner=s)
        wrapped = s.accept_word("module")
        if wrapped:
            if s.peek("@"):
                node.name = s.symbol()
            if s.accept_word("attributes"):
                node.attrs = self.attr_dict()
            s.expect("{")
        while not s.at_end():
            if wrapped and s.accept("}"):
                if not s.at_end():
                    raise s.error(f"unexpected text after the module: {s.found()}")
                return node
            if s.accept_word("sdy.mesh"):
                name = s.symbol()
                s.expect("=")
                start = s.pos
                try:
                    self.meshes[name] = parse_mesh(s.balanced("<", ">"))
                except Exception as error:
                    raise s.error(f"invalid mesh @{name}: {error}", start) from None
                if s.peek("{"):
                    s.skip()
                    attrs_start = s.pos
                    self.attr_dict()
                    node.mesh_attrs[name] = s.text[attrs_start:s.pos]
            elif s.accept_word("func.func"):
                node.functions.append(self.function())
            else:
                raise s.error(f"expected 'func.func' or 'sdy.mesh' at module level but found "
                              f"{s.found()}")
        if wrapped:
            raise s.error("missing '}' at the end of the module")
        return node

    def function(self) -> FuncNode:
        s = self.s
        pos = s.pos
        visibility = "public"
        for word in ("public", "private", "nested"):
            if s.accept_word(word):
                visibility = word
        name = s.symbol()
        s.expect("(")
        args = []
        if not s.accept(")"):
            while True:
                value = s.value_id()
                s.expect(":")
                shape = parse_type(s)
                attrs = self.attr_dict() if s.peek("{") else {}
                args.append((value, shape, attrs))
                if s.accept(")"):
                    break
                s.expect(",")
        result_types, result_attrs = [], []
        if s.accept("->"):
            if s.accept("("):
                if not s.accept(")"):
                    while True:
                        result_types.append(parse_type(s))
                        result_attrs.append(self.attr_dict() if s.peek("{") else {})
                        if s.accept(")"):
                            break
                        s.expect(",")
            else:
                result_types.append(parse_type(s))
                result_attrs.append({})
        if s.accept_word("attributes"):
            self.attr_dict()
        body = self.region([(n, t) for n, t, _ in args])
        return FuncNode(name, visibility, args, result_types, result_attrs, body, pos)

    # ----- regions and ops -----
    def typed_values(self) -> list:
        """``%a: type, %b: type)`` after the opening parenthesis, as (name, type) pairs."""
        s = self.s
        values = []
        if not s.accept(")"):
            while True:
                name = s.value_id()
                s.expect(":")
                values.append((name, parse_type(s)))
                if s.accept(")"):
                    break
                s.expect(",")
        return values

    def region(self, args=None) -> Block:
        """``{ [^bb0(args):] ops }``."""
        self._enter()
        try:
            return self._region(args)
        finally:
            self.depth -= 1

    def _region(self, args) -> Block:
        s = self.s
        s.expect("{")
        block_args = list(args or [])
        if s.accept("^"):
            s.bare_id()
            if s.accept("("):
                block_args.extend(self.typed_values())
            s.expect(":")
        ops = []
        while not s.accept("}"):
            if s.at_end():
                raise s.error("missing '}' at the end of a region")
            ops.append(self.operation())
        return Block(block_args, ops)

    def operation(self) -> OpNode:
        s = self.s
        pos = s.pos
        results: list[str] = []
        if s.peek("%"):
            while True:
                name = s.value_id()
                if s.accept(":"):
                    count_pos = s.pos
                    count = s.integer()
                    if count > len(s.text):  # each result needs a type written in the text
                        raise s.error(f"{name}:{count}: more results than the text has "
                                      "types for", count_pos)
                    results.extend(f"{name}#{i}" for i in range(count))
                else:
                    results.append(name)
                if not s.accept(","):
                    break
            s.expect("=")
        s.skip()
        op_pos = s.pos
        generic = s.peek('"')
        name = s.string() if generic else s.bare_id()
        node = OpNode(name, results, [], {}, [], [], op_pos)
        try:
            if generic:
                self.generic_body(node)
            else:
                parse_pretty(self, node)
        except ParseError:
            raise
        except (ValueError, KeyError, IndexError, TypeError, ArithmeticError,
                AttributeError) as error:
            # A form the op readers did not foresee: say where, never the Python exception.
            detail = str(error) if not isinstance(error, (KeyError, IndexError)) else \
                "missing items"
            raise s.error(f"cannot read '{name}' ({detail}); expected the form StableHLO "
                          "prints for this op", op_pos) from None
        node.line, node.column = s.line_col(op_pos)
        del pos
        return node

    def generic_body(self, node: OpNode) -> None:
        s = self.s
        s.expect("(")
        if not s.accept(")"):
            while True:
                node.operands.append(s.value_id())
                if s.accept(")"):
                    break
                s.expect(",")
        if s.accept("<{"):
            s.pos -= 1
            node.attrs.update(self.attr_dict())
            s.expect(">")
        if s.peek("(") :
            s.expect("(")
            while True:
                node.regions.append(self.region())
                if s.accept(")"):
                    break
                s.expect(",")
        if s.peek("{"):
            node.attrs.update(self.attr_dict())
        s.expect(":")
        _, node.result_types = self.function_type()

    def function_type(self):
        """``(T, ...) -> T`` or ``(T, ...) -> (T, ...)``; returns (operand types, results)."""
        s = self.s
        s.expect("(")
        operands = []
        if not s.accept(")"):
            while True:
                operands.append(parse_type(s))
                if s.accept(")"):
                    break
                s.expect(",")
        s.expect("->")
        return operands, self.result_type_list()

    def result_type_list(self) -> list:
        s = self.s
        if s.accept("("):
            results = []
            if not s.accept(")"):
                while True:
                    results.append(parse_type(s))
                    if s.accept(")"):
                        break
                    s.expect(",")
            return results
        return [parse_type(s)]

    # ----- attributes -----
    def attr_dict(self) -> dict:
        s = self.s
        s.expect("{")
        attrs = {}
        if s.accept("}"):
            return attrs
        while True:
            key = s.string() if s.peek('"') else s.bare_id()
            if s.accept("="):
                if key == "composite_attributes" and s.peek("{"):
                    # Kept as text: HLO carries it verbatim in composite.attributes (§14).
                    attrs[key] = RawAttr(s.balanced("{", "}"))
                else:
                    attrs[key] = self.attr_value()
            else:
                attrs[key] = True
            if s.accept("}"):
                return attrs
            s.expect(",")

    def attr_value(self):
        self._enter()
        try:
            return self._attr_value()
        finally:
            self.depth -= 1

    def _attr_value(self):
        s = self.s
        c = s.peek_char()
        start = s.pos
        if c == '"':
            return s.string()
        if c == "[":
            s.expect("[")
            items = []
            if not s.accept("]"):
                while True:
                    items.append(self.attr_value())
                    if s.accept("]"):
                        break
                    s.expect(",")
            return items
        if c == "{":
            return self.attr_dict()
        if c == "@":
            return Symbol(s.symbol())
        if s.accept_word("dense"):
            s.skip()
            body_pos = s.pos + 1
            body = s.balanced("<", ">")[1:-1]
            if s.accept(":"):
                shape = parse_type(s)
                try:
                    return Dense(body, shape, parse_dense(body, shape), body_pos)
                except DenseLiteralError as error:
                    raise s.error(error.message, body_pos + error.offset) from None
            return Dense(body, pos=body_pos)
        if s.accept_word("array"):
            text = s.balanced("<", ">")[1:-1]
            _, _, items = text.partition(":")
            items = [i.strip() for i in items.split(",") if i.strip()]
            for item in items:
                if item not in ("true", "false") and not re.fullmatch(r"[-+]?\d+", item):
                    raise s.error(f"expected integers or booleans in array<...> but found "
                                  f"'{item}'", start)
            return tuple(i == "true" if i in ("true", "false") else int(i) for i in items)
        if s.accept_word("true"):
            return True
        if s.accept_word("false"):
            return False
        if s.accept_word("unit"):
            return True
        if c == "#":
            return self.hash_attr()
        number = s.try_number_text()
        if number is not None:
            if "0x" in number:
                value = int(number, 16)
            elif re.search(r"[.eEn]", number):
                value = float(number)
            else:
                value = int(number)  # MLIR reads 007 as 7
            if s.accept(":"):
                parse_type_or_builtin(s)
            return value
        word = s.try_bare_id()
        if word is not None:
            if s.peek("<"):
                return RawAttr(word + s.balanced("<", ">"))
            return word
        raise s.error(f"expected an attribute value but found {s.found()}")

    def hash_attr(self):
        s = self.s
        start = s.pos
        name = s.match(re.compile(r"#[\w.]+"), "an attribute")
        if not s.peek("<"):
            return RawAttr(name)
        body = s.balanced("<", ">")
        if name == "#stablehlo":
            return body[1:-1].split()[-1]          # #stablehlo<precision DEFAULT> -> DEFAULT
        if name in ("#sdy.sharding", "#sdy.sharding_per_value"):
            try:
                if name == "#sdy.sharding":
                    return parse_sharding(name + body, self.meshes)
                return parse_sharding_per_value(name + body, self.meshes)
            except Exception as error:
                raise s.error(f"invalid {name}: {error}", start) from None
        if name in ("#stablehlo.dot", "#stablehlo.gather", "#stablehlo.scatter",
                    "#stablehlo.channel_handle", "#stablehlo.dot_algorithm",
                    "#stablehlo.output_operand_alias"):
            return key_values(body[1:-1])
        if name == "#stablehlo.conv":
            return RawAttr(body[1:-1])
        return RawAttr(name + body)


_TYPE_WORD = re.compile(r"(?:ui|si|i|f|bf)\d+|index|complex<\w+>|none")


def parse_type_or_builtin(s: Scanner):
    if s.peek("tensor<") or s.peek("tuple<") or s.peek("!"):
        return parse_type(s)
    return s.match(_TYPE_WORD, "a type")


def key_values(text: str) -> dict:
    """``a = [1, 2], b = 3`` (struct attribute bodies) → {"a": (1, 2), "b": 3}."""
    result = {}
    for match in re.finditer(r"(\w+)\s*=\s*(\[[^\]]*\]|[^,>\]]+)", text):
        key, value = match.group(1), match.group(2).strip()
        if value.startswith("["):
            result[key] = tuple(int(v) for v in re.findall(r"-?\d+", value))
        elif re.fullmatch(r"-?\d+", value):
            result[key] = int(value)
        else:
            result[key] = value
    return result
