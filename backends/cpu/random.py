"""rng-bit-generator as generated code: Threefry-2x32 (20 rounds) and Philox-4x32 (10 rounds)
computed per output element in one loop, bit for bit the reference's numpy implementation
(``backends/reference/random.py``), whose layout of counters and words it follows:

* Threefry, 64-bit outputs: element ``i`` is ``join(threefry(key, counter + i))``; 8/16/32-bit
  outputs: XLA splits the first even dim (else the largest) into halves, element ``j`` of that
  dim is word ``j % 2`` of the counter at half index ``j // 2`` (row-major over the halved
  shape); the state's counter advances by the counters used.
* Philox (and DEFAULT, which XLA's CPU backend runs as Philox): block ``b`` of four words is
  ``philox(key, (counter_low + b, counter_high + carry))``; 32-bit outputs take word ``i % 4``
  of block ``i // 4``, 64-bit outputs join words ``(0, 1)`` or ``(2, 3)`` of block ``i // 2``.

The kernel is ``void @f(ptr out, ptr state)``; the new state is computed on the host
(``next_state``). Narrow outputs keep the low bits of each 32-bit word, as the reference's
``astype`` does.

Example: a ``u32[2,3]`` Philox output reads words 0..3 of block 0 and 0..1 of block 1; the
state's counter advances by 2 blocks.
"""

from __future__ import annotations

import numpy as np

from xla_spmd.backends.cpu import renderer as r
from xla_spmd.ir import ArrayShape, Instruction, TupleShape
from xla_spmd.ir.attributes import RngAlgorithm

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_MASK = (1 << 64) - 1


def can_generate(inst: Instruction) -> bool:
    """Whether ``inst`` is an rng-bit-generator the kernel computes: a 64-bit state of 2 or
    3 words, an output of 8, 16, 32 or 64 bits."""
    if inst.op.name != "rng-bit-generator" or not isinstance(inst.shape, TupleShape):
        return False
    state, out = inst.operands[0].shape, inst.shape.elements[1]
    return (isinstance(state, ArrayShape) and isinstance(out, ArrayShape)
            and state.dtype.bits == 64 and not state.dtype.is_float
            and state.dims in ((2,), (3,)) and out.dtype.bits in (8, 16, 32, 64)
            and not out.dtype.is_complex)


def _threefry(inst: Instruction) -> bool:
    return inst.attrs.algorithm is RngAlgorithm.THREE_FRY


def _split(dims: tuple) -> int | None:
    """The dim XLA's 32-bit Threefry splits in halves (the reference's choice)."""
    split = next((d for d, n in enumerate(dims) if n % 2 == 0 and n > 1), None)
    if split is None and dims and max(dims) > 1:
        split = int(np.argmax(dims))
    return split


