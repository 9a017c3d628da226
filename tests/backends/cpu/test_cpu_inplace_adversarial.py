"""Adversarial tests of the CPU backend's buffer assignment (``backends/cpu/program.py``):
random programs whose values die, are read again later, are read twice by one fusion, are
views of each other or are the parameters themselves, run several times in a row while the
earlier results (and views of them) are kept, each compared bit for bit with the reference
evaluator. A result, once returned, never changes; an argument not handed over is never
written."""

import sys
from contextlib import contextmanager
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xla_spmd.backends.cpu import CpuBackend, program
from xla_spmd.backends.reference import evaluate
from xla_spmd.buffers import Recycler
from xla_spmd.ir.hlo_parser import parse_hlo

sys.path[:0] = [str(Path(__file__).resolve().parents[1])]

from cpu_bits import exact_bits  # noqa: E402

N = 6


def _kinds(n: int) -> tuple[dict, dict]:
    """The text and dims of each kind of value: ``m`` an n x n matrix, ``v`` a vector, ``s``
    a scalar."""
    return ({"m": f"f32[{n},{n}]", "v": f"f32[{n}]", "s": "f32[]"},
            {"m": (n, n), "v": (n,), "s": ()})


SHAPES, DIMS = _kinds(N)
UNARY = ["negate", "abs", "floor", "copy"]
BINARY = ["add", "subtract", "multiply", "maximum", "minimum"]

_ADD = """%add (p: f32[], q: f32[]) -> f32[] {
  %p = f32[] parameter(0)
  %q = f32[] parameter(1)
  ROOT %r = f32[] add(%p, %q)
}
"""


@contextmanager
def recycling_everything():
    """Every loop-fusion output of the executables compiled inside comes from a fresh
    recycler, however small: buffers are handed out again as soon as they are dropped."""
    saved = program.OUTPUTS
    program.OUTPUTS = Recycler(min_bytes=1, max_count=64)
    try:
        yield program.OUTPUTS
    finally:
        program.OUTPUTS = saved


