"""The `xla-spmd` command.

    xla-spmd run PROGRAM.hlo --inputs ARGS.npz [--output OUT.npz] [--devices N]
                 [--backend reference|cpu|gpu]
    xla-spmd partition PROGRAM.hlo [--json] [--format hlo|mlir] [--device K]
    xla-spmd convert IN.hlo OUT.hlo
    xla-spmd interpret CASES.mlir
    xla-spmd interpret PROGRAM.mlir --print-results [--args="[dense<..> : tensor<..>, ...]"]
                       [--print-dense] [--split-input-file]

Errors in the input (a parse error, a wrong argument) print one clear message and exit with
status 2; nothing the user gave is loaded with pickle.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any

import numpy as np

from xla_spmd.cli_files import (  # load_module: also xla_spmd.cli.load_module, as before
    check_memory,
    check_output_path,
    load_inputs,
    load_module,
    read_text,
    write_file,
)
from xla_spmd.errors import XlaSpmdError


def write_module(module, path: str) -> None:
    """Write `module` as HLO text (.hlo, .txt) or StableHLO text (.mlir)."""
    from xla_spmd.ir.hlo_printer import print_module

    check_output_path(path, (".hlo", ".txt", ".mlir"))
    if Path(path).suffix == ".mlir":
        from xla_spmd.stablehlo import export_stablehlo
        text = export_stablehlo(module)
    else:
        text = print_module(module)
    write_file(path, lambda file: file.write(text.encode()))


def _summary(name: str, value) -> str:
    array = np.asarray(value)
    text = f"{name}: {array.dtype}{list(array.shape)}"
    if array.size and (array.dtype.kind in "biuf" or array.dtype.name == "bfloat16"):
        values = array.astype(np.float64)
        text += f"  min={values.min():.6g} max={values.max():.6g} mean={values.mean():.6g}"
    preview = np.array2string(array.ravel()[:6], precision=5, separator=", ")
    return f"{text}  first={preview}"


def _to_npz_array(value) -> np.ndarray:
    array = np.asarray(value)
    if array.dtype.name == "bfloat16" or array.dtype.kind == "V":
        return array.astype(np.float32)  # npz cannot hold bfloat16
    return array


def cmd_run(args) -> int:
    from xla_spmd.pipeline import load_backend
    from xla_spmd.runtime.devices import launched_by_mpi, topology

    error = None
    try:
        module = load_module(args.program)
        on_devices = args.devices is not None or launched_by_mpi()
        _check_devices(module, args.program, args.devices, on_devices)
        if args.output:
            check_output_path(args.output, (".npz",))
        check_memory(module, args.program)
        inputs = load_inputs(args.inputs, module)
    except XlaSpmdError as caught:
        error = caught
    _agree_on_files(error)
    if on_devices:
        outputs = _run_on_devices(module, inputs, args.devices, args.backend)
    else:  # the program as it is, on one device
        outputs = load_backend(args.backend).compile(module, (0,)).run(0, inputs, None)
    if topology().process_index != 0:
        return 0  # under MPI every rank holds the outputs; rank 0 reports them
    for i, out in enumerate(outputs):
        print(_summary(f"out{i}", out))
    if args.output:
        arrays: dict[str, Any] = {f"out{i}": _to_npz_array(o) for i, o in enumerate(outputs)}
        write_file(args.output, lambda file: np.savez(file, **arrays))
        print(f"wrote {len(outputs)} outputs to {args.output}")
    return 0


def _xla_partitioned(module) -> str | None:
    """Why `module` looks like one device's program that XLA already partitioned, or None."""
    if module.entry.name.endswith("_spmd"):
        return f"its entry computation {module.entry.name} is XLA's SPMD partitioner output"
    scheduled = dict(module.header).get("is_scheduled") == "true"
    if scheduled and module.num_partitions > 1:
        return f"it is scheduled (is_scheduled=true) for num_partitions={module.num_partitions}"
    return None


def _collectives(module) -> list[str]:
    from xla_spmd.ir.ops import Family

    return [f"{inst.name} ({inst.op.name})" for c in module.computations
            for inst in c.instructions
            if inst.op.family is Family.COLLECTIVE or inst.op.name.endswith(
                ("all-reduce-start", "all-gather-start", "collective-permute-start"))]


