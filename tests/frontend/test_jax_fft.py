"""``xla_spmd.numpy.fft`` against numpy's (complex128 / float64 oracle, f32/c64 results):
every transform with ``n``/``s`` cropping and padding, moved ``axes``, each ``norm``, more
than three dims (done in steps, as JAX does), frequencies and shifts."""

import numpy as np
import pytest

import xla_spmd as xs
import xla_spmd.numpy as xnp

RNG = np.random.default_rng(0)
REAL = RNG.standard_normal((3, 4, 6)).astype(np.float32)
COMPLEX = (RNG.standard_normal((3, 4, 6))
           + 1j * RNG.standard_normal((3, 4, 6))).astype(np.complex64)

CASES = [
    ("fft", {}, COMPLEX),
    ("fft", {"n": 8, "axis": 1, "norm": "ortho"}, COMPLEX),
    ("fft", {"n": 4}, REAL),
    ("ifft", {"n": 3, "axis": 0}, COMPLEX),
    ("ifft", {"norm": "forward"}, COMPLEX),
    ("rfft", {"axis": 1, "norm": "forward"}, REAL),
    ("irfft", {"n": 10}, COMPLEX),
    ("irfft", {}, COMPLEX),
    ("fft2", {"s": (5, 3)}, COMPLEX),
    ("ifft2", {"axes": (0, 2), "norm": "ortho"}, COMPLEX),
    ("rfft2", {}, REAL),
    ("irfft2", {"axes": (0, 2)}, COMPLEX),
    ("fftn", {}, COMPLEX),
    ("ifftn", {"norm": "ortho"}, COMPLEX),
    ("rfftn", {"axes": (2, 0)}, REAL),
    ("irfftn", {"s": (4, 8), "axes": (1, 2)}, COMPLEX),
    ("fftshift", {"axes": 1}, REAL),
    ("ifftshift", {}, REAL),
]


@pytest.mark.parametrize("name,kwargs,x", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_transforms_match_numpy(name, kwargs, x):
    got = np.asarray(xs.jit(lambda a: getattr(xnp.fft, name)(a, **kwargs))(x))
    wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    want = getattr(np.fft, name)(wide, **kwargs)
    assert got.shape == want.shape
    assert got.dtype == (np.float32 if want.dtype.kind == "f" else np.complex64)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_more_than_three_dims_in_steps():
    x = RNG.standard_normal((2, 2, 3, 2, 2)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(xnp.fft.fftn(x)), np.fft.fftn(x), rtol=1e-4,
                               atol=1e-4)
    spectrum = np.fft.rfftn(x).astype(np.complex64)
    np.testing.assert_allclose(np.asarray(xnp.fft.irfftn(spectrum, s=x.shape)), x, rtol=1e-4,
                               atol=1e-4)


def test_frequencies():
    np.testing.assert_allclose(np.asarray(xnp.fft.fftfreq(5, 0.1)), np.fft.fftfreq(5, 0.1),
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(xnp.fft.fftfreq(6)), np.fft.fftfreq(6), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(xnp.fft.rfftfreq(7, 2.0)), np.fft.rfftfreq(7, 2.0),
                               rtol=1e-6)


def test_bad_arguments_say_what_is_wrong():
    with pytest.raises(ValueError, match="Invalid norm value"):
        xnp.fft.fft(COMPLEX, norm="both")
    with pytest.raises(ValueError, match="Shape and axes have different lengths"):
        xnp.fft.fftn(COMPLEX, s=(2, 2), axes=(0,))
    with pytest.raises(ValueError, match="repeated axes"):
        xnp.fft.fftn(COMPLEX, axes=(1, -2))
    with pytest.raises(ValueError, match="Shape should be positive"):
        xnp.fft.fft(COMPLEX, n=0)
