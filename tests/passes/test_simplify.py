"""Golden tests of the algebraic simplifier, one case per row (and cases that must not
change), each also checked against the reference evaluator."""

import pytest
from pass_helpers import check_golden

from xla_spmd.passes import ROWS, dce_pass, simplify_pass

PASSES = [simplify_pass, dce_pass]


def module(params: str, body: str, result: str = "f32[2,3]") -> str:
    return f"HloModule m\n\nENTRY %e ({params}) -> {result} {{\n{body}\n}}\n"


X = "x: f32[2,3]"
PX = "  %x = f32[2,3] parameter(0)"
I = "i: s32[2,3]"
PI = "  %i = s32[2,3] parameter(0)"
IDENTITY_X = module(X, f"{PX}\n  ROOT %r = f32[2,3] copy(%x)")

CASES = {
    "add_zero": (module(X, f"""{PX}
  %z = f32[] constant(0)
  %b = f32[2,3] broadcast(%z), dimensions={{}}
  ROOT %r = f32[2,3] add(%x, %b)"""), module(X, PX.replace("%x =", "ROOT %x ="))),
    "zero_add": (module(X, f"""{PX}
  %z = f32[2,3] constant({{ {{ 0, 0, 0 }}, {{ 0, 0, 0 }} }})
  ROOT %r = f32[2,3] add(%z, %x)"""), module(X, PX.replace("%x =", "ROOT %x ="))),
    "subtract_zero": (module(I, f"""{PI}
  %z = s32[] constant(0)
  %b = s32[2,3] broadcast(%z), dimensions={{}}
  ROOT %r = s32[2,3] subtract(%i, %b)""", "s32[2,3]"),
        module(I, PI.replace("%i =", "ROOT %i ="), "s32[2,3]")),
    "multiply_one": (module(X, f"""{PX}
  %o = f32[] constant(1)
  %b = f32[2,3] broadcast(%o), dimensions={{}}
  ROOT %r = f32[2,3] multiply(%b, %x)"""), module(X, PX.replace("%x =", "ROOT %x ="))),
    "multiply_zero_int": (module(I, f"""{PI}
  %z = s32[] constant(0)
  %b = s32[2,3] broadcast(%z), dimensions={{}}
  ROOT %r = s32[2,3] multiply(%i, %b)""", "s32[2,3]"), module(I, f"""{PI}
  ROOT %r = s32[2,3] constant({{ {{ 0, 0, 0 }}, {{ 0, 0, 0 }} }})""", "s32[2,3]")),
    "multiply_zero_int_large": (module("i: s32[8,8]", """  %i = s32[8,8] parameter(0)
  %z = s32[] constant(0)
  %b = s32[8,8] broadcast(%z), dimensions={}
  ROOT %r = s32[8,8] multiply(%b, %i)""", "s32[8,8]"), module("i: s32[8,8]", """
  %i = s32[8,8] parameter(0)
  %r.zero = s32[] constant(0)
  ROOT %r = s32[8,8] broadcast(%r.zero), dimensions={}""", "s32[8,8]")),
    "multiply_zero_float_kept": (module("x: f32[8,8]", """  %x = f32[8,8] parameter(0)
  %z = f32[] constant(0)
  %b = f32[8,8] broadcast(%z), dimensions={}
  ROOT %r = f32[8,8] multiply(%x, %b)""", "f32[8,8]"), None),
    "negate_negate": (module(X, f"""{PX}
  %n = f32[2,3] negate(%x)
  ROOT %r = f32[2,3] negate(%n)"""), module(X, PX.replace("%x =", "ROOT %x ="))),
    "reshape_reshape": (module(X, f"""{PX}
  %a = f32[6] reshape(%x)
  ROOT %r = f32[3,2] reshape(%a)""", "f32[3,2]"), module(X, f"""{PX}
  ROOT %r = f32[3,2] reshape(%x)""", "f32[3,2]")),
    "reshape_roundtrip": (module(X, f"""{PX}
  %a = f32[6] reshape(%x)
  ROOT %r = f32[2,3] reshape(%a)"""), module(X, PX.replace("%x =", "ROOT %x ="))),
    "transpose_transpose": (module("x: f32[2,3,4]", """  %x = f32[2,3,4] parameter(0)
  %a = f32[3,4,2] transpose(%x), dimensions={1,2,0}
  ROOT %r = f32[4,2,3] transpose(%a), dimensions={1,2,0}""", "f32[4,2,3]"),
        module("x: f32[2,3,4]", """  %x = f32[2,3,4] parameter(0)
  ROOT %r = f32[4,2,3] transpose(%x), dimensions={2,0,1}""", "f32[4,2,3]")),
    "transpose_identity": (module(X, f"""{PX}
  ROOT %r = f32[2,3] transpose(%x), dimensions={{0,1}}"""),
        module(X, PX.replace("%x =", "ROOT %x ="))),
    "broadcast_small_constant": (module("", """  %c = f32[] constant(2.5)
  ROOT %r = f32[2,2] broadcast(%c), dimensions={}""", "f32[2,2]"), module("", """
  ROOT %r = f32[2,2] constant({ { 2.5, 2.5 }, { 2.5, 2.5 } })""", "f32[2,2]")),
    "broadcast_large_constant_kept": (module("", """  %c = f32[] constant(2.5)
  ROOT %r = f32[8,8] broadcast(%c), dimensions={}""", "f32[8,8]"), None),
    "slice_full": (module(X, f"""{PX}
  ROOT %r = f32[2,3] slice(%x), slice={{[0:2], [0:3]}}"""),
        module(X, PX.replace("%x =", "ROOT %x ="))),
    "slice_partial_kept": (module(X, f"""{PX}
  ROOT %r = f32[2,2] slice(%x), slice={{[0:2], [1:3]}}""", "f32[2,2]"), None),
    "convert_same": (module(X, f"""{PX}
  ROOT %r = f32[2,3] convert(%x)"""), module(X, PX.replace("%x =", "ROOT %x ="))),
    "select_true": (module(f"{X}, y: f32[2,3]", f"""{PX}
  %y = f32[2,3] parameter(1)
  %t = pred[] constant(true)
  ROOT %r = f32[2,3] select(%t, %x, %y)"""), module(f"{X}, y: f32[2,3]", f"""{PX}
  ROOT %y = f32[2,3] parameter(1)""".replace("ROOT %y", "%y").replace(
        "%x = f32[2,3] parameter(0)", "ROOT %x = f32[2,3] parameter(0)"))),
    "select_false_splat": (module(f"{X}, y: f32[2,3]", f"""{PX}
  %y = f32[2,3] parameter(1)
  %f = pred[] constant(false)
  %b = pred[2,3] broadcast(%f), dimensions={{}}
  ROOT %r = f32[2,3] select(%b, %x, %y)"""), module(f"{X}, y: f32[2,3]", f"""{PX}
  ROOT %y = f32[2,3] parameter(1)""")),
    "concatenate_one": (module(X, f"""{PX}
  ROOT %r = f32[2,3] concatenate(%x), dimensions={{0}}"""),
        module(X, PX.replace("%x =", "ROOT %x ="))),
    "pad_nothing": (module(X, f"""{PX}
  %z = f32[] constant(0)
  ROOT %r = f32[2,3] pad(%x, %z), padding=0_0x0_0"""),
        module(X, PX.replace("%x =", "ROOT %x ="))),
    "pad_kept": (module(X, f"""{PX}
  %z = f32[] constant(0)
  ROOT %r = f32[2,4] pad(%x, %z), padding=0_0x0_1""", "f32[2,4]"), None),
    "copy": (IDENTITY_X, module(X, PX.replace("%x =", "ROOT %x ="))),
    "gte_of_tuple": (module(f"{X}, y: f32[2,3]", f"""{PX}
  %y = f32[2,3] parameter(1)
  %t = (f32[2,3], f32[2,3]) tuple(%x, %y)
  ROOT %r = f32[2,3] get-tuple-element(%t), index=1"""), module(f"{X}, y: f32[2,3]", f"""{PX}
  ROOT %y = f32[2,3] parameter(1)""")),
    "tuple_of_gtes": (module("t: (f32[2], s32[])", """  %t = (f32[2], s32[]) parameter(0)
  %a = f32[2] get-tuple-element(%t), index=0
  %b = s32[] get-tuple-element(%t), index=1
  ROOT %r = (f32[2], s32[]) tuple(%a, %b)""", "(f32[2], s32[])"),
        module("t: (f32[2], s32[])", """  ROOT %t = (f32[2], s32[]) parameter(0)""",
               "(f32[2], s32[])")),
    "tuple_of_gtes_swapped_kept": (module(
        "t: (f32[2], f32[2])", """  %t = (f32[2], f32[2]) parameter(0)
  %a = f32[2] get-tuple-element(%t), index=1
  %b = f32[2] get-tuple-element(%t), index=0
  ROOT %r = (f32[2], f32[2]) tuple(%a, %b)""", "(f32[2], f32[2])"), None),
    "dynamic_slice_full": (module(f"{X}, o: s32[]", f"""{PX}
  %o = s32[] parameter(1)
  ROOT %r = f32[2,3] dynamic-slice(%x, %o, %o), dynamic_slice_sizes={{2,3}}"""),
        module(f"{X}, o: s32[]", f"""{PX.replace("%x =", "ROOT %x =")}
  %o = s32[] parameter(1)""")),
    "dynamic_slice_constant_clamped": (module(X, f"""{PX}
  %a = s32[] constant(1)
  %b = s32[] constant(7)
  ROOT %r = f32[1,2] dynamic-slice(%x, %a, %b), dynamic_slice_sizes={{1,2}}""", "f32[1,2]"),
        module(X, f"""{PX}
  ROOT %r = f32[1,2] slice(%x), slice={{[1:2], [1:3]}}""", "f32[1,2]")),
    "fold_integer_offsets": (module("", """  %a = s32[] constant(3)
  %b = s32[] constant(4)
  %m = s32[] multiply(%a, %b)
  %n = s32[] negate(%m)
  %c = u32[] convert(%n)
  ROOT %r = u32[1] reshape(%c)""", "u32[1]"), module("", """
  ROOT %r = u32[1] constant({4294967284})""", "u32[1]")),
    "fold_constant_slice": (module("", """  %t = s32[4] constant({0, 2, 4, 6})
  ROOT %r = s32[2] slice(%t), slice={[1:3]}""", "s32[2]"), module("", """
  ROOT %r = s32[2] constant({2, 4})""", "s32[2]")),
    "float_fold_kept": (module("", """  %a = f32[] constant(3)
  %b = f32[] constant(4)
  ROOT %r = f32[] multiply(%a, %b)""", "f32[]"), None),
    "chain": (module(X, f"""{PX}
  %a = f32[3,2] transpose(%x), dimensions={{1,0}}
  %b = f32[3,2] copy(%a)
  %c = f32[6] reshape(%b)
  %d = f32[3,2] reshape(%c)
  %e = f32[2,3] transpose(%d), dimensions={{1,0}}
  %n = f32[2,3] negate(%e)
  ROOT %r = f32[2,3] negate(%n)"""), module(X, PX.replace("%x =", "ROOT %x ="))),
    "sharded_copy_kept": (module(X, f"""{PX}
  ROOT %r = f32[2,3] copy(%x), sharding={{devices=[2,1]<=[2]}}"""), None),
    "nothing_to_do": (module(X, f"""{PX}
  %n = f32[2,3] negate(%x)
  ROOT %r = f32[2,3] add(%n, %x)"""), None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_simplify_golden(name):
    before, after = CASES[name]
    check_golden(PASSES, before, after)


def test_every_row_has_an_opcode_and_a_function():
    assert all(opcodes and callable(fn) for opcodes, fn in ROWS)