def _check_devices(module, path: str, devices: int | None, on_devices: bool) -> None:
    """Refuse up front a device count that cannot run `module`."""
    partitions = module.num_partitions * module.num_replicas
    if devices is not None and devices < 1:
        raise XlaSpmdError(f"--devices {devices}: give a positive number of devices")
    partitioned = _xla_partitioned(module)
    if partitioned is not None:
        raise XlaSpmdError(
            f"{path}: this program was already partitioned by XLA ({partitioned}); its "
            "parameters have per-device (local) shapes. `xla-spmd run` takes global programs "
            "and, with --devices, partitions them itself: run the program from before XLA's "
            "optimization (jax's lower(...).as_text(), e.g. X.hlo beside X.optimized.hlo)")
    if devices is not None and module.num_partitions > 1 and devices != partitions:
        raise XlaSpmdError(f"--devices {devices}, but {path} is written for "
                           f"num_partitions={module.num_partitions}"
                           + (f" x replica_count={module.num_replicas}"
                              if module.num_replicas > 1 else "")
                           + f" = {partitions} devices; give --devices {partitions}")
    collectives = _collectives(module)
    if not on_devices and collectives and partitions > 1:
        raise XlaSpmdError(f"{path} has collectives ({', '.join(collectives[:3])}) across "
                           f"{partitions} devices; run it on its devices: --devices "
                           f"{partitions}")


def _run_on_devices(module, inputs, devices: int | None, backend: str | None) -> list:
    """Propagate, partition, compile with `backend` and run on the job's devices (N
    in-process devices, or one per MPI rank under mpirun); the global outputs, on every
    process."""
    from xla_spmd import pipeline
    from xla_spmd.ir import TupleShape
    from xla_spmd.mesh import make_mesh
    from xla_spmd.runtime import Runner, local_devices, set_num_devices, topology

    if topology().kind == "mpi":
        if devices not in (None, topology().num_devices):
            raise XlaSpmdError(f"--devices {devices}, but mpirun started "
                               f"{topology().num_devices} ranks (one device each)")
    elif devices:
        set_num_devices(devices)
    if any(isinstance(p.shape, TupleShape) for p in module.entry.parameters):
        # use_tuple_args: each array of a tuple parameter is placed on its devices alone.
        from xla_spmd.backends.reference import leaves
        from xla_spmd.passes.parameters import flatten_tuple_parameters

        module = flatten_tuple_parameters(module)
        inputs = [leaf for value in inputs for leaf in leaves(value)]
    # A program with no sharding anywhere runs replicated: every device holds everything.
    mesh = None if _has_shardings(module) else make_mesh({"x": topology().num_devices})
    program = pipeline.compile(module, mesh=mesh, backend=backend,
                               devices=[d.id for d in local_devices()])
    assert program.executable is not None  # compile() compiled it for the devices
    outputs = Runner(program.module, program.executable)(inputs)
    return [o.gather() for o in outputs]


def _has_shardings(module) -> bool:
    """Whether some instruction carries a sharding (or Shardy's sharding attributes)."""
    from xla_spmd.ir.custom_calls import SDY_MESHES, SDY_SHARDING

    if SDY_MESHES in (module.header_value("frontend_attributes") or ""):
        return True
    return any(inst.sharding is not None or inst.frontend_attribute(SDY_SHARDING) is not None
               for computation in module.computations for inst in computation.instructions)


def cmd_partition(args) -> int:
    from xla_spmd.ir.hlo_printer import print_module
    from xla_spmd.partition import specialize
    from xla_spmd.partition.report import (
        collective_table,
        format_table,
        strip_shardings,
        table_json,
    )
    from xla_spmd.pipeline import lower

    spmd = lower(_load_program(args.input)).spmd_module
    if args.device is not None:
        if not 0 <= args.device < spmd.num_partitions:
            raise XlaSpmdError(f"--device {args.device}: the program runs on "
                               f"{spmd.num_partitions} devices (0..{spmd.num_partitions - 1})")
        spmd = specialize(spmd, args.device)
    rows = collective_table(spmd)
    if args.json:
        print(table_json(rows))
        return 0
    # The per-device program has local shapes: the global shardings its instructions keep
    # for inspection would mislead a reader (or a tool) of the text.
    local = strip_shardings(spmd)
    if args.format == "mlir":
        from xla_spmd.stablehlo import export_stablehlo
        print(export_stablehlo(local), end="")
    else:
        print(print_module(local))
    print("\n".join("// " + line for line in format_table(rows).splitlines()))
    return 0


