"""The replay of XLA's spmd_partitioner_test.cc (tests/partition/xla_spmd_tests.py and
``scripts/run_conformance.py --xla-spmd``) on a hand-written file of the same form."""

import subprocess
import sys
from pathlib import Path

import numpy as np
from xla_spmd_tests import (  # tests/partition on sys.path
    BACKENDS,
    XlaCase,
    XlaResult,
    extract_modules,
    run_isolated,
    run_module,
)

SNIPPET = r'''
TEST_P(SpmdPartitioningTest, TiledAdd) {
  absl::string_view hlo_string = R"(
HloModule module

ENTRY entry {
  %a = f32[6,3] parameter(0), sharding={devices=[2,1]0,1}
  %b = f32[6,3] parameter(1), sharding={replicated}
  ROOT %add = f32[6,3] add(%a, %b), sharding={devices=[1,2]0,1}
})";
  TF_ASSERT_OK_AND_ASSIGN(auto module,
                          PartitionComputation(hlo_string, /*num_devices=*/2));
  EXPECT_THAT(module->entry_computation()->root_instruction(), op::Add());
}

TEST_F(SomeOtherTest, NoPartitioning) {
  absl::string_view hlo_string = R"(HloModule m)";
  EXPECT_TRUE(true);
}

TEST_P(SpmdPartitioningTest, TiledInfeed) {
  const char* const hlo_string = R"hlo(
HloModule module

ENTRY entry {
  token0 = token[] after-all(), sharding={maximal device=0}
  ROOT infeed = (f32[8,2]{1,0}, token[]) infeed(token0),
    sharding={{devices=[2,1]0,1}, {maximal device=0}}
})hlo";
  TF_ASSERT_OK_AND_ASSIGN(auto module, PartitionComputation(hlo_string, 4));
}

TEST_P(SpmdPartitioningTest, Unknown) {
  absl::string_view hlo_string = R"(
HloModule module

ENTRY entry {
  %a = f32[6,3] parameter(0), sharding={devices=[2,1]0,1}
  ROOT %f = f32[6,3] frobnicate(%a), sharding={devices=[2,1]0,1}
})";
  TF_ASSERT_OK_AND_ASSIGN(auto module, PartitionComputation(hlo_string, 2));
}
'''


def test_extracts_each_partitioned_module_with_its_devices():
    cases = extract_modules(SNIPPET)
    assert [(c.name, c.num_devices) for c in cases] == [("TiledAdd", 2), ("TiledInfeed", 4),
                                                         ("Unknown", 2)]
    assert cases[0].hlo.strip().startswith("HloModule module")
    assert cases[0].hlo.rstrip().endswith("}")
    assert "infeed(token0)" in cases[1].hlo


def test_runs_to_a_pass_and_classifies_the_others():
    passed, infeed, refused = (run_module(c, timeout=60) for c in extract_modules(SNIPPET))
    assert (passed.status, passed.message) == ("PASS", "")
    assert (infeed.status, infeed.message) == ("PASS", "")  # each device infeeds its shard
    assert refused.status == "PARSE"
    assert "frobnicate" in refused.message


def test_a_wrong_partition_is_a_mismatch(monkeypatch):
    """The comparison can fail: a module whose devices disagree with the reference."""
    import spmd_oracle

    case = extract_modules(SNIPPET)[0]
    real = spmd_oracle.run_on_devices

    def bump(result):  # a device's result: an array, or a tuple of its leaves
        if isinstance(result, (tuple, list)):
            return tuple(bump(leaf) for leaf in result)
        return np.asarray(result) + 1

    def off_by_one(spmd, per_device, n, backend, feeds=None):
        return [bump(result) for result in real(spmd, per_device, n, backend, feeds)]

    monkeypatch.setattr(spmd_oracle, "run_on_devices", off_by_one)
    for backend in BACKENDS:
        assert run_module(case, backend=backend).status == "MISMATCH"


