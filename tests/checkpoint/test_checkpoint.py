"""Sharded checkpoints on in-process devices: save on one mesh, restore on another, against
the numpy arrays they were made from; errors name the leaf and chunk."""

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import xla_spmd as xs
from xla_spmd.checkpoint import layout
from xla_spmd.checkpoint.writer import _SaveJob
from xla_spmd.errors import CheckpointError

ROOT = Path(__file__).resolve().parent.parent.parent

# (mesh axes, spec) pairs: even and uneven splits, sub-meshes, several axes on one dim.
MESHES = {
    "x8": ({"x": 8}, [("x", None), (None, "x"), (), (None, None)]),
    "2x4": ({"data": 2, "model": 4},
            [("data", "model"), ("model", None), (("data", "model"), None), (None, "data")]),
    "2x2x2": ({"a": 2, "b": 2, "c": 2}, [("a", ("b", "c")), (("c", "a"), None), (None, "b")]),
    "x4": ({"x": 4}, [("x", None), (None, "x"), ()]),
    "3": ({"m": 3}, [("m", None), (None, "m"), ()]),
}
SHAPES = [(10, 7), (16, 8), (3, 5)]  # uneven, even, fewer rows than shards


def put(array, axes, spec):
    xs.set_num_devices(int(np.prod(list(axes.values()))))
    mesh = xs.make_mesh(axes)
    return xs.device_put(array, xs.NamedSharding(mesh, xs.P(*spec)))


def check_placed(restored, expected, axes, spec):
    """The restored array has the target sharding, and every shard holds its slice."""
    sharding = xs.NamedSharding(xs.make_mesh(axes), xs.P(*spec)).to_tensor_sharding(
        expected.ndim)
    assert restored.sharding == sharding
    assert len(restored.addressable_shards) == sharding.mesh.size
    for shard in restored.addressable_shards:
        assert shard.data.dtype == expected.dtype
        np.testing.assert_array_equal(shard.data, expected[shard.index])


@pytest.mark.parametrize("source", sorted(MESHES))
@pytest.mark.parametrize("target", sorted(MESHES))
def test_save_on_one_mesh_restore_on_another(tmp_path, source, target):
    rng = np.random.default_rng(0)
    source_axes, source_specs = MESHES[source]
    target_axes, target_specs = MESHES[target]
    expected, tree = {}, {}
    for i, shape in enumerate(SHAPES):
        for j, spec in enumerate(source_specs):
            name = f"a{i}_{j}"
            expected[name] = rng.standard_normal(shape).astype(np.float32)
            tree[name] = put(expected[name], source_axes, spec)
    xs.checkpoint.save(tmp_path, tree, step=1, async_=False)

    xs.set_num_devices(int(np.prod(list(target_axes.values()))))
    mesh = xs.make_mesh(target_axes)
    specs = {name: target_specs[k % len(target_specs)] for k, name in enumerate(sorted(tree))}
    targets = {name: xs.NamedSharding(mesh, xs.P(*spec)) for name, spec in specs.items()}
    restored = xs.checkpoint.restore(tmp_path, targets)
    assert sorted(restored) == sorted(expected)
    for name, array in restored.items():
        check_placed(array, expected[name], target_axes, specs[name])


def test_restore_onto_a_mesh_keeps_the_saved_specs(tmp_path):
    weights = np.arange(96, dtype=np.float32).reshape(12, 8)
    xs.checkpoint.save(tmp_path, {"w": put(weights, {"data": 2, "model": 4},
                                           ("data", "model"))}, step=0, async_=False)
    xs.set_num_devices(4)
    restored = xs.checkpoint.restore(tmp_path, xs.make_mesh({"data": 2, "model": 2}))
    check_placed(restored["w"], weights, {"data": 2, "model": 2}, ("data", "model"))


