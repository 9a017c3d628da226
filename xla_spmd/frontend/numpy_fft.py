"""``xla_spmd.numpy.fft``: discrete Fourier transforms as ``jax.numpy.fft``, over
`lax.fft` (XLA's ``fft`` op, at most 3 dims per op; more are done in steps, as JAX does).

``n``/``s`` crop or zero-pad the input along the transformed axes first, ``axes`` are moved
last for the op and back after, and ``norm`` is ``"backward"`` (the default), ``"ortho"``
or ``"forward"``, as in numpy.

>>> import numpy as np
>>> import xla_spmd.numpy as xnp
>>> np.round(np.asarray(xnp.fft.fft(np.array([1.0, 0.0, -1.0, 0.0], np.float32))), 6).tolist()
[0j, (2+0j), 0j, (2+0j)]
>>> np.asarray(xnp.fft.fftfreq(4)).tolist()
[0.0, 0.25, -0.5, -0.25]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from xla_spmd.frontend import lax, numpy_shape
from xla_spmd.frontend import numpy_core as xnp
from xla_spmd.frontend.numpy_index import getitem
from xla_spmd.frontend.numpy_pad import pad
from xla_spmd.frontend.tracing import ArrayLike, Value
from xla_spmd.ir.attributes import FftType

__all__ = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn",
           "ifftn", "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _norm_factor(lengths: Sequence[int], inverse: bool, norm: str | None) -> float | None:
    """The factor the result is scaled by (None: none), as numpy's ``norm`` says."""
    if norm is None or norm == "backward":
        return None
    size = math.prod(lengths)
    if norm == "ortho":
        return math.sqrt(size) if inverse else 1 / math.sqrt(size)
    if norm == "forward":
        return float(size) if inverse else 1 / size
    raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')


def _transform(name: str, kind: FftType, a: ArrayLike, s: Sequence[int] | None,
               axes: Sequence[int] | None, norm: str | None) -> Value:
    """JAX's ``_fft_core``: crop/pad to `s`, move `axes` last, transform, scale, move back."""
    x = xnp.asarray(a)
    if s is not None:
        s = tuple(int(n) for n in s)
        if any(n <= 0 for n in s):
            raise ValueError("Shape should be positive.")
        if axes is not None and len(s) != len(axes):
            raise ValueError("Shape and axes have different lengths.")
    given = axes
    if axes is None:
        axes = tuple(range(x.ndim) if s is None else range(x.ndim - len(s), x.ndim))
    axes = tuple(int(axis) for axis in axes)
    if len({axis % max(x.ndim, 1) for axis in axes}) != len(axes):
        raise ValueError(f"xla_spmd.numpy.fft.{name} does not support repeated axes. "
                         f"Got axes {axes}.")
    last = tuple(range(x.ndim - len(axes), x.ndim))
    if given is not None:
        x = numpy_shape.moveaxis(x, axes, last)
    shape = list(x.shape)
    if s is not None:
        for axis, n in zip(last, s):
            shape[axis] = n
        if kind is FftType.IRFFT:
            shape[-1] = shape[-1] // 2 + 1
        x = getitem(x, tuple(slice(n) for n in shape))
        x = pad(x, [(0, n - m) for n, m in zip(shape, x.shape)])
        lengths = list(s)
    elif kind is FftType.IRFFT:
        lengths = [shape[axis] for axis in last[:-1]]
        lengths += [max(0, 2 * (shape[last[-1]] - 1))] if last else []
    else:
        lengths = [shape[axis] for axis in last]
    out = _fft_nd(x, kind, lengths)
    factor = _norm_factor(lengths, name.startswith("i"), norm)
    if factor is not None:
        out = out * factor
    if given is not None:
        out = numpy_shape.moveaxis(out, last, axes)
    return out


