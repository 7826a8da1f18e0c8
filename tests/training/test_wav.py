"""The WAV reader contract (zoo.training.data.wav), checked against independent oracles.

Oracles: Python's `wave` module and numpy on the raw bytes for integer PCM; WAV bytes written
here by hand (so the expected samples are the ones written) for float, chunk order and every
refused case; the contract's rules re-derived with Python integers; scipy's `resample_poly` and
a least-squares sine fit for the resampling.
"""

from __future__ import annotations

import math
import struct
import wave
from fractions import Fraction

import numpy as np
import pytest
import soundfile
from scipy.signal import resample_poly

from zoo.training.data.errors import DataError
from zoo.training.data.wav import load_wav, read_wav, resample_int16, wav_format

RNG = np.random.default_rng(44)
GUID_TAIL = bytes.fromhex("000000001000800000aa00389b71")


def chunk(cid: bytes, payload: bytes, declared: int | None = None) -> bytes:
    size = len(payload) if declared is None else declared
    return cid + struct.pack("<I", size) + payload + (b"\0" if len(payload) % 2 else b"")


def fmt_chunk(tag=1, channels=1, rate=16000, bits=16, *, sub=None, valid=None, align=None):
    align = channels * bits // 8 if align is None else align
    body = struct.pack("<HHIIHH", tag, channels, rate, rate * align, align, bits)
    if tag == 0xFFFE:
        body += struct.pack("<HHI", 22, bits if valid is None else valid, 0)
        body += struct.pack("<H", sub) + GUID_TAIL
    return chunk(b"fmt ", body)


def riff(*chunks: bytes) -> bytes:
    body = b"WAVE" + b"".join(chunks)
    return b"RIFF" + struct.pack("<I", len(body)) + body


def contract_int(v: int, bits: int) -> int:
    """The contract's integer rule with Python integers: v * 2^(32-b), +32768, floor / 65536."""
    return max(-32768, min(32767, math.floor((v * 2 ** (32 - bits) + 32768) / 65536)))


def contract_float(x: float) -> int:
    return max(-32768, min(32767, math.floor(x * 32768 + 0.5)))


