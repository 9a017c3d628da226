"""The layers import downward only (DESIGN.md), and pyproject lists every package.

Checked statically: every `import` of an `xla_spmd` module in a layer's files must name a
layer that layer may use.
"""

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Source folder -> (the package it is installed as, the layers it may import).
LAYERS = {
    "mesh": ("xla_spmd.mesh", {"xla_spmd.errors"}),
    "xla_spmd/ir": ("xla_spmd.ir", {"xla_spmd.errors"}),
    "xla_spmd/sharding": ("xla_spmd.sharding",
                          {"xla_spmd.errors", "xla_spmd.mesh", "xla_spmd.ir.hlo_sharding",
                           "xla_spmd.ir.custom_calls"}),
    # Collectives fold in the dtype the backends' reductions use (ir.dtypes.reduction_dtype).
    "collectives": ("xla_spmd.collectives", {"xla_spmd.errors", "xla_spmd.ir.dtypes"}),
    "backends": ("xla_spmd.backends", {"xla_spmd.errors", "xla_spmd.ir"}),
    "xla_spmd/propagation": ("xla_spmd.propagation",
                             {"xla_spmd.errors", "xla_spmd.ir", "xla_spmd.mesh",
                              "xla_spmd.sharding"}),
    # The partitioner only partitions: the pipeline propagates before it, optimizes after.
    "xla_spmd/partition": ("xla_spmd.partition",
                           {"xla_spmd.errors", "xla_spmd.ir", "xla_spmd.mesh",
                            "xla_spmd.sharding"}),
    "xla_spmd/passes": ("xla_spmd.passes", {"xla_spmd.errors", "xla_spmd.ir"}),
    # The StableHLO importer needs the sharding layer for sdy attributes, so it is a layer of
    # its own above ir; its test-file interpreter runs programs on the reference backend.
    "xla_spmd/stablehlo": ("xla_spmd.stablehlo",
                           {"xla_spmd.errors", "xla_spmd.ir", "xla_spmd.mesh",
                            "xla_spmd.sharding", "xla_spmd.backends.reference"}),
    # The frontend prints lowered programs as StableHLO (Lowered.as_text) and runs them
    # (jit); neither layer imports the frontend.
    "xla_spmd/frontend": ("xla_spmd.frontend",
                          {"xla_spmd.errors", "xla_spmd.ir", "xla_spmd.mesh",
                           "xla_spmd.sharding", "xla_spmd.backends.reference",
                           "xla_spmd.stablehlo"}),
    # The pipeline ties propagation, partition, passes and a backend together.
    "xla_spmd/pipeline.py": ("xla_spmd.pipeline",
                             {"xla_spmd.errors", "xla_spmd.config", "xla_spmd.ir",
                              "xla_spmd.mesh", "xla_spmd.sharding", "xla_spmd.propagation",
                              "xla_spmd.partition", "xla_spmd.passes", "xla_spmd.backends"}),
    # The runtime runs executables over the collectives; it never compiles (pytree utilities
    # flatten the arrays given to device_put).
    "xla_spmd/runtime": ("xla_spmd.runtime",
                         {"xla_spmd.errors", "xla_spmd.config", "xla_spmd.ir", "xla_spmd.mesh",
                          "xla_spmd.sharding", "xla_spmd.backends", "xla_spmd.collectives",
                          "xla_spmd.frontend.pytree"}),
    # The user API at the top joins frontend tracing, the pipeline and the runtime (and
    # prices compiled programs with the cost model: Compiled.cost_analysis).
    "xla_spmd/api.py": ("xla_spmd.api",
                        {"xla_spmd.errors", "xla_spmd.ir", "xla_spmd.frontend",
                         "xla_spmd.numpy", "xla_spmd.pipeline", "xla_spmd.runtime",
                         "xla_spmd.cost"}),
    # Checkpoints save and restore the runtime's ShardedArrays; under MPI their processes
    # meet through their own communicator.
    "xla_spmd/checkpoint": ("xla_spmd.checkpoint",
                            {"xla_spmd.errors", "xla_spmd.mesh", "xla_spmd.sharding",
                             "xla_spmd.runtime", "xla_spmd.collectives"}),
    # The cost model prices partitioned programs (on the CPU backend, its plan of fused
    # steps); its calibration compiles programs with the configured backend and runs them on
    # the job's devices (neither imports it).
    "xla_spmd/cost": ("xla_spmd.cost",
                      {"xla_spmd.errors", "xla_spmd.ir", "xla_spmd.partition.report",
                       "xla_spmd.pipeline", "xla_spmd.runtime", "xla_spmd.backends.cpu"}),
}


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return [(line, name) for line, name in found if name.split(".")[0] == "xla_spmd"]


