"""StableHLO MLIR text (as JAX prints it, with Shardy ``sdy`` attributes) in and out of the
HLO IR, and a runner for files in the StableHLO interpreter's test conventions.

>>> from xla_spmd.stablehlo import import_stablehlo, export_stablehlo
>>> m = import_stablehlo('''module @m {
...   sdy.mesh @mesh = <["x"=2]>
...   func.func public @main(%a: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>})
...       -> tensor<4xf32> {
...     %0 = stablehlo.abs %a : tensor<4xf32>
...     return %0 : tensor<4xf32>
...   }
... }''')
>>> print(m.entry.parameters[0].sharding)
#sdy.sharding<@mesh, [{"x"}]>
>>> import_stablehlo(export_stablehlo(m)) == m
True
"""

# The rule modules fill the converter and printer registries (registry.py) as they load.
from xla_spmd.stablehlo import (  # noqa: F401
    exporter_control,
    exporter_ops,
    importer_control,
    importer_dynamic,
    importer_ops,
    importer_sdy,
)
from xla_spmd.stablehlo.exporter import ExportError, export_stablehlo
from xla_spmd.stablehlo.importer import import_stablehlo

__all__ = ["ExportError", "export_stablehlo", "import_stablehlo"]
