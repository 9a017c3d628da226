"""Measure a machine profile: run small SPMD programs on the job's devices and time them.

Every number is measured on all the job's devices at once (N in-process devices, or one
per rank under ``mpirun``), through the backend ``xs.config.backend`` names, because that is
how a step runs: devices share the cores, and the communicator's price depends on how many
take part.

* step overhead: a program that only copies a scalar;
* per-instruction overhead: a chain of ``OPS`` negations of 8 floats, over the step overhead;
* memory bandwidth: adding two vectors of ``VECTOR`` floats (12 bytes moved per element);
* GEMM throughput: one ``GEMM x GEMM`` dot;
* per collective kind and group size (the divisors of N from 2 up): a small and a large
  message; the line through both gives alpha and beta;
* the own price of each common small op (OPCODES), beyond its roofline time;
* on the CPU backend (a profile with ``schedule = "plan"``, see `xla_spmd.cost.plan`): the
  launch of a kernel step (a chain of ``OPS`` small dots) and of a fusion step (a fusion
  after each dot, reading two arrays, and five: the price of each array read), the
  bandwidth of cache-sized fusions (f32[64,64]) and the throughput of their dots (small
  GEMMs), each kernel opcode's launch (OPCODES with
  every result kept), and, per group size, the price of each array of a combined all-reduce
  beyond the first.

Every program is compiled first; then all run in turns, `repeats` rounds, and each one's
fastest run counts: a stray slow run does not, and a burst of other work on a shared machine
touches every program alike (`xla-spmd bench` runs its steps between the rounds). The host's
price of a jitted call is measured above this layer (`xla_spmd.bench.calls`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from xla_spmd.cost.profile import COLLECTIVE_KINDS, Profile
from xla_spmd.ir import parse_hlo
from xla_spmd.partition.report import collective_bytes

OPS, VECTOR, GEMM, COPIES = 200, 1 << 20, 256, 8
CACHE_SIDE = 64                     # f32[64,64] (16 KiB): the cache-resident fusions
BETWEEN = 1                         # instructions between two collectives
# Small ops whose own price (dispatch and bookkeeping of the backend) is measured apart:
# name -> (HLO of one op on s = f32[16,16], operand names it reads). Others cost like negate.
OPCODES = {
    "dot": "f32[16,16] dot(s, s), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
    "dot.batched": "f32[4,16,16] dot(b, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
                   "rhs_batch_dims={0}, rhs_contracting_dims={1}",
    "reduce": "f32[16] reduce(s, z), dimensions={1}, to_apply=add",
    "broadcast": "f32[16,16,4] broadcast(s), dimensions={0,1}",
    "add": "f32[16,16] add(s, s)",
    "multiply": "f32[16,16] multiply(s, s)",
    "subtract": "f32[16,16] subtract(s, s)",
    "divide": "f32[16,16] divide(s, s)",
    "exponential": "f32[16,16] exponential(s)",
    "compare": "pred[16,16] compare(s, s), direction=LT",
    "select": "f32[16,16] select(p, s, s)",
    "dynamic-slice": "f32[4,16] dynamic-slice(s, i, i), dynamic_slice_sizes={4,16}",
    "dynamic-update-slice": "f32[16,16] dynamic-update-slice(s, q, i, i)",
    "reshape": "f32[256] reshape(s)",
    "transpose": "f32[16,16] transpose(s), dimensions={1,0}",
    "convert": "bf16[16,16] convert(s)",
    "concatenate": "f32[32,16] concatenate(s, s), dimensions={0}",
    "iota": "s32[16,16] iota(), iota_dimension=0",
    "constant": "f32[] constant(1)",
    "copy": "f32[16,16] copy(s)",
    "slice": "f32[8,16] slice(s), slice={[0:8], [0:16]}",
    "pad": "f32[18,16] pad(s, z), padding=1_1x0_0",
    "maximum": "f32[16,16] maximum(s, s)",
    # an embedding's lookup and its gradient: rows of s picked by, or added at, indices g
    "gather": "f32[4,16] gather(s, g), offset_dims={1}, collapsed_slice_dims={0}, "
              "start_index_map={0}, index_vector_dim=1, slice_sizes={1,16}",
    "scatter": "f32[16,16] scatter(s, g, q), update_window_dims={1}, "
               "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
               "index_vector_dim=1, to_apply=add",
}
# floats per device in a collective's operand: a large one as a training step's gradients or
# activations (tens to hundreds of KiB), all devices' together still in cache where stacked
SMALL, LARGE = 64, 1 << 14
_ADD = "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"


def _groups(n: int, size: int) -> str:
    return "{" + ",".join("{" + ",".join(str(d) for d in range(g, g + size)) + "}"
                          for g in range(0, n, size)) + "}"


def _collective_program(kind: str, n: int, size: int, elements: int) -> str:
    """`COPIES` collectives of one kind, each after a negation of the operand: as in a
    step, devices arrive at each collective from compute (back-to-back collectives would
    find every device already waiting, and price them too low). One alone would be lost in
    the step's own overhead."""
    header = f"HloModule calibrate, num_partitions={n}\n{_ADD}"
    groups = f"replica_groups={_groups(n, size)}, use_global_device_ids=true"
    if kind == "all-reduce":
        shape, op = f"f32[{elements}]", f"all-reduce(x), {groups}, to_apply=add"
    elif kind == "all-gather":
        shape, op = f"f32[{elements * size}]", f"all-gather(x), dimensions={{0}}, {groups}"
    elif kind == "reduce-scatter":
        shape = f"f32[{elements // size}]"
        op = f"reduce-scatter(x), dimensions={{0}}, {groups}, to_apply=add"
    elif kind == "all-to-all":  # takes no use_global_device_ids: its groups are partitions
        shape = f"f32[{elements}]"
        op = f"all-to-all(x), dimensions={{0}}, replica_groups={_groups(n, size)}"
    else:
        pairs = ",".join(f"{{{d},{(d // size) * size + (d % size + 1) % size}}}"
                         for d in range(n))
        shape, op = f"f32[{elements}]", f"collective-permute(x), source_target_pairs={{{pairs}}}"
    lines = []
    for i in range(COPIES):
        previous = "x"
        for k in range(BETWEEN):
            lines.append(f"n{i}_{k} = f32[{elements}] negate({previous})")
            previous = f"n{i}_{k}"
        lines.append(f"r{i} = {shape} {op.replace('(x)', f'({previous})')}, "
                     f"channel_id={i + 1}")
    names = ", ".join(f"r{i}" for i in range(COPIES))
    return (f"{header}ENTRY e {{ x = f32[{elements}] parameter(0)\n " + "\n ".join(lines)
            + f"\n ROOT t = ({', '.join([shape] * COPIES)}) tuple({names}) }}")


