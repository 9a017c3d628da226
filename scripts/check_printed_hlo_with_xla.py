"""Check that the HLO text xla-spmd prints is accepted by XLA's own parser.

    python scripts/check_printed_hlo_with_xla.py           # needs jax (jaxlib) installed

Parses each module with xla-spmd, prints it, and hands the text to XLA's
`hlo_module_from_text`: every XLA-produced module under tests/data/jax, the module in
tests/ir/test_hlo_text.py that uses every opcode xla-spmd defines, and the SPMD programs
xla-spmd's partitioner makes of the sharded JAX programs. JAX is used here only; the library
never imports it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from xla_spmd.ir import parse_hlo, print_module  # noqa: E402
from xla_spmd.partition.report import strip_shardings  # noqa: E402
from xla_spmd.pipeline import lower  # noqa: E402


def every_op_module() -> str:
    tree = ast.parse((ROOT / "tests/ir/test_hlo_text.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "EVERY_OP":
            return ast.literal_eval(node.value)
    raise SystemExit("EVERY_OP not found in tests/ir/test_hlo_text.py")


def main() -> int:
    from jax._src.lib import xla_client

    sources = {path.relative_to(ROOT): path.read_text()
               for path in sorted((ROOT / "tests/data/jax").glob("*/*.hlo"))}
    sources["tests/ir/test_hlo_text.py:EVERY_OP"] = every_op_module()
    printed_sources = {name: print_module(parse_hlo(text, str(name)))
                       for name, text in sources.items()}
    for path in sorted((ROOT / "tests/data/jax").glob("sharded_*/*[!d].hlo")):
        partitioned = lower(parse_hlo(path.read_text(), str(path))).spmd_module
        printed_sources[f"partition({path.relative_to(ROOT)})"] = print_module(
            strip_shardings(partitioned))
    failures = 0
    for name, printed in printed_sources.items():
        try:
            xla_client.hlo.hlo_module_from_text(printed)
            status = "ok"
        except Exception as error:  # XLA raises its own status errors
            failures += 1
            status = f"REJECTED: {str(error).splitlines()[0][:200]}"
        print(f"{status:8} {name}")
    print(f"{len(printed_sources) - failures} accepted, {failures} rejected by XLA's parser")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