def test_dtypes_scalars_and_structure_round_trip(tmp_path):
    rng = np.random.default_rng(1)
    values = {
        "bf16": rng.standard_normal((6, 4)).astype(ml_dtypes.bfloat16),
        "f8": rng.standard_normal(8).astype(ml_dtypes.float8_e4m3fn),
        "i32": rng.integers(-5, 5, (5, 3)).astype(np.int32),
        "bool": rng.integers(0, 2, 9).astype(bool),
        "c64": (rng.standard_normal(4) + 1j).astype(np.complex64),
        "zeros": np.zeros((4, 4), np.float32),  # all fill value: must still be written
        "scalar": np.float64(2.5),
        "empty": np.zeros((0, 3), np.float32),
    }
    mesh_axes = {"x": 4}
    tree = {"layers": [{"w": put(values["bf16"], mesh_axes, ("x", None))},
                       {"w": put(values["f8"], mesh_axes, ("x",))}],
            "ints": (put(values["i32"], mesh_axes, (None, "x")), values["bool"]),
            "c": put(values["c64"], mesh_axes, ()), "zeros": put(values["zeros"], mesh_axes,
                                                                  ("x", None)),
            "scalar": values["scalar"], "empty": put(values["empty"], mesh_axes, ("x", None)),
            "step": 7, "name": "run-1", "lr": 0.5, "nothing": None}
    xs.checkpoint.save(tmp_path, tree, step=3, metadata={"note": "hi"}, async_=False)
    got = xs.checkpoint.restore(tmp_path)
    assert (got["step"], got["name"], got["lr"], got["nothing"]) == (7, "run-1", 0.5, None)
    assert isinstance(got["ints"], tuple) and isinstance(got["layers"], list)
    pairs = [(got["layers"][0]["w"], values["bf16"]), (got["layers"][1]["w"], values["f8"]),
             (got["ints"][0], values["i32"]), (got["ints"][1], values["bool"]),
             (got["c"], values["c64"]), (got["zeros"], values["zeros"]),
             (got["scalar"], values["scalar"]), (got["empty"], values["empty"])]
    for restored, expected in pairs:
        assert np.asarray(restored).dtype == expected.dtype
        assert np.asarray(restored).tobytes() == np.asarray(expected).tobytes()
        assert np.shape(restored) == np.shape(expected)
    assert isinstance(got["ints"][1], np.ndarray)  # saved as numpy, restored as numpy
    manifest = xs.checkpoint.read_manifest(tmp_path)
    assert manifest.metadata == {"note": "hi"} and manifest.step == 3
    assert manifest.arrays["layers.0.w"].dtype == ml_dtypes.bfloat16
    text = (tmp_path / "3" / "manifest.json").read_text()
    assert json.loads(text)["arrays"]["layers.0.w"]["stored_dtype"] == "uint16"


def test_each_shard_is_written_once_by_its_lowest_device(tmp_path):
    # (10, 8) on data=2, model=4 by P("data", None): devices 0 and 4 write, the rest hold copies.
    array = put(np.ones((10, 8), np.float32), {"data": 2, "model": 4}, ("data", None))
    handle = xs.checkpoint.save(tmp_path, {"w": array}, step=1, async_=False)
    assert handle.bytes_written == 10 * 8 * 4
    chunks = sorted(str(p.relative_to(tmp_path / "1" / "w")) for p in
                    (tmp_path / "1" / "w" / "c").rglob("*") if p.is_file())
    assert chunks == ["c/0/0", "c/1/0"]
    assert json.loads((tmp_path / "1" / "w" / "zarr.json").read_text())[
        "chunk_grid"]["configuration"]["chunk_shape"] == [5, 8]


def saved_weights(tmp_path):
    weights = np.arange(40, dtype=np.float32).reshape(8, 5)
    xs.checkpoint.save(tmp_path, {"layer": {"w": put(weights, {"x": 4}, ("x", None))},
                                  "b": put(np.zeros(5, np.float32), {"x": 4}, ())},
                       step=2, async_=False)
    return weights


def test_structure_and_shape_mismatches_name_the_leaf(tmp_path):
    saved_weights(tmp_path)
    mesh = xs.make_mesh({"x": 4})
    good = xs.NamedSharding(mesh, xs.P())
    with pytest.raises(CheckpointError, match=r"leaf \['layer'\]\['v'\] is not in the "
                                              r"checkpoint"):
        xs.checkpoint.restore(tmp_path, {"layer": {"w": good, "v": good}, "b": good})
    with pytest.raises(CheckpointError, match=r"leaf \['b'\] is not in the target"):
        xs.checkpoint.restore(tmp_path, {"layer": {"w": good}})
    with pytest.raises(CheckpointError, match=r"tree\['layer'\]: the checkpoint holds a dict"):
        xs.checkpoint.restore(tmp_path, {"layer": [good], "b": good})
    wrong_shape = xs.device_put(np.zeros((8, 6), np.float32), good)
    with pytest.raises(CheckpointError, match=r"leaf \['layer'\]\['w'\]: the checkpoint "
                                              r"holds float32\[8, 5\], the target "
                                              r"float32\[8, 6\]"):
        xs.checkpoint.restore(tmp_path, {"layer": {"w": wrong_shape}, "b": good})
    with pytest.raises(CheckpointError, match=r"leaf \[.layer.\]\[.w.\]: .*3 entries"):
        xs.checkpoint.restore(tmp_path, {"layer": {"w": xs.NamedSharding(
            mesh, xs.P(None, None, None))}, "b": good})
    xs.set_num_devices(2)
    with pytest.raises(CheckpointError, match=r"leaf \['layer'\]\['w'\]: saved on 4 devices .* "
                                              r"job has 2; pass target_shardings"):
        xs.checkpoint.restore(tmp_path)


