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
