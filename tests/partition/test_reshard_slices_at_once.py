"""A replicated value resharded to tiles over several dims is cut by one dynamic-slice: no
partial shard (cut along one dim, whole along the others) is made between the cuts."""

import numpy as np
import pytest
import spmd_oracle

from xla_spmd.ir import parse_hlo

TEXT = """HloModule m

ENTRY e {{
  p = f32[{dims}] parameter(0), sharding={{replicated}}
  ROOT r = f32[{dims}] copy(p), sharding={{devices=[{tiles}]<=[{devices}]}}
}}
"""


@pytest.mark.parametrize("dims, tiles", [((8, 6), (2, 2)), ((7, 5, 4), (2, 2, 2)),
                                         ((9, 4), (4, 2))])
def test_replicated_to_tiles_is_one_dynamic_slice(dims, tiles):
    devices = int(np.prod(tiles))
    module = parse_hlo(TEXT.format(dims=",".join(map(str, dims)),
                                   tiles=",".join(map(str, tiles)), devices=devices))
    x = np.arange(np.prod(dims), dtype=np.float32).reshape(dims)
    spmd = spmd_oracle.check(module, [x], num_devices=devices, rtol=0, atol=0, bits=True)
    slices = [i for i in spmd.entry.instructions
              if i.op.name == "dynamic-slice" and i.shape.rank == len(dims)]
    assert len(slices) == 1, [str(i.shape) for i in slices]
    shard = int(np.prod([-(-d // t) for d, t in zip(dims, tiles)]))
    assert slices[0].shape.num_elements == shard