def cmd_convert(args) -> int:
    module = load_module(args.input)
    if Path(args.input).suffix != ".mlir" and Path(args.output).suffix == ".mlir":
        # StableHLO carries axis-based shardings: read them from the HLO's xla.sdy
        # attributes, or convert its GSPMD shardings.
        from xla_spmd.propagation import import_shardings
        module = import_shardings(module).module
    write_module(module, args.output)
    return 0


def cmd_interpret(args) -> int:
    from xla_spmd.stablehlo.interpreter import run_text

    if Path(args.file).suffix != ".mlir":
        raise XlaSpmdError(f"{args.file}: interpret runs StableHLO interpreter test files "
                           "(.mlir); to evaluate a program use `xla-spmd run`")
    if args.print_results or args.args is not None or args.print_dense \
            or args.split_input_file:
        return _interpret_main(args)
    report = run_text(read_text(args.file), args.file)
    if not report.results:
        raise XlaSpmdError(f"{args.file}: no test cases: expected func.func test functions "
                           "with check.* ops, cases separated by '// -----' lines")
    print(report)
    return 0 if report.ok else 1


def _interpret_main(args) -> int:
    """As ``stablehlo-translate --interpret``: run each module's main function on --args and
    print its results; with --split-input-file every ``// -----`` case is a module of its own,
    and one that fails is reported while the others still run."""
    from xla_spmd.stablehlo.interpreter import parse_arguments, run_main, split_input
    from xla_spmd.stablehlo.value_text import print_value, print_value_dense

    arguments = parse_arguments(args.args) if args.args is not None else []
    text = read_text(args.file)
    show = print_value_dense if args.print_dense else print_value
    failed = False
    for index, (chunk, line) in enumerate(split_input(text) if args.split_input_file
                                          else [(text, 1)]):
        if index:
            print()  # mlir-translate separates the cases' outputs with an empty line
        try:
            for value, shape in run_main(chunk, args.file, arguments, line):
                print(show(value, shape))
        except XlaSpmdError as error:
            if not args.split_input_file:
                raise
            sys.stdout.flush()
            print(f"xla-spmd interpret: error: {error}", file=sys.stderr)
            failed = True
    return 2 if failed else 0


def _load_program(path: str):
    """A module from HLO text (.hlo, .txt) or StableHLO text (.mlir)."""
    return load_module(path)


def _stablehlo_with_meshes(module) -> str:
    """StableHLO text of `module`, declaring the meshes its shardings use."""
    from xla_spmd.sharding import declare_meshes, meshes_of
    from xla_spmd.stablehlo import export_stablehlo

    return export_stablehlo(declare_meshes(module, meshes_of(module)))


def cmd_propagate(args) -> int:
    from xla_spmd.propagation.propagate import run
    from xla_spmd.propagation.provenance import annotate

    result = run(_load_program(args.input), args.strategy, unsharded_scalars=True)
    print(_stablehlo_with_meshes(result.module), end="")
    if args.explain and result.propagator is not None:
        rename = _mlir_value_names(args.input)
        what = "MLIR value" if rename else "instruction"
        print(f"// Where each propagated axis came from ({what}: dim axis: chain):")
        for name, note in annotate(result).items():
            print(f"// {rename(name) if rename else name}: {rename(note) if rename else note}")
    return 0


