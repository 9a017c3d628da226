"""The files the `xla-spmd` command reads and writes, checked before any work is done.

* program text must be UTF-8; anything else is a `ParseError` at the first bad byte;
* npz inputs are read member by member: each header's shape and dtype are checked against
  the program's parameter before its data is decompressed, and only the bytes the header
  declares are read (a zip bomb is never inflated); nothing is unpickled;
* a program one of whose values is larger than the memory available is refused by name;
* an output path is refused up front if it is a folder, has the wrong suffix, or lies in a
  folder that does not exist;
* a mesh given as text (``--mesh data=2,model=4``) must be ``name=size`` pairs, each name
  once (`parse_mesh_text`, which the bench runner and the inspection report read it with).
"""

from __future__ import annotations

import math
import re
import zipfile
import zlib
from pathlib import Path

import numpy as np

from xla_spmd.errors import ParseError, XlaSpmdError


def parse_mesh_text(text: str) -> dict[str, int]:
    """``data=2,model=4`` -> {"data": 2, "model": 4}, with a clear error otherwise."""
    axes: dict[str, int] = {}
    for item in text.split(","):
        name, _, size = item.partition("=")
        name = name.strip()
        if not name or not size.strip().isdigit() or int(size) < 1:
            raise XlaSpmdError(f"mesh {text!r}: expected name=size pairs like data=2,model=4")
        if name in axes:
            raise XlaSpmdError(f"mesh {text!r}: axis {name!r} given twice")
        axes[name] = int(size)
    return axes


def read_text(path: str) -> str:
    """The text of a program file, which must be UTF-8: anything else (binary data, UTF-16,
    Latin-1) is a `ParseError` at the first byte that is not."""
    file = Path(path)
    if not file.is_file():
        raise XlaSpmdError(f"{path}: " + ("is a directory" if file.is_dir() else
                                          "no such file"))
    try:
        data = file.read_bytes()
    except OSError as error:
        raise XlaSpmdError(f"{path}: cannot read: {error.strerror}") from None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ParseError("this is UTF-16 text; program files are UTF-8 (convert it: iconv "
                         "-f UTF-16 -t UTF-8)", file=path, line=1, column=1)
    nul = data.find(b"\0")
    try:
        text = data.decode("utf-8-sig")
        bad, why = nul, "a NUL byte: this looks like a binary file, not program text"
    except UnicodeDecodeError as error:
        bad, why = error.start, (f"byte 0x{data[error.start]:02x} is not UTF-8; program files "
                                 "are UTF-8 text (from Latin-1: iconv -f LATIN1 -t UTF-8)")
        if 0 <= nul < bad:
            bad, why = nul, "a NUL byte: this looks like a binary file, not program text"
    if bad < 0:
        return text
    line_start = data.rfind(b"\n", 0, bad) + 1
    column = len(data[line_start:bad].decode("utf-8", errors="replace")) + 1
    raise ParseError(why, file=path, line=data.count(b"\n", 0, bad) + 1, column=column)


def check_output_path(path: str, suffixes: tuple[str, ...]) -> None:
    """Refuse, before any work is done, an output path that cannot be written as asked."""
    file = Path(path)
    if file.is_dir():
        raise XlaSpmdError(f"{path}: is a directory; give a file name, e.g. "
                           f"{file / ('out' + suffixes[0])}")
    if file.suffix not in suffixes:
        raise XlaSpmdError(f"{path}: unknown output format {file.suffix!r}; expected "
                           + " or ".join(suffixes))
    if not file.parent.is_dir():
        raise XlaSpmdError(f"{path}: directory {file.parent} does not exist")


def write_file(path: str, write) -> None:
    """Call `write` on `path` opened for binary writing; an OSError names the path."""
    try:
        with open(path, "wb") as file:
            write(file)
    except OSError as error:
        raise XlaSpmdError(f"{path}: cannot write: {error.strerror or error}") from None


def load_inputs(path: str | None, module) -> list:
    """Arrays arg0, arg1, ... for the entry's flattened parameters, rebuilt into tuples.

    Each array's npz header (shape, dtype) is checked against its parameter before its data
    is decompressed, and only the declared bytes are read: a file that claims a huge shape,
    or a zip bomb, is refused without inflating it."""
    from xla_spmd.ir import TupleShape

    shapes = [p.shape for p in module.entry.parameters]
    flat = [leaf for s in shapes for leaf in s.leaves()]
    # What each flat array is, for errors: "parameter 2 (t) element 1" inside a tuple.
    names = [f"parameter {number} ({p.name})" + (f" element {j}" if p.shape.is_tuple else "")
             for number, p in enumerate(module.entry.parameters)
             for j, _ in enumerate(p.shape.leaves())]
    expected = [f"arg{i}" for i in range(len(flat))]
    if path is None:
        if flat:
            raise XlaSpmdError(f"the program takes {len(flat)} arrays ({', '.join(expected)}"
                               "); give them with --inputs ARGS.npz")
        return []
    with _NpzReader(path) as npz:
        missing = [k for k in expected if k not in npz.members]
        # Expected outputs outN may ride along beside the inputs; any other name is a mistake.
        extra = sorted(k for k in set(npz.members) - set(expected)
                       if not re.fullmatch(r"out\d+", k))
        if missing or extra:
            raise XlaSpmdError(f"{path}: the program takes {len(flat)} arrays "
                               f"({', '.join(expected) or 'none'}); missing "
                               f"{missing or 'none'}, unexpected {extra or 'none'}")
        values = iter([npz.read(key, shape, what)
                       for key, shape, what in zip(expected, flat, names)])

    def rebuild(shape):
        if isinstance(shape, TupleShape):
            return tuple(rebuild(e) for e in shape.elements)
        return next(values)
    return [rebuild(s) for s in shapes]


