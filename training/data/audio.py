"""The Google speech front end, vectorised in numpy (WAV files are read by `zoo.training.data.wav`).

The front end reproduces EdgeML's featurisation (``examples/pytorch/SRNN/process_google.py``):
``python_speech_features.fbank(sig, 16000, winlen=0.025, winstep=0.01, nfilt=32, nfft=512,
lowfreq=0, highfreq=8000, preemph=0.97, winfunc=numpy.hamming)`` followed by
``log(feat + 1e-10)``, on raw int16 sample values (not scaled to [-1, 1]). It follows
python_speech_features 0.6 step by step, including its quirks, so that the numbers match:

* pre-emphasis keeps the first sample: ``y[0] = x[0]``, ``y[n] = x[n] - a x[n-1]``;
* frame length and step are rounded half-up to samples (400 and 160), the signal is zero-padded
  at the end so the frames cover it: ``1 + ceil((16000 - 400) / 160) = 99`` frames;
* power spectrum ``|rfft(frame * hamming(400), 512)|^2 / 512``;
* triangular mel filters on FFT bins ``floor((nfft + 1) * mel2hz(points) / rate)``;
* filterbank energies that are exactly 0 become float64 eps (2.2e-16) before the log, as psf
  does, and then EdgeML adds 1e-10: such a cell is ``log(2.2e-16 + 1e-10)``.
"""

from __future__ import annotations

import dataclasses
import math
from decimal import ROUND_HALF_UP, Decimal

import numpy as np

LOG_EPS = 1e-10  # EdgeML process_google.py


def pad_to(x: np.ndarray, length: int, where: str = "end") -> np.ndarray:
    """Zero-pad a 1-D signal to ``length`` samples (at the end, as EdgeML's process_g30.py)."""
    if where not in ("end", "front"):
        raise ValueError(f"pad must be 'end' or 'front', got {where!r}")
    out = np.zeros(length, dtype=x.dtype)
    if where == "end":
        out[: len(x)] = x
    else:
        out[length - len(x):] = x
    return out


def _round_half_up(v: float) -> int:
    return int(Decimal(repr(v)).quantize(Decimal("1"), rounding=ROUND_HALF_UP))


def _hz2mel(hz):
    return 2595 * np.log10(1 + hz / 700.0)


def _mel2hz(mel):
    return 700 * (10 ** (mel / 2595.0) - 1)


