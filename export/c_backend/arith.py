"""TensorFlow Lite Micro's preparation of int8 kernels, in Python: the fixed-point multipliers,
shifts and activation ranges each kernel computes once before it runs (tflite-micro 90b983c:
``kernels/internal/quantization_util.cc``, ``micro/kernels/{add,sub,mul}_common.cc``,
``fully_connected_common.cc``, ``kernels/kernel_util.cc``). They are reproduced operation by
operation, float32 where the C++ computes in float and float64 where it computes in double,
because a multiplier one unit off changes outputs by one LSB now and then.

The per-element arithmetic that uses them is C (``zoo_int8.h``); the Python twins below
(`srdhm`, `rounding_divide_by_pot`, `multiply_by_quantized_multiplier`) exist for the tests.
"""

from __future__ import annotations

import math

import numpy as np

INT8_MIN, INT8_MAX = -128, 127
LEFT_SHIFT_INT8 = 20  # ADD / SUB: inputs are shifted left by 20 bits before rescaling


def tflite_round(value: float) -> int:
    """``TfLiteRound`` / ``std::round``: half away from zero."""
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


def quantize_multiplier(real: float) -> tuple[int, int]:
    """``QuantizeMultiplier``: (q, shift) with real ~= q * 2^(shift - 31), q in [2^30, 2^31)."""
    if real == 0.0:
        return 0, 0
    mantissa, shift = math.frexp(real)
    q = tflite_round(mantissa * (1 << 31))
    if q == 1 << 31:
        q //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return int(q), int(shift)


def quantize_multiplier_smaller_than_one(real: float) -> tuple[int, int]:
    """``QuantizeMultiplierSmallerThanOneExp``: the same, for 0 < real < 1 (shift <= 0)."""
    if not 0.0 < real < 1.0:
        raise ValueError(f"multiplier {real} is not in (0, 1)")
    q, shift = quantize_multiplier(real)
    if shift > 0:
        raise ValueError(f"multiplier {real} gives shift {shift} > 0")
    return q, shift


def activation_range(activation: int, scale: np.float32, zero_point: int) -> tuple[int, int]:
    """``CalculateActivationRangeQuantized`` for an int8 output (0 NONE, 1 RELU, 2 RELU_N1_TO_1,
    3 RELU6); the bounds are quantized as TFLite does: zp + round(bound / scale) in float."""
    def q(bound):
        return zero_point + tflite_round(float(np.float32(bound) / np.float32(scale)))

    low, high = {0: (None, None), 1: (0.0, None), 2: (-1.0, 1.0), 3: (0.0, 6.0)}[activation]
    lo = INT8_MIN if low is None else max(INT8_MIN, q(low))
    hi = INT8_MAX if high is None else min(INT8_MAX, q(high))
    return lo, hi


def add_params(s1: np.float32, s2: np.float32, s_out: np.float32, subtract: bool) -> dict:
    """Multipliers of an int8 ADD (double arithmetic, ``add_common.cc``) or SUB (float
    arithmetic cast to double, ``sub_common.cc``: the two kernels really differ)."""
    if subtract:
        twice = np.float32(2) * max(np.float32(s1), np.float32(s2))
        r1 = float(np.float32(s1) / twice)
        r2 = float(np.float32(s2) / twice)
        ro = float(twice / (np.float32(1 << LEFT_SHIFT_INT8) * np.float32(s_out)))
    else:
        twice = 2.0 * float(max(np.float32(s1), np.float32(s2)))
        r1, r2 = float(s1) / twice, float(s2) / twice
        ro = twice / ((1 << LEFT_SHIFT_INT8) * float(s_out))
    (m1, sh1), (m2, sh2), (mo, sho) = (quantize_multiplier_smaller_than_one(r)
                                       for r in (r1, r2, ro))
    return dict(m1=m1, s1=sh1, m2=m2, s2=sh2, mo=mo, so=sho)


def mul_params(s1: np.float32, s2: np.float32, s_out: np.float32) -> tuple[int, int]:
    """``CalculateOpDataMul``: one multiplier for in1 * in2 (double arithmetic)."""
    return quantize_multiplier(float(s1) * float(s2) / float(s_out))


def fc_params(s_in: np.float32, s_w: np.ndarray, s_out: np.float32) -> list[tuple[int, int]]:
    """``GetQuantizedConvolutionMultipler`` + ``QuantizeMultiplier`` per output channel (one
    entry for per-tensor weights): (double(s_in) * double(s_w)) / double(s_out)."""
    return [quantize_multiplier(float(s_in) * float(s) / float(s_out))
            for s in np.atleast_1d(s_w).astype(np.float32)]


# ------------------------------------------------------------------- the C kernels, in Python
def srdhm(a: int, b: int) -> int:
    """gemmlowp ``SaturatingRoundingDoublingHighMul`` on int32."""
    if a == b == -(1 << 31):
        return (1 << 31) - 1
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    return _trunc_div(ab + nudge, 1 << 31)


def _trunc_div(n: int, d: int) -> int:
    q = abs(n) // d
    return q if n >= 0 else -q


def rounding_divide_by_pot(x: int, exponent: int) -> int:
    """gemmlowp ``RoundingDivideByPOT``: x / 2^exponent, rounded half away from zero."""
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def multiply_by_quantized_multiplier(x: int, q: int, shift: int) -> int:
    """``MultiplyByQuantizedMultiplier`` (double rounding, TFLite's default build)."""
    left, right = max(shift, 0), max(-shift, 0)
    return rounding_divide_by_pot(srdhm(_wrap32(x << left), q), right)


def _wrap32(x: int) -> int:
    return (x + (1 << 31)) % (1 << 32) - (1 << 31)