def _mlir_value_names(path: str):
    """For a .mlir program: a function that writes the instruction names in a text as the
    MLIR values they were imported from (``add.3`` -> ``%0``); None for HLO programs."""
    from xla_spmd.stablehlo import import_stablehlo

    if Path(path).suffix != ".mlir":
        return None
    names: dict[str, str] = {}
    import_stablehlo(read_text(path), filename=path, value_names=names)
    if not names:
        return None
    pattern = re.compile(r"(?<![\w.%@-])(" + "|".join(
        re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")(?![\w.-])")
    return lambda text: pattern.sub(lambda m: names[m.group(1)], text)


def cmd_rules(args) -> int:
    print(rules_text(_load_program(args.input)), end="")
    return 0


def rules_text(module) -> str:
    """StableHLO text of `module` with each op's ``sdy.sharding_rule`` attached (as Shardy's
    ``-sdy-populate-op-sharding-rules`` prints it)."""
    from xla_spmd.propagation import with_sharding_rules
    return _stablehlo_with_meshes(with_sharding_rules(module))


def _add_loop_cap(command: argparse.ArgumentParser) -> None:
    command.add_argument("--max-loop-iterations", type=int, default=None, metavar="N",
                         help="stop a `while` loop with an error after N iterations (default "
                              "10000000, or $XLA_SPMD_MAX_LOOP_ITERATIONS)")


def _apply_options(args) -> None:
    """Check the XLA_SPMD_* variables at start-up, then apply the command-line options."""
    from xla_spmd import config

    config.check()
    if getattr(args, "max_loop_iterations", None) is not None:
        config.update("max_loop_iterations", args.max_loop_iterations)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="xla-spmd", description=(__doc__ or "").split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run a program: on one device, or partitioned over "
                                "--devices N")
    run.add_argument("program", help="program file (.hlo or .mlir)")
    run.add_argument("--inputs", help="npz file with arrays arg0, arg1, ...")
    run.add_argument("--output", help="npz file to write out0, out1, ... to")
    run.add_argument("--devices", type=int, default=None,
                     help="propagate, partition and run on N in-process devices (under "
                          "mpirun: one device per rank)")
    run.add_argument("--backend", default=None, metavar="NAME",
                     help="the backend that compiles and runs the program: reference, cpu "
                          "or gpu (default: XLA_SPMD_BACKEND, else reference)")
    _add_loop_cap(run)
    run.set_defaults(handler=cmd_run)

    convert = commands.add_parser("convert", help="parse a program and print it back")
    convert.add_argument("input")
    convert.add_argument("output")
    convert.set_defaults(handler=cmd_convert)

    interpret = commands.add_parser(
        "interpret", help="run a StableHLO interpreter test file (cases split by // -----)")
    interpret.add_argument("file", help="StableHLO file with check.* ops (.mlir)")
    translate = interpret.add_argument_group(
        "as stablehlo-translate --interpret (any of these options): run the module's main "
        "function and print its results")
    translate.add_argument("--print-results", action="store_true",
                           help="run main and print its results (no other option needed)")
    translate.add_argument("--args", default=None, metavar="[dense<..> : tensor<..>, ...]",
                           help="main's arguments, e.g. --args='[dense<1> : tensor<2xi32>]'")
    translate.add_argument("--print-dense", "--interpreter-print-dense", action="store_true",
                           help="print results as dense<...> : tensor<...> attributes")
    translate.add_argument("--split-input-file", action="store_true",
                           help="each '// -----' case is a module of its own")
    _add_loop_cap(interpret)
    interpret.set_defaults(handler=cmd_interpret)
    propagate = commands.add_parser(
        "propagate", help="infer every value's sharding; print StableHLO with sdy shardings")
    propagate.add_argument("input", help="program file (.hlo or .mlir)")
    propagate.add_argument("--strategy", default=None,
                           choices=["basic", "aggressive", "op-priority", "user-priority"],
                           help="default: Shardy's full pipeline (user-priority)")
    propagate.add_argument("--explain", action="store_true",
                           help="say where each propagated axis came from")
    propagate.set_defaults(handler=cmd_propagate)

    part = commands.add_parser(
        "partition", help="partition a sharded program into one SPMD program")
    part.add_argument("input", help="program file (.hlo or .mlir)")
    part.add_argument("--json", action="store_true", help="print the collectives as JSON")
    part.add_argument("--format", choices=("hlo", "mlir"), default="hlo",
                      help="print the SPMD program as HLO text (default) or StableHLO")
    part.add_argument("--device", type=int, default=None,
                      help="print device K's program, partition-id folded")
    part.set_defaults(handler=cmd_partition)

    rules = commands.add_parser("rules", help="print each op's factor sharding rule")
    rules.add_argument("input", help="program file (.hlo or .mlir)")
    rules.set_defaults(handler=cmd_rules)

    from xla_spmd.cli_tools import add_commands
    add_commands(commands)  # calibrate, inspect, bench
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        error = None
        try:
            _apply_options(args)
        except XlaSpmdError as caught:
            error = caught
        _agree_on_start_up(error)
        code = args.handler(args)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except XlaSpmdError as error:
        if _aborts_the_job(error):
            raise  # the abort-on-error hook reports it once and stops every rank
        if not getattr(error, "reported_by_another_rank", False):
            print(f"xla-spmd {args.command}: error: {error}", file=sys.stderr)
        if getattr(error, "every_rank_knows", False):
            _finalize_mpi()
        return 2
    except MemoryError as error:  # past check_memory: temporaries, or a command without it
        print(f"xla-spmd {args.command}: error: out of memory: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `xla-spmd partition x.hlo | head`: the reader has had enough
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's flush at exit would fail again
        return 128 + signal.SIGPIPE
    except KeyboardInterrupt:
        from xla_spmd.runtime.devices import launched_by_mpi

        if launched_by_mpi():
            raise  # the abort-on-error hook stops every rank (a plain exit could hang)
        # Every in-process device has stopped by now (LocalWorld.run waits for them).
        print(f"xla-spmd {args.command}: interrupted", file=sys.stderr)
        return 130


def _aborts_the_job(error: XlaSpmdError) -> bool:
    """Whether ``error`` must stop the whole MPI job: under mpirun, an error raised while the
    ranks run (a collective that timed out, ranks that disagree, a failed evaluation) is
    this rank's alone, or comes on some ranks only; the others may be waiting for this one,
    or running a loop that will not end. The abort-on-error hook reports it once (from the
    rank the error names, else the lowest) and stops every rank. Errors every rank learned
    together (bad files, bad variables) exit each rank with status 2 instead."""
    if getattr(error, "every_rank_knows", False):
        return False
    from xla_spmd.runtime.executable import mpi_aborts_on_error

    return mpi_aborts_on_error()


def _finalize_mpi() -> None:
    """End MPI on every rank before any exits: mpirun takes the first exit status 2 as a
    failure and tears the job down, and a rank still finalizing then makes it print a
    "PMIX ERROR: PMIX_ERR_UNREACH" line under the report. Every rank calls this, at the
    same point (an error every rank knows)."""
    from mpi4py import MPI

    sys.stderr.flush()  # the report before anything mpirun adds
    if MPI.Is_initialized() and not MPI.Is_finalized():
        MPI.Finalize()


def _agree_on_start_up(error: XlaSpmdError | None) -> None:
    """Raise ``error`` (a bad XLA_SPMD_* variable or option) if checking the options failed,
    agreed over MPI itself (our communicator reads these options; `_agree`)."""
    def gather(failed: bool) -> tuple[int, np.ndarray] | None:
        try:
            from mpi4py import MPI
        except ImportError:  # the run fails on it later, saying so; a bad option first
            return None
        world = MPI.COMM_WORLD
        flags = np.zeros(world.Get_size(), np.bool_)
        world.Allgather(np.array([failed]), flags)
        return world.Get_rank(), flags
    _agree(error, "refused its options", gather)


def _agree_on_files(error: XlaSpmdError | None) -> None:
    """Raise ``error`` if reading the files failed, agreed over the job's communicator
    (`_agree`)."""
    def gather(failed: bool) -> tuple[int, np.ndarray]:
        from xla_spmd.runtime.executable import mpi_communicator

        communicator = mpi_communicator()
        world = tuple(range(communicator.size))
        return communicator.rank, communicator.all_gather(np.array([failed]), world, 0)
    _agree(error, "could not read the files", gather)


def _agree(error: XlaSpmdError | None, what: str, gather) -> None:
    """Raise ``error`` if this rank failed a check that every rank makes. Under mpirun every
    rank first learns which ranks failed (``gather(failed) -> (this rank, every rank's
    flag)``, or None where they cannot be asked): the lowest of them reports, once, whether
    the check failed everywhere or on one host alone, and every rank stops with exit status
    2 (the others' error says "another rank <what>")."""
    from xla_spmd.runtime.devices import launched_by_mpi

    gathered = gather(error is not None) if launched_by_mpi() else None
    if gathered is None:
        if error is not None:
            raise error
        return
    rank, failed = gathered
    if not failed.any():
        return
    if error is None or rank != int(np.argmax(failed)):
        error = XlaSpmdError(f"another rank {what}")
        error.reported_by_another_rank = True
    error.every_rank_knows = True
    raise error


if __name__ == "__main__":
    sys.exit(main())