@dataclasses.dataclass(frozen=True)
class FbankFrontend:
    """Log mel filterbank; defaults are the Google-30/12 settings of FastGRNN/iRNN."""

    sample_rate: int = 16000
    winlen: float = 0.025
    winstep: float = 0.01
    nfilt: int = 32
    nfft: int = 512
    lowfreq: float = 0.0
    highfreq: float = 8000.0
    preemph: float = 0.97
    clip_samples: int = 16000  # every clip is padded to this many samples (1 s)

    @property
    def frame_len(self) -> int:
        return _round_half_up(self.winlen * self.sample_rate)

    @property
    def frame_step(self) -> int:
        return _round_half_up(self.winstep * self.sample_rate)

    @property
    def num_frames(self) -> int:
        if self.clip_samples <= self.frame_len:
            return 1
        return 1 + math.ceil((self.clip_samples - self.frame_len) / self.frame_step)

    @property
    def output_shape(self) -> tuple[int, int]:
        return (self.num_frames, self.nfilt)

    def filterbank(self) -> np.ndarray:
        """``(nfilt, nfft // 2 + 1)`` triangular filters, as ``psf.get_filterbanks``."""
        if self.highfreq > self.sample_rate / 2:
            raise ValueError(f"highfreq {self.highfreq} is above the Nyquist frequency")
        mel = np.linspace(_hz2mel(self.lowfreq), _hz2mel(self.highfreq), self.nfilt + 2)
        bins = np.floor((self.nfft + 1) * _mel2hz(mel) / self.sample_rate)
        k = np.arange(self.nfft // 2 + 1, dtype=np.float64)[None, :]
        lo, mid, hi = bins[:-2, None], bins[1:-1, None], bins[2:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            rise = np.where((k >= lo) & (k < mid), (k - lo) / (mid - lo), 0.0)
            fall = np.where((k >= mid) & (k < hi), (hi - k) / (hi - mid), 0.0)
        return rise + fall

    def __call__(self, signals: np.ndarray, *, batch: int = 128) -> np.ndarray:
        """Featurise ``(N, clip_samples)`` signals (int16 scale) into float32 ``(N, frames, nfilt)``."""
        signals = np.asarray(signals)
        if signals.ndim == 1:
            signals = signals[None]
        if signals.ndim != 2 or signals.shape[1] != self.clip_samples:
            raise ValueError(f"expected signals of shape (N, {self.clip_samples}), got {signals.shape}")
        fb_t = self.filterbank().T
        window = np.hamming(self.frame_len)
        nf, flen, step = self.num_frames, self.frame_len, self.frame_step
        padlen = (nf - 1) * step + flen
        out = np.empty((len(signals), nf, self.nfilt), dtype=np.float32)
        for s in range(0, len(signals), batch):  # batches bound the FFT's memory
            x = signals[s:s + batch].astype(np.float64)
            y = np.concatenate([x[:, :1], x[:, 1:] - self.preemph * x[:, :-1]], axis=1)
            if padlen > y.shape[1]:
                y = np.pad(y, ((0, 0), (0, padlen - y.shape[1])))
            # Strided view of the overlapping frames; the window product is the only copy.
            view = np.lib.stride_tricks.sliding_window_view(y, flen, axis=1)[:, ::step][:, :nf]
            frames = (view * window).reshape(-1, flen)
            spec = np.fft.rfft(frames, self.nfft)
            power = (spec.real ** 2 + spec.imag ** 2) / self.nfft
            feat = power @ fb_t  # one 2-D GEMM: a batched 3-D matmul is slow with threaded BLAS
            feat = np.where(feat == 0, np.finfo(float).eps, feat)
            out[s:s + batch] = np.log(feat + LOG_EPS).reshape(len(x), nf, self.nfilt)
        return out

    def settings(self) -> dict:
        return dataclasses.asdict(self)

    def describe(self) -> dict:
        """What a device must compute before the model, in words (a model card's ``frontend``);
        tests/experiments/test_kws_frontend_card.py reimplements it from these words."""
        flen, step, nf, bins = self.frame_len, self.frame_step, self.num_frames, self.nfft // 2 + 1
        return {
            "features": "logmel",
            "input": f"{self.sample_rate // 1000} kHz mono PCM, int16 sample values used as they "
                     f"are (not scaled to [-1, 1]); a clip shorter than {self.clip_samples} "
                     f"samples is zero-padded at the end to {self.clip_samples}",
            "pre_emphasis": f"y[0] = x[0]; y[n] = x[n] - {self.preemph:g} x[n-1]",
            "frames": f"{flen}-sample frames every {step} samples: 1 + ceil(({self.clip_samples} "
                      f"- {flen}) / {step}) = {nf} frames; the last frame is zero-padded past "
                      "the signal",
            "window": f"Hamming, {flen} points, symmetric: 0.54 - 0.46 cos(2 pi n / {flen - 1}) "
                      "(numpy.hamming)",
            "fft": f"{self.nfft}-point real FFT of the windowed frame (zero-padded from {flen}); "
                   f"power spectrum |X[k]|^2 / {self.nfft} for k = 0..{bins - 1}",
            "mel_filters": f"{self.nfilt} triangular filters between {self.lowfreq:g} and "
                           f"{self.highfreq:g} Hz: {self.nfilt + 2} points equally spaced in mel "
                           "(mel = 2595 log10(1 + f / 700)), mapped to FFT bins b = floor("
                           f"{self.nfft + 1} f / {self.sample_rate}); filter j rises (k - b[j]) / "
                           "(b[j+1] - b[j]) on b[j] <= k < b[j+1] and falls (b[j+2] - k) / "
                           "(b[j+2] - b[j+1]) on b[j+1] <= k < b[j+2] "
                           "(python_speech_features 0.6 get_filterbanks)",
            "log": "e = filter energy; e = 2.220446e-16 where e == 0; "
                   f"feature = ln(e + {LOG_EPS:g})",
            "reference_code": "training/data/audio.py FbankFrontend (EdgeML process_google.py)",
        }