def test_both_backends_pass_a_correct_partition():
    case = extract_modules(SNIPPET)[0]
    assert [run_module(case, backend=b).status for b in BACKENDS] == ["PASS", "PASS"]


def test_a_missing_device_count_is_not_a_case():
    assert extract_modules('TEST_P(T, X) {\n  hlo_string = R"(HloModule m)";\n}\n') == []
    assert isinstance(XlaCase("x", "HloModule m", 2), XlaCase)


def test_the_runner_prints_the_table(tmp_path):
    path = tmp_path / "spmd_partitioner_test.cc"
    path.write_text(SNIPPET)
    script = Path(__file__).resolve().parents[2] / "scripts" / "run_conformance.py"
    out = subprocess.run([sys.executable, str(script), "--xla-spmd", str(path), "--failures"],
                         capture_output=True, text=True, check=True).stdout
    assert "PARSE Unknown (2 devices)" in out
    assert "| PASS | 2 |" in out
    assert "| **pass** | 2/3 (67%) |" in out
    only = subprocess.run([sys.executable, str(script), "--xla-spmd", str(path), "--only",
                           "Tiled.*"], capture_output=True, text=True, check=True).stdout
    assert "| **pass** | 2/2 (100%) |" in only


REFUSED = r'''
TEST_P(SpmdPartitioningTest, Illegal) {
  absl::string_view hlo_string = R"(
HloModule module

ENTRY entry {
  %a = f32[6,3] parameter(0), sharding={devices=[2,1]0,1}
  ROOT %c = f32[6,3] copy(%a), sharding={replicated}
})";
  auto module_status = PartitionComputation(hlo_string, /*num_devices=*/2);
  EXPECT_FALSE(module_status.status().ok());
  EXPECT_THAT(module_status.status().ToString(),
              ::testing::HasSubstr("not "
                                   "allowed"));
}
'''


def test_a_test_expecting_xla_to_refuse_passes_only_if_we_refuse(monkeypatch):
    (case,) = extract_modules(REFUSED)
    assert case.refused == "not allowed"
    result = run_module(case)
    assert result.status == "MISMATCH"  # a valid module: we partition it, XLA's test refuses
    assert "we partitioned it" in result.message
    import xla_spmd.pipeline
    from xla_spmd.errors import PartitionError

    def refuse(*args, **kwargs):
        raise PartitionError("not allowed here")

    monkeypatch.setattr(xla_spmd.pipeline, "lower", refuse)
    assert run_module(case) == XlaResult("Illegal", "PASS",
                                         "refused, as XLA does: not allowed here")


def test_an_isolated_case_passes_stops_at_its_timeout_and_is_capped_in_memory():
    case = extract_modules(SNIPPET)[0]
    assert run_isolated(case, timeout=120).status == "PASS"
    slow = XlaCase("Slow", case.hlo.replace("f32[6,3]", "f32[3000,3000]").replace(
        "add(%a, %b)", "dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}"), 2)
    assert run_isolated(slow, timeout=0.5, backend="reference").status == "TIMEOUT"
    huge = XlaCase("Huge", """HloModule m
ENTRY e {
  i = f32[60000,60000] iota(), iota_dimension=0
  ROOT a = f32[60000,60000] add(i, i), sharding={devices=[2,1]0,1}
}""", 2)  # 14 GB a value: over the 6 GB cap
    result = run_isolated(huge, timeout=120, backend="reference")
    assert result.status == "TOO_LARGE", result


def test_a_cpu_clock_counts_the_cases_cpu_time():
    case = extract_modules(SNIPPET)[0]
    assert run_isolated(case, timeout=60, clock="cpu").status == "PASS"
    slow = XlaCase("Slow", case.hlo.replace("f32[6,3]", "f32[3000,3000]").replace(
        "add(%a, %b)", "dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}"), 2)
    result = run_isolated(slow, timeout=1, backend="reference", clock="cpu")
    assert (result.status, result.message) == ("TIMEOUT", "used over 1 s of CPU time")


