"""The custom-call vocabulary: every custom-call target name the compiler gives a meaning to,
with its role, and the frontend-attribute keys Shardy's HLO export uses beside them.

One table, read by propagation (factor rules), the partitioner (handlers), the reference
backend (evaluation), autodiff (VJP rules) and the frontend (what it emits). Other targets
are opaque: they run replicated, or fail where a rule is needed, naming the target.

Roles:

* ``MARKER``: the result is the operand; the instruction carries or constrains its sharding
  (``Sharding``, ``xla.sdy.FuncResultSharding``, ...) or its placement.
* ``GROUP``: a sharding-group member (``xla.sdy.ShardingGroup``); no result value.
* ``MANUAL_ENTRY`` / ``MANUAL_EXIT``: a manual region's boundary as Shardy exports
  ``sdy.manual_computation``: global to local shape before the body call, local to global
  after; the shardings and manual axes are frontend attributes (``IN_SHARDINGS``,
  ``OUT_SHARDINGS``, ``MANUAL_AXES``), read by ``xla_spmd.sharding.manual``.
* ``FULL_TO_SHARD`` / ``SHARD_TO_FULL``: GSPMD's manual boundaries; the sharding is the
  instruction's own.
* ``POINTWISE``: an elementwise computation of its operand (sharded as its operand).
* ``HOST_CALLBACK``: a Python function called on the host with the operands' values
  (``xs.debug.callback``/``print``); no result, never removed. Its frontend attribute
  ``CALLBACK_KEY`` names the function in the process's callback table; ``CALLBACK_MODE``
  says who calls it: ``once`` (device 0, on the global values: the operands are replicated
  first) or ``each`` (every device, on its own shard: ``partitioned=True``, shard_map
  bodies).

>>> role_of("xla.sdy.GlobalToLocalShape") is Role.MANUAL_ENTRY
True
>>> "Sharding" in MARKERS, role_of("my_kernel")
(True, None)
"""

from __future__ import annotations

from enum import Enum


class Role(Enum):
    """What a custom-call target means to the compiler."""

    MARKER = "marker"
    GROUP = "group"
    MANUAL_ENTRY = "manual-entry"
    MANUAL_EXIT = "manual-exit"
    FULL_TO_SHARD = "full-to-shard"
    SHARD_TO_FULL = "shard-to-full"
    POINTWISE = "pointwise"
    COMPUTE = "compute"             # a computation a backend runs itself (TopK)
    INTERPRETER = "interpreter"     # the StableHLO test-file interpreter's checks and helpers
    HOST_CALLBACK = "host-callback"  # xs.debug.callback: a Python function run on the host


# Target names.
SHARDING = "Sharding"                                  # with_sharding_constraint
FUNC_RESULT_SHARDING = "xla.sdy.FuncResultSharding"    # a function result's sharding
# Frontend attribute of a constant written (or to be printed) as ``sdy.constant``: Shardy's
# import turns every constant into one, so that propagation never merges its users.
SDY_CONSTANT = "xla.sdy.constant"
# Frontend attribute of a dot written (and printed back) as ``stablehlo.dot``, StableHLO's
# matrix product form (contracting the lhs's last dim with the rhs's first), not dot_general.
STABLEHLO_DOT = "xla.stablehlo.dot"
PROPAGATION_BARRIER = "xla.sdy.PropagationBarrier"
DATA_FLOW_EDGE = "xla.sdy.DataFlowEdge"            # sdy.data_flow_edge: holds its owner's sharding
FUNC_DATA_FLOW_EDGE = "xla.sdy.FuncDataFlowEdge"   # sdy.func_data_flow_edge
SHARDING_GROUP = "xla.sdy.ShardingGroup"
GLOBAL_TO_LOCAL = "xla.sdy.GlobalToLocalShape"
LOCAL_TO_GLOBAL = "xla.sdy.LocalToGlobalShape"
FULL_TO_SHARD = "SPMDFullToShardShape"
SHARD_TO_FULL = "SPMDShardToFullShape"
DEBUG_CALLBACK = "xla_spmd.debug_callback"         # xs.debug.callback / xs.debug.print
PVARY = "xla_spmd.pvary"   # lax.pvary in a shard_map body: the value, typed as varying