def _program(data, n: int = 6) -> tuple[str, list[str], int, bool]:
    """A random entry computation's text, its parameters' kinds, how many results and
    whether the first is a matrix (of the first parameter's shape); ``n``: the matrices are
    n x n (256: a dot's output large enough for an epilogue)."""
    SHAPES, DIMS = _kinds(n)  # noqa: N806
    params = data.draw(st.lists(st.sampled_from(["m", "m", "v", "s"]), min_size=1,
                                max_size=3))
    params[0] = "m"  # the one that may be donated
    lines = [f"  %p{i} = {SHAPES[k]} parameter({i})" for i, k in enumerate(params)]
    values = [(f"%p{i}", k) for i, k in enumerate(params)]
    count = 0

    def new(kind: str, text: str) -> str:
        nonlocal count
        name = f"%v{count}"
        count += 1
        lines.append(f"  {name} = {SHAPES[kind]} {text}")
        values.append((name, kind))
        return name

    def pick(kind: str | None = None) -> tuple[str, str]:
        pool = [v for v in values if kind is None or v[1] == kind]
        if not pool:  # make one of that kind from a parameter
            return (make(kind), kind)
        # Recent values more often: chains of values that die at once.
        recent = data.draw(st.booleans())
        return pool[-1] if recent else data.draw(st.sampled_from(pool))

    def make(kind: str) -> str:
        if kind == "s":
            x, k = pick("m") if any(v[1] == "m" for v in values) else pick("v")
            dims = "{0,1}" if k == "m" else "{0}"
            return new("s", f"reduce({x}, %zero), dimensions={dims}, to_apply=%add")
        if kind == "v":
            x, _ = pick("m")
            return new("v", f"reduce({x}, %zero), dimensions={{1}}, to_apply=%add")
        x, _ = pick("v")
        return new("m", f"broadcast({x}), dimensions={{0}}")

    lines.append("  %zero = f32[] constant(0)")
    callees: list[str] = []
    for _ in range(data.draw(st.integers(2, 9))):
        op = data.draw(st.sampled_from(
            ["unary", "binary", "binary", "binary", "twice", "fanout", "fanout", "select",
             "broadcast", "transpose", "reshape", "slice", "reverse", "reduce", "dot", "tuple",
             "call"]))
        x, kind = pick()
        if op == "unary":
            new(kind, f"{data.draw(st.sampled_from(UNARY))}({x})")
        elif op == "binary":
            y, _ = pick(kind)
            new(kind, f"{data.draw(st.sampled_from(BINARY))}({x}, {y})")
        elif op == "twice":  # one value read twice by one fusion
            inner = new(kind, f"multiply({x}, {x})")
            new(kind, f"add({inner}, {x})")
        elif op == "fanout":  # a materialised value read by a reduce or a dot, then elementwise
            x, _ = pick("m")
            y, _ = pick("m")
            a = new("m", f"{data.draw(st.sampled_from(BINARY))}({x}, {y})")
            if data.draw(st.booleans()):
                new("v", f"reduce({a}, %zero), dimensions={{{data.draw(st.integers(0, 1))}}}, "
                         "to_apply=%add")
            else:
                z, _ = pick("m")
                new("m", f"dot({z}, {a}), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}")
            z, _ = pick("m")
            new("m", f"{data.draw(st.sampled_from(BINARY))}({a}, {z})")
            if data.draw(st.booleans()):
                new("m", f"add({z}, {a})")  # a read again later: not written over
        elif op == "select":
            y, _ = pick(kind)
            dims = SHAPES[kind].replace("f32", "pred")
            lines.append(f"  %c{count} = {dims} compare({x}, {y}), direction=LT")
            new(kind, f"select(%c{count}, {y}, {x})")
        elif op == "broadcast":
            if kind == "s":
                new("m", f"broadcast({x}), dimensions={{}}")
            elif kind == "v":
                new("m", f"broadcast({x}), dimensions={{{data.draw(st.integers(0, 1))}}}")
            else:
                new("m", f"broadcast({x}), dimensions={{0,1}}")  # an identity broadcast
        elif op == "transpose":
            x, _ = pick("m")
            new("m", f"transpose({x}), dimensions={{1,0}}")
        elif op == "reshape":
            x, _ = pick("m")
            lines.append(f"  %f{count} = f32[{n * n}] reshape({x})")
            new("m", f"reshape(%f{count})")
        elif op == "slice":
            x, _ = pick("m")
            if data.draw(st.booleans()):
                new("m", f"slice({x}), slice={{[0:{n}], [0:{n}]}}")  # the whole: a view
            else:
                row = data.draw(st.integers(0, n - 1))
                lines.append(f"  %r{count} = f32[1,{n}] slice({x}), "
                             f"slice={{[{row}:{row + 1}], [0:{n}]}}")
                new("v", f"reshape(%r{count})")
        elif op == "reverse":
            x, _ = pick("m")
            new("m", f"reverse({x}), dimensions={{{data.draw(st.integers(0, 1))}}}")
        elif op == "reduce":
            make(data.draw(st.sampled_from(["s", "v"])))
        elif op == "dot":
            x, _ = pick("m")
            y, k = pick(data.draw(st.sampled_from(["m", "v"])))
            new(k, f"dot({x}, {y}), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}")
        elif op == "call":  # a callee that returns a parameter as it is, or a new value
            y, k = pick()
            name = f"%callee{len(callees)}"
            returned = data.draw(st.sampled_from(["a", "b", "new"]))
            root = {"a": "  %b = {tb} parameter(1)\n  ROOT %a = {ta} parameter(0)",
                    "b": "  %a = {ta} parameter(0)\n  ROOT %b = {tb} parameter(1)"}.get(
                returned, "  %a = {ta} parameter(0)\n  %b = {tb} parameter(1)\n"
                          "  ROOT %n = {ta} negate(%a)")
            out = k if returned == "b" else kind
            head = f"{name} (a: {SHAPES[kind]}, b: {SHAPES[k]}) -> {SHAPES[out]} {{\n"
            callees.append(head + root.format(ta=SHAPES[kind], tb=SHAPES[k]) + "\n}\n")
            new(out, f"call({x}, {y}), to_apply={name}")
        else:  # a tuple and one of its elements
            y, k = pick()
            t = f"%t{count}"
            lines.append(f"  {t} = ({SHAPES[kind]}, {SHAPES[k]}) tuple({x}, {y})")
            index = data.draw(st.integers(0, 1))
            new((kind, k)[index], f"get-tuple-element({t}), index={index}")
    # Results: the last value, then any values (parameters and repeats included).
    results = [values[-1]] + data.draw(st.lists(st.sampled_from(values), max_size=3))
    if data.draw(st.booleans()) and values[-1][1] != "m":
        results[0] = pick("m")
    body = "\n".join(lines)
    shape = ", ".join(SHAPES[k] for _, k in results)
    names = ", ".join(n for n, _ in results)
    params_text = ", ".join(f"p{i}: {SHAPES[k]}" for i, k in enumerate(params))
    text = "".join(callees) + (f"ENTRY %e ({params_text}) -> ({shape}) {{\n{body}\n"
            f"  ROOT %root = ({shape}) tuple({names})\n}}")
    return text, params, len(results), results[0][1] == "m"