def test_results_are_compared_a_piece_at_a_time(monkeypatch):
    """The oracle's comparison and magnitude scan, in pieces of a few elements: the same
    verdicts as numpy.testing over the whole (transposed, bf16, NaN, -0.0, a far element)."""
    import ml_dtypes
    import spmd_oracle

    monkeypatch.setattr(spmd_oracle, "PIECE", 5)
    rng = np.random.default_rng(3)
    for dtype in (np.float32, ml_dtypes.bfloat16, np.float16, np.int32):
        want = (rng.standard_normal((6, 7, 4)) * 8).astype(dtype).transpose(2, 0, 1)
        got = np.array(want)
        assert spmd_oracle._all_close(got, want, 0, 0)
        got[3, 5, 6] += 1
        assert not spmd_oracle._all_close(got, want, 1e-6, 1e-6)
        if dtype is not np.int32:
            assert spmd_oracle._all_close(got, want, 0, 1.5)
            got[3, 5, 6] = want[3, 5, 6]
            got[0, 0, 0], want[0, 0, 0] = np.nan, np.nan
            got[1, 1, 1], want[1, 1, 1] = -0.0, 0.0
            assert spmd_oracle._all_close(got, want, 0, 0)
            want[2, 2, 2] = -np.inf
            wide = np.abs(want.astype(np.float64))
            assert spmd_oracle._magnitude(want) == wide[np.isfinite(wide)].max()


def test_parameters_over_the_input_cap_are_too_large_untried():
    case = extract_modules(SNIPPET)[0]  # two f32[6,3] parameters: 144 bytes
    assert run_module(case, max_input=100).status == "TOO_LARGE"
    assert run_isolated(case, timeout=120, max_input=100).status == "TOO_LARGE"
    assert run_isolated(case, timeout=120, memory=4 << 30).status == "PASS"


def test_inputs_drawn_in_chunks_are_the_values_of_one_draw():
    """`_random_value` fills its arrays a chunk at a time straight in their type: the same
    values as one draw of the whole shape (the stream the replay's verdicts were made on)."""
    import ml_dtypes
    from xla_spmd_tests import _random_value

    from xla_spmd.ir import parse_hlo

    def whole(dtype, dims, rng, offset=0, exact=False, high=None):
        if dtype == np.bool_:
            return rng.integers(0, 2, dims).astype(bool)
        if np.issubdtype(dtype, np.integer):
            return rng.integers(offset, offset + (high or 4), dims).astype(dtype)
        if exact:
            return (rng.integers(-4, 4, dims) + offset).astype(dtype)
        if np.issubdtype(dtype, np.complexfloating):
            return (rng.standard_normal(dims) + 1j * rng.standard_normal(dims)).astype(dtype)
        return (rng.standard_normal(dims) + offset).astype(dtype)

    types = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "s32": np.int32,
             "pred": np.bool_, "c64": np.complex64, "u8": np.uint8}
    for name, dtype in types.items():
        shape = parse_hlo(f"HloModule m\nENTRY e {{ ROOT p = {name}[5,7] parameter(0) }}"
                          ).entry.root.shape
        for options in ({}, {"offset": 8}, {"exact": True}, {"high": 30}):
            got = _random_value(shape, np.random.default_rng(7), chunk=3, **options)
            want = whole(dtype, (5, 7), np.random.default_rng(7), **options)
            assert got.dtype == want.dtype and not got.flags.writeable
            assert got.tobytes() == want.tobytes(), (name, options)


