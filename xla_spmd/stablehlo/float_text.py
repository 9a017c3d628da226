"""Floating-point values as MLIR's printer writes them (``printFloatValue`` over APFloat).

MLIR first tries six significant digits in ``%e`` style, ``1.000000e+00``; APFloat rounds to
six digits (half up, on the first dropped digit) and pads with zeros to six decimals, so the
seventh digit printed is always ``0``. That text is used when it reads back as the same value
(correctly rounded in the value's own format). Otherwise the shortest-safe form APFloat writes
by default (``2 + precision * 59 / 196`` significant digits, plain notation when at most three
zeros of padding are needed, else ``E``) is used, when it holds a ``.``; otherwise, and for
infinities and NaNs, the value's bits in hex (``0x7F800000``).

>>> import numpy as np
>>> from xla_spmd.ir import DType
>>> f32 = DType.named("f32")
>>> [format_float(np.float32(x), f32) for x in (1.0, -3.14, 1.234567, 2.0**31, 2.0**24)]
['1.000000e+00', '-3.140000e+00', '1.23456705', '2.14748365E+9', '0x4B800000']
"""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np

from xla_spmd.ir import DType


def _semantics(dtype: DType) -> tuple[int, int]:
    """(precision in bits including the implicit one, exponent of the smallest normal)."""
    info = ml_dtypes.finfo(dtype.numpy)
    return int(info.nmant) + 1, int(info.minexp)


def format_float(value, dtype: DType) -> str:
    """`value` (a scalar of the real float type `dtype`) as MLIR prints a float attribute."""
    number = float(value)  # exact: every float type we hold fits in a double
    if math.isfinite(number):
        precision, min_exponent = _semantics(dtype)
        short = _to_string(number, precision, 6, 0, False)
        if _round(Fraction(short), precision, min_exponent) == Fraction(number) and (
                number != 0 or short.startswith("-") == (math.copysign(1, number) < 0)):
            return short
        full = _to_string(number, precision, 0, 3, True)
        if "." in full:
            return full
    storage = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.array_dtype.itemsize]
    bits = np.asarray(value, dtype.numpy).reshape(()).view(storage)[()]
    return f"0x{int(bits):X}"


def _round(value: Fraction, precision: int, min_exponent: int) -> Fraction:
    """`value` rounded to the nearest float with `precision` significant bits (ties to even);
    the exponent range is unbounded above, so an overflow reads back as a different value."""
    if value == 0:
        return value
    magnitude = abs(value)
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if Fraction(2) ** exponent > magnitude:
        exponent -= 1
    unit = Fraction(2) ** (max(exponent, min_exponent) - precision + 1)
    rounded = round(magnitude / unit) * unit  # Fraction rounds half to even
    return rounded if value > 0 else -rounded


def _to_string(number: float, precision: int, format_precision: int, max_padding: int,
               truncate_zero: bool) -> str:
    """APFloat's ``toString(Str, FormatPrecision, FormatMaxPadding, TruncateZero)``."""
    sign = "-" if math.copysign(1.0, number) < 0 else ""
    if number == 0:
        if max_padding:
            return sign + "0"
        if truncate_zero:
            return sign + "0.0E+0"
        return sign + "0.0" + "0" * max(format_precision - 1, 0) + "e+00"
    if not format_precision:
        format_precision = 2 + precision * 59 // 196
    significand, denominator = abs(number).as_integer_ratio()
    exponent = 1 - denominator.bit_length()  # the denominator is a power of two
    trailing = (significand & -significand).bit_length() - 1
    significand >>= trailing
    exponent += trailing
    if exponent > 0:
        significand <<= exponent
        exponent = 0
    elif exponent < 0:  # n * 2**-e == n * 5**e * 10**-e
        significand *= 5 ** -exponent
    # APFloat first drops whole decimal digits it cannot need, truncating.
    bits_required = (format_precision * 196 + 58) // 59
    if significand.bit_length() > bits_required:
        removable = (significand.bit_length() - bits_required) * 59 // 196
        exponent += removable
        significand //= 10 ** removable
    digits = []  # least significant first, trailing zeros dropped into the exponent
    while significand:
        significand, digit = divmod(significand, 10)
        if not digits and digit == 0:
            exponent += 1
        else:
            digits.append(digit)
    digits, exponent = _round_digits(digits, exponent, format_precision)
    count = len(digits)
    text = "".join(str(d) for d in reversed(digits))
    if not max_padding:
        scientific = True
    elif exponent >= 0:
        scientific = exponent > max_padding or count + exponent > format_precision
    else:
        leading = exponent + count - 1
        scientific = leading < 0 and -leading > max_padding
    if scientific:
        exponent += count - 1
        mantissa = text[0] + "." + ("0" if count == 1 and truncate_zero else text[1:])
        if not truncate_zero and format_precision > count - 1:
            mantissa += "0" * (format_precision - count + 1)
        power = str(abs(exponent))
        if not truncate_zero and len(power) < 2:
            power = "0" + power
        return (f"{sign}{mantissa}{'E' if truncate_zero else 'e'}"
                f"{'+' if exponent >= 0 else '-'}{power}")
    if exponent >= 0:
        return sign + text + "0" * exponent
    whole = exponent + count
    if whole > 0:
        return f"{sign}{text[:whole]}.{text[whole:]}"
    return f"{sign}0.{'0' * -whole}{text}"


def _round_digits(digits: list[int], exponent: int, keep: int) -> tuple[list[int], int]:
    """APFloat's AdjustToPrecision on the digit buffer: round half up on the first dropped
    digit, dropping the zeros the rounding leaves at the end."""
    count = len(digits)
    if count <= keep:
        return digits, exponent
    first = count - keep
    if digits[first - 1] < 5:
        while first < count and digits[first] == 0:
            first += 1
        return digits[first:], exponent + first
    digits = list(digits)
    for i in range(first, count):
        if digits[i] == 9:
            first += 1
        else:
            digits[i] += 1
            break
    if first == count:
        return [1], exponent + first
    return digits[first:], exponent + first
