"""kws_app's audio input against the zoo's WAV contract (issue 44 item 1): the same files fed to
the C app and to its Python twin (`zoo.export.kws_stream.read_audio` + `StreamReference`) give the
same hops and outputs, or the same refusal.

The expected samples are independent of both readers: every file is encoded here from chosen
integer or float values, those values are converted by the contract's formulas (re-derived below
in NumPy), and the encoding is checked by two decoders that are neither reader: libsndfile
(`soundfile`) and, for plain integer PCM, Python's `wave`. Files written by libsndfile itself
(with its PEAK chunk, WAVE_FORMAT_EXTENSIBLE) are read back by it for their expected values. The
values hit the contract's edges: every 8-bit code, rounding ties of 24 and 32-bit PCM and of
floats, full scale and beyond, mono mixes of negative sums (floor, not truncation)."""

from __future__ import annotations

import shutil
import struct
import subprocess
import wave
from pathlib import Path

import numpy as np
import pytest
import soundfile

from zoo.export.kws_stream import Recognizer, StreamReference, read_audio, stream_log_mel_q8
from zoo.training.data.errors import DataError

pytestmark = pytest.mark.skipif(shutil.which("cc") is None or shutil.which("make") is None,
                                reason="the KWS app builds with the host cc and make")

SIRNN = (Path(__file__).resolve().parents[2]  # an archived tag (not installed), docs/kws.md
         / "models/archive/sirnn.google12_testset/export-step-int8")
RATE, FRAMES = 16000, 8000  # 0.5 s: 48 hops
# A WAVE_FORMAT_EXTENSIBLE SubFormat GUID: the format tag (2 bytes), then this.
GUID_TAIL = bytes.fromhex("0000" "0000" "1000" "800000aa00389b71")


