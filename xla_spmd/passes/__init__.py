"""Generic IR passes: dead code elimination, common subexpression elimination, algebraic
simplification and collective optimizations, with a tiny pass manager.

Every pass is a `Pass` (a named ``Module -> Module`` function) that returns the same module
object when it changes nothing. Passes import only `xla_spmd.ir` and `xla_spmd.errors`.

`optimize_spmd` is the sequence the partitioner runs on its output: simplify, cse, unobserved
while-loop carries passed through, dce,
all-reduce + dynamic-slice → reduce-scatter, own-shard all-gather removal, no-op collective
removal, combining, dce — repeated to a fixed point (at most `max_iterations` rounds). On
an SPMD module shardings are informational, so it runs the passes with
``respect_shardings=False``; run the passes one by one (default ``respect_shardings=True``)
on a module before partitioning.

>>> from xla_spmd.ir import parse_hlo
>>> m = parse_hlo('''HloModule m, num_partitions=2
... %add (a: f32[], b: f32[]) -> f32[] {
...   %a = f32[] parameter(0)
...   %b = f32[] parameter(1)
...   ROOT %s = f32[] add(%a, %b)
... }
... ENTRY %e (x: f32[4]) -> f32[2] {
...   %x = f32[4] parameter(0)
...   %r = f32[4] all-reduce(%x), channel_id=1, replica_groups={{0,1}},
...        use_global_device_ids=true, to_apply=%add
...   %p = u32[] partition-id()
...   %c = u32[] constant(2)
...   %o = u32[] multiply(%p, %c)
...   ROOT %d = f32[2] dynamic-slice(%r, %o), dynamic_slice_sizes={2}
... }''')
>>> optimize_spmd(m).entry.root.opcode
'reduce-scatter'
"""

from xla_spmd.ir import Module
from xla_spmd.passes.collective_opts import (
    combine_collectives,
    combine_collectives_pass,
    create_reduce_scatter,
    create_reduce_scatter_pass,
    remove_noop_collectives,
    remove_noop_collectives_pass,
    remove_own_shard_gather,
    remove_own_shard_gather_pass,
)
from xla_spmd.passes.cse import cse, cse_pass
from xla_spmd.passes.dce import dce, dce_pass
from xla_spmd.passes.pass_manager import (
    Pass,
    PassError,
    fixed_point,
    run_passes,
    transform_module,
)
from xla_spmd.passes.simplify import ROWS, simplify, simplify_pass
from xla_spmd.passes.while_loops import (
    pass_through_dead_carries,
    pass_through_dead_carries_pass,
)

# After partitioning shardings are informational (for inspection), so these passes may
# forward, merge and combine values whatever shardings they carry.
SPMD_PASSES = (
    Pass("simplify", lambda m: simplify(m, respect_shardings=False)),
    Pass("cse", lambda m: cse(m, respect_shardings=False)),
    pass_through_dead_carries_pass,
    dce_pass,
    create_reduce_scatter_pass,
    Pass("remove-own-shard-gather", lambda m: remove_own_shard_gather(m, respect_shardings=False)),
    Pass("remove-noop-collectives", lambda m: remove_noop_collectives(m, respect_shardings=False)),
    Pass("combine-collectives", lambda m: combine_collectives(m, respect_shardings=False)),
    dce_pass,
)


def optimize_spmd(module: Module, max_iterations: int = 4, verify_each: bool = False) -> Module:
    """Clean up a partitioned SPMD module (see the module docstring for the sequence)."""
    return fixed_point("optimize-spmd", SPMD_PASSES, max_iterations, verify_each)(module)


__all__ = [
    "Pass", "PassError", "ROWS", "SPMD_PASSES", "combine_collectives",
    "combine_collectives_pass", "create_reduce_scatter", "create_reduce_scatter_pass", "cse",
    "cse_pass", "dce", "dce_pass", "fixed_point", "optimize_spmd", "remove_noop_collectives",
    "remove_noop_collectives_pass", "remove_own_shard_gather", "remove_own_shard_gather_pass",
    "pass_through_dead_carries", "pass_through_dead_carries_pass", "run_passes", "simplify",
    "simplify_pass", "transform_module",
]