def counters_used(inst: Instruction) -> int:
    """How far the state's counter advances (counters for Threefry, blocks for Philox)."""
    out = inst.shape.elements[1]
    dims, count = out.dims, out.num_elements
    wide = out.dtype.bits == 64
    if _threefry(inst):
        split = None if wide else _split(dims)
        if split is None:
            return count
        half = list(dims)
        half[split] = -(-dims[split] // 2)
        return int(np.prod(half, dtype=np.int64))
    words = count * 2 if wide else count
    return -(-words // 4)


def next_state(inst: Instruction, state: np.ndarray) -> np.ndarray:
    """The new state(s) of ``state`` (one ``(k,)`` state or stacked ``(devices, k)``)."""
    used = np.uint64(counters_used(inst))
    new = np.array(state, dtype=np.uint64)
    with np.errstate(over="ignore"):
        if _threefry(inst):
            new[..., 1] = new[..., 1] + used
        else:
            low = new[..., 1].copy()
            new[..., 1] = low + used
            if new.shape[-1] > 2:
                new[..., 2] = new[..., 2] + (new[..., 1] < low).astype(np.uint64)
    return new.astype(inst.shape.elements[0].dtype.numpy)


# ---------------------------------------------------------------------------------------------
# Code


def _words(w: r._Writer, value: str) -> tuple[str, str]:
    low = w.emit(f"trunc i64 {value} to i32")
    high = w.emit(f"trunc i64 {w.emit(f'lshr i64 {value}, 32')} to i32")
    return low, high


def _join(w: r._Writer, low: str, high: str) -> str:
    wide_low = w.emit(f"zext i32 {low} to i64")
    wide_high = w.emit(f"shl i64 {w.emit(f'zext i32 {high} to i64')}, 32")
    return w.emit(f"or i64 {wide_low}, {wide_high}")


def _rotl(w: r._Writer, x: str, amount: int) -> str:
    left = w.emit(f"shl i32 {x}, {amount}")
    return w.emit(f"or i32 {left}, {w.emit(f'lshr i32 {x}, {32 - amount}')}")


def _threefry_words(w: r._Writer, k0: str, k1: str, x0: str, x1: str) -> tuple[str, str]:
    k2 = w.emit(f"xor i32 {w.emit(f'xor i32 {k0}, {k1}')}, {0x1BD11BDA}")
    ks = (k0, k1, k2)
    x0 = w.emit(f"add i32 {x0}, {k0}")
    x1 = w.emit(f"add i32 {x1}, {k1}")
    for group in range(5):
        for amount in _ROTATIONS[group % 2]:
            x0 = w.emit(f"add i32 {x0}, {x1}")
            x1 = w.emit(f"xor i32 {_rotl(w, x1, amount)}, {x0}")
        x0 = w.emit(f"add i32 {x0}, {ks[(group + 1) % 3]}")
        x1 = w.emit(f"add i32 {w.emit(f'add i32 {x1}, {ks[(group + 2) % 3]}')}, {group + 1}")
    return x0, x1


def _philox_words(w: r._Writer, k0: str, k1: str, x: list[str]) -> list[str]:
    for round_index in range(10):
        if round_index:
            k0 = w.emit(f"add i32 {k0}, {0x9E3779B9 - (1 << 32)}")
            k1 = w.emit(f"add i32 {k1}, {0xBB67AE85 - (1 << 32)}")
        products = []
        for word, factor in ((x[0], 0xD2511F53), (x[2], 0xCD9E8D57)):
            product = w.emit(f"mul i64 {w.emit(f'zext i32 {word} to i64')}, {factor}")
            products.append(_words(w, product))  # (low, high)
        (lo0, hi0), (lo1, hi1) = products
        x = [w.emit(f"xor i32 {w.emit(f'xor i32 {hi1}, {x[1]}')}, {k0}"), lo1,
             w.emit(f"xor i32 {w.emit(f'xor i32 {hi0}, {x[3]}')}, {k1}"), lo0]
    return x


def _pick(w: r._Writer, selector: str, options: list[str], width: str) -> str:
    """``options[selector]`` for a small i64 ``selector``."""
    chosen = options[-1]
    for k in range(len(options) - 2, -1, -1):
        is_k = w.emit(f"icmp eq i64 {selector}, {k}")
        chosen = w.emit(f"select i1 {is_k}, {width} {options[k]}, {width} {chosen}")
    return chosen


def render(name: str, inst: Instruction) -> str:
    """The LLVM function ``void @name(ptr noalias %out, ptr noalias %in0)``."""
    out = inst.shape.elements[1]
    dims, bits = out.dims, out.dtype.bits
    wide = bits == 64
    three = inst.operands[0].shape.dims == (3,)
    w = r._Writer()
    w.lines.append("  ; the state: key, counter (and the counter's high word)")
    key = w.emit("load i64, ptr %in0")
    low = w.emit(f"load i64, ptr {w.emit('getelementptr inbounds i64, ptr %in0, i64 1')}")
    if three:
        high = w.emit(f"load i64, ptr {w.emit('getelementptr inbounds i64, ptr %in0, i64 2')}")
    else:
        high = key
    k0, k1 = _words(w, key)
    i = "%i0"
    if _threefry(inst):
        split = None if wide else _split(dims)
        if split is None:
            counter = w.emit(f"add i64 {low}, {i}")
            x0, x1 = _threefry_words(w, k0, k1, *_words(w, counter))
            value = _join(w, x0, x1) if wide else x0
        else:
            index = list(w.delinearize(i, dims))
            j = index[split]
            half = list(dims)
            half[split] = -(-dims[split] // 2)
            index[split] = w.emit(f"udiv i64 {j}, 2")
            counter = w.emit(f"add i64 {low}, {w.linear(tuple(index), tuple(half))}")
            x0, x1 = _threefry_words(w, k0, k1, *_words(w, counter))
            odd = w.emit(f"trunc i64 {w.emit(f'urem i64 {j}, 2')} to i1")
            value = w.emit(f"select i1 {odd}, i32 {x1}, i32 {x0}")
    else:
        per_block = 2 if wide else 4
        block = w.emit(f"udiv i64 {i}, {per_block}")
        counter_low = w.emit(f"add i64 {low}, {block}")
        carry = w.emit(f"zext i1 {w.emit(f'icmp ult i64 {counter_low}, {low}')} to i64")
        counter_high = w.emit(f"add i64 {high}, {carry}")
        words = _philox_words(w, k0, k1, [*_words(w, counter_low), *_words(w, counter_high)])
        position = w.emit(f"urem i64 {i}, {per_block}")
        if wide:
            value = _pick(w, position, [_join(w, words[0], words[1]),
                                        _join(w, words[2], words[3])], "i64")
        else:
            value = _pick(w, position, words, "i32")
    if bits < 32:
        value = w.emit(f"trunc i32 {value} to i{bits}")
    address = w.emit(f"getelementptr inbounds i{bits}, ptr %out, i64 {i}")
    w.lines.append(f"  store i{bits} {value}, ptr {address}")
    params = "ptr noalias %out, ptr noalias %in0"
    return r.loop_function(name, params, (out.num_elements,), w.lines)