# ------------------------------------------------------------------- the contract, in NumPy
def pcm_int16(v: np.ndarray, bits: int) -> np.ndarray:
    """Integer PCM of ``bits`` (8-bit: the unsigned byte minus 128) -> int16."""
    v32 = v.astype(np.int64) * 2 ** (32 - bits)
    return np.clip((v32 + 32768) // 65536, -32768, 32767)


def float_int16(x: np.ndarray) -> np.ndarray:
    return np.clip(np.floor(x.astype(np.float64) * 32768 + 0.5), -32768, 32767)


def mono(s: np.ndarray) -> np.ndarray:
    """(frames, channels) -> (frames,): floor((sum + floor(c / 2)) / c)."""
    c = s.shape[1]
    return ((s.astype(np.int64).sum(axis=1) + c // 2) // c).astype(np.int16)


# ------------------------------------------------------------------- values and encodings
def pcm_values(bits: int, channels: int, rng) -> np.ndarray:
    """(FRAMES, channels) signed values of ``bits``: noise, the extremes, rounding ties and
    channel pairs whose mono sum is negative and odd."""
    lo, hi = -2 ** (bits - 1), 2 ** (bits - 1) - 1
    v = rng.integers(lo // 8, hi // 8, (FRAMES, channels), dtype=np.int64)
    edges = np.array([lo, hi, 0, -1, 1, lo + 1, hi - 1], np.int64)
    if bits >= 24:  # v / 2^(b-16) exactly half way, both signs
        half = 2 ** (bits - 17)
        edges = np.concatenate([edges, [half, -half, 3 * half, -3 * half, half - 1, -half - 1]])
    if bits == 8:
        edges = np.arange(lo, hi + 1)
    v[:len(edges), 0] = edges
    v[:len(edges), 1:] = edges[::-1, None] if channels > 1 else v[:len(edges), 1:]
    return v


def float_values(channels: int, rng, dtype) -> np.ndarray:
    x = rng.uniform(-0.3, 0.3, (FRAMES, channels)).astype(dtype)
    ties = (np.arange(-6, 6) + 0.5) / 32768
    edges = np.concatenate([ties, [1.0, -1.0, 1.5, -1.5, 32767.5 / 32768, -32768.5 / 32768,
                                   0.5 / 32768, -0.5 / 32768, 0.0]]).astype(dtype)
    x[:len(edges), 0] = edges
    return x


def encode_pcm(v: np.ndarray, bits: int) -> bytes:
    if bits == 8:
        return (v + 128).astype(np.uint8).tobytes()
    u = v.astype(np.int64) % 2 ** bits
    return np.stack([(u >> (8 * k)) & 255 for k in range(bits // 8)], axis=-1).astype(
        np.uint8).tobytes()


def fmt_chunk(tag: int, channels: int, bits: int, rate: int = RATE, align: int | None = None,
              extensible_sub: int | None = None, valid_bits: int | None = None) -> bytes:
    align = channels * bits // 8 if align is None else align
    body = struct.pack("<HHIIHH", tag, channels, rate, rate * align, align, bits)
    if tag == 0xFFFE:
        body += struct.pack("<HHI", 22, bits if valid_bits is None else valid_bits, 0)
        body += struct.pack("<H", extensible_sub) + GUID_TAIL
    return chunk(b"fmt ", body)


def chunk(cid: bytes, payload: bytes, declared: int | None = None) -> bytes:
    size = len(payload) if declared is None else declared
    return cid + struct.pack("<I", size) + payload + (b"\0" if len(payload) % 2 else b"")


def riff(*chunks: bytes, mark: bytes = b"RIFF") -> bytes:
    body = b"WAVE" + b"".join(chunks)
    return mark + struct.pack("<I", len(body)) + body


LIST = chunk(b"LIST", b"INFOISFT" + struct.pack("<I", 13) + b"edge-rnn-zoo\0")  # odd: padded
# A recorder's metadata: 1,949 bytes (odd, padded), read as samples it would add 6 hops to a clip.
BIG_LIST = chunk(b"LIST", b"INFOICMT" + struct.pack("<I", 1937) + bytes(range(256)) * 7
                 + bytes(145))


# ------------------------------------------------------------------- the file set
def accepted_files(folder: Path, clip: np.ndarray) -> dict[str, tuple[Path, np.ndarray]]:
    """name -> (file, the int16 samples the contract gives)."""
    rng = np.random.default_rng(44)
    out = {}

    def add(name, blob, samples):
        (folder / name).write_bytes(blob)
        out[name] = (folder / name, np.asarray(samples, np.int16))

    for bits, channels in ((8, 1), (16, 1), (16, 2), (24, 2), (32, 3), (24, 8)):
        v = pcm_values(bits, channels, rng)
        tag = 0xFFFE if channels == 8 else 1
        add(f"pcm{bits}_{channels}ch.wav", riff(fmt_chunk(tag, channels, bits, extensible_sub=1),
                                                chunk(b"data", encode_pcm(v, bits))),
            mono(pcm_int16(v, bits)))
    for bits, dtype, channels in ((32, "<f4", 1), (64, "<f8", 2), (32, "<f4", 3)):
        x = float_values(channels, rng, dtype)
        tag = 0xFFFE if channels == 3 else 3
        add(f"float{bits}_{channels}ch.wav", riff(fmt_chunk(tag, channels, bits, extensible_sub=3),
                                                  chunk(b"fact", struct.pack("<I", FRAMES)),
                                                  chunk(b"data", x.tobytes())),
            mono(float_int16(x)))
    clip_data = chunk(b"data", clip.astype("<i2").tobytes())
    pcm16 = fmt_chunk(1, 1, 16)
    # issue 44: a trailing LIST chunk read as samples gave 104 hops for 98
    add("clip_list_after_data.wav", riff(pcm16, clip_data, BIG_LIST), clip)
    add("clip_upper.WAV", riff(pcm16, clip_data, BIG_LIST), clip)  # content decides, not the suffix
    add("clip_mixed.Wav", riff(LIST, pcm16, clip_data), clip)
    add("clip_fmt_after_data.wav", riff(LIST, clip_data, chunk(b"junk", b"\1\2\3"), pcm16), clip)
    # issue 44: a data chunk that declares 100 bytes was read to the end of the file (32,000)
    tail = clip.astype("<i2").tobytes()
    add("declares_3200_bytes.wav", riff(pcm16, b"data" + struct.pack("<I", 3200) + tail),
        clip[:1600])
    add("declares_100_bytes.wav", riff(pcm16, b"data" + struct.pack("<I", 100) + tail), clip[:50])
    add("clip.raw", clip.astype("<i2").tobytes(), clip)
    add("clip_no_suffix", clip.astype("<i2").tobytes(), clip)
    for subtype, fmt in (("FLOAT", "WAV"), ("PCM_24", "WAVEX"), ("DOUBLE", "WAVEX")):
        path = folder / f"libsndfile_{fmt}_{subtype}.wav"
        x = float_values(2, rng, np.float64)
        soundfile.write(path, x, RATE, subtype=subtype, format=fmt)
        back_dtype = "int32" if subtype.startswith("PCM") else "float64"
        back, _ = soundfile.read(path, dtype=back_dtype, always_2d=True)
        want = pcm_int16(back, 32) if back_dtype == "int32" else float_int16(back)
        out[path.name] = (path, mono(want))
    return out


def check_encoding(path: Path, samples: np.ndarray) -> None:
    """The file's samples as libsndfile (and `wave`, for plain PCM) decode them, by the
    contract's formulas, are ``samples``: the test's own encoding is right."""
    blob = path.read_bytes()
    if blob[:4] != b"RIFF":
        assert np.array_equal(np.frombuffer(blob, "<i2"), samples)
        return
    if path.name == "clip_fmt_after_data.wav":  # libsndfile and `wave` need fmt before data:
        blob = blob.replace(blob[blob.index(b"fmt "):], b"")  # its data is the clip's own bytes
        assert blob.endswith(b"data" + struct.pack("<I", 2 * len(samples))
                             + samples.astype("<i2").tobytes() + b"junk\3\0\0\0\1\2\3\0")
        return
    info = soundfile.info(path)
    is_float = info.subtype in ("FLOAT", "DOUBLE")
    frames, _ = soundfile.read(path, dtype="float64" if is_float else "int32", always_2d=True)
    got = mono(float_int16(frames) if is_float else pcm_int16(frames, 32))
    assert np.array_equal(got, samples), path.name
    if b"\x01\x00" == blob[20:22] and b"fmt " == blob[12:16]:  # plain PCM first: `wave` reads it
        with wave.open(str(path)) as w:
            raw = w.readframes(w.getnframes())
            width, channels = w.getsampwidth(), w.getnchannels()
        u = np.frombuffer(raw, np.uint8).reshape(-1, width).astype(np.int64)
        v = sum(u[:, k] << (8 * k) for k in range(width))
        v = v - 128 if width == 1 else np.where(v >= 2 ** (8 * width - 1), v - 2 ** (8 * width), v)
        assert np.array_equal(mono(pcm_int16(v.reshape(-1, channels), 8 * width)), samples)


def refused_files(folder: Path, clip: np.ndarray) -> dict[str, tuple[Path, str]]:
    """name -> (file or folder, a word both readers' one-line refusal must hold)."""
    pcm16, data = fmt_chunk(1, 1, 16), chunk(b"data", clip[:800].astype("<i2").tobytes())
    nan = np.zeros(1000, "<f4")
    nan[123] = np.nan
    inf = np.zeros((1000, 2), "<f8")
    inf[7, 1] = -np.inf
    cases = {
        "truncated.wav": (riff(pcm16, b"data" + struct.pack("<I", 32000) + bytes(1600)),
                          "truncated"),
        "half_frame.wav": (riff(fmt_chunk(1, 2, 16), chunk(b"data", bytes(1602))), "whole number"),
        "no_samples.wav": (riff(pcm16, chunk(b"data", b"")), "no samples"),
        "alaw.wav": (riff(fmt_chunk(6, 1, 8), chunk(b"data", bytes(800))), "A-law"),
        "mulaw.wav": (riff(fmt_chunk(7, 1, 8), chunk(b"data", bytes(800))), "mu-law"),
        "extensible_alaw.wav": (riff(fmt_chunk(0xFFFE, 1, 8, extensible_sub=6),
                                     chunk(b"data", bytes(800))), "SubFormat"),
        "extensible_20_of_24_bits.wav": (riff(fmt_chunk(0xFFFE, 1, 24, extensible_sub=1,
                                                        valid_bits=20),
                                              chunk(b"data", bytes(2400))), "valid bits"),
        "pcm12.wav": (riff(fmt_chunk(1, 1, 12, align=2), data), "12-bit"),
        "float16.wav": (riff(fmt_chunk(3, 1, 16), data), "16-bit"),
        "nine_channels.wav": (riff(fmt_chunk(1, 9, 16), chunk(b"data", bytes(9 * 2 * 100))),
                              "9 channels"),
        "block_align.wav": (riff(fmt_chunk(1, 1, 16, align=4), data), "block align"),
        "rate_44100.wav": (riff(fmt_chunk(1, 1, 16, rate=44100), data), "44100 Hz"),
        "nan.wav": (riff(fmt_chunk(3, 1, 32), chunk(b"data", nan.tobytes())), "frame 123"),
        "inf.wav": (riff(fmt_chunk(3, 2, 64), chunk(b"data", inf.tobytes())), "frame 7"),
        "no_fmt.wav": (riff(LIST, data), "no fmt"),
        "no_data.wav": (riff(pcm16, LIST), "no data"),
        "fmt_truncated.wav": (riff(b"fmt " + struct.pack("<I", 16) + bytes(6)), "truncated"),
        "rifx.wav": (riff(pcm16, data, mark=b"RIFX"), "RIFX"),
        "not_riff.wav": (clip.astype("<i2").tobytes(), "RIFF/WAVE"),
        "odd.raw": (clip[:100].astype("<i2").tobytes() + b"\0", "whole number"),
        "empty.raw": (b"", "empty"),
    }
    out = {}
    for name, (blob, word) in cases.items():
        (folder / name).write_bytes(blob)
        out[name] = (folder / name, word)
    for name, fmt, subtype, word in (("alaw_sf.wav", "WAV", "ALAW", "A-law"),
                                     ("adpcm_sf.wav", "WAV", "IMA_ADPCM", "ADPCM"),
                                     ("rf64_sf.wav", "RF64", "PCM_16", "RF64"),
                                     ("aiff_sf.aiff", "AIFF", "PCM_16", "FORM"),
                                     ("w64_sf.w64", "W64", "PCM_16", "Wave64")):
        soundfile.write(folder / name, clip[:1600], RATE, format=fmt, subtype=subtype)
        out[name] = (folder / name, word)
    (folder / "a_folder.wav").mkdir()
    out["a_folder.wav"] = (folder / "a_folder.wav", "folder")
    out["missing.wav"] = (folder / "missing.wav", "missing.wav")
    return out


# ------------------------------------------------------------------- fixtures and runs
@pytest.fixture(scope="module")
def clip(shared_data) -> np.ndarray:
    """A real Speech Commands clip (1 s, 16 kHz, 16-bit mono), read by `wave`."""
    path = shared_data / "speech_commands_v0.01" / "yes"
    files = sorted(path.glob("*.wav"))
    if not files:
        pytest.skip(f"{path}: the shared Speech Commands subset is missing")
    with wave.open(str(files[0])) as w:
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.int16)


@pytest.fixture(scope="module")
def audio_files(tmp_path_factory, clip):
    folder = tmp_path_factory.mktemp("audio")
    return accepted_files(folder, clip), refused_files(folder, clip)


@pytest.fixture(scope="module")
def reference():
    return StreamReference(SIRNN)


def app_lines(app: Path, path: Path, *args: str) -> list[list[str]]:
    done = subprocess.run([str(app), *args, str(path)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and not done.stderr, (path.name, done.stderr)
    return [line.split() for line in done.stdout.splitlines()]


ACCEPTED = ["pcm8_1ch.wav", "pcm16_1ch.wav", "pcm16_2ch.wav", "pcm24_2ch.wav", "pcm32_3ch.wav",
            "pcm24_8ch.wav", "float32_1ch.wav", "float64_2ch.wav", "float32_3ch.wav",
            "clip_list_after_data.wav", "clip_upper.WAV", "clip_mixed.Wav",
            "clip_fmt_after_data.wav", "declares_3200_bytes.wav", "declares_100_bytes.wav",
            "clip.raw", "clip_no_suffix", "libsndfile_WAV_FLOAT.wav",
            "libsndfile_WAVEX_PCM_24.wav", "libsndfile_WAVEX_DOUBLE.wav"]


def test_the_file_set_covers_every_case(audio_files):
    accepted, refused = audio_files
    assert sorted(accepted) == sorted(ACCEPTED) and len(refused) == len(REFUSED)


@pytest.mark.parametrize("name", ACCEPTED)
def test_kws_app_gives_the_hops_and_outputs_of_the_contracts_samples(name, audio_files,
                                                                     kws_sirnn_app, reference):
    path, samples = audio_files[0][name]
    check_encoding(path, samples)
    features = app_lines(kws_sirnn_app, path, "--features")
    ref = stream_log_mel_q8(samples)
    assert len(features) == len(ref) == max(0, 1 + (len(samples) - 400) // 160)
    assert np.array_equal(np.array([ln[2:] for ln in features], int).reshape(ref.shape), ref)
    logits, post, detections = reference.run(samples, Recognizer())
    lines = app_lines(kws_sirnn_app, path)
    frames = [ln for ln in lines if ln[0] == "frame"]
    assert np.array_equal(np.array([ln[3:15] for ln in frames], int).reshape(logits.shape),
                          logits)
    assert np.array_equal(np.array([ln[16:28] for ln in frames], int).reshape(post.shape), post)
    assert [(int(ln[1]), int(ln[2]), int(ln[4])) for ln in lines if ln[0] == "detect"] \
        == detections


@pytest.mark.parametrize("name", ACCEPTED)
def test_the_python_twin_reads_the_contracts_samples(name, audio_files):
    """`read_audio` gives the samples `StreamReference` streams, so with the test above the twin
    and the C app give the same hops and outputs for every file."""
    path, samples = audio_files[0][name]
    assert np.array_equal(read_audio(path), samples)


def test_a_trailing_list_chunk_is_not_read_as_samples(audio_files, kws_sirnn_app):
    # issue 44: 104 hops where the reference gave 98
    path, _ = audio_files[0]["clip_list_after_data.wav"]
    assert len(app_lines(kws_sirnn_app, path, "--features")) == 98


REFUSED = ["truncated.wav", "half_frame.wav", "no_samples.wav", "alaw.wav", "mulaw.wav",
           "extensible_alaw.wav", "extensible_20_of_24_bits.wav", "pcm12.wav", "float16.wav",
           "nine_channels.wav", "block_align.wav", "rate_44100.wav", "nan.wav", "inf.wav",
           "no_fmt.wav", "no_data.wav", "fmt_truncated.wav", "rifx.wav", "not_riff.wav",
           "odd.raw", "empty.raw", "alaw_sf.wav", "adpcm_sf.wav", "rf64_sf.wav", "aiff_sf.aiff",
           "w64_sf.w64", "a_folder.wav", "missing.wav"]


@pytest.mark.parametrize("name", REFUSED)
def test_kws_app_refuses_in_one_line_naming_the_file(name, audio_files, kws_sirnn_app):
    path, word = audio_files[1][name]
    done = subprocess.run([str(kws_sirnn_app), str(path)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and done.stdout == "", (done.returncode, done.stdout[:200])
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"{path}: ") and word in done.stderr, done.stderr


@pytest.mark.parametrize("name", REFUSED)
def test_the_python_twin_refuses_the_same_files_for_the_same_reason(name, audio_files):
    path, word = audio_files[1][name]
    with pytest.raises(DataError) as err:
        read_audio(path)
    message = str(err.value)
    assert len(message.splitlines()) == 1 and message.startswith(f"{path}: ") \
        and word in message, message