# The check ops of StableHLO interpreter test files (``check.expect_eq`` ...).
INTERPRETER_CHECKS = ("expect_eq_const", "expect_almost_eq_const", "expect_eq",
                      "expect_almost_eq", "expect_close", "expect_serialized_eq")

TARGETS: dict[str, Role] = {
    SHARDING: Role.MARKER,
    FUNC_RESULT_SHARDING: Role.MARKER,
    PROPAGATION_BARRIER: Role.MARKER,
    DATA_FLOW_EDGE: Role.MARKER,
    FUNC_DATA_FLOW_EDGE: Role.MARKER,
    "xla.sdy.ShardingConstraint": Role.MARKER,
    "mhlo.sharding": Role.MARKER,
    "LayoutConstraint": Role.MARKER,
    "annotate_device_placement": Role.MARKER,
    "MoveToHost": Role.MARKER,
    "MoveToDevice": Role.MARKER,
    "InspectSharding": Role.MARKER,
    PVARY: Role.MARKER,
    SHARDING_GROUP: Role.GROUP,
    "ShardingGroup": Role.GROUP,
    GLOBAL_TO_LOCAL: Role.MANUAL_ENTRY,
    LOCAL_TO_GLOBAL: Role.MANUAL_EXIT,
    FULL_TO_SHARD: Role.FULL_TO_SHARD,
    SHARD_TO_FULL: Role.SHARD_TO_FULL,
    "mhlo.erf": Role.POINTWISE,
    "X64SplitLow": Role.POINTWISE,
    "X64SplitHigh": Role.POINTWISE,
    "Cholesky": Role.POINTWISE,
    "TopK": Role.COMPUTE,
    DEBUG_CALLBACK: Role.HOST_CALLBACK,
    "mhlo.topk": Role.COMPUTE,
    # check.expect_* ops of StableHLO interpreter test files, and the interpreter's helpers.
    **{f"check.{kind}": Role.INTERPRETER for kind in INTERPRETER_CHECKS},
    **{f"interpreter.{helper}": Role.INTERPRETER for helper in (
        "run_parallel", "probe", "print", "send", "recv", "infeed", "outfeed")},
}


def is_target(name: str) -> bool:
    """Whether ``name`` is a custom-call target of the table."""
    return name in TARGETS


def role_of(target: str) -> Role | None:
    """The role of custom-call ``target`` (None: an opaque target)."""
    return TARGETS.get(target)


def targets_with(*roles: Role) -> frozenset[str]:
    """The target names that have one of ``roles``."""
    return frozenset(name for name, role in TARGETS.items() if role in roles)


MARKERS = targets_with(Role.MARKER)
GROUPS = targets_with(Role.GROUP)
MANUAL_BOUNDARIES = targets_with(Role.MANUAL_ENTRY, Role.MANUAL_EXIT)
GSPMD_BOUNDARIES = targets_with(Role.FULL_TO_SHARD, Role.SHARD_TO_FULL)

# Frontend-attribute keys (Shardy's HLO export).
SDY_SHARDING = "xla.sdy.sharding"              # an instruction's sharding, as sdy text
SDY_MESHES = "xla.sdy.meshes"                  # the module's named meshes (header)
IN_SHARDINGS = "xla.sdy.in_shardings"          # a manual entry's operand shardings
OUT_SHARDINGS = "xla.sdy.out_shardings"        # a manual exit's result shardings
MANUAL_AXES = "xla.sdy.manual_axes"            # the mesh axes a manual region is manual over
SHARDING_GROUP_ID = "xla.sdy.sharding_group_id"
SHARDING_RULE = "sdy.sharding_rule"            # an op's own #sdy.op_sharding_rule<...>
ALLOWED_DIRECTION = "xla.sdy.allowed_direction"  # a propagation barrier's allowed_direction
MANUAL_BODY = "xla.sdy.manual_computation_body"  # name prefix of a manual region's body
# The manual axes of a value whose GSPMD sharding is partially manual (``{devices=[1,2,2]<=[4]
# last_tile_dims={manual}}``), as ``#sdy<manual_axes{"a"}>``: the value is one manual group's,
# sharded over the other (free) axes; the importer (propagation/importing.py) writes it.
VALUE_MANUAL_AXES = "xla_spmd.manual_axes"
CALLBACK_KEY = "xla_spmd.callback"             # a host callback's key in the callback table
CALLBACK_MODE = "xla_spmd.callback_mode"       # a host callback's callers: "once" or "each"
