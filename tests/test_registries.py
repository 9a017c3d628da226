"""Every per-opcode registry crossed with the op table (the one completeness test).

Each registry is keyed by opcode (`Registry.register` refuses other names); an opcode a
registry has no rule for must be listed here with the reason, so a new op fails this test
until every concern has a rule for it or says why it needs none.
"""

import pytest

import xla_spmd.backends.reference as reference
import xla_spmd.frontend.autodiff  # noqa: F401 (fills VJP)
import xla_spmd.partition  # noqa: F401 (fills HANDLERS)
import xla_spmd.propagation as propagation
import xla_spmd.stablehlo  # noqa: F401 (fills CONVERTERS and PRINTERS)
from xla_spmd.frontend.ad import VJP
from xla_spmd.frontend.batching import BATCH
from xla_spmd.ir import OPS, Family
from xla_spmd.partition.registry import FAMILY_DEFAULTS, HANDLERS
from xla_spmd.stablehlo.registry import CONVERTERS, PRINTERS

ASYNC_PAIRS = {name for name, op in OPS.items() if op.family is Family.ASYNC}

# Opcodes each registry leaves out, and why.
EXPECTED_GAPS = {
    "reference evaluation": {"parameter"},  # the evaluator binds parameters to arguments
    "sharding rule": set(),
    "partition handler": set(),  # family handlers cover the rest (FAMILY_DEFAULTS)
    # Not differentiated: async halves, opaque or non-float ops, and ops the frontend never
    # emits into a differentiated program.
    "VJP": ASYNC_PAIRS | {"bitcast-convert", "cholesky", "collective-broadcast", "complex",
                          "fft", "fusion", "imag", "infeed", "map", "outfeed", "parameter",
                          "real",
                          "select-and-scatter", "triangular-solve"},
    # Leaves have no operands, so they are never batched; async halves are XLA-internal.
    "batching": ASYNC_PAIRS | {name for name, op in OPS.items() if op.family is Family.LEAF}
    | {"infeed", "outfeed"},  # host transfers are not vmapped
    # The exporter prints programs as JAX lowers them: no async halves, fusions, rng or
    # bitcasts (XLA-internal forms), and parameters are function arguments; infeed and
    # outfeed are read from XLA's HLO text only.
    "StableHLO printer": ASYNC_PAIRS | {"bitcast", "fusion", "infeed", "outfeed", "parameter",
                                        "rng"},
}


def _covered(name: str) -> set[str]:
    if name == "reference evaluation":
        return set(reference.EVALUATE)
    if name == "sharding rule":
        return set(propagation.RULES)
    if name == "partition handler":
        return set(HANDLERS) | {n for n, op in OPS.items() if op.family in FAMILY_DEFAULTS}
    if name == "VJP":
        return set(VJP)
    if name == "batching":
        return set(BATCH)
    return set(PRINTERS)


@pytest.mark.parametrize("concern", sorted(EXPECTED_GAPS))
def test_registry_covers_every_opcode_but_its_listed_gaps(concern):
    covered = _covered(concern)
    assert covered <= set(OPS), f"{concern}: rules for unknown ops {sorted(covered - set(OPS))}"
    missing = set(OPS) - covered
    assert missing == EXPECTED_GAPS[concern], (
        f"{concern}: no rule for {sorted(missing - EXPECTED_GAPS[concern])}; listed as a gap "
        f"but has a rule: {sorted(EXPECTED_GAPS[concern] - missing)}")


def test_registration_refuses_unknown_names_and_duplicates():
    with pytest.raises(ValueError, match="not an opcode"):
        propagation.RULES.register("frobnicate")
    with pytest.raises(ValueError, match="duplicate sharding rule for 'add'"):
        propagation.RULES.register("add")
    with pytest.raises(ValueError, match="not a custom-call target"):
        from xla_spmd.backends.reference.control import CUSTOM_CALLS
        CUSTOM_CALLS.register("NoSuchTarget")
    with pytest.raises(ValueError, match="not an op of the"):
        CONVERTERS.register("linalg.matmul")