def test_a_flipped_byte_names_the_array_and_chunk(tmp_path):
    weights = saved_weights(tmp_path)
    chunk = tmp_path / "2" / "layer.w" / "c" / "2" / "0"
    data = bytearray(chunk.read_bytes())
    data[3] ^= 0x10
    chunk.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"leaf \['layer'\]\['w'\]: chunk c/2/0 of "
                                              r"array 'layer.w' .* is corrupt: .*checksum"):
        xs.checkpoint.restore(tmp_path)
    # A process whose devices need other chunks only does not read the damaged one.
    xs.set_num_devices(1)
    with pytest.raises(CheckpointError, match="c/2/0"):
        xs.checkpoint.restore(tmp_path, xs.make_mesh({"x": 1}))
    chunk.unlink()
    xs.set_num_devices(4)
    with pytest.raises(CheckpointError, match=r"chunk c/2/0 of array 'layer.w' is missing"):
        xs.checkpoint.restore(tmp_path)
    del weights


def test_bad_trees_and_metadata_are_refused(tmp_path):
    array = put(np.ones(4, np.float32), {"x": 4}, ("x",))
    with pytest.raises(CheckpointError, match=r"tree\['a'\]\[1\]: cannot save a object"):
        xs.checkpoint.save(tmp_path, {"a": [array, object()]}, step=1)
    with pytest.raises(CheckpointError, match="dict key 3 is a int"):
        xs.checkpoint.save(tmp_path, {3: array}, step=1)
    with pytest.raises(CheckpointError, match="metadata must be a JSON value"):
        xs.checkpoint.save(tmp_path, {"a": array}, step=1, metadata={"f": np.float32(1)})
    xs.checkpoint.save(tmp_path, {"a": array}, step=1, async_=False)
    with pytest.raises(CheckpointError, match="step 1 already exists"):
        xs.checkpoint.save(tmp_path, {"a": array}, step=1)
    with pytest.raises(CheckpointError, match="no complete checkpoint of step 5"):
        xs.checkpoint.restore(tmp_path, step=5)
    (tmp_path / "1" / "manifest.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="manifest.json: cannot read the manifest"):
        xs.checkpoint.restore(tmp_path, step=1)


def test_async_save_snapshots_before_the_next_step_changes_the_buffers(tmp_path, monkeypatch):
    weights = np.arange(16, dtype=np.float32).reshape(4, 4)
    array = put(weights, {"x": 4}, ("x", None))
    release = threading.Event()
    write = _SaveJob._write

    def held_write(job):
        release.wait(timeout=60)
        write(job)

    monkeypatch.setattr(_SaveJob, "_write", held_write)
    handle = xs.checkpoint.save(tmp_path, {"w": array}, step=1)
    assert not handle.done() and xs.checkpoint.latest_step(tmp_path) is None
    for shard in array.addressable_shards:  # the next step overwrites the buffers in place
        shard.data[...] = -1
    array.delete("a donating step")
    release.set()
    handle.wait()
    np.testing.assert_array_equal(np.asarray(xs.checkpoint.restore(tmp_path)["w"]), weights)


def test_manager_keeps_the_last_k_and_saves_every_n(tmp_path):
    array = put(np.arange(8.0), {"x": 4}, ("x",))
    (tmp_path / "3.partial").mkdir(parents=True)  # left by a crash
    with xs.checkpoint.CheckpointManager(tmp_path, max_to_keep=2,
                                         save_interval_steps=5) as manager:
        assert not (tmp_path / "3.partial").exists()
        started = [step for step in range(1, 23) if manager.save(step, {"a": array})]
        assert started == [5, 10, 15, 20]
        assert manager.save(22, {"a": array}, force=True)
        manager.wait()
        assert manager.all_steps() == [20, 22] and manager.latest_step() == 22
        assert not manager.save(22, {"a": array}, force=True)  # already saved
        np.testing.assert_array_equal(np.asarray(manager.restore()["a"]), np.arange(8.0))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["20", "22"]


def test_partial_and_deleting_folders_are_never_complete(tmp_path):
    saved_weights(tmp_path)
    (tmp_path / "9.partial").mkdir()
    (tmp_path / "7.deleting").mkdir()
    (tmp_path / "8").mkdir()  # a folder without a manifest
    assert layout.all_steps(tmp_path) == [2]
    with pytest.raises(CheckpointError, match=r"no complete checkpoint of step 9 .*complete "
                                              r"steps: \[2\].*9.partial"):
        xs.checkpoint.restore(tmp_path, step=9)


KILLED_SAVE = """
import os, signal, sys
import numpy as np
import xla_spmd as xs
from xla_spmd.checkpoint import writer as save_module

xs.set_num_devices(4)
mesh = xs.make_mesh({"x": 4})
root = sys.argv[1]
tree = {"w": xs.device_put(np.arange(32.0).reshape(8, 4), xs.NamedSharding(mesh, xs.P("x")))}
xs.checkpoint.save(root, tree, step=1, async_=False)

def write(job):
    import zarr
    store = zarr.storage.LocalStore(job.partial)
    item = job.writes[0]
    zarr.open_array(store, path=item.name)[item.region] = item.data
    os.kill(os.getpid(), signal.SIGKILL)  # killed after one chunk of four
save_module._SaveJob._write = write
changed = xs.device_put(np.ones((8, 4)), xs.NamedSharding(mesh, xs.P("x")))
xs.checkpoint.save(root, {"w": changed}, step=2)
save_module.wait_for_saves()
"""


def test_a_save_killed_midway_leaves_the_previous_checkpoint(tmp_path):
    result = subprocess.run([sys.executable, "-c", KILLED_SAVE, str(tmp_path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == -9, result.stderr
    assert (tmp_path / "2.partial" / "w" / "c" / "0" / "0").is_file()
    assert xs.checkpoint.latest_step(tmp_path) == 1
    xs.set_num_devices(4)
    restored = xs.checkpoint.restore(tmp_path)["w"]
    np.testing.assert_array_equal(np.asarray(restored), np.arange(32.0).reshape(8, 4))
    with pytest.raises(CheckpointError, match="step 2"):
        xs.checkpoint.restore(tmp_path, step=2)
    xs.checkpoint.CheckpointManager(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["1"]


def zarr_array(folder: Path, name: str):
    """The array as stock zarr-python opens it (the independent reader)."""
    import zarr

    return zarr.open_array(zarr.storage.LocalStore(folder, read_only=True), path=name,
                           zarr_format=3)


def test_stock_zarr_reads_what_save_writes(tmp_path):
    rng = np.random.default_rng(2)
    values = {"uneven": rng.standard_normal((10, 7)).astype(np.float32),
              "columns": rng.standard_normal((3, 11)).astype(np.float32),
              "bf16": rng.standard_normal((5, 6)).astype(ml_dtypes.bfloat16),
              "ints": rng.integers(-9, 9, (7,)).astype(np.int16),
              "flags": rng.integers(0, 2, (6, 2)).astype(bool),
              "scalar": np.array(3.25, np.float32)}
    specs = {"uneven": ("x", None), "columns": (None, "x"), "bf16": (None, "x"),
             "ints": ("x",), "flags": (), "scalar": ()}
    tree = {name: put(values[name], {"x": 4}, specs[name]) for name in values}
    xs.checkpoint.save(tmp_path, tree, step=1, async_=False)
    for name, expected in values.items():
        stored = zarr_array(tmp_path / "1", name)[...]
        expected = np.asarray(expected)
        if expected.dtype == ml_dtypes.bfloat16:
            expected = expected.view(np.uint16)  # Zarr v3 has no bfloat16: raw bits
        assert stored.dtype == expected.dtype
        np.testing.assert_array_equal(stored, expected)


BOXES = [(slice(0, 10), slice(0, 7)), (slice(3, 7), slice(0, 7)), (slice(2, 9), slice(1, 6)),
         (slice(9, 10), slice(6, 7)), (slice(0, 1), slice(0, 7)), (slice(4, 5), slice(2, 3))]


@pytest.mark.parametrize("run_bytes", [0, 1 << 30])  # runs straight into place / whole chunks
@pytest.mark.parametrize("spec", [("x", None), (None, "x"), ("x", "y")])
def test_chunk_reader_agrees_with_zarr_python(tmp_path, monkeypatch, run_bytes, spec):
    from xla_spmd.checkpoint import chunks

    monkeypatch.setattr(chunks, "MIN_RUN_BYTES", run_bytes)
    values = np.random.default_rng(3).standard_normal((10, 7))
    axes = {"x": 3, "y": 2} if "y" in spec else {"x": 3}
    xs.checkpoint.save(tmp_path, {"w": put(values, axes, spec)}, step=1, async_=False)
    record = xs.checkpoint.read_manifest(tmp_path).arrays["w"]
    reader = chunks.ChunkReader(tmp_path / "1", "w", record.shape, record.dtype,
                                record.chunk_shape, "test")
    oracle = zarr_array(tmp_path / "1", "w")
    for box in BOXES:
        destination = np.full([b.stop - b.start for b in box], np.nan, np.float32)
        for chunk in reader.chunks_in(box):
            reader.read_into(chunk, destination, box)
        np.testing.assert_array_equal(destination, oracle[box])


def test_corrupt_and_foreign_chunks_name_the_file_and_array(tmp_path):
    saved_weights(tmp_path)
    array = tmp_path / "2" / "layer.w"
    chunk = array / "c" / "1" / "0"
    original = chunk.read_bytes()
    with pytest.raises(ValueError, match="checksum"):  # zarr-python agrees it is damaged
        data = bytearray(original)
        data[-1] ^= 1
        chunk.write_bytes(bytes(data))
        zarr_array(tmp_path / "2", "layer.w")[...]
    with pytest.raises(CheckpointError, match=r"leaf \['layer'\]\['w'\]: chunk c/1/0 of "
                                              r"array 'layer.w' \(.*c/1/0\) is corrupt: "
                                              r"checksum mismatch"):
        xs.checkpoint.restore(tmp_path)
    chunk.write_bytes(original[:-7])
    with pytest.raises(CheckpointError, match=r"chunk c/1/0 of array 'layer.w' .* is "
                                              r"corrupt: 37 bytes, expected 44"):
        xs.checkpoint.restore(tmp_path)
    chunk.write_bytes(original)
    meta = json.loads((array / "zarr.json").read_text())
    meta["codecs"].append({"name": "gzip", "configuration": {"level": 1}})
    (array / "zarr.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match=r"leaf \['layer'\]\['w'\]: .*layer.w/zarr.json"
                                              r": codecs .*gzip.*bytes \+ crc32c"):
        xs.checkpoint.restore(tmp_path)
    meta["codecs"].pop()
    meta["shape"] = [9, 5]
    (array / "zarr.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match=r"zarr.json: shape is \[9, 5\], expected "
                                              r"\[8, 5\]"):
        xs.checkpoint.restore(tmp_path)
    (array / "zarr.json").write_text("\x80\x04pickle?")
    with pytest.raises(CheckpointError, match=r"cannot read .*layer.w/zarr.json"):
        xs.checkpoint.restore(tmp_path)
    meta["shape"] = [8, 5]
    (array / "zarr.json").write_text(json.dumps(meta))
    chunk.unlink()
    chunk.mkdir()
    with pytest.raises(CheckpointError, match=r"chunk c/1/0 of array 'layer.w' .* cannot be "
                                              r"read: .*directory"):
        xs.checkpoint.restore(tmp_path)
    manifest = json.loads((tmp_path / "2" / "manifest.json").read_text())
    manifest["arrays"]["layer.w"]["chunk_shape"] = [0, 5]
    (tmp_path / "2" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match=r"manifest.json: array 'layer.w': 'chunk_shape' "
                                              r"\[0, 5\] must give each of the 2 dims"):
        xs.checkpoint.restore(tmp_path)


@pytest.mark.parametrize("target", ["x4", "3", "2x2x2"])
def test_restore_onto_a_mesh_smaller_than_the_job(tmp_path, target):
    weights = np.random.default_rng(4).standard_normal((10, 7)).astype(np.float32)
    xs.checkpoint.save(tmp_path, {"w": put(weights, {"data": 2, "model": 4},
                                           ("data", "model"))}, step=0, async_=False)
    xs.set_num_devices(12)  # a larger job; the target mesh is its first devices
    axes, specs = MESHES[target]
    mesh = xs.make_mesh(axes)
    restored = xs.checkpoint.restore(tmp_path, {"w": xs.NamedSharding(mesh, xs.P(*specs[0]))})
    check_placed(restored["w"], weights, axes, specs[0])
    np.testing.assert_array_equal(np.asarray(restored["w"]), weights)
    saved_mesh = xs.checkpoint.restore(tmp_path)["w"]  # as saved: 8 of the 12 devices
    check_placed(saved_mesh, weights, {"data": 2, "model": 4}, ("data", "model"))