def _arguments(rng, kinds: list[str], dtype=np.float32, n: int = 6) -> list[np.ndarray]:
    # Small integers and halves: sums are exact in any order, so a difference is a buffer
    # written too early, never a rounding.
    return [(rng.integers(-4, 5, _kinds(n)[1][k]) / 2).astype(dtype) for k in kinds]


def _reference(module, args) -> list[bytes]:
    result = evaluate(module, [a.copy() if isinstance(a, np.ndarray) else a for a in args])
    return [exact_bits(leaf) for leaf in (result if isinstance(result, tuple) else (result,))]


# 256: dot outputs of 256 KiB, whose elementwise users run as the dot's epilogue (written
# over the dot's buffer where the plan says so: backends/cpu/epilogue.py).
@pytest.mark.parametrize("n, examples", [(N, 40), (256, 10)])
def test_random_programs_keep_every_result_and_argument(n, examples):
    settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))(
        given(data=st.data())(_keep_every_result_and_argument))(n)


def _keep_every_result_and_argument(n, data):
    body, kinds, _, first_is_matrix = _program(data, n)
    donate = first_is_matrix and data.draw(st.booleans())
    header = "HloModule m" + (", input_output_alias={ {0}: (0, {}, may-alias) }"
                              if donate else "")
    # 2-byte floats too: in-place kernels load and store them through the output pointer.
    name, dtype = data.draw(st.sampled_from(
        [("f32", np.float32), ("f32", np.float32), ("bf16", ml_dtypes.bfloat16),
         ("f16", np.float16)]))
    module = parse_hlo(f"{header}\n{_ADD}{body}".replace("f32", name))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    with recycling_everything():
        executable = CpuBackend().compile(module, (0,))
        kept = []
        for _ in range(3):
            args = _arguments(rng, kinds, dtype, n)
            saved = [exact_bits(a) for a in args]
            want = _reference(module, args)
            if donate:  # a fresh copy handed over: it may be written, nothing else may
                handed = [args[0].copy(), *args[1:]]
                outputs = executable.run(0, handed, None, donated={0})
                assert [exact_bits(a) for a in args[1:]] == saved[1:]
            else:
                outputs = executable.run(0, args, None)
                assert [exact_bits(a) for a in args] == saved, "an argument was written"
            assert [exact_bits(o) for o in outputs] == want, body
            views = [o.reshape(-1)[::2] for o in outputs]  # outlive the results
            kept.append((outputs, want, views, [exact_bits(v) for v in views]))
            del outputs
        for outputs, want, views, seen in kept:  # no later call wrote over an earlier one
            assert [exact_bits(o) for o in outputs] == want, body
            assert [exact_bits(v) for v in views] == seen, body


