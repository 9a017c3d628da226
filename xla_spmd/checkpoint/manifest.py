"""The manifest of a checkpoint: what the tree looks like, in JSON (never pickle).

``manifest.json`` sits beside the Zarr group of a step and holds

* ``tree``: the container structure, with dicts (string keys, in order), lists, tuples and
  None as themselves, a saved array as ``{"array": name}`` and a Python scalar leaf as
  ``{"value": v}``;
* ``arrays``: per array its leaf path (``['layers'][0]['w']``, as ``jax.tree_util.keystr``),
  global shape, dtype (``bfloat16`` and the 8-bit floats included: Zarr v3 has no such
  types, so they are stored as unsigned integers of the same width), the chunk shape, and
  its sharding as Shardy text with the mesh inline (or null for a numpy array);
* ``step``, the user's ``metadata`` (any JSON value), and the device and process counts.

>>> import numpy as np
>>> structure, leaves = encode_tree({"b": np.zeros(2), "a": [1.5, None]})
>>> structure
{'dict': {'b': {'array': 'b'}, 'a': {'list': [{'value': 1.5}, None]}}}
>>> [(leaf.path, leaf.name) for leaf in leaves]
[("['b']", 'b')]
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from xla_spmd.errors import CheckpointError, ParseError, ShardingError
from xla_spmd.runtime import ShardedArray
from xla_spmd.sharding import TensorSharding
from xla_spmd.sharding.sdy_text import parse_sharding

FORMAT = "xla-spmd-checkpoint"
VERSION = 1
MANIFEST = "manifest.json"

# numpy cannot name ml_dtypes' types by string; Zarr v3 has no type for them.
_EXTENDED = {name: np.dtype(getattr(ml_dtypes, name)) for name in (
    "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
    "float8_e4m3b11fnuz", "int4", "uint4")}


def dtype_from_name(name: str, where: str) -> np.dtype:
    """The numpy dtype a manifest names."""
    if name in _EXTENDED:
        return _EXTENDED[name]
    try:
        dtype = np.dtype(name)
    except TypeError:
        dtype = None
    if dtype is None or dtype.kind not in "biufc":
        raise CheckpointError(f"{where}: unknown dtype {name!r}")
    return dtype


def stored_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype Zarr stores: the dtype itself, or raw bits for ml_dtypes' types."""
    if dtype.name in _EXTENDED:
        return np.dtype(f"uint{8 * dtype.itemsize}")
    if dtype.kind not in "biufc":
        raise CheckpointError(f"cannot checkpoint dtype {dtype}: expected a bool, integer, "
                              "float or complex type")
    return dtype


@dataclass
class Leaf:
    """One array of the tree: where it sits, its name in the Zarr group, its value."""

    path: str
    name: str
    value: Any  # ShardedArray or np.ndarray


_SCALARS = (bool, int, float, str)


def _key_text(key) -> str:
    return f"[{key!r}]"


def encode_tree(tree) -> tuple[Any, list[Leaf]]:
    """The JSON structure of `tree` and its array leaves, in order. Raises CheckpointError
    naming the leaf path of anything that is not a dict (string keys), list, tuple, None,
    array or Python scalar."""
    leaves: list[Leaf] = []
    names: set[str] = set()

    def visit(node, path: str, keys: list[str]):
        if node is None:
            return None
        if type(node) is dict:
            for key in node:
                if not isinstance(key, str):
                    raise CheckpointError(f"checkpoint tree{path}: dict key {key!r} is a "
                                          f"{type(key).__name__}; keys must be strings")
            return {"dict": {key: visit(value, path + _key_text(key), keys + [key])
                             for key, value in node.items()}}
        if type(node) in (list, tuple):
            kind = type(node).__name__
            return {kind: [visit(value, f"{path}[{i}]", keys + [str(i)])
                           for i, value in enumerate(node)]}
        if isinstance(node, (ShardedArray, np.ndarray, np.generic)):
            name = _array_name(keys, names)
            value = node if isinstance(node, ShardedArray) else np.asarray(node)
            leaves.append(Leaf(path or "<root>", name, value))
            return {"array": name}
        if isinstance(node, _SCALARS):
            return {"value": node}
        raise CheckpointError(
            f"checkpoint tree{path}: cannot save a {type(node).__name__}; a checkpoint holds "
            "dicts with string keys, lists, tuples, None, arrays and Python scalars")

    return visit(tree, "", []), leaves


def _array_name(keys: list[str], taken: set[str]) -> str:
    """A readable, unique Zarr node name for a leaf path: the keys joined by dots."""
    base = re.sub(r"[^A-Za-z0-9_.-]", "_", ".".join(keys)) or "root"
    if base.startswith("__") or set(base) == {"."}:
        base = "_" + base
    name, count = base, 1
    while name.lower() in taken:  # case-insensitive file systems
        count += 1
        name = f"{base}-{count}"
    taken.add(name.lower())
    return name


def decode_tree(structure, build_leaf, path: str = "", where: str = MANIFEST):
    """Rebuild a tree from its JSON structure; `build_leaf(name, path)` gives each array."""
    if structure is None:
        return None
    if not isinstance(structure, dict) or len(structure) != 1:
        raise CheckpointError(f"{where}: tree{path}: malformed node {structure!r}")
    (kind, body), = structure.items()
    if kind == "dict" and isinstance(body, dict):
        return {key: decode_tree(value, build_leaf, path + _key_text(key), where)
                for key, value in body.items()}
    if kind in ("list", "tuple") and isinstance(body, list):
        items = [decode_tree(value, build_leaf, f"{path}[{i}]", where)
                 for i, value in enumerate(body)]
        return items if kind == "list" else tuple(items)
    if kind == "array" and isinstance(body, str):
        return build_leaf(body, path or "<root>")
    if kind == "value" and (body is None or isinstance(body, _SCALARS)):
        return body
    raise CheckpointError(f"{where}: tree{path}: malformed node {structure!r}")