# What reading a damaged zip raises (zipfile, zlib, numpy's header parser): the file's fault.
_ZIP_ERRORS = (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error,
               NotImplementedError, RuntimeError, SyntaxError)


class _NpzReader:
    """The members of an .npz file (numpy.savez), read one at a time after checking their
    headers; never unpickles."""

    def __init__(self, path: str):
        self.path = path
        if not Path(path).is_file():
            raise XlaSpmdError(f"{path}: no such file")
        if not zipfile.is_zipfile(path):
            raise XlaSpmdError(f"{path}: not an .npz file (numpy.savez); save the inputs "
                               "with numpy.savez(path, arg0=..., arg1=...)")
        try:
            self.archive = zipfile.ZipFile(path)
        except _ZIP_ERRORS as error:
            raise XlaSpmdError(f"{path}: cannot read it: {error}") from None
        self.members = {info.filename.removesuffix(".npy"): info
                        for info in self.archive.infolist()}

    def __enter__(self) -> _NpzReader:
        return self

    def __exit__(self, *exc) -> None:
        self.archive.close()

    def read(self, key: str, shape, what: str) -> np.ndarray:
        """Member `key`, after checking its header against the parameter's `shape`."""

        fmt = np.lib.format
        where = f"{self.path}: {key}"
        try:
            with self.archive.open(self.members[key]) as stream:
                version = fmt.read_magic(stream)
                if version not in ((1, 0), (2, 0)):
                    raise ValueError(f"npy format version {version} (numpy.savez writes "
                                     "1.0 for numeric arrays)")
                header = (fmt.read_array_header_1_0 if version == (1, 0)
                          else fmt.read_array_header_2_0)
                dims, fortran_order, dtype = header(stream)
                self._check(where, dims, dtype, shape, what)
                count = math.prod(dims)
                size = stream.tell() + count * dtype.itemsize
                if self.members[key].file_size > size:  # numpy.save writes exactly `size`
                    raise XlaSpmdError(
                        f"{where}: the member inflates to {self.members[key].file_size} bytes "
                        f"but its header describes {size}; refusing it unread (a damaged "
                        "file, or a zip bomb)")
                data = stream.read(count * dtype.itemsize)
                if len(data) != count * dtype.itemsize:
                    raise ValueError(f"the data ends after {len(data)} of "
                                     f"{count * dtype.itemsize} bytes")
        except _ZIP_ERRORS as error:
            raise XlaSpmdError(f"{where}: cannot read it: {error}") from None
        array = np.frombuffer(data, dtype=dtype)
        order = "F" if fortran_order else "C"
        return array.reshape(dims, order=order).copy()

    @staticmethod
    def _check(where: str, dims, dtype: np.dtype, shape, what: str) -> None:
        if dtype.hasobject:
            raise XlaSpmdError(f"{where} holds object arrays, which would need pickle; save "
                               "plain numeric arrays")
        if dtype.kind not in "biufc" or dtype.names is not None or dtype.subdtype:
            kind = {"U": "strings", "S": "bytes", "V": "a structured dtype"}.get(
                dtype.kind, f"dtype {dtype}")
            raise XlaSpmdError(f"{where} holds {kind} ({dtype.str}); {what} is {shape}: save "
                               "a numeric array")
        if tuple(dims) != shape.dims:
            raise XlaSpmdError(f"{where} has shape {list(dims)}, but {what} is {shape} "
                               f"(global shape {list(shape.dims)})")


def available_memory() -> int | None:
    """Bytes of memory this process may still allocate (Linux: MemAvailable), or None."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def check_memory(module, path: str) -> None:
    """Refuse a program one of whose values alone is larger than the memory available,
    naming it, before anything is allocated."""
    available = available_memory()
    if available is None:
        return
    for computation in module.computations:
        for inst in computation.instructions:
            size = sum(math.prod(leaf.dims) * leaf.dtype.itemsize
                       for leaf in inst.shape.leaves() if not leaf.is_token)
            if size > available:
                raise XlaSpmdError(
                    f"{path}: {inst.name} ({inst.op.name}) in {computation.name} is "
                    f"{inst.shape}, {_bytes(size)}, more than the {_bytes(available)} of "
                    "memory available")


def _bytes(count: int) -> str:
    size: float = count
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            return f"{size:.4g} {unit}" if unit != "bytes" else f"{count} bytes"
        size /= 1024
    raise AssertionError("unreachable")


def load_module(path: str):
    """Read and verify a program file; the format follows the extension (.hlo, .txt: HLO
    text; .mlir: StableHLO text)."""
    from xla_spmd.ir.hlo_parser import parse_hlo

    suffix = Path(path).suffix
    if suffix not in (".hlo", ".txt", ".mlir"):
        raise XlaSpmdError(f"{path}: unknown program format {suffix!r}; expected .hlo "
                           "or .mlir")
    text = read_text(path)
    if suffix == ".mlir":
        from xla_spmd.stablehlo import import_stablehlo
        module = import_stablehlo(text, filename=path)
    else:
        module = parse_hlo(text, filename=path)
    return _verified(module, path)


def _verified(module, path: str):
    """`module`, after the IR verifier accepted it (a `VerifyError` names the file)."""
    from xla_spmd.errors import VerifyError
    from xla_spmd.ir import verify

    try:
        verify(module)
    except VerifyError as error:
        raise XlaSpmdError(f"{path}: invalid program: {error}") from None
    return module