def test_devices_share_their_shards_of_the_inputs():
    """A shard that needs no padding is a view of the (read-only) global input: replicated
    on 8 devices, it is held once; a padded or strided shard is a copy of its own."""
    from shards import shard_array

    from xla_spmd.mesh import make_mesh
    from xla_spmd.sharding import TensorSharding

    x = np.arange(24, dtype=np.float32).reshape(6, 4)
    x.flags.writeable = False
    mesh = make_mesh({"a": 2, "b": 4})
    replicated = TensorSharding(mesh, [[], []])
    rows = TensorSharding(mesh, [["a"], []])
    columns = TensorSharding(mesh, [[], ["b"]])
    uneven = TensorSharding(mesh, [["b"], []])  # 6 rows over 4: shards of 2, padded
    for device in range(8):
        shard = shard_array(x, replicated, device)
        assert shard.ctypes.data == x.ctypes.data and np.shares_memory(shard, x)
        assert np.shares_memory(shard_array(x, rows, device), x)
        assert not np.shares_memory(shard_array(x, columns, device), x)
        assert shard_array(x, columns, device).flags.c_contiguous
    np.testing.assert_array_equal(shard_array(x, uneven, 3), np.zeros((2, 4)))
    np.testing.assert_array_equal(shard_array(x, uneven, 2), x[4:6])


def test_devices_together_must_hold_every_element():
    from shards import covered

    from xla_spmd.mesh import make_mesh
    from xla_spmd.sharding import TensorSharding

    mesh = make_mesh({"a": 2, "b": 3})
    grid = TensorSharding(mesh, [["a"], ["b"]])
    assert covered(grid, (4, 7), 6)
    assert not covered(grid, (4, 7), 5)  # device 5's corner is nobody's
    assert covered(TensorSharding(mesh, [[], []]), (4, 7), 1)
    assert covered(grid, (0, 7), 1)  # nothing to hold


def test_each_device_is_compared_with_its_region_of_the_result():
    """Every device's shard is compared with the unpartitioned result, duplicates too: one
    replica off by one element is a mismatch, a region no device holds an error."""
    import pytest
    from spmd_oracle import _compare_shards

    from xla_spmd.errors import PartitionError
    from xla_spmd.mesh import make_mesh
    from xla_spmd.sharding import TensorSharding

    mesh = make_mesh({"a": 2, "b": 2})
    rows = TensorSharding(mesh, [["a"], []])  # replicated over b
    want = np.arange(15, dtype=np.float32).reshape(5, 3)
    padded = np.zeros((6, 3), np.float32)
    padded[:5] = want
    locals_ = [padded[0:3], padded[0:3], padded[3:6].copy(), padded[3:6].copy()]
    locals_[3][2] = 99  # padding: not compared
    _compare_shards(locals_, want, rows, (5, 3), 0, 0, "output 0")
    locals_[2][1, 1] += 1
    with pytest.raises(AssertionError, match="output 0 on device 2"):
        _compare_shards(locals_, want, rows, (5, 3), 0, 0, "output 0")
    with pytest.raises(PartitionError, match="no device holds"):
        _compare_shards(locals_[:2], want, rows, (5, 3), 0, 0, "output 0")


def test_a_case_whose_planned_need_exceeds_the_cap_is_too_large_untried():
    from spmd_oracle import partition
    from xla_spmd_tests import memory_need

    from xla_spmd.ir import parse_hlo

    case = extract_modules(SNIPPET)[0]  # two f32[6,3] parameters; add sharded [1,2]
    module = parse_hlo(case.hlo, case.name)
    need = memory_need(module, partition(module, case.num_devices))
    assert need.parameters == 144
    assert need.results == 2 * 6 * 2 * 4  # each device's f32[6,2] shard of the sum
    assert need.global_own == 72  # the unpartitioned sum
    assert need.least >= need.parameters + need.results + need.global_own
    assert need.planned >= need.least
    result = run_module(case, memory=need.least - 1)
    assert result.status == "TOO_LARGE" and "needs at least" in result.message, result
    assert run_module(case, memory=need.planned + (1 << 30)).status == "PASS"