def _combined_program(n: int, size: int) -> str:
    """One all-reduce of `COPIES` arrays (as the combiner makes of a step's gradients), each
    a negation of the operand."""
    header = f"HloModule combined, num_partitions={n}\n{_ADD}"
    lines = [f"n{i} = f32[{SMALL}] negate(x)" for i in range(COPIES)]
    shapes = ", ".join([f"f32[{SMALL}]"] * COPIES)
    names = ", ".join(f"n{i}" for i in range(COPIES))
    lines.append(f"ROOT r = ({shapes}) all-reduce({names}), channel_id=1, replica_groups="
                 f"{_groups(n, size)}, use_global_device_ids=true, to_apply=add")
    return f"{header}ENTRY e {{ x = f32[{SMALL}] parameter(0)\n " + "\n ".join(lines) + " }"


def _opcode_program(n: int, text: str, keep: bool = False) -> str:
    """`OPS` independent copies of one small op (see OPCODES), results dropped (`keep`: all
    returned, as the CPU backend computes only what the result needs)."""
    lines = ["s = f32[16,16] parameter(0)", "z = f32[] constant(0)", "i = s32[] constant(0)",
             "p = pred[16,16] compare(s, s), direction=GT",
             "q = f32[4,16] slice(s), slice={[0:4], [0:16]}",
             "b = f32[4,16,16] broadcast(s), dimensions={1,2}",
             "g = s32[4,1] constant({{0}, {3}, {5}, {7}})"]
    lines += [f"o{k} = {text}" for k in range(OPS)]
    if keep:
        shape = text.split(" ", 1)[0]
        names = ", ".join(f"o{k}" for k in range(OPS))
        lines.append(f"ROOT r = ({', '.join([shape] * OPS)}) tuple({names})")
    else:
        lines.append("ROOT r = f32[] constant(0)")
    return f"HloModule op, num_partitions={n}\n{_ADD}ENTRY e {{ " + "\n ".join(lines) + " }"


