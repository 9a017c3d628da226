"""The `xla-spmd` command.

    xla-spmd run PROGRAM.hlo --inputs ARGS.npz [--output OUT.npz]
    xla-spmd convert IN.hlo OUT.hlo
    xla-spmd interpret CASES.mlir

Errors in the input (a parse error, a wrong argument) print one clear message and exit with
status 2; nothing the user gave is loaded with pickle.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

from xla_spmd.errors import XlaSpmdError


def load_module(path: str):
    """Read a program file; the format follows the extension (.hlo, .txt)."""
    from xla_spmd.ir.hlo_parser import parse_hlo

    file = Path(path)
    if not file.is_file():
        raise XlaSpmdError(f"{path}: no such file")
    if file.suffix == ".mlir":
        from xla_spmd.stablehlo import import_stablehlo
        return import_stablehlo(file.read_text(), filename=str(file))
    if file.suffix not in (".hlo", ".txt"):
        raise XlaSpmdError(f"{path}: unknown program format {file.suffix!r}; expected .hlo "
                           "or .mlir")
    return parse_hlo(file.read_text(), filename=str(file))


def write_module(module, path: str) -> None:
    from xla_spmd.ir.hlo_printer import print_module

    file = Path(path)
    if file.suffix == ".mlir":
        from xla_spmd.stablehlo import export_stablehlo
        file.write_text(export_stablehlo(module))
        return
    if file.suffix not in (".hlo", ".txt"):
        raise XlaSpmdError(f"{path}: unknown output format {file.suffix!r}; expected .hlo "
                           "or .mlir")
    file.write_text(print_module(module))


def load_inputs(path: str | None, module) -> list:
    """Arrays arg0, arg1, ... for the entry's flattened parameters, rebuilt into tuples."""
    from xla_spmd.ir import TupleShape

    shapes = [p.shape for p in module.entry.parameters]
    flat = [leaf for s in shapes for leaf in s.leaves()]
    arrays: dict[str, np.ndarray] = {}
    if path is not None:
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
        except (OSError, ValueError) as error:
            raise XlaSpmdError(f"{path}: cannot read inputs: {error}") from None
    expected = [f"arg{i}" for i in range(len(flat))]
    missing = [k for k in expected if k not in arrays]
    # Other arrays (a file may carry expected outputs beside the inputs) are not arguments.
    extra = sorted(k for k in set(arrays) - set(expected) if re.fullmatch(r"arg\d+", k))
    if missing or extra:
        raise XlaSpmdError(f"{path}: the program takes {len(flat)} arrays "
                           f"({', '.join(expected) or 'none'}); missing {missing or 'none'}, "
                           f"unexpected {extra or 'none'}")
    values = iter(arrays[k] for k in expected)

    def rebuild(shape):
        if isinstance(shape, TupleShape):
            return tuple(rebuild(e) for e in shape.elements)
        return next(values)
    return [rebuild(s) for s in shapes]


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
    from xla_spmd.backends.reference import evaluate, leaves

    module = load_module(args.program)
    inputs = load_inputs(args.inputs, module)
    result = evaluate(module, inputs)
    outputs = leaves(result)
    for i, out in enumerate(outputs):
        print(_summary(f"out{i}", out))
    if args.output:
        np.savez(args.output, **{f"out{i}": _to_npz_array(o) for i, o in enumerate(outputs)})
        print(f"wrote {len(outputs)} outputs to {args.output}")
    return 0


def cmd_convert(args) -> int:
    write_module(load_module(args.input), args.output)
    return 0


def cmd_interpret(args) -> int:
    from xla_spmd.stablehlo.interpreter import run_interpreter_file

    if not Path(args.file).is_file():
        raise XlaSpmdError(f"{args.file}: no such file")
    report = run_interpreter_file(args.file)
    print(report)
    return 0 if report.ok else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="xla-spmd", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="evaluate a program on the reference backend")
    run.add_argument("program", help="program file (.hlo or .mlir)")
    run.add_argument("--inputs", help="npz file with arrays arg0, arg1, ...")
    run.add_argument("--output", help="npz file to write out0, out1, ... to")
    run.set_defaults(handler=cmd_run)

    convert = commands.add_parser("convert", help="parse a program and print it back")
    convert.add_argument("input")
    convert.add_argument("output")
    convert.set_defaults(handler=cmd_convert)

    interpret = commands.add_parser(
        "interpret", help="run a StableHLO interpreter test file (cases split by // -----)")
    interpret.add_argument("file", help="StableHLO file with check.* ops (.mlir)")
    interpret.set_defaults(handler=cmd_interpret)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except XlaSpmdError as error:
        print(f"xla-spmd {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
