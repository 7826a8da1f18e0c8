"""The front end written into the KWS model cards (`FbankFrontend.describe`, the card's
``frontend``) is enough to reimplement it: a from-the-words NumPy version matches FbankFrontend on
real clips."""

import math

import numpy as np

from zoo.training.data.audio import FbankFrontend, pad_to
from zoo.training.data.wav import read_wav


def _from_the_card(x: np.ndarray) -> np.ndarray:
    """Every step as the card states it, written independently of zoo.training.data.audio."""
    x = x.astype(np.float64)
    y = np.concatenate([x[:1], x[1:] - 0.97 * x[:-1]])
    n_frames = 1 + math.ceil((16000 - 400) / 160)
    y = np.concatenate([y, np.zeros((n_frames - 1) * 160 + 400 - len(y))])
    n = np.arange(400)
    window = 0.54 - 0.46 * np.cos(2 * np.pi * n / 399)
    mel = lambda f: 2595 * np.log10(1 + f / 700)
    inv = lambda m: 700 * (10 ** (m / 2595) - 1)
    b = np.floor(513 * inv(np.linspace(mel(0), mel(8000), 34)) / 16000)
    fb = np.zeros((32, 257))
    for j in range(32):
        for k in range(257):
            if b[j] <= k < b[j + 1]:
                fb[j, k] = (k - b[j]) / (b[j + 1] - b[j])
            elif b[j + 1] <= k < b[j + 2]:
                fb[j, k] = (b[j + 2] - k) / (b[j + 2] - b[j + 1])
    out = np.empty((n_frames, 32))
    for t in range(n_frames):
        spec = np.fft.rfft(y[t * 160:t * 160 + 400] * window, 512)
        e = fb @ (np.abs(spec) ** 2 / 512)
        e[e == 0] = 2.220446049250313e-16
        out[t] = np.log(e + 1e-10)
    return out


def test_card_front_end_reimplements_fbank(shared_data):
    FRONTEND = FbankFrontend().describe()
    assert "0.97" in FRONTEND["pre_emphasis"] and "160 samples" in FRONTEND["frames"]
    assert "512-point" in FRONTEND["fft"] and "32 triangular" in FRONTEND["mel_filters"]
    folder = shared_data / "speech_commands_v0.01"
    clips = sorted(folder.glob("yes/*.wav"))[:2] + sorted(folder.glob("down/8d4cdc60*.wav"))
    fe = FbankFrontend()
    for clip in clips:  # the last one is 12,288 samples: zero-padded at the end
        x = pad_to(read_wav(clip), 16000)
        np.testing.assert_allclose(fe(x[None])[0], _from_the_card(x), rtol=1e-5, atol=1e-5)
