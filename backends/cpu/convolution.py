"""Convolution on the CPU backend: the reference evaluator's own `ConvolutionPlan`
(``backends/reference/contraction.py``), planned once when the step is bound instead of at
every call, so that its values are the reference's bit for bit by construction.

The plan sums §12.2 one kernel tap at a time in tap order (one GEMM per tap through BLAS),
in cache-sized blocks of output columns, skipping the positions where a tap reads padding or
a hole of base dilation. A single im2col GEMM over all taps (contracting ``taps × channels``
at once) or a direct generated kernel sums in another order and differs in the last bits, so
neither is used; ``scripts/bench_conv.py`` measures them against this kernel.

Example: a 1-d valid cross-correlation of ``[1, 2, 3]`` with kernel ``[1, 10]`` gives
``[21, 32]`` (taps ``1·[1, 2] + 10·[2, 3]``).
"""

from __future__ import annotations

import numpy as np

from xla_spmd.backends.reference.contraction import ConvolutionPlan, _finish, _work_dtype
from xla_spmd.ir import Instruction

_asarray = np.asarray


def conv_kernel(inst: Instruction, reads: tuple):
    """``convolution`` bound to its instruction: ``launch(values, ctx) -> value`` (see
    ``kernels.Launch``), the reference's plan made once."""
    result_dtype = inst.shape.dtype.array_dtype
    work = _work_dtype(result_dtype)
    plan = ConvolutionPlan(inst, work)
    same_dtype = work == result_dtype
    a, b = reads

    def launch_convolution(values, ctx):
        result = plan.run(_asarray(values[a]), _asarray(values[b]))
        return result if same_dtype else _finish(result, result_dtype)
    return launch_convolution