def _launch_program(n: int, fused: bool, side: int = 8, inputs: int = 2) -> str:
    """`OPS` small dots in a chain (each a kernel step of the CPU backend), with `fused` a
    fusion after each (a dot ends a fusion) that reads `inputs` arrays and writes one, as
    the fused elementwise chains of a step do."""
    a = f"f32[{side},{side}]"
    lines = [f"w = {a} parameter(0)", f"x0 = {a} parameter(1)"]
    lines += [f"v{k} = {a} parameter({k + 2})" for k in range(inputs - 2)]
    for i in range(OPS):
        product = f"d{i}" if fused else f"x{i + 1}"
        lines.append(f"{product} = {a} dot(x{i}, w), lhs_contracting_dims={{1}}, "
                     "rhs_contracting_dims={0}")
        if fused:
            last = f"d{i}"
            for k, other in enumerate(["x0"] + [f"v{j}" for j in range(inputs - 2)]):
                lines.append(f"m{i}_{k} = {a} multiply({last}, {other})")
                last = f"m{i}_{k}"
            lines.append(f"x{i + 1} = {a} negate({last})")
    lines.append(f"ROOT r = {a} copy(x{OPS})")
    return f"HloModule launch, num_partitions={n}\nENTRY e {{ " + "\n ".join(lines) + " }"


