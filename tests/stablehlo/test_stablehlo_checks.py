"""check.expect_almost_eq* honour their tolerance (keyword or trailing attribute dict)."""

import pytest

from xla_spmd.stablehlo.interpreter import run_text


@pytest.mark.parametrize("tolerance, status", [("0.2", "PASS"), ("0.01", "FAIL")])
def test_tolerance_of_almost_eq_checks(tolerance, status):
    text = f"""func.func @t() {{
  %a = stablehlo.constant dense<5.0> : tensor<f64>
  %b = stablehlo.constant dense<5.1> : tensor<f64>
  check.expect_almost_eq %a, %b, tolerance = {tolerance} : tensor<f64>
  check.expect_almost_eq_const %a, dense<5.1> : tensor<f64> {{tolerance = {tolerance} : f64}}
  func.return
}}"""
    (result,) = run_text(text).results
    assert result.status == status and result.checks == 2
    assert len(result.messages) == (2 if status == "FAIL" else 0)
