"""Dot epilogues (``backends/cpu/epilogue.py``): an elementwise loop fusion run by its dot's
launch on each part of the output. Every program is compared bit for bit with the reference
evaluator (on the BLAS threads whose bits the dot's kernel promises: the caller's for a whole
or row-split product, one for a batch split over threads, as ``test_cpu_blas.py`` compares
them) and with the same plan without epilogues; the fused text shows each epilogue."""

import re

import ml_dtypes
import numpy as np
import pytest
from cpu_bits import exact_bits
from threadpoolctl import threadpool_limits

from xla_spmd.backends.cpu import BACKEND, blas, epilogue
from xla_spmd.backends.cpu.emitter import (
    has_column_range,
    range_unit,
    reads_at_output_index,
)
from xla_spmd.backends.reference import evaluate
from xla_spmd.collectives import LocalWorld
from xla_spmd.ir.hlo_parser import parse_hlo

MATMUL = "lhs_contracting_dims={1}, rhs_contracting_dims={0}"

# name -> (parameters, body, the epilogue's root or None (no epilogue), in place)
CASES = {
    "relu": ("a: f32[512,256], b: f32[256,512]", """
  %d = f32[512,512] dot(%a, %b), {MATMUL}
  %zero = f32[] constant(0)
  %zeros = f32[512,512] broadcast(%zero), dimensions={}
  ROOT %r = f32[512,512] maximum(%d, %zeros)""", "r", True),
    # a bias broadcast along rows (a loop nest, one output row per step), the dot kept
    "bias relu, dot kept": ("a: f32[384,256], b: f32[256,400], bias: f32[400]", """
  %d = f32[384,400] dot(%a, %b), {MATMUL}
  %bb = f32[384,400] broadcast(%bias), dimensions={1}
  %s = f32[384,400] add(%d, %bb)
  %zero = f32[] constant(0)
  %zeros = f32[384,400] broadcast(%zero), dimensions={}
  %r = f32[384,400] maximum(%s, %zeros)
  ROOT %t = (f32[384,400], f32[384,400]) tuple(%d, %r)""", "r", False),
    # more columns than rows: the product split by columns, the epilogue by rows after it
    "wide relu": ("a: f32[128,256], b: f32[256,1024]", """
  %d = f32[128,1024] dot(%a, %b), {MATMUL}
  %zero = f32[] constant(0)
  %zeros = f32[128,1024] broadcast(%zero), dimensions={}
  ROOT %r = f32[128,1024] maximum(%d, %zeros)""", "r", True),
    # ... with a bias along the columns and a scale along the rows (a loop nest ranged over
    # columns), rows of 3 x 128 through a reshape
    "wide bias": ("a: f32[384,256], b: f32[256,1024], bias: f32[1024], scale: f32[3]", """
  %d = f32[384,1024] dot(%a, %b), {MATMUL}
  %v = f32[3,128,1024] reshape(%d)
  %bb = f32[3,128,1024] broadcast(%bias), dimensions={2}
  %sb = f32[3,128,1024] broadcast(%scale), dimensions={0}
  %s = f32[3,128,1024] add(%v, %bb)
  ROOT %r = f32[3,128,1024] multiply(%s, %sb)""", "r", False),  # through a reshape
    # the MLP's gradient mask: select(x > 0, g, 0) scaled
    "mask": ("a: f32[512,256], b: f32[256,512], x: f32[512,512]", """
  %d = f32[512,512] dot(%a, %b), {MATMUL}
  %zero = f32[] constant(0)
  %zeros = f32[512,512] broadcast(%zero), dimensions={}
  %positive = pred[512,512] compare(%x, %zeros), direction=GT
  %g = f32[512,512] select(%positive, %d, %zeros)
  %two = f32[] constant(2)
  %twos = f32[512,512] broadcast(%two), dimensions={}
  ROOT %r = f32[512,512] multiply(%g, %twos)""", "r", True),
    "convert to bf16": ("a: f32[512,256], b: f32[256,512]", """
  %d = f32[512,512] dot(%a, %b), {MATMUL}
  %half = f32[] constant(0.5)
  %halves = f32[512,512] broadcast(%half), dimensions={}
  %m = f32[512,512] multiply(%d, %halves)
  ROOT %r = bf16[512,512] convert(%m)""", "r", False),
    "bf16 inputs": ("a: bf16[512,256], b: bf16[256,512]", """
  %d = f32[512,512] dot(%a, %b), {MATMUL}
  %c = f32[] constant(-3)
  %cs = f32[512,512] broadcast(%c), dimensions={}
  ROOT %r = f32[512,512] multiply(%d, %cs)""", "r", True),
    # a bf16 product is rounded after BLAS's f32 sums: no epilogue
    "bf16 result": ("a: bf16[512,256], b: bf16[256,512]", """
  %d = bf16[512,512] dot(%a, %b), {MATMUL}
  %c = bf16[] constant(2)
  %cs = bf16[512,512] broadcast(%c), dimensions={}
  ROOT %r = bf16[512,512] multiply(%d, %cs)""", None, False),
    # the weight update of a backward pass: the transpose folded into the product
    "weight update": ("dy: f32[256,512], x: f32[256,384], w: f32[384,512]", """
  %g = f32[512,384] dot(%dy, %x), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %t = f32[384,512] transpose(%g), dimensions={1,0}
  %rate = f32[] constant(0.01)
  %rates = f32[384,512] broadcast(%rate), dimensions={}
  %step = f32[384,512] multiply(%rates, %t)
  ROOT %r = f32[384,512] subtract(%w, %step)""", "r", True),
    # k = 500: OpenBLAS's two drivers block k apart, no row split: the whole product first
    "no row split (k)": ("a: f32[512,500], b: f32[500,512]", """
  %d = f32[512,512] dot(%a, %b), {MATMUL}
  %zero = f32[] constant(0)
  %zeros = f32[512,512] broadcast(%zero), dimensions={}
  ROOT %r = f32[512,512] maximum(%d, %zeros)""", "r", True),
    # three rows: too few to split
    "no row split (m)": ("a: f32[3,16], b: f32[16,32768]", """
  %d = f32[3,32768] dot(%a, %b), {MATMUL}
  %one = f32[] constant(1)
  %ones = f32[3,32768] broadcast(%one), dimensions={}
  ROOT %r = f32[3,32768] add(%d, %ones)""", "r", True),
    # rows of 500 elements through a reshape: the halves of the split (257 rows of 300)
    # are not whole rows of the epilogue, which then runs once after the product
    "reshaped rows": ("a: f32[515,256], b: f32[256,300], bias: f32[500]", """
  %d = f32[515,300] dot(%a, %b), {MATMUL}
  %v = f32[309,500] reshape(%d)
  %bb = f32[309,500] broadcast(%bias), dimensions={1}
  ROOT %r = f32[309,500] add(%v, %bb)""", "r", False),  # read through a reshape: not over it
    "batched": ("a: f32[16,128,64], b: f32[16,64,96], c: f32[16,128,96]", """
  %d = f32[16,128,96] dot(%a, %b), lhs_batch_dims={0}, rhs_batch_dims={0},
      lhs_contracting_dims={2}, rhs_contracting_dims={1}
  ROOT %r = f32[16,128,96] subtract(%c, %d)""", "r", True),
    "f64": ("a: f64[256,128], b: f64[128,256]", """
  %d = f64[256,256] dot(%a, %b), {MATMUL}
  %zero = f64[] constant(0)
  %zeros = f64[256,256] broadcast(%zero), dimensions={}
  ROOT %r = f64[256,256] maximum(%d, %zeros)""", "r", True),
    "s32": ("a: s32[256,64], b: s32[64,256], c: s32[256,256]", """
  %d = s32[256,256] dot(%a, %b), {MATMUL}
  ROOT %r = s32[256,256] xor(%d, %c)""", "r", True),
    # read through a transpose (not folded into the product: the dot is kept): an output
    # row needs a column of the dot, no epilogue
    "transposed read": ("a: f32[512,256], b: f32[256,512], c: f32[512,512]", """
  %d = f32[512,512] dot(%a, %b), {MATMUL}
  %t = f32[512,512] transpose(%d), dimensions={1,0}
  %r = f32[512,512] add(%t, %c)
  ROOT %o = (f32[512,512], f32[512,512]) tuple(%d, %r)""", None, False),
    # ... but where the transpose is the dot's only use it is computed as the swapped
    # product, and the add reads that at its own index
    "folded transposed read": ("a: f32[512,256], b: f32[256,512], c: f32[512,512]", """
  %d = f32[512,512] dot(%a, %b), {MATMUL}
  %t = f32[512,512] transpose(%d), dimensions={1,0}
  ROOT %r = f32[512,512] add(%t, %c)""", "r", True),
}