def _fft_nd(x: Value, kind: FftType, lengths: Sequence[int]) -> Value:
    """`lax.fft` over the last ``len(lengths)`` dims, in steps of at most 3 (XLA's limit)."""
    if len(lengths) <= 3:
        return lax.fft(x, kind, tuple(lengths))
    n = 2 if len(lengths) == 4 else 3
    src = tuple(range(x.ndim - len(lengths), x.ndim - n))
    dst = tuple(range(x.ndim - len(lengths) + n, x.ndim))
    if kind in (FftType.RFFT, FftType.FFT):
        x = lax.fft(x, kind, tuple(lengths[-n:]))
        x = numpy_shape.moveaxis(x, src, dst)
        x = _fft_nd(x, FftType.FFT, lengths[:-n])
        return numpy_shape.moveaxis(x, dst, src)
    x = numpy_shape.moveaxis(x, src, dst)
    x = _fft_nd(x, FftType.IFFT, lengths[:-n])
    x = numpy_shape.moveaxis(x, dst, src)
    return lax.fft(x, kind, tuple(lengths[-n:]))


def _one(name: str, kind: FftType):
    def transform(a: ArrayLike, n: int | None = None, axis: int = -1,
                  norm: str | None = None) -> Value:
        if isinstance(axis, (list, tuple)):
            raise ValueError("Axis must be an integer")
        return _transform(name, kind, a, None if n is None else [n], [axis], norm)
    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = (f"``numpy.fft.{name}`` along `axis`, the input cropped or zero-padded "
                         f"to `n` there first (as ``jax.numpy.fft.{name}``).")
    return transform


def _two(name: str, kind: FftType):
    def transform(a: ArrayLike, s: Sequence[int] | None = None,
                  axes: Sequence[int] = (-2, -1), norm: str | None = None) -> Value:
        if len(axes) != 2:
            raise ValueError(f"{name} needs exactly two axes, got {tuple(axes)}")
        return _transform(name, kind, a, s, axes, norm)
    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"``numpy.fft.{name}`` over two `axes` (as ``jax.numpy.fft.{name}``)."
    return transform


def _many(name: str, kind: FftType):
    def transform(a: ArrayLike, s: Sequence[int] | None = None,
                  axes: Sequence[int] | None = None, norm: str | None = None) -> Value:
        return _transform(name, kind, a, s, axes, norm)
    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = (f"``numpy.fft.{name}`` over `axes` (all, or the last ``len(s)``, by "
                         f"default; as ``jax.numpy.fft.{name}``).")
    return transform


fft, ifft = _one("fft", FftType.FFT), _one("ifft", FftType.IFFT)
rfft, irfft = _one("rfft", FftType.RFFT), _one("irfft", FftType.IRFFT)
fft2, ifft2 = _two("fft2", FftType.FFT), _two("ifft2", FftType.IFFT)
rfft2, irfft2 = _two("rfft2", FftType.RFFT), _two("irfft2", FftType.IRFFT)
fftn, ifftn = _many("fftn", FftType.FFT), _many("ifftn", FftType.IFFT)
rfftn, irfftn = _many("rfftn", FftType.RFFT), _many("irfftn", FftType.IRFFT)


def fftfreq(n: int, d: float = 1.0, *, dtype=None) -> Value:
    """The sample frequencies of an `n`-point FFT with sample spacing `d` (as
    ``jax.numpy.fft.fftfreq``): ``[0, 1, ..., (n-1)//2, -(n//2), ..., -1] / (d*n)``."""
    k = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)])
    return xnp.asarray(k, dtype or np.float32) / (d * n)


def rfftfreq(n: int, d: float = 1.0, *, dtype=None) -> Value:
    """The sample frequencies of `rfft` (as ``jax.numpy.fft.rfftfreq``):
    ``[0, 1, ..., n//2] / (d*n)``."""
    return xnp.asarray(np.arange(0, n // 2 + 1), dtype or np.float32) / (d * n)


def _shift(x: ArrayLike, axes: int | Sequence[int] | None, inverse: bool) -> Value:
    x = xnp.asarray(x)
    if axes is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axes, int):
        axes = (axes,)
    shifts = [-(x.shape[a] // 2) if inverse else x.shape[a] // 2 for a in axes]
    return numpy_shape.roll(x, shifts, tuple(axes))


def fftshift(x: ArrayLike, axes: int | Sequence[int] | None = None) -> Value:
    """The zero frequency moved to the centre (as ``jax.numpy.fft.fftshift``)."""
    return _shift(x, axes, inverse=False)


def ifftshift(x: ArrayLike, axes: int | Sequence[int] | None = None) -> Value:
    """The inverse of `fftshift` (as ``jax.numpy.fft.ifftshift``)."""
    return _shift(x, axes, inverse=True)