# Leaves every layer may import: the error hierarchy, the process options, the iota form
# of device arrays (meshes, tile assignments and replica groups share it), the recycler of
# large result buffers (the MPI collectives and the CPU backend share it) and the lookup of
# the process's cores and BLAS thread pools (the runtime and the CPU backend share it).
LEAVES = {"xla_spmd.errors", "xla_spmd.config", "xla_spmd.iota", "xla_spmd.buffers",
          "xla_spmd.cores"}


def _allowed(name: str, own: str, allowed: set[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in allowed | LEAVES | {own})


@pytest.mark.parametrize("folder", sorted(LAYERS))
def test_layer_imports_point_down(folder):
    own, allowed = LAYERS[folder]
    violations = []
    source = ROOT / folder
    for path in [source] if source.is_file() else sorted(source.rglob("*.py")):
        for line, name in _imports(path):
            if not _allowed(name, own, allowed):
                violations.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert not violations, "upward or sideways imports:\n" + "\n".join(violations)


def test_errors_module_is_a_leaf():
    assert _imports(ROOT / "xla_spmd" / "errors.py") == []


def test_config_module_imports_only_errors():
    assert {name for _, name in _imports(ROOT / "xla_spmd" / "config.py")} == {"xla_spmd.errors"}


def test_pyproject_lists_every_package():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    mapping = config.get("package-dir", {})
    folders = {folder: package for package, folder in mapping.items()}
    missing = []
    for init in ROOT.rglob("__init__.py"):
        relative = init.parent.relative_to(ROOT)
        if relative.parts[0] in ("tests", "examples", "scripts", "build") or any(
                part.startswith(".") for part in relative.parts):
            continue
        top = relative.parts[0]
        package = folders.get(top, top)
        name = ".".join([package, *relative.parts[1:]])
        if name not in listed:
            missing.append(name)
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {missing}"


@pytest.mark.parametrize("leaf", ["buffers.py", "cores.py"])
def test_leaf_module_imports_nothing_of_xla_spmd(leaf):
    assert _imports(ROOT / "xla_spmd" / leaf) == []


def test_iota_module_imports_only_errors():
    assert {name for _, name in _imports(ROOT / "xla_spmd" / "iota.py")} == {"xla_spmd.errors"}


def test_cost_model_reads_only_public_names_of_the_backends():
    # The cost model asks the CPU backend how a program will run through its public query
    # (`execution_mode`, `plan_module`), not its private helpers.
    private = []
    for path in sorted((ROOT / "xla_spmd" / "cost").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if (isinstance(node, ast.ImportFrom) and node.module
                    and node.module.startswith("xla_spmd.backends")):
                private += [f"{path.relative_to(ROOT)}:{node.lineno} imports {alias.name}"
                            for alias in node.names if alias.name.startswith("_")]
    assert not private, "\n".join(private)


def test_frontend_modules_import_each_other_at_module_level():
    # The frontend is layered (README, layout): an import of a frontend module inside a
    # function would hide a circle between its files, not remove it.
    lazy = []
    for path in sorted((ROOT / "xla_spmd" / "frontend").rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        type_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                     and "TYPE_CHECKING" in ast.unparse(block.test) for n in ast.walk(block)}
        top = {id(n) for n in tree.body}
        for node in ast.walk(tree):
            if id(node) in top or id(node) in type_only:
                continue
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if node.level == 0 else ["xla_spmd.frontend"]
            else:
                continue
            if any(name.startswith("xla_spmd.frontend") for name in names):
                lazy.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {names[0]}")
    assert not lazy, "imports of frontend modules inside functions:\n" + "\n".join(lazy)