def _mixed_program(n: int) -> str:
    """`OPS // 4` rounds of a step's usual kinds in turn: a dot, a reduction, a fusion of
    a broadcast, an add and a multiply, a transcendental, a transpose."""
    lines = ["w = f32[16,16] parameter(0)", "x0 = f32[16,16] parameter(1)",
             "z = f32[] constant(0)"]
    for i in range(OPS // 4):
        lines += [f"d{i} = f32[16,16] dot(x{i}, w), lhs_contracting_dims={{1}}, "
                  "rhs_contracting_dims={0}",
                  f"r{i} = f32[16] reduce(d{i}, z), dimensions={{1}}, to_apply=add",
                  f"b{i} = f32[16,16] broadcast(r{i}), dimensions={{0}}",
                  f"a{i} = f32[16,16] add(d{i}, b{i})",
                  f"m{i} = f32[16,16] multiply(a{i}, x0)",
                  f"e{i} = f32[16,16] tanh(m{i})",
                  f"x{i + 1} = f32[16,16] transpose(e{i}), dimensions={{1,0}}"]
    lines.append(f"ROOT out = f32[16,16] copy(x{OPS // 4})")
    return f"HloModule mixed, num_partitions={n}\n{_ADD}ENTRY e {{ " + "\n ".join(lines) + " }"


def _chain_program(n: int) -> str:
    lines = ["x0 = f32[8] parameter(0)"]
    lines += [f"x{i + 1} = f32[8] negate(x{i})" for i in range(OPS)]
    lines[-1] = "ROOT " + lines[-1]
    return f"HloModule chain, num_partitions={n}\nENTRY e {{ " + "\n ".join(lines) + " }"


def fastest(samples: list[float]) -> float:
    """The time a measurement reports: the fastest run (on a shared machine the slower
    runs carry other people's work; bench reports its steps the same way)."""
    return min(samples)


class _Runner:
    """Runs HLO programs on the job's devices and times them, in two passes: the first
    compiles every program a calibration asks for (`time` answers a placeholder), then
    `measure` runs them all in turn `repeats` times, and the second pass answers each
    program's fastest run. Every program's runs are so spread over the whole calibration:
    a burst of other work on a shared machine touches them alike, and each program's
    fastest run comes from the quietest moment of the window."""

    def __init__(self, repeats: int):
        from xla_spmd.runtime.devices import local_devices, topology

        self.repeats = repeats
        self.devices = [d.id for d in local_devices()]
        self.num_devices = topology().num_devices
        self.programs: dict[str, tuple] = {}
        self.measured: dict[str, float] | None = None

    def together(self, programs: list[tuple[str, Callable[[], list]]]) -> list[float]:
        return [self.time(text, make_args) for text, make_args in programs]

    def time(self, text: str, make_args: Callable[[], list]) -> float:
        from xla_spmd.ir import parse_hlo
        from xla_spmd.pipeline import load_backend
        from xla_spmd.runtime.executable import execute

        if self.measured is not None:
            return self.measured[text]
        if text not in self.programs:
            executable = load_backend().compile(parse_hlo(text), tuple(self.devices))
            args = {d: make_args() for d in self.devices}
            execute(executable, args)  # warm up: threads, caches
            self.programs[text] = (executable, args)
        return 1.0

    def measure(self, between: Callable[[int], None] | None = None) -> None:
        """Run every program once per round, `repeats` rounds; `between(round)` runs after
        each round (bench times its steps there, in the same window)."""
        from xla_spmd.runtime.executable import execute

        samples: dict[str, list[float]] = {text: [] for text in self.programs}
        for turn in range(self.repeats):
            for text, (executable, args) in self.programs.items():
                start = time.perf_counter()
                execute(executable, args)
                samples[text].append(time.perf_counter() - start)
            if between is not None:
                between(turn)
        # Under MPI each rank times its own runs; the collectives keep them in step, and
        # rank 0 writes the profile.
        self.measured = {text: fastest(times) for text, times in samples.items()}


def calibrate(*, repeats: int = 5, quick: bool = False, progress=None,
              between: Callable[[int], None] | None = None) -> Profile:
    """Measure this job's profile (see the module docstring). `quick` uses smaller
    programs (for tests); `progress(text)` is told what is being compiled; every program
    runs `repeats` times, the programs taking turns (see `_Runner`), and `between(round)`
    runs after each round."""
    runner = _Runner(repeats)
    _derive(runner, quick, progress or (lambda text: None))
    if progress:
        progress(f"{len(runner.programs)} programs, {repeats} rounds")
    runner.measure(between)
    return _derive(runner, quick, lambda text: None)


def _derive(runner: _Runner, quick: bool, say) -> Profile:
    """The profile from the runner's times (a placeholder on the first pass)."""
    import xla_spmd.config as config
    from xla_spmd.runtime.devices import topology

    n = runner.num_devices
    vector, gemm, large = (VECTOR // 16, GEMM // 2, LARGE // 16) if quick else (
        VECTOR, GEMM, LARGE)
    rng = np.random.default_rng(0)

    say("step overhead")
    step = runner.time(f"HloModule empty, num_partitions={n}\nENTRY e {{ x = f32[] "
                       "parameter(0)\n ROOT c = f32[] copy(x) }",
                       lambda: [np.float32(1)])
    say("instruction overhead")
    chain = runner.time(_chain_program(n), lambda: [np.ones(8, np.float32)])
    op = max((chain - step) / OPS, 1e-9)
    launches: dict[str, float] = {}
    cache_bandwidth = small_gemm = 0.0
    plan_schedule = config.backend == "cpu"
    if plan_schedule:
        say("kernel and fusion launches")

        def weights(side=8, inputs=2):
            return lambda: [np.full((side, side), 1 / side, np.float32)] + [
                np.ones((side, side), np.float32) for _ in range(inputs - 1)]
        side = CACHE_SIDE
        kernels, fusions, wide, big_kernels, big_fusions = runner.together(
            [(_launch_program(n, fused=False), weights()),
             (_launch_program(n, fused=True), weights()),
             (_launch_program(n, fused=True, inputs=5), weights(inputs=5)),
             (_launch_program(n, fused=False, side=side), weights(side)),
             (_launch_program(n, fused=True, side=side), weights(side))])
        launches["kernel"] = max((kernels - step) / OPS, 1e-9)
        launches["fusion"] = max((fusions - kernels) / OPS, 1e-9)
        # each input a fusion reads beyond the second: its argument's marshalling
        launches["fusion input"] = max((wide - fusions) / OPS / 3, 0.0)
        launches["ufunc"] = launches["fusion"]
        op = launches["fusion"]   # what one small elementwise op costs: a fusion of its own
        # a fusion of cache-sized arrays (two read, one written) beyond its launch
        per_fusion = (big_fusions - big_kernels) / OPS - launches["fusion"]
        cache_bandwidth = 12.0 * side * side / max(per_fusion, 1e-9)
        # the cache-sized dots themselves: small GEMMs (one BLAS thread, operands cached)
        small_gemm = 2.0 * side ** 3 / max((big_kernels - step) / OPS - launches["kernel"],
                                           1e-9)
    say("memory bandwidth")
    add = runner.time(f"HloModule bw, num_partitions={n}\nENTRY e {{ a = f32[{vector}] "
                      f"parameter(0)\n b = f32[{vector}] parameter(1)\n ROOT c = "
                      f"f32[{vector}] add(a, b) }}",
                      lambda: [rng.random(vector, np.float32), rng.random(vector, np.float32)])
    bandwidth = 12 * vector / max(add - step - op, 1e-9)  # one fusion when plan_schedule
    say("GEMM throughput")
    dot = runner.time(f"HloModule gemm, num_partitions={n}\nENTRY e {{ a = f32[{gemm},{gemm}] "
                      f"parameter(0)\n ROOT d = f32[{gemm},{gemm}] dot(a, a), "
                      "lhs_contracting_dims={1}, rhs_contracting_dims={0} }",
                      lambda: [rng.random((gemm, gemm), np.float32)])
    gemm_flops = 2 * gemm ** 3 / max(dot - step - launches.get("kernel", op), 1e-9)
    by_opcode = {}
    say("small ops, one kind at a time")
    base = runner.time(_opcode_program(n, "f32[] constant(0)").replace(
        "o0 = f32[] constant(0)", "o0 = f32[] constant(0)"), lambda: [np.ones((16, 16),
                                                                           np.float32)])
    for opcode, text in OPCODES.items():
        seconds = runner.time(_opcode_program(n, text, keep=plan_schedule),
                              lambda: [rng.random((16, 16), np.float32)])
        # the plan schedule: a kernel's launch (or a fusion of one op); else beyond `op`
        by_opcode[opcode] = (max((seconds - base) / OPS, 1e-9) if plan_schedule else
                             max((seconds - base) / OPS, 0.0) + op)
    collectives = {}
    sizes = [g for g in range(2, n + 1) if n % g == 0]
    for kind in COLLECTIVE_KINDS:
        collectives[kind] = {}
        for size in sizes:
            say(f"{kind} over {size} devices")
            points = []
            for elements in (SMALL, large):
                seconds = runner.time(_collective_program(kind, n, size, elements),
                                      lambda e=elements: [rng.random(e, np.float32)])
                moved = collective_bytes(kind, 4.0 * elements, size)
                negate = BETWEEN * (op + 8.0 * elements / bandwidth)
                points.append((moved, max((seconds - step) / COPIES - negate, 1e-9)))
            (x0, t0), (x1, t1) = points
            beta = max((t1 - t0) / (x1 - x0), 0.0)
            collectives[kind][size] = (max(t0 - beta * x0, 1e-9), beta)
    say("all-reduce of many arrays")
    operands = {}
    for size in sizes:
        seconds = runner.time(_combined_program(n, size), lambda: [rng.random(SMALL,
                                                                              np.float32)])
        alpha, beta = collectives["all-reduce"][size]
        moved = collective_bytes("all-reduce", 4.0 * SMALL * COPIES, size)
        negates = COPIES * (op + 8.0 * SMALL / bandwidth)
        operands[size] = max((seconds - step - negates - alpha - beta * moved) / (COPIES - 1),
                             0.0)
    operand = operands[sizes[-1]] if sizes else 0.0
    top = topology()
    execution = ""
    if plan_schedule:
        from xla_spmd.backends.cpu.executable import execution_mode

        # the mode the launch probes ran in: the unit of their prices (see cost.plan)
        execution = execution_mode(parse_hlo(_launch_program(n, fused=True)), n,
                                   top.kind == "local")
    profile = Profile(name=f"calibrated: {config.backend} backend, {n} {top.kind} devices",
                      backend=config.backend, communicator=top.kind, devices=n,
                      step_overhead_s=step, op_overhead_s=op, gemm_flops=gemm_flops,
                      memory_bandwidth=bandwidth, collectives=collectives,
                      op_overhead_by_opcode=by_opcode,
                      schedule="plan" if plan_schedule else "ops", launch_s=launches,
                      cache_bandwidth=cache_bandwidth, collective_operand_s=operand,
                      collective_operand_by_group=operands,
                      small_gemm_flops=small_gemm, execution=execution)
    if not plan_schedule:
        return profile
    say("a mix of kernels and fusions")
    text = _mixed_program(n)
    seconds = runner.time(text, lambda: [rng.random((16, 16), np.float32) / 16,
                                         rng.random((16, 16), np.float32)])
    return mixed_scale(profile, parse_hlo(text), seconds)


def mixed_scale(profile: Profile, module, seconds: float) -> Profile:
    """`profile` with every launch price scaled by what a mixed program (`_mixed_program`)
    measured, `seconds`, over what `profile` predicts for it: each launch was measured with
    one kind of step repeated, whose interpreter paths and data stay hot; a step's own
    programs take turns between kinds (the scale is kept within 0.5 to 3)."""
    import dataclasses

    from xla_spmd.cost.model import estimate

    predicted = estimate(module, profile).step_time - profile.step_overhead_s
    scale = min(max((seconds - profile.step_overhead_s) / max(predicted, 1e-9), 0.5), 3.0)
    return dataclasses.replace(
        profile, launch_s={k: v * scale for k, v in profile.launch_s.items()},
        op_overhead_by_opcode={k: v * scale for k, v in profile.op_overhead_by_opcode.items()},
        launch_scale=scale)
