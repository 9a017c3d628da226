"""Machine profiles: the numbers the cost model prices a program with.

A profile holds what `xla-spmd calibrate` measures for one backend, communicator and device
count: the fixed price of running a step and of each instruction (an interpreter's dispatch,
a kernel launch), GEMM throughput, memory bandwidth, and per collective kind and group size
an alpha-beta line ``time = alpha + beta * bytes_per_device`` (bytes as
`xla_spmd.partition.report.collective_bytes` counts them).

Profiles are JSON files; `load_profile()` reads the one named by ``xs.config.cost_profile``
(environment variable ``XLA_SPMD_COST_PROFILE``) and otherwise the built-in profile of the
configured backend (`default_profile`): `CPU_PROFILE` for the CPU backend, `DEFAULT_PROFILE`
(the reference evaluator's) for the others, numbers measured once on a 2-core machine with 8
in-process devices, so nothing needs a calibration first.

>>> p = DEFAULT_PROFILE
>>> round(p.collective_time("all-reduce", 4, 0.0) * 1e6) == round(p.alpha("all-reduce", 4) * 1e6)
True
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from xla_spmd.errors import XlaSpmdError

# Kernels that return a view of their operand on the CPU backend (numpy shares the buffer)
VIEW_OPCODES = frozenset(("tuple", "get-tuple-element", "bitcast", "reshape", "transpose",
                          "slice", "broadcast"))
SMALL_GEMM_FLOPS = 2 * 128 ** 3   # a dot of at most this many FLOPs is "small"
CACHE_BYTES = 1 << 20   # a step moving at most this many bytes runs from cache
COLLECTIVE_KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                    "collective-permute")


@dataclass(frozen=True)
class Profile:
    """What one machine (backend x communicator x device count) costs."""

    name: str
    backend: str
    communicator: str
    devices: int
    step_overhead_s: float        # running an empty program once on every device
    op_overhead_s: float          # each instruction, beyond its roofline time
    gemm_flops: float             # FLOP/s of one device while all devices compute at once
    memory_bandwidth: float       # bytes/s of one device, likewise
    # kind -> {group size: (alpha seconds, beta seconds per byte per device)}
    collectives: dict[str, dict[int, tuple[float, float]]] = field(default_factory=dict)
    # opcode -> its own per-instruction price where it differs from op_overhead_s
    op_overhead_by_opcode: dict[str, float] = field(default_factory=dict)
    # "ops": every HLO instruction is priced (the reference evaluator runs each); "plan": the
    # CPU backend's schedule is priced, a launch per step (one per fusion of many ops)
    schedule: str = "ops"
    # plan schedule: step kind (fusion, kernel, ufunc, fallback, ...) -> price of one launch
    launch_s: dict[str, float] = field(default_factory=dict)
    # a jitted call: its fixed price, and the price of each argument or result array (the
    # frontend's and runtime's work per array: placing it, splitting it over the devices)
    call_overhead_s: float = 0.0
    array_s: float = 0.0
    # bytes/s of one device moving data that stays in cache (a step's traffic up to
    # CACHE_BYTES); 0: memory_bandwidth for every size
    cache_bandwidth: float = 0.0
    # each array of a collective beyond its first (a combined all-reduce of many gradients)
    collective_operand_s: float = 0.0
    # the same by group size, where calibrated so (stacked, each array is folded member by
    # member: its price grows with the group); other sizes: collective_operand_s
    collective_operand_by_group: dict[int, float] = field(default_factory=dict)
    # the factor calibration scaled the launch prices by (see calibrate.mixed_scale)
    launch_scale: float = 1.0
    # FLOP/s of a small dot (up to SMALL_GEMM_FLOPS: one BLAS thread, operands in cache);
    # 0: gemm_flops for every size
    small_gemm_flops: float = 0.0
    # plan schedule: how the calibration's small programs ran ("stacked", "lockstep",
    # "ranks": see `xla_spmd.cost.plan`), the unit of the launch prices; "": "ranks" under
    # MPI, else "lockstep" (profiles from before stacked execution)
    execution: str = ""

    @property
    def calibrated_mode(self) -> str:
        """The execution mode the launch prices were measured in (see `execution`)."""
        return self.execution or ("ranks" if self.communicator == "mpi" else "lockstep")

    def gemm_time(self, flops: float) -> float:
        """Seconds of a contraction's FLOPs: a small one at small_gemm_flops."""
        if self.small_gemm_flops > 0 and flops <= SMALL_GEMM_FLOPS:
            return flops / self.small_gemm_flops
        return flops / self.gemm_flops

    def traffic_time(self, bytes_moved: float, launch_bytes: float | None = None) -> float:
        """Seconds to move `bytes_moved` (one device's): from cache when the launch's bytes,
        `launch_bytes` (all devices' for a stacked launch; default `bytes_moved`), fit (see
        cache_bandwidth)."""
        launch_bytes = bytes_moved if launch_bytes is None else launch_bytes
        if self.cache_bandwidth > 0 and launch_bytes <= CACHE_BYTES:
            return bytes_moved / self.cache_bandwidth
        return bytes_moved / self.memory_bandwidth

    def _line(self, kind: str, group_size: int) -> tuple[float, float]:
        table = self.collectives.get(kind) or self.collectives.get("all-reduce") or {}
        if not table:
            return (self.op_overhead_s, 1.0 / self.memory_bandwidth)
        if group_size in table:
            return table[group_size]
        # The nearest calibrated group size, alpha scaled by the log of the group size (the
        # number of rounds of a tree or ring schedule grows with it).
        nearest = min(table, key=lambda g: (abs(math.log2(max(g, 2)) -
                                                math.log2(max(group_size, 2))), g))
        alpha, beta = table[nearest]
        scale = math.log2(max(group_size, 2)) / math.log2(max(nearest, 2))
        return (alpha * scale, beta)

    def alpha(self, kind: str, group_size: int) -> float:
        return self._line(kind, group_size)[0]

    def collective_time(self, kind: str, group_size: int, bytes_per_device: float,
                        arrays: int = 1) -> float:
        """Predicted seconds of one collective of `arrays` arrays; a group of one device
        costs nothing."""
        if group_size <= 1:
            return 0.0
        alpha, beta = self._line(kind, group_size)
        return alpha + beta * bytes_per_device + self.operand_time(group_size) * (arrays - 1)

    def operand_time(self, group_size: int) -> float:
        """The price of each array of a collective over `group_size` devices beyond its
        first: calibrated for that size, else the nearest calibrated size's, else
        `collective_operand_s`."""
        table = self.collective_operand_by_group
        if not table:
            return self.collective_operand_s
        if group_size in table:
            return table[group_size]
        return table[min(table, key=lambda g: (abs(g - group_size), g))]

    def launch(self, kind: str, opcode: str = "", inputs: int = 2) -> float:
        """The price of launching one step of the plan schedule: a fusion (by the arrays it
        reads: calibrated with two, ``launch_s["fusion input"]`` each beyond two), a kernel,
        ufunc or fallback (its opcode's own price where calibrated; a view such as
        get-tuple-element as a reshape; else a fallback as a kernel), a collective's start
        or wait (inside its alpha), a constant (nothing)."""
        by_opcode = self.op_overhead_by_opcode
        if kind == "fusion" and "fusion" in self.launch_s:
            extra = self.launch_s.get("fusion input", 0.0) * max(inputs - 2, 0)
            return self.launch_s["fusion"] + extra
        if kind in ("kernel", "ufunc", "fallback"):
            if opcode in by_opcode:
                return by_opcode[opcode]
            if opcode in VIEW_OPCODES and "reshape" in by_opcode:
                return by_opcode["reshape"]
        if kind in self.launch_s:
            return self.launch_s[kind]
        if kind in ("start", "wait", "constant", "control"):
            return 0.0
        return self.launch_s.get("kernel", self.overhead(opcode))

    def own_launch(self, kind: str, opcode: str) -> bool:
        """Whether `launch(kind, opcode)` is the opcode's own calibrated price (measured on
        a program of that opcode: its launches per step are the opcode's, see
        `xla_spmd.cost.plan.launches`)."""
        by_opcode = self.op_overhead_by_opcode
        return kind in ("kernel", "ufunc", "fallback") and (
            opcode in by_opcode or (opcode in VIEW_OPCODES and "reshape" in by_opcode))

    def call_time(self, arrays: int) -> float:
        """The host's price of one jitted call passing `arrays` arguments and results."""
        return self.call_overhead_s + self.array_s * arrays

    def overhead(self, opcode: str) -> float:
        """The fixed price of one instruction of `opcode`."""
        return self.op_overhead_by_opcode.get(opcode, self.op_overhead_s)

    def compute_time(self, flops: float, bytes_moved: float, *, gemm: bool,
                     opcode: str = "") -> float:
        """Roofline seconds of one instruction: the larger of its FLOPs over GEMM throughput
        (contractions only: elementwise FLOPs hide under their memory traffic) and its bytes
        over memory bandwidth, plus the per-instruction overhead."""
        compute = flops / self.gemm_flops if gemm else 0.0
        return self.overhead(opcode) + max(compute, bytes_moved / self.memory_bandwidth)

    def to_json(self) -> str:
        data = asdict(self)
        data["collectives"] = {k: {str(g): list(v) for g, v in t.items()}
                               for k, t in self.collectives.items()}
        data["collective_operand_by_group"] = {
            str(g): v for g, v in self.collective_operand_by_group.items()}
        return json.dumps(data, indent=2)

    @staticmethod
    def from_json(text: str, source: str = "<profile>") -> Profile:
        try:
            data = json.loads(text)
            collectives = {k: {int(g): (float(v[0]), float(v[1])) for g, v in t.items()}
                           for k, t in data.pop("collectives", {}).items()}
            operands = {int(g): float(v)
                        for g, v in data.pop("collective_operand_by_group", {}).items()}
            profile = Profile(**data, collectives=collectives,
                              collective_operand_by_group=operands)
        except (ValueError, TypeError, KeyError, IndexError) as error:
            raise XlaSpmdError(f"{source}: not a cost profile ({error}); make one with "
                               "`xla-spmd calibrate --output FILE`") from None
        for name in ("gemm_flops", "memory_bandwidth"):
            if not getattr(profile, name) > 0:
                raise XlaSpmdError(f"{source}: {name} must be positive")
        if profile.execution not in ("", "stacked", "lockstep", "threaded", "ranks"):
            raise XlaSpmdError(f"{source}: execution must be stacked, lockstep, threaded or "
                               f"ranks, got {profile.execution!r}")
        if profile.schedule not in ("ops", "plan"):
            raise XlaSpmdError(f"{source}: schedule must be 'ops' or 'plan', got "
                               f"{profile.schedule!r}")
        return profile

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json() + "\n")


