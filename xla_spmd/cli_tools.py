"""The `xla-spmd` commands that measure and explain: calibrate, inspect, bench.

    xla-spmd calibrate [--devices N] [--output PROFILE.json] [--quick]
    xla-spmd inspect PROGRAM.hlo|.mlir [--mesh data=2,model=4] [--html REPORT.html]
    xla-spmd bench SCRIPT.py --meshes data=8 data=2,model=4 --strategies dp,tp,auto [--mpirun]

They live apart from cli.py and register themselves with `add_commands(subparsers)`. The bench
runner and the inspection report read their ``--mesh`` text with
`xla_spmd.cli_files.parse_mesh_text`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from xla_spmd.cli_files import load_module
from xla_spmd.errors import XlaSpmdError


def _set_devices(devices: int | None) -> None:
    from xla_spmd.runtime.devices import topology

    if devices is None:
        return
    if devices < 1:
        raise XlaSpmdError(f"--devices {devices}: give a positive number of devices")
    if topology().kind == "mpi":
        if devices != topology().num_devices:
            raise XlaSpmdError(f"--devices {devices}, but mpirun started "
                               f"{topology().num_devices} ranks (one device each)")
        return
    from xla_spmd.runtime import set_num_devices
    set_num_devices(devices)


def cmd_calibrate(args) -> int:
    from xla_spmd.cost.calibrate import calibrate
    from xla_spmd.runtime.devices import topology

    _set_devices(args.devices)
    speaker = topology().process_index == 0
    progress = (lambda text: print(f"calibrate: {text}", flush=True)) if speaker else None
    profile = calibrate(repeats=args.repeats, quick=args.quick, progress=progress)
    if progress:
        progress("the host's price of a jitted call")
    from xla_spmd.bench.calls import measure_calls
    profile = measure_calls(profile, repeats=args.repeats)
    if not speaker:
        return 0
    profile.save(args.output)
    print(f"step overhead {profile.step_overhead_s * 1e3:.3f} ms, per instruction "
          f"{profile.op_overhead_s * 1e6:.1f} us, GEMM {profile.gemm_flops / 1e9:.2f} GFLOP/s, "
          f"memory {profile.memory_bandwidth / 1e9:.2f} GB/s")
    if profile.launch_s:
        print("launch per step: " + ", ".join(f"{k} {v * 1e6:.1f} us"
                                               for k, v in profile.launch_s.items()))
    print(f"jitted call {profile.call_overhead_s * 1e6:.0f} us + "
          f"{profile.array_s * 1e6:.1f} us per argument or result array")
    for kind, table in profile.collectives.items():
        cells = ", ".join(f"{g} devices: {a * 1e6:.0f} us + {b * 1e9:.2f} ns/B"
                          for g, (a, b) in sorted(table.items()))
        print(f"{kind}: {cells}")
    print(f"wrote {args.output}; use it with XLA_SPMD_COST_PROFILE={args.output} or "
          f"xs.config.update('cost_profile', {str(args.output)!r})")
    return 0


def cmd_inspect(args) -> int:
    from xla_spmd.inspection import inspect_module

    report = inspect_module(_load(args.program), mesh=args.mesh, profile=args.profile)
    report.print()
    if args.html:
        report.write_html(args.html)
        print(f"wrote {args.html}")
    return 0


def _load(path: str):
    return load_module(path)


def cmd_bench(args) -> int:
    from xla_spmd.bench import bench_script

    if not Path(args.script).is_file():
        raise XlaSpmdError(f"{args.script}: no such file")
    strategies = [s for s in args.strategies.split(",") if s]
    if args.mpirun:
        from xla_spmd.bench import bench_mpirun

        result = bench_mpirun(args.script, meshes=args.meshes, strategies=strategies,
                              steps=args.steps, rounds=args.rounds, profile=args.profile,
                              mpirun=args.mpirun_command, timeout=args.mpirun_timeout)
    else:
        result = bench_script(args.script, meshes=args.meshes, strategies=strategies,
                              steps=args.steps, rounds=args.rounds, profile=args.profile)
    if args.rows_json:  # a launch of `bench --mpirun`: rank 0 hands the rows back
        from xla_spmd.runtime.devices import topology

        if topology().process_index == 0:
            Path(args.rows_json).write_text(result.to_json() + "\n")
        return 0
    result.print()
    if args.output:
        written = result.save(args.output)
        print("wrote " + ", ".join(str(p) for p in written))
    return 0


def add_commands(commands) -> None:
    """Add calibrate, inspect and bench to the `xla-spmd` subcommands."""
    calibrate = commands.add_parser(
        "calibrate", help="measure this machine's cost profile (collectives, GEMM, memory)")
    calibrate.add_argument("--devices", type=int, default=None,
                           help="N in-process devices (under mpirun: one per rank)")
    calibrate.add_argument("--output", default="xla_spmd_profile.json",
                           help="the profile file to write (JSON)")
    calibrate.add_argument("--repeats", type=int, default=7, help="runs per measurement")
    calibrate.add_argument("--quick", action="store_true", help="smaller programs")
    calibrate.set_defaults(handler=cmd_calibrate)

    inspect = commands.add_parser(
        "inspect", help="per value: sharding, local shape, why, collectives, memory")
    inspect.add_argument("program", help="program file (.hlo or .mlir)")
    inspect.add_argument("--mesh", default=None,
                         help="mesh for a program without one, e.g. data=2,model=4")
    inspect.add_argument("--html", default=None, help="write a self-contained HTML report")
    inspect.add_argument("--profile", default=None, help="cost profile (xla-spmd calibrate)")
    inspect.set_defaults(handler=cmd_inspect)

    bench = commands.add_parser(
        "bench", help="step time (measured and predicted) per mesh and strategy")
    bench.add_argument("script", help="a Python file exposing step, params and batch")
    bench.add_argument("--meshes", nargs="+", default=["data=8"],
                       help="meshes, e.g. data=8 data=2,model=4")
    bench.add_argument("--strategies", default="dp,tp,fsdp,2d",
                       help="comma-separated: dp, tp, fsdp, 2d, auto")
    bench.add_argument("--steps", type=int, default=3, help="timed steps per round")
    bench.add_argument("--rounds", type=int, default=3,
                       help="rounds in which the strategies of a mesh take turns")
    bench.add_argument("--output", default=None,
                       help="file stem for STEM.csv, STEM.json, STEM.png and STEM.svg")
    bench.add_argument("--profile", default=None, help="cost profile (xla-spmd calibrate)")
    bench.add_argument("--mpirun", action="store_true",
                       help="run each mesh under `mpirun -n N` (one device per rank)")
    bench.add_argument("--mpirun-command", default="mpirun",
                       help="the launcher, e.g. 'mpirun --oversubscribe' (default: mpirun)")
    bench.add_argument("--mpirun-timeout", type=float, default=None,
                       help="seconds each mesh's launch may take")
    bench.add_argument("--rows-json", default=None, help=argparse.SUPPRESS)
    bench.set_defaults(handler=cmd_bench)