@pytest.mark.parametrize("stack", [True, False])
@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_random_programs_run_together_as_alone(stack, data):
    body, kinds, _, _ = _program(data)
    module = parse_hlo(f"HloModule m, num_partitions=2\n{_ADD}{body}")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    with recycling_everything():
        executable = CpuBackend().compile(module, (0, 1))
        kept = []
        for _ in range(2):
            args = {d: _arguments(rng, kinds) for d in (0, 1)}
            saved = {d: [exact_bits(a) for a in args[d]] for d in (0, 1)}
            got = executable.run_together(args, {0: None, 1: None}, stack=stack)
            for d in (0, 1):
                want = _reference(module, args[d])
                assert [exact_bits(o) for o in got[d]] == want, body
                assert [exact_bits(a) for a in args[d]] == saved[d]
                kept.append((got[d], want))
        for outputs, want in kept:
            assert [exact_bits(o) for o in outputs] == want, body


# ---------------------------------------------------------------------------------------------
# Control flow: a body's parameters (the carry) are never written; fusions inside it write
# over what it made itself


def _loop_module(trips: int) -> str:
    """A while loop ``trips`` times over (i, x, y): x <- dot(x, y) + x (the dot's output
    written over), y passed on as it is; then the entry reads the donated x0 beside the loop's
    result (which is x0 itself after no trip), a conditional and a call."""
    m = f"f32[{N},{N}]"
    carry = f"(s32[], {m}, {m})"
    return f"""HloModule loops, input_output_alias={{ {{0}}: (0, {{}}, may-alias) }}
%cond (c: {carry}) -> pred[] {{
  %c = {carry} parameter(0)
  %i = s32[] get-tuple-element(%c), index=0
  %n = s32[] constant({trips})
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}}
%body (b: {carry}) -> {carry} {{
  %b = {carry} parameter(0)
  %i = s32[] get-tuple-element(%b), index=0
  %x = {m} get-tuple-element(%b), index=1
  %y = {m} get-tuple-element(%b), index=2
  %one = s32[] constant(1)
  %j = s32[] add(%i, %one)
  %h = f32[] constant(0.5)
  %hh = {m} broadcast(%h), dimensions={{}}
  %d = {m} dot(%x, %y), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  %e = {m} multiply(%d, %hh)
  %f = {m} add(%e, %x)
  %g = {m} floor(%f)
  ROOT %t = {carry} tuple(%j, %g, %y)
}}
%neg (a: {m}) -> {m} {{
  %a = {m} parameter(0)
  ROOT %r = {m} negate(%a)
}}
%same (a: {m}) -> {m} {{
  ROOT %a = {m} parameter(0)
}}
%twice (a: {m}) -> {m} {{
  %a = {m} parameter(0)
  %s = {m} add(%a, %a)
  ROOT %q = {m} multiply(%s, %a)
}}
ENTRY %e (x0: {m}, y0: {m}, k: s32[]) -> ({m}, {m}, {m}, {m}, {m}) {{
  %x0 = {m} parameter(0)
  %y0 = {m} parameter(1)
  %k = s32[] parameter(2)
  %zero = s32[] constant(0)
  %init = {carry} tuple(%zero, %x0, %y0)
  %w = {carry} while(%init), condition=%cond, body=%body
  %wx = {m} get-tuple-element(%w), index=1
  %wy = {m} get-tuple-element(%w), index=2
  %sum = {m} add(%wx, %x0)
  %p = {m} multiply(%y0, %y0)
  %branch = {m} conditional(%k, %p, %p), branch_computations={{%neg, %same}}
  %called = {m} call(%p), to_apply=%twice
  %after = {m} subtract(%branch, %p)
  ROOT %r = ({m}, {m}, {m}, {m}, {m}) tuple(%sum, %wy, %after, %called, %wx)
}}"""