@dataclass(frozen=True)
class ArrayRecord:
    """What the manifest says of one array."""

    name: str
    path: str
    shape: tuple[int, ...]
    dtype: np.dtype
    chunk_shape: tuple[int, ...]
    sharding: TensorSharding | None  # None: a numpy array, saved whole

    def to_json(self) -> dict:
        spec = None if self.sharding is None else str(self.sharding.to_partition_spec())
        return {"path": self.path, "shape": list(self.shape), "dtype": self.dtype.name,
                "stored_dtype": stored_dtype(self.dtype).name,
                "chunk_shape": list(self.chunk_shape),
                "sharding": None if self.sharding is None else self.sharding.to_text(),
                "partition_spec": spec}

    @classmethod
    def from_json(cls, name: str, entry, where: str) -> ArrayRecord:
        where = f"{where}: array {name!r}"
        if not isinstance(entry, dict):
            raise CheckpointError(f"{where}: expected an object, got {entry!r}")
        shape = _int_list(entry.get("shape"), "shape", where)
        chunks = _int_list(entry.get("chunk_shape"), "chunk_shape", where)
        if len(chunks) != len(shape) or 0 in chunks:
            raise CheckpointError(f"{where}: 'chunk_shape' {chunks} must give each of the "
                                  f"{len(shape)} dims an extent >= 1")
        path = entry.get("path")
        if not isinstance(path, str):
            raise CheckpointError(f"{where}: 'path' must be a string")
        dtype = dtype_from_name(str(entry.get("dtype")), where)
        sharding = entry.get("sharding")
        if sharding is not None:
            try:
                sharding = parse_sharding(str(sharding))
                sharding.check_rank(shape, tensor=path)
            except (ParseError, ShardingError) as error:
                raise CheckpointError(f"{where}: bad sharding: {error}") from None
        return cls(name, path, tuple(shape), dtype, tuple(chunks), sharding)


def _int_list(value, field: str, where: str) -> list[int]:
    if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
        raise CheckpointError(f"{where}: {field!r} must be a list of non-negative integers, "
                              f"got {value!r}")
    return value


def chunk_shape_of(shape: tuple[int, ...], sharding: TensorSharding | None) -> tuple[int, ...]:
    """One chunk per shard: the (ceiling) shard shape; Zarr wants every extent >= 1."""
    extents = shape if sharding is None else sharding.shard_shape(shape)
    return tuple(max(1, int(e)) for e in extents)


def record_of(leaf: Leaf) -> ArrayRecord:
    value = leaf.value
    sharding = value.tensor_sharding.replace(mesh_name=None) \
        if isinstance(value, ShardedArray) else None
    if sharding is not None and sharding.unreduced:
        raise CheckpointError(f"checkpoint tree{leaf.path}: the array holds unreduced partial "
                              f"sums over {[str(a) for a in sharding.unreduced]}; reduce it first")
    shape = tuple(int(d) for d in value.shape)
    stored_dtype(np.dtype(value.dtype))  # checks the dtype
    return ArrayRecord(leaf.name, leaf.path, shape, np.dtype(value.dtype),
                       chunk_shape_of(shape, sharding), sharding)


@dataclass(frozen=True)
class Manifest:
    """A parsed manifest.json."""

    step: int
    metadata: Any
    tree: Any
    arrays: dict[str, ArrayRecord]
    device_count: int
    process_count: int

    def to_json(self) -> str:
        return json.dumps({
            "format": FORMAT, "version": VERSION, "step": self.step,
            "device_count": self.device_count, "process_count": self.process_count,
            "metadata": self.metadata, "tree": self.tree,
            "arrays": {name: record.to_json() for name, record in self.arrays.items()}},
            indent=1)


def read_manifest(directory: Path) -> Manifest:
    """Parse `directory`/manifest.json; a clear CheckpointError for anything malformed."""
    where = str(directory / MANIFEST)
    try:
        data = json.loads((directory / MANIFEST).read_text())
    except FileNotFoundError:
        raise CheckpointError(f"{where}: no manifest; {directory} is not a complete "
                              "checkpoint") from None
    except (OSError, ValueError) as error:
        raise CheckpointError(f"{where}: cannot read the manifest: {error}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CheckpointError(f"{where}: not an xla-spmd checkpoint manifest")
    if data.get("version") != VERSION:
        raise CheckpointError(f"{where}: manifest version {data.get('version')!r}; this "
                              f"xla-spmd reads version {VERSION}")
    for field in ("step", "device_count", "process_count"):
        if not isinstance(data.get(field), int):
            raise CheckpointError(f"{where}: {field!r} must be an integer")
    arrays = data.get("arrays")
    if not isinstance(arrays, dict):
        raise CheckpointError(f"{where}: 'arrays' must be an object")
    records = {name: ArrayRecord.from_json(name, entry, where) for name, entry in arrays.items()}
    return Manifest(data["step"], data.get("metadata"), data.get("tree"), records,
                    data["device_count"], data["process_count"])