def contract_mix(row) -> int:
    return math.floor((sum(row) + len(row) // 2) / len(row))


# Integer PCM: libsndfile writes the file, `wave` reads its raw bytes, numpy decodes them.
EDGES = {8: [0, 255, 128, 127, 1], 16: [-32768, 32767, 0, -1, 1],
         24: [-2 ** 23, 2 ** 23 - 1, 127, 128, -128, -129, 383, 384],
         32: [-2 ** 31, 2 ** 31 - 1, 32767, 32768, -32768, -32769, 98303, 98304]}


def raw_ints(raw: bytes, bits: int) -> list[int]:
    if bits == 8:
        return [b - 128 for b in raw]
    k = bits // 8
    return [int.from_bytes(raw[i:i + k], "little", signed=True) for i in range(0, len(raw), k)]


@pytest.mark.parametrize("bits", [8, 16, 24, 32])
@pytest.mark.parametrize("channels", [1, 2, 3])
def test_integer_pcm_against_wave(tmp_path, bits, channels):
    hi = 2 ** (bits - 1)
    n = 301
    v = RNG.integers(-hi, hi, size=(n, channels), dtype=np.int64)
    v.flat[:len(EDGES[bits])] = [e - 128 if bits == 8 else e for e in EDGES[bits]]
    path = tmp_path / f"pcm{bits}.wav"
    data = v * 2 ** (32 - bits)  # libsndfile's int32 write is the same left-justified value
    soundfile.write(path, data.astype(np.int32), 22050, subtype="PCM_U8" if bits == 8 else f"PCM_{bits}")
    with wave.open(str(path)) as w:
        assert (w.getsampwidth(), w.getnchannels(), w.getnframes()) == (bits // 8, channels, n)
        ints = np.array(raw_ints(w.readframes(n), bits)).reshape(n, channels)
    np.testing.assert_array_equal(ints, v)  # the file holds what was meant
    want = [contract_mix([contract_int(int(x), bits) for x in row]) for row in ints]
    got = read_wav(path)
    assert got.dtype == np.int16
    np.testing.assert_array_equal(got, want)
    assert wav_format(path).describe() == (f"22050 Hz, {channels} channel{'s' * (channels > 1)}, "
                                           f"{bits}-bit integer PCM, {n} frames")


def test_16_bit_is_exact_and_24_bit_rounds_half_up():
    assert [contract_int(v, 16) for v in (-32768, -1, 0, 32767)] == [-32768, -1, 0, 32767]
    assert [contract_int(v, 24) for v in (127, 128, -128, -129)] == [0, 1, 0, -1]
    assert [contract_int(v, 8) for v in (-128, 127)] == [-32768, 32512]
    assert contract_int(2 ** 31 - 1, 32) == 32767 and contract_mix([-3, 0]) == -1


@pytest.mark.parametrize("bits,code", [(32, "<f4"), (64, "<f8")])
@pytest.mark.parametrize("extensible", [False, True])
def test_float_hand_written(tmp_path, bits, code, extensible):
    x = np.concatenate([RNG.uniform(-1.2, 1.2, 200),
                        [0.5 / 32768, -0.5 / 32768, 1.5 / 32768, -1.5 / 32768, 1.0, -1.0,
                         32767.5 / 32768, -32768.5 / 32768, 7.0, -7.0, 0.0]]).astype(code)
    x2 = np.stack([x, x[::-1]], axis=1)
    fmt = (fmt_chunk(0xFFFE, 2, 44100, bits, sub=3) if extensible
           else fmt_chunk(3, 2, 44100, bits))
    path = tmp_path / "f.wav"
    path.write_bytes(riff(fmt, chunk(b"fact", struct.pack("<I", len(x))), chunk(b"data", x2.tobytes())))
    want = [contract_mix([contract_float(float(a)), contract_float(float(b))]) for a, b in x2]
    np.testing.assert_array_equal(read_wav(path), want)
    assert wav_format(path).is_float and wav_format(path).extensible == extensible


@pytest.mark.parametrize("subtype", ["PCM_U8", "PCM_16", "PCM_24", "PCM_32", "FLOAT", "DOUBLE"])
def test_soundfile_formats_plain_and_extensible_agree(tmp_path, subtype):
    sig = np.stack([np.sin(np.arange(500) / 7), RNG.uniform(-1, 1, 500)], axis=1) * 0.9
    plain, ext = tmp_path / "plain.wav", tmp_path / "ext.wav"
    soundfile.write(plain, sig, 48000, subtype=subtype, format="WAV")
    soundfile.write(ext, sig, 48000, subtype=subtype, format="WAVEX")
    assert struct.unpack_from("<H", ext.read_bytes(), 20)[0] == 0xFFFE
    a, b = read_wav(plain), read_wav(ext)
    np.testing.assert_array_equal(a, b)
    # Every format holds the same signal, within what libsndfile's writer does to a double: it
    # scales by 127 for 8 bits (32767 for 16), up to 0.9 * 256 + 128 steps off for PCM_U8.
    want = np.array([contract_mix([contract_float(p), contract_float(q)]) for p, q in sig])
    assert np.max(np.abs(a.astype(int) - want)) <= (358 if subtype == "PCM_U8" else 1)


def test_shared_speech_clips_read_as_wave_reads_them(shared_data):
    """The Speech Commands features cannot change: every shared 16 kHz 16-bit clip reads to the
    exact int16 samples `wave` gives (the front end is tested on those elsewhere)."""
    clips = sorted((shared_data / "speech_commands_v0.01").rglob("*.wav"))
    assert len(clips) >= 300
    for clip in clips:
        with wave.open(str(clip)) as w:
            want = np.frombuffer(w.readframes(w.getnframes()), "<i2")
        np.testing.assert_array_equal(read_wav(clip, rate=16000), want)


PCM16 = (np.arange(100) * 300 - 15000).astype("<i2")
LIST = chunk(b"LIST", b"INFOISFT" + struct.pack("<I", 5) + b"zoo!\0")


@pytest.mark.parametrize("name,blob,n", [
    ("list_after", riff(fmt_chunk(), chunk(b"data", PCM16.tobytes()), LIST), 100),
    ("data_first", riff(chunk(b"data", PCM16.tobytes()), fmt_chunk()), 100),
    ("odd_chunk_first", riff(chunk(b"junk", b"abc"), fmt_chunk(), chunk(b"data", PCM16.tobytes())), 100),
    ("second_data", riff(fmt_chunk(), chunk(b"data", PCM16[:30].tobytes()),
                         chunk(b"data", PCM16.tobytes())), 30),
    ("declares_less", riff(fmt_chunk(), b"data" + struct.pack("<I", 100) + PCM16.tobytes()), 50),
])
def test_chunks_walked_by_declared_sizes(tmp_path, name, blob, n):
    path = tmp_path / f"{name}.wav"
    path.write_bytes(blob)
    np.testing.assert_array_equal(read_wav(path), PCM16[:n])


def _alaw(tmp_path):
    soundfile.write(tmp_path / "alaw.wav", np.zeros(100), 16000, subtype="ALAW")
    return tmp_path / "alaw.wav"


def _write(blob):
    def make(tmp_path):
        (tmp_path / "x.wav").write_bytes(blob)
        return tmp_path / "x.wav"
    return make


REFUSED = {
    "alaw": (_alaw, r"format tag 0x0006 \(A-law\)"),
    "mulaw": (_write(riff(fmt_chunk(7, bits=8), chunk(b"data", bytes(100)))), r"0x0007 \(mu-law\)"),
    "adpcm": (_write(riff(fmt_chunk(0x11, bits=4, align=256), chunk(b"data", bytes(256)))), "IMA ADPCM"),
    "ext_alaw": (_write(riff(fmt_chunk(0xFFFE, bits=8, sub=6), chunk(b"data", bytes(10)))),
                 "SubFormat 0600"),
    "ext_valid_bits": (_write(riff(fmt_chunk(0xFFFE, bits=24, sub=1, valid=20), chunk(b"data", bytes(30)))),
                       "20 valid bits in 24-bit"),
    "pcm_12_bit": (_write(riff(fmt_chunk(1, bits=12, align=2), chunk(b"data", bytes(10)))), "12-bit integer PCM"),
    "float_16_bit": (_write(riff(fmt_chunk(3, bits=16), chunk(b"data", bytes(10)))), "16-bit IEEE float"),
    "nine_channels": (_write(riff(fmt_chunk(channels=9), chunk(b"data", bytes(18)))), "9 channels"),
    "block_align": (_write(riff(fmt_chunk(channels=2, align=2), chunk(b"data", bytes(8)))), "block align 2"),
    "truncated": (_write(riff(fmt_chunk(), chunk(b"data", PCM16.tobytes()))[:-40]),
                  "truncated: header says 200 bytes of samples, the file holds 160"),
    "streaming_size": (_write(riff(fmt_chunk(), b"data" + struct.pack("<I", 0xFFFFFFFF) + bytes(10))),
                       "truncated: header says 4294967295 bytes"),
    "half_frame": (_write(riff(fmt_chunk(), chunk(b"data", bytes(51)))), "51 bytes, not a whole number of 2-byte"),
    "no_samples": (_write(riff(fmt_chunk(), chunk(b"data", b""))), "no samples"),
    "no_data": (_write(riff(fmt_chunk(), LIST)), "no data chunk"),
    "no_fmt": (_write(riff(chunk(b"data", bytes(10)))), "no fmt chunk"),
    "short_fmt": (_write(riff(chunk(b"fmt ", bytes(14)), chunk(b"data", bytes(10)))), "fmt chunk of 14 bytes"),
    "not_riff": (_write(b"hello, this is text and not audio\n"), "not a RIFF/WAVE file"),
    "rifx": (_write(b"RIFX" + bytes(40)), "a RIFX file"),
    "empty": (_write(b""), "not a RIFF/WAVE file"),
    "nan": (_write(riff(fmt_chunk(3, bits=32), chunk(b"data", np.array([0, 0.5, np.nan], "<f4").tobytes()))),
            r"frame 2 \(channel 0\) is nan"),
    "inf": (_write(riff(fmt_chunk(3, 2, bits=64), chunk(b"data", np.array([0, -np.inf], "<f8").tobytes()))),
            r"frame 0 \(channel 1\) is -inf"),
    "folder": (lambda tmp_path: (tmp_path / "x.wav").mkdir() or tmp_path / "x.wav", "a folder"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_in_one_line_naming_the_file(tmp_path, case):
    make, msg = REFUSED[case]
    path = make(tmp_path)
    before = path.read_bytes() if path.is_file() else None
    # wav_format reads no samples: a NaN is found by the readers only.
    for read in (read_wav, load_wav) + (() if case in ("nan", "inf") else (wav_format,)):
        with pytest.raises(DataError, match=msg) as e:
            read(path)
        text = str(e.value)
        assert text.startswith(f"{path}: ") and "\n" not in text and "accepted:" in text
    assert (path.read_bytes() if path.is_file() else None) == before  # nothing of the user's changed


def test_rate_and_length_limits(tmp_path):
    path = tmp_path / "8k.wav"
    path.write_bytes(riff(fmt_chunk(rate=8000), chunk(b"data", PCM16.tobytes())))
    with pytest.raises(DataError, match=r"8k.wav: found 8000 Hz, expected 16000 Hz"):
        read_wav(path, rate=16000)
    np.testing.assert_array_equal(read_wav(path, rate=8000, max_samples=100), PCM16)
    with pytest.raises(DataError, match="100 samples, longer than the 99 expected"):
        read_wav(path, max_samples=99)


def _sine_fit(y: np.ndarray, freq: float, rate: int) -> tuple[float, float]:
    """(amplitude, rms residual) of the least-squares sine at ``freq`` through ``y``."""
    t = np.arange(len(y)) / rate
    basis = np.stack([np.sin(2 * np.pi * freq * t), np.cos(2 * np.pi * freq * t)], axis=1)
    coef = np.linalg.lstsq(basis, y, rcond=None)[0]
    return float(np.hypot(*coef)), float(np.sqrt(np.mean((y - basis @ coef) ** 2)))


@pytest.mark.parametrize("rate", [8000, 22050, 44100, 48000])
def test_resampling_keeps_frequency_and_amplitude(tmp_path, rate):
    """A 0.5-amplitude sine at 440 Hz / 3 kHz / 7 kHz (below both Nyquists) resampled to 16 kHz:
    the fitted sine keeps its amplitude within 0.2 % and the residual stays within 4 int16 steps
    (a wrong frequency or a phase drift would leave the whole sine in it); scipy's polyphase
    resampler agrees within 0.2 % of full scale (its Kaiser filter's own passband error) away
    from the edges, on the tones below 4 kHz. A 10 kHz tone at 22.05 kHz or more is above 8 kHz: filtered, not aliased."""
    tones = [440.0, 3000.0] + ([7000.0, 10000.0] if rate > 16000 else [])
    for freq in tones:
        x = 0.5 * np.sin(2 * np.pi * freq * np.arange(rate) / rate)
        path = tmp_path / f"{freq:g}.wav"
        soundfile.write(path, x, rate, subtype="PCM_24")
        y = load_wav(path, rate=16000) / 32768
        assert len(y) == 16000
        mid = slice(800, 15200)  # away from the filters' edge effects
        amp, resid = _sine_fit(y[mid], freq, 16000)
        if freq > 8000:
            assert np.max(np.abs(y[mid])) < 2e-3, (rate, freq)
            continue
        assert abs(amp - 0.5) < 1e-3 and resid < 4 / 32768, (rate, freq, amp, resid)
        if freq > 4000:
            continue  # scipy's default filter attenuates near 8 kHz (0.486 at 7 kHz from 48 kHz)
        ratio = Fraction(16000, rate)
        ref = resample_poly(read_wav(path) / 32768, ratio.numerator, ratio.denominator)
        assert np.max(np.abs(y[mid] - ref[mid])) < 2e-3, (rate, freq)


def test_resample_same_rate_is_identity():
    s = RNG.integers(-32768, 32768, 1000).astype(np.int16)
    np.testing.assert_array_equal(resample_int16(s, 16000, 16000), s)