def _default() -> Profile:
    # `xla-spmd calibrate --devices 8 --repeats 9` on the project's shared 2-core machine
    # (reference backend, in-process devices), rounded.
    collectives = {
        "all-reduce": {2: (0.00023, 7.2e-10), 4: (0.00025, 1.2e-10), 8: (0.00017, 2.6e-10)},
        "all-gather": {2: (0.00019, 1.9e-09), 4: (0.00021, 1.7e-08), 8: (0.00015, 1.9e-08)},
        "reduce-scatter": {2: (0.00028, 0.0), 4: (0.00026, 0.0), 8: (0.00024, 0.0)},
        "all-to-all": {2: (0.00034, 4.1e-10), 4: (0.00034, 0.0), 8: (0.00031, 4.7e-09)},
        "collective-permute": {2: (0.00021, 2.3e-09), 4: (0.00021, 4.1e-10), 8: (0.0002, 3.1e-09)},
    }
    by_opcode = {
        "dot": 0.00096, "reduce": 0.00022, "broadcast": 0.00011, "add": 6.2e-05,
        "multiply": 9.9e-05, "subtract": 5.9e-05, "divide": 6.1e-05, "exponential":
        6.7e-05, "compare": 0.00014, "select": 6.2e-05, "dynamic-slice": 6e-05,
        "dynamic-update-slice": 0.00022, "reshape": 3.4e-05, "transpose": 3.2e-05,
        "convert": 0.00022, "concatenate": 3.5e-05, "iota": 0.00011, "constant":
        2.7e-05, "copy": 5.4e-05, "slice": 3.2e-05, "pad": 0.00017, "maximum": 0.00028,
    }
    return Profile(name="built-in (reference backend, 8 in-process devices, 2 cores)",
                   backend="reference", communicator="local", devices=8,
                   step_overhead_s=0.0013, op_overhead_s=2.6e-05,
                   gemm_flops=8000000000.0, memory_bandwidth=1100000000.0,
                   collectives=collectives, op_overhead_by_opcode=by_opcode)


