"""The integer log-mel front end: the NumPy reference of ``export/c_backend/frontend/kws_frontend.c``.

Same geometry as the float front end (`zoo.training.data.audio.FbankFrontend`: 400-sample frames
every 160 samples at 16 kHz, pre-emphasis 0.97, Hamming window, 512-point FFT, python_speech_
features' 32 mel triangles), computed with the C code's integer operations, step by step, so the
two agree bit for bit (tests/export/test_int_frontend.py compiles the C and compares on real
clips). Per frame of int16 samples ``x[0..399]`` and the sample before it, ``prev``:

1. pre-emphasis   ``y[n] = x[n] - ((31785 * x[n-1] + 2^14) >> 15)``            (int32, |y| < 2^16)
2. window         ``v[n] = (y[n] * w[n] + 2^14) >> 15``, w = round(2^15 hamming(400)), <= 32767
3. FFT            ``z[m] = v[2m] + i v[2m+1]`` (zero past m = 199), a 256-point radix-2 complex
                  FFT (decimation in time, Q15 twiddles with 1 = 2^15 so that the twiddles 1
                  and -i are exact, each product rounded once in int64),
                  then the real-FFT split: ``Y[k] = 2 X[k]`` for k = 0..256 (no halving: no bit
                  is lost), where X is the 512-point FFT of v
4. power          ``P[k] = Re(Y)^2 + Im(Y)^2`` (uint64, < 2^52.3)
5. mel            ``E[j] = sum_k (P[k] >> 6) * W[j, k]``, W = round(2^12 psf filters) (uint64,
                  bound checked in the tests)
6. log            ``L[j] = log2(E[j])`` in Q8 (int16): the leading bit's index, then a 65-entry
                  table of log2(1 + i/64) with linear interpolation; ``L = 0`` for ``E <= 1``

Units: P = 4 |X|^2 and psf's power is |X|^2 / 512, so E ~ 2^17 * (psf's filter energy) and
``ln(energy) ~ (L / 256 - 17) ln 2`` (`log_mel`): that is what a model trained on the float
front end is fed (`model_input` maps L to its int8 input with integers only).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from zoo.training.data.audio import FbankFrontend
from zoo.training.tasks import int_frontend_q15
from zoo.training.tasks.int_frontend_tables import (  # noqa: F401 (the front end's names, here too)
    BINS, ENERGY_OFFSET_LOG2, FILTERS, FRAME, HALF, HOP, LOG_Q, LOG_TABLE_BITS, MEL_Q, NFFT,
    POWER_SHIFT, PREEMPH_Q15, Tables, log2_q8, tables)

def _rshift_round(v: np.ndarray, s: int) -> np.ndarray:
    return (v + (1 << (s - 1))) >> s


def _fft256(re: np.ndarray, im: np.ndarray, t: Tables):
    """Radix-2 decimation-in-time FFT over the last axis (int64 arrays): the C loop's butterflies."""
    re, im = re[..., t.bitrev], im[..., t.bitrev]
    half = 1
    while half < HALF:
        j = np.arange(half)
        c, s = t.cos[j * (NFFT // (2 * half))], t.sin[j * (NFFT // (2 * half))]
        shape = re.shape[:-1] + (HALF // (2 * half), 2, half)
        r, q = re.reshape(shape), im.reshape(shape)
        ar, ai, br, bi = r[..., 0, :], q[..., 0, :], r[..., 1, :], q[..., 1, :]
        tr = _rshift_round(br * c + bi * s, 15)   # (br + i bi)(c - i s)
        ti = _rshift_round(bi * c - br * s, 15)
        re = np.stack([ar + tr, ar - tr], axis=-2).reshape(re.shape)
        im = np.stack([ai + ti, ai - ti], axis=-2).reshape(im.shape)
        half *= 2
    return re, im


def power_spectrum(frames: np.ndarray, prev: np.ndarray, t: Tables | None = None) -> np.ndarray:
    """``P[k]`` (uint64, shape (..., 257)) of int16 frames (..., 400) with their previous samples."""
    t = t or tables()
    x = frames.astype(np.int64)
    before = np.concatenate([np.asarray(prev, np.int64)[..., None], x[..., :-1]], axis=-1)
    y = x - _rshift_round(PREEMPH_Q15 * before, 15)
    v = _rshift_round(y * t.window, 15)
    v = np.concatenate([v, np.zeros(v.shape[:-1] + (NFFT - FRAME,), np.int64)], axis=-1)
    zr, zi = _fft256(v[..., 0::2], v[..., 1::2], t)
    k = np.arange(BINS)
    a_r, a_i = zr[..., k % HALF], zi[..., k % HALF]
    b_r, b_i = zr[..., (HALF - k) % HALF], -zi[..., (HALF - k) % HALF]   # conj(Z[N - k])
    e_r, e_i = a_r + b_r, a_i + b_i          # 2 Xe
    p, q = a_i - b_i, -(a_r - b_r)           # -i (A - B) = 2 Xo
    c, s = t.cos[k], t.sin[k]
    y_r = e_r + _rshift_round(p * c + q * s, 15)
    y_i = e_i + _rshift_round(q * c - p * s, 15)
    return (y_r * y_r + y_i * y_i).astype(np.uint64)


def frames_log_mel_q8(frames: np.ndarray, prev: np.ndarray, t: Tables | None = None) -> np.ndarray:
    """int16 ``L[..., 32]`` of int16 frames (..., 400) whose previous samples are ``prev``."""
    t = t or tables()
    p = power_spectrum(frames, prev, t) >> np.uint64(POWER_SHIFT)
    w = t.dense_mel().astype(np.uint64)
    e = np.zeros(p.shape[:-1] + (FILTERS,), np.uint64)
    for j in range(FILTERS):                   # uint64 sums: no float, no overflow (see tests)
        e[..., j] = np.sum(p * w[j], axis=-1, dtype=np.uint64)
    return log2_q8(e, t)


def clip_frames(signals: np.ndarray, num_frames: int = 99):
    """The frames of ``(N, S)`` int16 clips as the float front end frames them (zero-padded past
    the end), with each frame's previous sample (0 before the first)."""
    x = np.asarray(signals)
    if x.ndim == 1:
        x = x[None]
    need = (num_frames - 1) * HOP + FRAME
    padded = np.zeros((len(x), need + 1), np.int64)
    padded[:, 1:1 + min(x.shape[1], need)] = x[:, :need]
    starts = np.arange(num_frames) * HOP
    idx = starts[:, None] + 1 + np.arange(FRAME)[None, :]
    return padded[:, idx], padded[:, starts]


# The integer front ends, by their ``features`` name: the same frames and units (``L``), other
# arithmetic (`zoo.training.tasks.int_frontend_q15`: dual 16-bit, about a third of the Cortex-M4
# instructions of this module's; docs/kws.md section 8).
INT_FEATURES = ("int_logmel", "int_logmel_q15")


def frames_function(features: str = "int_logmel"):
    """``frames_log_mel_q8`` of the integer front end called ``features`` (`INT_FEATURES`)."""
    if features == "int_logmel":
        return frames_log_mel_q8
    if features == "int_logmel_q15":
        return int_frontend_q15.frames_log_mel_q8
    raise ValueError(f"features {features!r}: not an integer front end; valid: "
                     f"{', '.join(INT_FEATURES)}")


def integer_features(features: str | None) -> str:
    """The integer front end that feeds a model trained on ``features`` on a device: itself,
    or ``int_logmel`` for the float log-mel (through `InputMap`)."""
    return features if features in INT_FEATURES else "int_logmel"


def clip_log_mel_q8(signals: np.ndarray, num_frames: int = 99,
                    features: str = "int_logmel") -> np.ndarray:
    """int16 ``(N, 99, 32)`` Q8 log2 energies of 1 s int16 clips, by the integer front end
    called ``features``."""
    frames, prev = clip_frames(signals, num_frames)
    return frames_function(features)(frames, prev)


def log_mel(q8: np.ndarray) -> np.ndarray:
    """Natural-log filter energies in the float front end's units, from ``L`` (float32)."""
    return ((q8.astype(np.float64) / (1 << LOG_Q) - ENERGY_OFFSET_LOG2) * np.log(2)).astype(np.float32)


@dataclasses.dataclass(frozen=True)
class InputMap:
    """``L`` -> a step model's int8 input with integers only:
    ``xq = clamp(zp + (((L - offset[j]) * mul[j] + 2^(shift-1)) >> shift), -128, 127)``, the
    float path ``quantize((log_mel(L) - mean) / std, scale, zp)`` with the constants rounded."""

    offset: np.ndarray
    mul: np.ndarray
    shift: int
    zero_point: int

    @classmethod
    def fit(cls, mean, std, scale: float, zero_point: int, shift: int = 20) -> "InputMap":
        mean, std = np.asarray(mean, np.float64), np.asarray(std, np.float64)
        offset = np.round((mean / np.log(2) + ENERGY_OFFSET_LOG2) * (1 << LOG_Q)).astype(np.int64)
        mul = np.round(np.log(2) / ((1 << LOG_Q) * std * scale) * (1 << shift)).astype(np.int64)
        if np.any(mul >= 1 << 31) or np.any(mul <= 0):
            raise ValueError(f"input map multipliers {mul.min()}..{mul.max()} do not fit int32; "
                             "std or scale out of range")
        return cls(offset, mul, shift, int(zero_point))

    def __call__(self, q8: np.ndarray) -> np.ndarray:
        d = q8.astype(np.int64) - self.offset
        v = self.zero_point + ((d * self.mul + (1 << (self.shift - 1))) >> self.shift)
        return np.clip(v, -128, 127).astype(np.int8)


@dataclasses.dataclass(frozen=True)
class IntLogMelFrontend:
    """Drop-in for `FbankFrontend` in the speech tasks (task option ``features: int_logmel`` or
    ``int_logmel_q15``): float32 ``(N, 99, 32)`` features ``log_mel(L)`` of that integer front
    end.

    Args:
        sample_rate, clip_samples, num_frames: the clips' geometry (16 kHz, 1 s, 99 frames).
        features: which integer front end (`INT_FEATURES`): ``"int_logmel"`` (this module) or
            ``"int_logmel_q15"`` (`zoo.training.tasks.int_frontend_q15`, cheaper on a device).

    Example:

    ```python
    import numpy as np
    from zoo.training.tasks.int_frontend import IntLogMelFrontend

    clip = np.random.default_rng(0).normal(0, 3000, 16000)
    IntLogMelFrontend(features="int_logmel_q15")(clip).shape  # (1, 99, 32)
    ```
    """

    sample_rate: int = 16000
    clip_samples: int = 16000
    num_frames: int = 99
    features: str = "int_logmel"

    def __post_init__(self):
        frames_function(self.features)  # a clear error for an unknown name

    @property
    def output_shape(self) -> tuple[int, int]:
        return (self.num_frames, FILTERS)

    def filterbank(self) -> np.ndarray:
        return FbankFrontend().filterbank()

    def __call__(self, signals: np.ndarray, *, batch: int = 64) -> np.ndarray:
        """Featurise ``(N, clip_samples)`` signals; float ones (noise-mixed, silence clips) are
        rounded to int16 first, the samples a device would receive."""
        x = np.asarray(signals)
        x = x[None] if x.ndim == 1 else x
        if x.ndim != 2 or x.shape[1] != self.clip_samples:
            raise ValueError(f"expected signals of shape (N, {self.clip_samples}), got {x.shape}")
        x = np.clip(np.round(x), -32768, 32767).astype(np.int16)
        out = [log_mel(clip_log_mel_q8(x[i:i + batch], self.num_frames, self.features))
               for i in range(0, len(x), batch)]
        return np.concatenate(out) if out else np.empty((0, *self.output_shape), np.float32)

    def settings(self) -> dict:
        geometry = {k: v for k, v in dataclasses.asdict(self).items() if k != "features"}
        return {"features": self.features, **geometry}  # the feature cache's key: keep its order

    def describe(self) -> dict:
        """What a device must compute before the model (a model card's ``frontend``): the
        integer steps of this module's docstring, whose C is written by the export."""
        doc, end = (__doc__, "Units:") if self.features == "int_logmel" else (_q15_doc(), "Every int16")
        steps = doc[doc.index("Per frame"):doc.index(end)]  # one source: the module's docstring
        return {
            "features": self.features,
            "input": "16 kHz mono PCM, int16 samples; a clip shorter than 1 s is zero-padded "
                     f"at the end to {self.clip_samples} samples; {FRAME}-sample frames every "
                     f"{HOP} samples, {self.num_frames} frames",
            "steps": " ".join(steps.split()),
            "model_input": "the model was trained on ln-energies (L / 256 - "
                           f"{ENERGY_OFFSET_LOG2}) ln 2 normalised per filter; on a device "
                           "InputMap (export/kws_stream.py, kws_input.c) maps L to the int8 input "
                           "with integers only",
            "reference_code": (f"training/tasks/{_MODULES[self.features]}.py (NumPy), bit-exact "
                               "with the C kws_frontend.c that `zoo export RUN --form c` writes "
                               "beside the model"),
        }


_MODULES = {"int_logmel": "int_frontend", "int_logmel_q15": "int_frontend_q15"}


def _q15_doc() -> str:
    return int_frontend_q15.__doc__
