"""dynamic-update-slice with the operand sharded on a dim the update does not slice (XLA's
KeepPartitionedNonSlicedDimension, scaled down): the partitioned program keeps that dim
sharded and works on the local piece only. No value in it may be larger than the operand's
shard, but for the 2c elements along one sharded updated dim that placing the update on a
shard of c takes (a rotation). The old lowering padded the update by a whole shard on both
sides of every updated dim (sharded or not), a value of (c + size + c) elements along each
(XLA: bf16[8,640,1152,384] per device where XLA's largest is bf16[8,512,512,384])."""

import numpy as np
import pytest
import spmd_oracle

from xla_spmd.ir import ArrayShape, parse_hlo

# XLA's case: dims 1, 2 updated (dim 1 sharded, dim 2 not), dim 0 sharded and not updated.
KEEP = """HloModule keep

ENTRY entry {
  p = f32[4,4,4,6] parameter(0), sharding={replicated}
  i = s32[] parameter(1), sharding={replicated}
  j = s32[] parameter(2), sharding={replicated}
  zero = s32[] constant(0), sharding={replicated}
  c0 = f32[] constant(0), sharding={replicated}
  big = f32[4,16,16,6] broadcast(c0), dimensions={}, sharding={devices=[2,2,1,1]<=[4]}
  c = f32[4,4,4,6] copy(p), sharding={devices=[2,2,1,1]<=[4]}
  add = f32[4,4,4,6] add(c, c), sharding={devices=[2,2,1,1]<=[4]}
  ROOT dus = f32[4,16,16,6] dynamic-update-slice(big, add, zero, i, j, zero),
    sharding={devices=[2,2,1,1]<=[4]}
}
"""

# XLA's ...WithConstantIndices: both updated dims sharded, uneven (14 and 10 over 2), 8 devices.
BOTH = """HloModule both

ENTRY entry {
  p1 = f32[4,14,10,6] parameter(0), sharding={devices=[2,2,2,1]<=[8]}
  p2 = f32[4,5,3,6] parameter(1), sharding={devices=[2,2,2,1]<=[8]}
  i = s32[] parameter(2), sharding={replicated}
  j = s32[] parameter(3), sharding={replicated}
  zero = s32[] constant(0), sharding={replicated}
  add = f32[4,5,3,6] add(p2, p2), sharding={devices=[2,2,2,1]<=[8]}
  ROOT dus = f32[4,14,10,6] dynamic-update-slice(p1, add, zero, i, j, zero),
    sharding={devices=[2,2,2,1]<=[8]}
}
"""


def _largest(spmd) -> int:
    """The most elements of any array value in the partitioned entry but its (replicated)
    parameters."""
    return max(i.shape.num_elements for i in spmd.entry.instructions
               if isinstance(i.shape, ArrayShape) and i.opcode != "parameter")


def _run(text, devices, indices):
    module = parse_hlo(text)
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(p.shape.dims).astype(np.float32)
              for p in module.entry.parameters if p.shape.rank]
    args = arrays + [np.int32(k) for k in indices]
    return spmd_oracle.check(module, args, num_devices=devices, rtol=0, atol=0, bits=True)


# in one shard, across the shard boundary (rows 6..9 over shards of 8), at the end, clamped
# from above and from below
KEEP_INDICES = [(1, 3), (6, 12), (12, 0), (14, 20), (-3, 7)]


@pytest.mark.parametrize("indices", KEEP_INDICES)
def test_unsliced_sharded_dim_stays_sharded(indices):
    spmd = _run(KEEP, 4, indices)
    shard = 2 * 8 * 16 * 6  # the operand's shard: f32[2,8,16,6]
    assert _largest(spmd) <= shard, _largest(spmd)
    assert not any(i.opcode == "all-gather" and i.shape.num_elements >= shard
                   for i in spmd.entry.instructions)  # the operand is never gathered


@pytest.mark.parametrize("indices", [(0, 0), (5, 4), (6, 2), (9, 7), (20, -1)])
def test_both_updated_dims_sharded(indices):
    spmd = _run(BOTH, 8, indices)
    shard = 2 * 7 * 5 * 6  # the operand's shard: f32[2,7,5,6]
    assert _largest(spmd) <= 2 * shard, _largest(spmd)  # the rotation's 2c along one dim