def _module(name: str, devices: int = 1):
    parameters, body, _, _ = CASES[name]
    names = [p.split(":")[0].strip() for p in parameters.split(", ")]
    types = [p.split(":")[1].strip() for p in parameters.split(", ")]
    params = "\n".join(f"  %{n} = {t} parameter({k})" for k, (n, t) in
                       enumerate(zip(names, types)))
    return parse_hlo(f"HloModule m, num_partitions={devices}\nENTRY %e {{\n"
                     f"{params}{body.replace('{MATMUL}', MATMUL)}\n}}"), types


def _arguments(types, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for text in types:
        dtype = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f64": np.float64,
                 "s32": np.int32}[text[:text.index("[")]]
        shape = tuple(int(d) for d in text[text.index("[") + 1:-1].split(","))
        if dtype == np.int32:
            out.append(rng.integers(-1000, 1000, shape).astype(np.int32))
        else:
            out.append(rng.standard_normal(shape).astype(dtype))
    return out


def _leaves(value) -> list[np.ndarray]:
    return [np.asarray(x) for x in value] if isinstance(value, tuple) else [np.asarray(value)]


def _unfused(module, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(epilogue, "MIN_BYTES", 1 << 62)
        return BACKEND.compile(module, (0,))


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("threads", [2, 1])
def test_epilogues_equal_the_reference_and_the_unfused_plan(name, threads, monkeypatch,
                                                            split_parts):
    module, types = _module(name)
    args = _arguments(types)
    _, _, root, in_place = CASES[name]
    executable, unfused = BACKEND.compile(module, (0,)), _unfused(module, monkeypatch)
    text = executable.as_text()
    if root is None:
        assert "epilogue" not in text
    else:
        assert f"%{root} = loop fusion" not in text  # the printer's names have no %
        line = next(x for x in text.splitlines() if x.strip().startswith(f"{root} = "))
        dot = re.search(r"\[epilogue of (\S+)\]", line)
        assert dot is not None and line.endswith(f"[in place of {dot.group(1)}]") == in_place
    assert "epilogue" not in unfused.as_text()
    monkeypatch.setattr(blas, "process_cores", lambda: 2)  # one device on all 2 cores
    batched, rows = split_parts("batched_matmul"), split_parts("rows_matmul")
    with threadpool_limits(limits=threads, user_api="blas"):
        got = executable.run(0, args, None)
        plain = unfused.run(0, args, None)
    # a batch split runs each gemm on one BLAS thread; otherwise the caller's threads
    with threadpool_limits(limits=1 if batched else threads, user_api="blas"):
        want = _leaves(evaluate(module, args))
    assert [exact_bits(x) for x in got] == [exact_bits(x) for x in want]
    assert [exact_bits(x) for x in got] == [exact_bits(x) for x in plain]
    if threads == 1:
        assert batched == rows == []


def test_the_split_parts_run_the_epilogue(monkeypatch, split_parts):
    """On 2 threads the relu's product is split by rows, the wide relu's by columns (where
    OpenBLAS's k blocking allows it) and the batched one by matrices; the epilogue runs on
    each half of the rows, or of the columns, as each part's product is done."""
    calls = []
    original = epilogue.binder

    def recording(plan, function, columns_function=None):
        bind = original(plan, function, columns_function)

        def bound(values, out):
            after = bind(values, out)

            def traced(start, stop):
                calls.append(("elements", start, stop))
                after(start, stop)

            def traced_columns(start, stop):
                calls.append(("columns", start, stop))
                after.columns(start, stop)
            traced.unit, traced.pending = after.unit, after.pending
            traced.columns = traced_columns if after.columns else None
            return traced
        return bound
    monkeypatch.setattr(epilogue, "binder", recording)
    monkeypatch.setattr(blas, "process_cores", lambda: 2)
    for name, count, split in (
            ("relu", 512 * 512, blas.rows_splittable(512, 512, 256, np.float32, 2)),
            ("wide relu", 1024, blas.columns_splittable(128, 1024, 256, np.float32, 2)),
            ("batched", 16 * 128 * 96, True)):
        module, types = _module(name)
        executable = BACKEND.compile(module, (0,))
        calls.clear()
        with threadpool_limits(limits=2, user_api="blas"):
            executable.run(0, _arguments(types), None)
        kind = "columns" if name == "wide relu" and split else "elements"
        whole = [("elements", 0, 128 * count if name == "wide relu" else count)]
        assert sorted(calls) == ([(kind, 0, count // 2), (kind, count // 2, count)]
                                 if split else whole)


@pytest.mark.parametrize("stack", [False, True])
def test_epilogues_run_in_lockstep_and_stacked_as_alone(stack, monkeypatch):
    """Two in-process devices on one thread: each step per device (the epilogue in the dot's
    launch) or stacked (the fusion as a step of its own), the bits of each device alone."""
    module, types = _module("bias relu, dot kept", devices=2)
    per_device = [_arguments(types, seed) for seed in (1, 2)]
    executable = BACKEND.compile(module, (0, 1))
    world = LocalWorld(2)
    monkeypatch.setattr(blas, "process_cores", lambda: 2)
    with threadpool_limits(limits=2, user_api="blas"):
        results = executable.run_together(dict(enumerate(per_device)),
                                          {d: world.communicator(d) for d in range(2)},
                                          stack=stack)
        for device in range(2):
            want = _leaves(evaluate(module, per_device[device]))
            assert [exact_bits(r) for r in results[device]] == [exact_bits(w) for w in want]


def test_range_forms_and_identity_reads():
    """``range_unit``: a flat loop steps one element, a nest one output row; the dot read
    through a transpose is not at the output's index, through a reshape it is; every one of
    these has a form ranged over columns."""
    from xla_spmd.backends.cpu.fusion import fuse

    for name, unit, identity in (("relu", 1, True), ("bias relu, dot kept", 400, True),
                                 ("reshaped rows", 500, True), ("transposed read", 1, False)):
        module, _ = _module(name)
        fusions, _ = fuse(module.entry)
        fusion = next(f for f in fusions if f.kind == "loop" and f.root.name == "r")
        dot = next(k for k, i in enumerate(fusion.inputs) if i.op.name == "dot")
        if name == "transposed read":
            assert not reads_at_output_index(fusion, dot)
            continue
        assert range_unit(fusion) == unit and has_column_range(fusion)
        assert reads_at_output_index(fusion, dot) is identity


SPLIT_FUSIONS = {
    # a flat chain, 2 MB: split over rows
    "chain": ("x: f32[512,1024], y: f32[512,1024]", """
  %a = f32[512,1024] multiply(%x, %y)
  %b = f32[512,1024] subtract(%a, %x)
  ROOT %r = f32[512,1024] maximum(%b, %y)""", True),
    # a loop nest with a broadcast along rows and a reshape, 4 MB
    "nest": ("x: f32[8,256,512], v: f32[512]", """
  %b = f32[8,256,512] broadcast(%v), dimensions={2}
  %m = f32[8,256,512] multiply(%x, %b)
  %r0 = f32[2048,512] reshape(%m)
  %one = f32[] constant(1)
  %ones = f32[2048,512] broadcast(%one), dimensions={}
  ROOT %r = f32[2048,512] add(%r0, %ones)""", True),
    # a transpose read: the nest is tiled along dim 0, it runs whole
    "tiled": ("x: f32[1024,1024], y: f32[1024,1024]", """
  %t = f32[1024,1024] transpose(%x), dimensions={1,0}
  ROOT %r = f32[1024,1024] add(%t, %y)""", False),
    # f16 computed in f32 and rounded, 1 MB
    "f16": ("x: f16[512,1024], y: f16[512,1024]", """
  %a = f16[512,1024] multiply(%x, %y)
  ROOT %r = f16[512,1024] add(%a, %x)""", True),
}


@pytest.mark.parametrize("name", sorted(SPLIT_FUSIONS))
def test_large_loop_fusions_split_over_threads_equal_the_reference(name, monkeypatch):
    """A loop fusion of 1 MiB or more runs one range of its rows per thread where a device
    has all the cores (every element computed as the whole kernel computes it)."""
    parameters, body, split = SPLIT_FUSIONS[name]
    CASES[name] = (parameters, body, None, False)  # _module reads CASES
    try:
        module, types = _module(name)
    finally:
        del CASES[name]
    types = [t.replace("f16", "f32") for t in types]
    args = [a.astype(np.float16) if "f16" in name else a for a in _arguments(types)]
    executable = BACKEND.compile(module, (0,))
    assert ("[rows split over threads]" in executable.as_text()) == split
    ranges = []
    original = blas.run_split
    monkeypatch.setattr(blas, "run_split", lambda chunk, bounds: (ranges.append(bounds),
                                                                    original(chunk, bounds)))
    monkeypatch.setattr(blas, "process_cores", lambda: 2)
    with threadpool_limits(limits=2, user_api="blas"):
        (got,) = executable.run(0, args, None)
    root = module.entry.root
    # a flat loop steps over elements, a nest over rows
    steps = root.shape.num_elements if name in ("chain", "f16") else root.shape.dims[0]
    assert ranges == ([[0, steps // 2, steps]] if split else [])
    assert exact_bits(got) == exact_bits(np.asarray(evaluate(module, args)))


def test_a_split_fusion_written_over_its_operand(monkeypatch):
    """A fusion split over threads that the plan writes over a dying operand (``a``, read
    before by ``b``) writes each range over that operand's rows."""
    module = parse_hlo("""HloModule m
ENTRY %e {
  %x = f32[512,1024] parameter(0)
  %y = f32[512,1024] parameter(1)
  %a = f32[512,1024] multiply(%x, %y)
  %b = f32[512,1024] add(%a, %x)
  %two = f32[] constant(2)
  %twos = f32[512,1024] broadcast(%two), dimensions={}
  %r = f32[512,1024] multiply(%a, %twos)
  ROOT %t = (f32[512,1024], f32[512,1024]) tuple(%b, %r)
}""")
    args = _arguments(["f32[512,1024]", "f32[512,1024]"], 3)
    executable = BACKEND.compile(module, (0,))
    line = next(x for x in executable.as_text().splitlines() if x.strip().startswith("r = "))
    assert "[rows split over threads]  [in place of a]" in line
    monkeypatch.setattr(blas, "process_cores", lambda: 2)
    with threadpool_limits(limits=2, user_api="blas"):
        got = executable.run(0, args, None)
    assert [exact_bits(x) for x in got] == [exact_bits(x)
                                            for x in _leaves(evaluate(module, args))]


def test_peak_bytes_count_an_epilogues_output_from_the_dots_step():
    """``d`` is also returned, so its relu gets a buffer of its own, written in the dot's
    launch while ``a`` and ``b`` are still live: four 256 KiB arrays at once."""
    from xla_spmd.backends.cpu.executable import plan_module

    m = parse_hlo("HloModule m\nENTRY e { a = f32[256,256] parameter(0)\n"
                  "b = f32[256,256] parameter(1)\n"
                  "d = f32[256,256] dot(a, b), lhs_contracting_dims={1}, "
                  "rhs_contracting_dims={0}\n"
                  "c = f32[] constant(0)\nz = f32[256,256] broadcast(c), dimensions={}\n"
                  "r = f32[256,256] maximum(d, z)\nROOT t = tuple(r, d) }")
    program = plan_module(m)[id(m.entry)]
    (dot,) = [s for s in program.steps if s.inst.name == "d"]
    assert dot.epilogue is not None and not dot.epilogue.in_place
    assert program.peak_bytes == 4 * 256 * 256 * 4


def test_a_column_form_only_where_the_product_may_split_by_columns():
    """An epilogue's form ranged over columns is compiled only where its dot may be split by
    columns on some count of threads (more columns than rows, ``columns_splittable`` on 2):
    not for a square product, whose split is by rows whatever the threads."""
    for name, (m, n, k) in (("relu", (512, 512, 256)), ("wide relu", (128, 1024, 256)),
                            ("wide bias", (384, 1024, 256))):
        module, _ = _module(name)
        executable = BACKEND.compile(module, (0,))
        columns = "_columns(" in executable.llvm_ir
        assert columns == (n > m and blas.columns_splittable(m, n, k, np.float32, 2)), name
        assert "_rows(" in executable.llvm_ir