@pytest.mark.parametrize("trips", [0, 1, 3])
@pytest.mark.parametrize("branch", [0, 1])
def test_loops_conditionals_and_calls_never_write_a_carry(trips, branch):
    module = parse_hlo(_loop_module(trips))
    rng = np.random.default_rng(7)
    with recycling_everything():
        executable = CpuBackend().compile(module, (0,))
        assert "[in place of d]" in executable.as_text()  # inside the body
        kept = []
        for donate in ((), {0}, (), {0}):
            args = _arguments(rng, ["m", "m"]) + [np.array(branch, np.int32)]
            saved = [exact_bits(a) for a in args]
            want = _reference(module, args)
            outputs = executable.run(0, [a.copy() if donate else a for a in args], None,
                                     donated=donate)
            assert [exact_bits(o) for o in outputs] == want
            assert [exact_bits(a) for a in args] == saved
            kept.append((outputs, want))
        for outputs, want in kept:
            assert [exact_bits(o) for o in outputs] == want


# ---------------------------------------------------------------------------------------------
# Collectives: an operand in flight is never written over; a result that may be the operand
# itself (a group of one) is never taken for a fresh buffer


def _collective_module(groups: str) -> str:
    m = f"f32[{N},{N}]"
    alias = "input_output_alias={ {0}: (0, {}, may-alias) }"
    reduce = f"replica_groups={groups}, use_global_device_ids=true, to_apply=%add"
    pairs = "source_target_pairs={{0,1},{1,0},{2,3},{3,2}}"
    return f"""HloModule coll, num_partitions=4, {alias}
{_ADD}
ENTRY %e (x: {m}, y: {m}) -> ({m}, {m}, {m}, {m}, {m}) {{
  %x = {m} parameter(0)
  %y = {m} parameter(1)
  %a = {m} multiply(%x, %y)
  %ar = {m} all-reduce(%a), channel_id=1, {reduce}
  %b = {m} add(%a, %y)
  %c = {m} add(%b, %ar)
  %px = {m} all-reduce(%x), channel_id=2, {reduce}
  %nx = {m} negate(%x)
  %d = {m} dot(%nx, %y), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  %e2 = {m} multiply(%d, %d)
  %cp = {m} collective-permute(%e2), channel_id=3, {pairs}
  %f = {m} subtract(%e2, %cp)
  %g = {m} add(%px, %ar)
  ROOT %r = ({m}, {m}, {m}, {m}, {m}) tuple(%c, %f, %g, %px, %ar)
}}"""


@pytest.mark.parametrize("groups", ["{{0,1},{2,3}}", "{{0},{1},{2},{3}}", "{{0,1,2,3}}"])
def test_collectives_in_flight_and_in_place_fusions_on_in_process_devices(groups):
    from xla_spmd.backends.reference import evaluate_spmd, leaves
    from xla_spmd.collectives import LocalWorld

    module = parse_hlo(_collective_module(groups))
    rng = np.random.default_rng(8)
    with recycling_everything():
        executable = CpuBackend().compile(module, (0, 1, 2, 3))
        assert "[in place of d]" in executable.as_text()
        world = LocalWorld(4)
        kept = []
        for mode in ("stacked", "lockstep", "threaded", "threaded"):
            per_device = [_arguments(rng, ["m", "m"]) for _ in range(4)]
            saved = [[exact_bits(a) for a in args] for args in per_device]
            want = evaluate_spmd(module, [[a.copy() for a in args] for args in per_device], 4)
            want = [[exact_bits(x) for x in leaves(want[d])] for d in range(4)]
            donate = mode == "threaded" and len(kept) == 3
            handed = [[a.copy() for a in args] if donate else args for args in per_device]
            world.reset()
            communicators = {d: world.communicator(d) for d in range(4)}
            if mode == "threaded":
                given = {0} if donate else ()
                got = dict(enumerate(world.run(
                    lambda comm, handed=handed, given=given: executable.run(
                        comm.rank, handed[comm.rank], comm, donated=given))))
            else:
                got = executable.run_together(dict(enumerate(handed)), communicators,
                                              stack=mode == "stacked",
                                              donated={d: {0} for d in range(4)})
            for d in range(4):
                assert [exact_bits(o) for o in got[d]] == want[d], (mode, d)
                if not donate and mode != "lockstep":
                    assert [exact_bits(a) for a in per_device[d]] == saved[d], (mode, d)
            kept.append((got, want))
        for got, want in kept:
            for d in range(4):
                assert [exact_bits(o) for o in got[d]] == want[d]


