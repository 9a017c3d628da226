"""The XLA replay's inputs for an order-dependent scatter (a bf16 add combiner with duplicate
indices, as XLA's ScatterCostModelForUnmatchedSharding): exact in any order, so that the
partitioned and the unpartitioned module must agree bit for bit."""

import numpy as np
import spmd_oracle
from xla_spmd_tests import XlaCase, random_inputs, run_module

from xla_spmd.ir import parse_hlo

# ScatterCostModelForUnmatchedSharding, scaled down (16 devices, the same shardings).
SCATTER = """HloModule pjit

add {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT c = bf16[] add(a, b)
}

ENTRY main {
  p0 = bf16[512,16] parameter(0),
    sharding={devices=[2,4,2]<=[2,4,2]T(2,1,0) last_tile_dim_replicate}
  p1 = s32[2048,1] parameter(1), sharding={devices=[8,1,2]<=[16] last_tile_dim_replicate}
  p2 = bf16[2048,16] parameter(2), sharding={devices=[8,2]<=[16]}
  scatter = bf16[512,16] scatter(p0, p1, p2), update_window_dims={1}, inserted_window_dims={0},
    scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add,
    sharding={devices=[2,4,2]<=[2,4,2]T(2,1,0) last_tile_dim_replicate}
  ROOT convert = f32[512,16] convert(scatter),
    sharding={devices=[2,4,2]<=[2,4,2]T(2,1,0) last_tile_dim_replicate}
}
"""


def test_order_dependent_scatter_inputs_sum_exactly_in_any_order():
    module = parse_hlo(SCATTER)
    p0, p1, p2 = random_inputs(module, seed=7)
    assert p1.min() >= 0 and p1.max() < 512 and p1.max() >= 4  # spread over the rows
    for value in (p0, p2):  # small integers
        wide = value.astype(np.float64)
        assert np.array_equal(wide, np.round(wide)) and np.abs(wide).max() <= 4
    # every partial sum of a row's updates (in any order) is an integer within bf16's exact
    # range: the result is the exact sum whatever the order
    counts = np.bincount(p1[:, 0], minlength=512)
    assert 4 * (counts.max() + 1) <= 256
    exact = p0.astype(np.float64)
    np.add.at(exact, p1[:, 0], p2.astype(np.float64))
    (got,) = spmd_oracle.run_global(module, [p0, p1, p2])
    np.testing.assert_array_equal(got, exact)  # the reference agrees with the exact sums


def test_the_scaled_down_case_passes_bit_for_bit():
    module = parse_hlo(SCATTER)
    args = random_inputs(module, seed=7)
    spmd_oracle.check(module, args, num_devices=16, rtol=0, atol=0, bits=True)
    assert run_module(XlaCase("ScatterCostModel", SCATTER, 16)).status == "PASS"


def test_other_modules_keep_their_inputs():
    """A module without an order-dependent scatter draws floats from a normal distribution
    and integers in [0, 4), as before."""
    module = parse_hlo(SCATTER.replace("ROOT c = bf16[] add(a, b)",
                                       "ROOT c = bf16[] maximum(a, b)"))
    p0, p1, _ = random_inputs(module, seed=7)
    assert p1.max() < 4
    assert not np.array_equal(p0.astype(np.float64), np.round(p0.astype(np.float64)))