DEFAULT_PROFILE = _default()


def _default_cpu() -> Profile:
    # `xla-spmd calibrate --devices 8 --repeats 5` on the project's shared 2-core machine
    # (cpu backend, 8 in-process devices run stacked, load average under 1), rounded. A
    # beta of 0: the 64 KiB message cost no more than the small one, all in cache.
    collectives = {
        "all-reduce": {2: (1.3e-05, 0.0), 4: (1.3e-05, 0.0), 8: (1.6e-05, 0.0)},
        "all-gather": {2: (1.4e-05, 3e-09), 4: (1e-05, 4e-09), 8: (5.9e-06, 5.7e-09)},
        "reduce-scatter": {2: (2.3e-05, 4.4e-09), 4: (1.8e-05, 0.0), 8: (2.2e-05, 0.0)},
        "all-to-all": {2: (1.7e-05, 3.7e-09), 4: (1.6e-05, 5.5e-09), 8: (1.8e-05, 4.1e-09)},
        "collective-permute": {2: (9.9e-06, 2.3e-09), 4: (8e-06, 0.0), 8: (9.2e-06, 0.0)},
    }
    by_opcode = {
        "dot": 7.1e-06, "dot.batched": 4.7e-05, "reduce": 7.1e-06, "broadcast": 4.9e-06,
        "add": 4.6e-06, "multiply": 4.4e-06, "subtract": 4.4e-06, "divide": 4.3e-06,
        "exponential": 7.9e-06, "compare": 3.1e-06, "select": 3.8e-06,
        "dynamic-slice": 2.1e-05, "dynamic-update-slice": 2.2e-05, "reshape": 1.5e-06,
        "transpose": 1.2e-06, "convert": 3.5e-06, "concatenate": 5.1e-06, "iota": 1.4e-06,
        "constant": 2e-06, "copy": 3.7e-06, "slice": 1.5e-06, "pad": 0.00016,
        "maximum": 3.6e-06, "gather": 3.6e-05, "scatter": 5.8e-05,
    }
    return Profile(name="built-in (cpu backend, 8 in-process devices stacked, 2 cores)",
                   backend="cpu", communicator="local", devices=8,
                   step_overhead_s=8.1e-05, op_overhead_s=1.7e-06, gemm_flops=1e10,
                   memory_bandwidth=7.5e8, collectives=collectives,
                   op_overhead_by_opcode=by_opcode, schedule="plan",
                   launch_s={"kernel": 3.7e-06, "fusion": 2.4e-06, "fusion input": 7.7e-07,
                             "ufunc": 2.4e-06},
                   call_overhead_s=9.4e-05, array_s=2.2e-05, cache_bandwidth=1.2e10,
                   collective_operand_s=6.9e-06,
                   collective_operand_by_group={2: 1e-05, 4: 3.9e-06, 8: 6.9e-06},
                   launch_scale=1.4, small_gemm_flops=1.9e10, execution="stacked")


CPU_PROFILE = _default_cpu()
DEFAULT_PROFILES = {"reference": DEFAULT_PROFILE, "cpu": CPU_PROFILE}
"""The built-in profile of each backend (`default_profile`)."""


def default_profile(backend: str | None = None) -> Profile:
    """The built-in profile of `backend` (default ``xs.config.backend``): the CPU backend's
    own (its plan of fused steps), else the reference evaluator's.

    >>> default_profile("cpu").schedule, default_profile("reference").schedule
    ('plan', 'ops')
    """
    import xla_spmd.config as config

    return DEFAULT_PROFILES.get(backend or config.backend, DEFAULT_PROFILE)


def load_profile(path: str | Path | None = None) -> Profile:
    """The profile at `path`, else at ``xs.config.cost_profile``, else the built-in one of
    the configured backend (`default_profile`)."""
    import xla_spmd.config as config

    path = path or config.cost_profile
    if not path:
        return default_profile()
    file = Path(path)
    if not file.is_file():
        raise XlaSpmdError(f"{path}: no such cost profile; make one with "
                           "`xla-spmd calibrate --output FILE`")
    return Profile.from_json(file.read_text(), str(path))