# ---------------------------------------------------------------------------------------------
# The recycler: whatever refers to a result's memory keeps it from being handed out again


def _exports(result: np.ndarray) -> dict:
    import ctypes

    return {
        "memoryview": memoryview(result),
        "frombuffer": np.frombuffer(memoryview(result), np.uint8),
        "ctypes array": np.ctypeslib.as_ctypes(result),
        "ctypes pointer": result.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
        "dlpack": np.from_dlpack(result),
        "dtype view": result.view(np.int32)[1:],
        "strided": np.lib.stride_tricks.as_strided(result, (2,), (8,)),
    }


def _read(export, size: int) -> bytes:
    import ctypes

    if isinstance(export, ctypes._Pointer):
        return ctypes.string_at(export, size)
    if isinstance(export, ctypes.Array):
        return bytes(memoryview(export).cast("B"))
    return bytes(np.ascontiguousarray(export).view(np.uint8)) if isinstance(
        export, np.ndarray) else bytes(export.cast("B"))


def test_exported_results_keep_their_buffers_across_runs_and_threads():
    import threading

    elements = 1 << 16
    module = parse_hlo(f"""HloModule m
ENTRY %e (x: f32[{elements}], y: f32[{elements}]) -> f32[{elements}] {{
  %x = f32[{elements}] parameter(0)
  %y = f32[{elements}] parameter(1)
  %a = f32[{elements}] multiply(%x, %y)
  ROOT %b = f32[{elements}] add(%a, %x)
}}""")
    rng = np.random.default_rng(9)
    with recycling_everything() as recycler:
        executable = CpuBackend().compile(module, (0,))
        kept = []
        for _ in range(3):
            args = [(rng.integers(-4, 5, elements) / 2).astype(np.float32) for _ in range(2)]
            (result,) = executable.run(0, args, None)
            exports = _exports(result)
            nbytes = result.nbytes
            kept.append(({k: _read(v, nbytes if k == "ctypes pointer" else 0) for k, v in
                          exports.items()}, exports, nbytes))
            del result  # only the exports hold the buffer now
        errors = []

        def churn(seed: int) -> None:  # other devices taking buffers meanwhile
            local = np.random.default_rng(seed)
            try:
                for _ in range(20):
                    args = [local.standard_normal(elements).astype(np.float32)
                            for _ in range(2)]
                    (out,) = executable.run(0, args, None)
                    want = _reference(module, args)
                    if [exact_bits(out)] != want:
                        errors.append("a wrong result while churning")
            except Exception as error:  # noqa: BLE001 -- reported below
                errors.append(repr(error))
        threads = [threading.Thread(target=churn, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert len(recycler) > 0
        for seen, exports, nbytes in kept:
            now = {k: _read(v, nbytes if k == "ctypes pointer" else 0)
                   for k, v in exports.items()}
            assert now == seen


def test_a_donated_argument_also_inside_a_tuple_argument_is_not_written():
    # The plan cannot know that t's element is x: the executable must see it at run time.
    module = parse_hlo("""HloModule m, input_output_alias={ {0}: (0, {}, may-alias) }
ENTRY %e (x: f32[8], t: (f32[8], f32[8])) -> (f32[8], f32[8]) {
  %x = f32[8] parameter(0)
  %t = (f32[8], f32[8]) parameter(1)
  %y = f32[8] multiply(%x, %x)
  %z = f32[8] add(%y, %x)
  %a = f32[8] get-tuple-element(%t), index=1
  %b = f32[8] negate(%a)
  %c = f32[8] add(%b, %z)
  ROOT %r = (f32[8], f32[8]) tuple(%z, %c)
}""")
    executable = CpuBackend().compile(module, (0,))
    assert "[in place of x]" in executable.as_text()
    x = np.arange(8, dtype=np.float32)
    other = np.ones(8, np.float32)
    for t in ((other, x), (other, x[::-1])):
        want = _reference(module, [x.copy(), tuple(a.copy() for a in t)])
        saved = exact_bits(x)
        got = executable.run(0, [x, t], None, donated={0})
        assert [exact_bits(o) for o in got] == want
        assert exact_bits(x) == saved


def test_a_recycler_whose_reference_counts_are_not_trusted_recycles_nothing(monkeypatch):
    import xla_spmd.buffers as buffers

    monkeypatch.setattr(buffers, "_counts_references", lambda recycler: False)
    recycler = Recycler(min_bytes=1)
    a = recycler.take((4,), np.dtype(np.float32))
    assert a.base is None and not recycler.sole_view(a) and len(recycler) == 0


def test_a_loop_whose_body_all_reduces_and_updates_its_carry_in_place():
    from xla_spmd.backends.reference import evaluate_spmd, leaves
    from xla_spmd.collectives import LocalWorld

    m = f"f32[{N},{N}]"
    carry = f"(s32[], {m}, {m})"
    reduce = "replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%add"
    module = parse_hlo(f"""HloModule loop, num_partitions=4
{_ADD}
%cond (c: {carry}) -> pred[] {{
  %c = {carry} parameter(0)
  %i = s32[] get-tuple-element(%c), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}}
%body (b: {carry}) -> {carry} {{
  %b = {carry} parameter(0)
  %i = s32[] get-tuple-element(%b), index=0
  %x = {m} get-tuple-element(%b), index=1
  %y = {m} get-tuple-element(%b), index=2
  %one = s32[] constant(1)
  %j = s32[] add(%i, %one)
  %d = {m} dot(%x, %y), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  %e = {m} subtract(%d, %x)
  %s = {m} all-reduce(%e), channel_id=1, {reduce}
  %h = f32[] constant(0.25)
  %hh = {m} broadcast(%h), dimensions={{}}
  %f = {m} multiply(%s, %hh)
  %g = {m} floor(%f)
  %k = {m} add(%g, %e)
  ROOT %t = {carry} tuple(%j, %k, %y)
}}
ENTRY %e (x0: {m}, y0: {m}) -> ({m}, {m}) {{
  %x0 = {m} parameter(0)
  %y0 = {m} parameter(1)
  %zero = s32[] constant(0)
  %init = {carry} tuple(%zero, %x0, %y0)
  %w = {carry} while(%init), condition=%cond, body=%body
  %wx = {m} get-tuple-element(%w), index=1
  %wy = {m} get-tuple-element(%w), index=2
  ROOT %r = ({m}, {m}) tuple(%wx, %wy)
}}""")
    rng = np.random.default_rng(10)
    with recycling_everything():
        executable = CpuBackend().compile(module, (0, 1, 2, 3))
        assert "[in place of d]" in executable.as_text()
        world = LocalWorld(4)
        kept = []
        for _ in range(2):
            per_device = [_arguments(rng, ["m", "m"]) for _ in range(4)]
            saved = [[exact_bits(a) for a in args] for args in per_device]
            want = evaluate_spmd(module, [[a.copy() for a in args] for args in per_device], 4)
            want = [[exact_bits(x) for x in leaves(want[d])] for d in range(4)]
            world.reset()
            got = world.run(lambda comm, per_device=per_device: executable.run(
                comm.rank, per_device[comm.rank], comm))
            for d in range(4):
                assert [exact_bits(o) for o in got[d]] == want[d], d
                assert [exact_bits(a) for a in per_device[d]] == saved[d]
            kept.append((got, want))
        for got, want in kept:
            assert [[exact_bits(o) for o in got[d]] for d in range(4)] == want
