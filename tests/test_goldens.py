"""Golden text tests of the passes, Shardy-lit style: each input file under tests/golden/<pass>/
has its expected output beside it (``<case>.expected.mlir`` / ``.hlo``, or ``<case>.expected.err``
for the error a bad input must give). ``pytest --update-goldens`` rewrites the expected files
from what the passes print now (read the diff before committing it).

propagation: StableHLO with Shardy shardings in, the propagated module exported back out
(``// propagate: basic`` on the first line picks the strategy; ``pipeline`` is Shardy's
``sdy-propagation-pipeline``, ``pipeline-dedup`` the same with ``dedup-functions-fully``;
``rules`` its ``sdy-populate-op-sharding-rules``). Cases are
named after the behaviour they pin, and compared with Shardy's own lit tests where one exists
(scripts/run_conformance.py --shardy-propagation).
partition: HLO with shardings on every value in, the SPMD module printed out.
"""

import difflib
from pathlib import Path

import pytest

from xla_spmd.errors import XlaSpmdError
from xla_spmd.ir import parse_hlo, print_module, verify
from xla_spmd.partition import partition
from xla_spmd.propagation import (
    import_shardings,
    propagate,
    propagation_pipeline,
    with_sharding_rules,
)
from xla_spmd.sharding import declare_meshes, meshes_of
from xla_spmd.stablehlo import export_stablehlo, import_stablehlo

GOLDEN = Path(__file__).parent / "golden"


def _propagation(text: str) -> str:
    """A first line ``// propagate: <strategy>`` picks the strategy (default: the full
    user-priority one); ``pipeline`` is Shardy's whole pipeline (user-priority, then every
    sharding closed); ``rules`` writes each op's sharding rule on it instead."""
    first = text.split("\n", 1)[0]
    strategy = first.split(":", 1)[1].strip() if first.startswith("// propagate:") else None
    module = import_stablehlo(text)
    if strategy == "rules":   # Shardy's -sdy-populate-op-sharding-rules
        return export_stablehlo(with_sharding_rules(module))
    if strategy in ("pipeline", "pipeline-dedup"):
        module = propagation_pipeline(module,
                                      dedup_functions_fully=strategy == "pipeline-dedup")
    else:
        module = propagate(module, strategy, unsharded_scalars=True)
    return export_stablehlo(declare_meshes(module, meshes_of(module)))


def _partition(text: str) -> str:
    module = partition(import_shardings(parse_hlo(text)).module)
    verify(module)
    return print_module(module)


PASSES = {"propagation": (".mlir", _propagation), "partition": (".hlo", _partition)}
CASES = [(name, path) for name, (suffix, _) in PASSES.items()
         for path in sorted((GOLDEN / name).glob(f"*{suffix}"))
         if ".expected." not in path.name]


def _run(name: str, path: Path) -> tuple[str, str]:
    """(the pass's output or error text, the suffix of the expected file)."""
    suffix, run = PASSES[name]
    try:
        return run(path.read_text()), suffix
    except XlaSpmdError as error:
        return f"{type(error).__name__}: {error}\n", ".err"


@pytest.mark.parametrize("name, path", CASES, ids=[f"{n}/{p.stem}" for n, p in CASES])
def test_golden(name, path, update_goldens):
    output, suffix = _run(name, path)
    expected_path = path.with_name(f"{path.stem}.expected{suffix}")
    if update_goldens:
        for stale in path.parent.glob(f"{path.stem}.expected.*"):
            stale.unlink()
        expected_path.write_text(output)
        return
    if not expected_path.exists():
        others = sorted(p.name for p in path.parent.glob(f"{path.stem}.expected.*"))
        pytest.fail(f"{path.name} gave {'an error' if suffix == '.err' else 'output'} but "
                    f"the expected file is {others or 'missing'}; output:\n{output}"
                    "\n(run pytest --update-goldens to write it)")
    expected = expected_path.read_text()
    if output != expected:
        diff = "".join(difflib.unified_diff(
            expected.splitlines(keepends=True), output.splitlines(keepends=True),
            fromfile=str(expected_path.relative_to(GOLDEN.parent)), tofile="now"))
        pytest.fail(f"{path.name} no longer gives its golden output:\n{diff}", pytrace=False)


def test_every_pass_has_cases():
    assert {name for name, _ in CASES} == set(PASSES)
