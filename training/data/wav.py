"""The zoo's WAV reader: one contract for the Python side and the C keyword app (`kws_app`).

Every WAV the zoo reads (Speech Commands clips, a user's own words, `kws_app`'s Python twin) goes
through this module. It is the reference implementation of the contract shared with the C reader
(issue 44 item 1); the C side is tested against it.

Accepted, and only this (everything else is refused by a `DataError` of one line that names the
file, what was found and what is accepted):

* RIFF/WAVE little-endian files. Chunks are walked by their declared sizes (each padded to an
  even length); the first ``fmt `` and the first ``data`` chunk are used, in either order, and
  every other chunk (``LIST``, ``fact``, ``cue ``, ...) is skipped. A ``data`` chunk running past
  the end of the file, or whose size is not a whole number of frames, or that holds 0 frames, is
  refused.
* Format tag 1 (integer PCM) of 8 (unsigned), 16, 24 or 32 bits; tag 3 (IEEE float) of 32 or 64
  bits; tag 0xFFFE (WAVE_FORMAT_EXTENSIBLE) whose SubFormat is PCM or IEEE float, with those same
  depths and valid bits equal to the container's. Block align must be channels * bits / 8.
  A-law, mu-law, ADPCM and every other tag are refused. 1 to 8 channels; float samples finite.

Conversion to int16, bit for bit the same as the C reader:

* integer PCM of b bits, value v (8-bit: the unsigned byte minus 128), left-justified to 32 bits
  ``v32 = v * 2**(32 - b)`` (what libsndfile's int32 read gives): ``s = (v32 + 32768) >> 16``
  (floor), clamped to [-32768, 32767]. 16-bit: s = v; 8-bit: s = 256 v; 24-bit: v / 256 rounded
  half up.
* float x (computed in float64): ``s = clamp(floor(x * 32768 + 0.5), -32768, 32767)``.
* c channels mixed to mono: ``floor((s_1 + ... + s_c + floor(c / 2)) / c)``.

Sample rate: `read_wav` keeps the file's rate (and with ``rate=`` refuses any other, as a device
does: its microphone runs at one rate); `load_wav` resamples to a target rate (training data)
with soxr on the float signal ``s / 32768``, then rounds with the float rule.

Decoding is libsndfile's (`soundfile`); the chunk walk here exists only for what libsndfile
tolerates or refuses differently (a truncated ``data`` chunk is read short, a ``data`` chunk
before ``fmt `` or a second ``data`` chunk fails to open): libsndfile is handed the walk's
``fmt `` chunk and ``data`` bytes as one canonical in-memory file.

Example:

    >>> import numpy as np, soundfile
    >>> soundfile.write("/tmp/tone.wav", 0.5 * np.ones(800), 8000, subtype="PCM_24")
    >>> load_wav("/tmp/tone.wav", rate=16000).shape  # 0.1 s at 8 kHz, resampled to 16 kHz
    (1600,)
    >>> wav_format("/tmp/tone.wav").describe()
    '8000 Hz, 1 channel, 24-bit integer PCM, 800 frames'
"""

from __future__ import annotations

import dataclasses
import io
import struct
from pathlib import Path

import numpy as np
import soundfile
import soxr

from zoo.training.data.errors import DataError

PCM, IEEE_FLOAT, EXTENSIBLE = 0x0001, 0x0003, 0xFFFE
# A WAVE_FORMAT_EXTENSIBLE SubFormat GUID is the 2-byte format tag then this fixed tail
# (KSDATAFORMAT_SUBTYPE_PCM = 00000001-0000-0010-8000-00aa00389b71, IEEE_FLOAT likewise with 3).
GUID_TAIL = bytes.fromhex("000000001000800000aa00389b71")
BITS = {PCM: (8, 16, 24, 32), IEEE_FLOAT: (32, 64)}
MAX_CHANNELS = 8
TAG_NAMES = {0x0002: "Microsoft ADPCM", 0x0006: "A-law", 0x0007: "mu-law",
             0x0011: "IMA ADPCM", 0x0031: "GSM 6.10", 0x0055: "MPEG layer 3"}
ACCEPTED = ("accepted: RIFF/WAVE, integer PCM of 8/16/24/32 bits or IEEE float of 32/64 bits "
            "(plain or WAVE_FORMAT_EXTENSIBLE), 1-8 channels")
INT16_MIN, INT16_MAX = -32768, 32767
# Sample rates a recording can have: below, a damaged header (resampling 400 KB at 1 Hz asks
# for 25 GB); above 384 kHz, the fastest audio interfaces, likewise.
MIN_RATE, MAX_RATE = 1000, 384000


@dataclasses.dataclass(frozen=True)
class WavFormat:
    """What a WAV file's chunks say, once the contract has accepted them.

    Args:
        rate: sample rate in Hz.
        channels: 1 to 8.
        bits: bits per sample (8, 16, 24, 32; float: 32, 64).
        is_float: IEEE float samples (else integer PCM).
        frames: sample frames in the ``data`` chunk (one sample per channel each).
        extensible: the ``fmt `` chunk is WAVE_FORMAT_EXTENSIBLE.
    """

    rate: int
    channels: int
    bits: int
    is_float: bool
    frames: int
    extensible: bool = False

    def describe(self) -> str:
        kind = "float" if self.is_float else "integer PCM"
        ch = "channel" if self.channels == 1 else "channels"
        ext = " (WAVE_FORMAT_EXTENSIBLE)" if self.extensible else ""
        return f"{self.rate} Hz, {self.channels} {ch}, {self.bits}-bit {kind}{ext}, {self.frames} frames"


def _refuse(path, what: str) -> DataError:
    return DataError(f"{path}: {what}; {ACCEPTED}")


def _kind_of(head: bytes, count: int) -> str:
    """What a file that is no WAV looks like, without quoting it: empty, text or binary."""
    if not count:
        return "it is empty"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return "binary data of another format"
    return "it looks like text"


def _walk_chunks(path: Path, f) -> tuple[bytes, int, int, int]:
    """The first ``fmt `` payload and the first ``data`` chunk's (offset, declared size) of an
    open RIFF/WAVE file, and the file's size; refuses what is not RIFF/WAVE or lacks either."""
    head = f.read(12)
    if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
        found = head[:4] if head[:4] in (b"RIFX", b"RF64", b"FORM", b"riff") else None
        # Nothing of the content is shown: the path may be a link to any file of the system.
        what = (f"a {found.decode('latin-1').strip()} file, not RIFF/WAVE" if found else
                f"not a RIFF/WAVE file ({_kind_of(head, len(head))})")
        raise _refuse(path, what)
    size = f.seek(0, io.SEEK_END)
    fmt, data, pos = None, None, 12
    while pos + 8 <= size and (fmt is None or data is None):
        f.seek(pos)
        cid, declared = struct.unpack("<4sI", f.read(8))
        if cid == b"fmt " and fmt is None:
            if pos + 8 + declared > size:
                raise _refuse(path, f"truncated header: the fmt chunk says {declared} bytes, "
                                    f"the file holds {size - pos - 8}")
            fmt = f.read(declared)
        elif cid == b"data" and data is None:
            data = (pos + 8, declared)
        pos += 8 + declared + (declared & 1)  # chunks are padded to an even length
    if data is not None and data[0] + data[1] > size:
        raise _refuse(path, f"truncated: header says {data[1]} bytes of samples, the file "
                            f"holds {size - data[0]}")
    if fmt is None or data is None:
        missing = "fmt" if fmt is None else "data"
        raise _refuse(path, f"no {missing} chunk ({size} bytes walked: truncated or not audio)")
    return fmt, data[0], data[1], size


def _parse_fmt(path: Path, fmt: bytes) -> tuple[int, int, int, int, bool]:
    """(format tag 1 or 3, channels, rate, bits, extensible) of an accepted ``fmt `` payload."""
    if len(fmt) < 16:
        raise _refuse(path, f"fmt chunk of {len(fmt)} bytes, a header needs 16")
    tag, channels, rate, _, block_align, bits = struct.unpack_from("<HHIIHH", fmt)
    extensible = tag == EXTENSIBLE
    if extensible:
        if len(fmt) < 40:
            raise _refuse(path, f"WAVE_FORMAT_EXTENSIBLE fmt chunk of {len(fmt)} bytes, it needs 40")
        valid_bits, guid = struct.unpack_from("<H", fmt, 18)[0], fmt[24:40]
        sub = struct.unpack_from("<H", guid)[0] if guid[2:] == GUID_TAIL else None
        if sub not in BITS:
            raise _refuse(path, f"WAVE_FORMAT_EXTENSIBLE with SubFormat {guid.hex()}, not PCM "
                                "or IEEE float")
        if valid_bits != bits:
            raise _refuse(path, f"WAVE_FORMAT_EXTENSIBLE with {valid_bits} valid bits in "
                                f"{bits}-bit containers (they must be equal)")
        tag = sub
    if tag not in BITS:
        name = TAG_NAMES.get(tag, "not PCM or IEEE float")
        raise _refuse(path, f"format tag {tag:#06x} ({name})")
    kind = "integer PCM" if tag == PCM else "IEEE float"
    if bits not in BITS[tag]:
        raise _refuse(path, f"{bits}-bit {kind}")
    if not 1 <= channels <= MAX_CHANNELS:
        raise _refuse(path, f"{channels} channels")
    if not MIN_RATE <= rate <= MAX_RATE:  # 1 Hz asked soxr for 25 GB; 2^31 Hz gave zeros
        raise _refuse(path, f"a sample rate of {rate} Hz in its header (valid: {MIN_RATE:,} to "
                            f"{MAX_RATE:,} Hz)")
    if block_align != channels * bits // 8:
        raise _refuse(path, f"block align {block_align}, but {channels} channel(s) of {bits} "
                            f"bits make {channels * bits // 8}")
    return tag, channels, rate, bits, extensible


def _open_checked(path) -> tuple[WavFormat, bytes, bytes]:
    """The format, the ``fmt `` payload and the ``data`` bytes of a WAV the contract accepts."""
    path = Path(path)
    if path.is_dir():
        raise _refuse(path, "a folder, not a WAV file")
    try:
        with open(path, "rb") as f:
            fmt, offset, declared, _ = _walk_chunks(path, f)
            tag, channels, rate, bits, extensible = _parse_fmt(path, fmt)
            frame_bytes = channels * bits // 8
            if declared % frame_bytes:
                raise _refuse(path, f"a data chunk of {declared} bytes, not a whole number of "
                                    f"{frame_bytes}-byte frames")
            if declared == 0:
                raise _refuse(path, "no samples (the data chunk holds 0 frames)")
            f.seek(offset)
            data = f.read(declared)
    except OSError as exc:
        raise DataError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    info = WavFormat(rate, channels, bits, tag == IEEE_FLOAT, declared // frame_bytes, extensible)
    return info, fmt, data


def wav_format(path) -> WavFormat:
    """The format of a WAV file the contract accepts, without decoding its samples.

    Args:
        path: the file.

    Returns:
        Its `WavFormat` (rate, channels, bits, float or not, frames).

    Raises:
        DataError: one line naming the file, what was found and what is accepted.
    """
    return _open_checked(path)[0]


def pcm_to_int16(v32: np.ndarray) -> np.ndarray:
    """Integer PCM left-justified to 32 bits (libsndfile's int32 read) -> int16:
    ``clamp((v32 + 32768) >> 16)``, the shift a floor."""
    s = (np.asarray(v32, dtype=np.int64) + 32768) >> 16
    return np.clip(s, INT16_MIN, INT16_MAX).astype(np.int16)


def float_to_int16(x: np.ndarray) -> np.ndarray:
    """Float samples (full scale 1.0) -> int16: ``clamp(floor(x * 32768 + 0.5))``, in float64."""
    s = np.floor(np.asarray(x, dtype=np.float64) * 32768.0 + 0.5)
    return np.clip(s, INT16_MIN, INT16_MAX).astype(np.int16)


def mix_to_mono(s: np.ndarray) -> np.ndarray:
    """``(frames, channels)`` int16 -> ``(frames,)`` int16: ``floor((sum + floor(c / 2)) / c)``."""
    s = np.asarray(s)
    c = s.shape[1]
    if c == 1:
        return s[:, 0].astype(np.int16)
    total = s.astype(np.int64).sum(axis=1) + c // 2
    return (total // c).astype(np.int16)  # numpy's // floors, for negative sums too


def _decode(path: Path, info: WavFormat, fmt: bytes, data: bytes) -> np.ndarray:
    """libsndfile's decoding of the walk's chunks: int32 (integer PCM) or float64 frames."""
    canonical = (b"RIFF" + struct.pack("<I", 4 + 8 + len(fmt) + 8 + len(data)) + b"WAVE"
                 + b"fmt " + struct.pack("<I", len(fmt)) + fmt
                 + b"data" + struct.pack("<I", len(data)) + data)
    dtype = "float64" if info.is_float else "int32"
    try:
        frames, _ = soundfile.read(io.BytesIO(canonical), dtype=dtype, always_2d=True)
    except (soundfile.LibsndfileError, RuntimeError) as exc:
        raise _refuse(path, f"libsndfile cannot decode {info.describe()} ({exc})") from None
    if frames.shape != (info.frames, info.channels):
        raise _refuse(path, f"libsndfile decoded {frames.shape[0]} of {info.frames} frames")
    return frames


def _to_int16(path: Path, info: WavFormat, frames: np.ndarray) -> np.ndarray:
    if not info.is_float:
        return mix_to_mono(pcm_to_int16(frames))
    bad = ~np.isfinite(frames)
    if bad.any():
        frame, channel = map(int, np.argwhere(bad)[0])
        raise _refuse(path, f"frame {frame} (channel {channel}) is {frames[frame, channel]}; "
                            "float samples must be finite")
    return mix_to_mono(float_to_int16(frames))


def read_wav(path, *, rate: int | None = None, max_samples: int | None = None) -> np.ndarray:
    """Read a WAV file as mono int16 samples at its own rate, by the contract above.

    Args:
        path: the file.
        rate: if given, the only rate accepted (a device's rule: `kws_app` and its twin, the
            Speech Commands tasks); a file at another rate is refused naming both.
        max_samples: if given, a file with more frames is refused rather than cropped.

    Returns:
        ``(frames,)`` int16.

    Raises:
        DataError: one line naming the file, what was found and what is accepted.

    Example:

        >>> import numpy as np, soundfile
        >>> soundfile.write("/tmp/st.wav", np.array([[0.5, -0.25]]), 16000, subtype="FLOAT")
        >>> read_wav("/tmp/st.wav", rate=16000)  # (16384 + -8192 + 1) // 2
        array([4096], dtype=int16)
    """
    path = Path(path)
    info, fmt, data = _open_checked(path)
    if rate is not None and info.rate != rate:
        raise DataError(f"{path}: found {info.rate} Hz, expected {rate} Hz ({info.describe()}); "
                        "this reader does not resample")
    if max_samples is not None and info.frames > max_samples:
        raise DataError(f"{path}: {info.frames} samples, longer than the {max_samples} expected "
                        f"({max_samples / info.rate:g} s); not cropping silently")
    return _to_int16(path, info, _decode(path, info, fmt, data))


def resample_int16(s: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    """Resample int16 samples with soxr (its default high quality) on the float signal
    ``s / 32768``, rounded back to int16 by the float rule; the same rate returns ``s``.

    Args:
        s: ``(n,)`` int16 samples.
        from_rate: their rate in Hz.
        to_rate: the wanted rate in Hz.

    Returns:
        ``(round(n * to_rate / from_rate),)`` int16.
    """
    if from_rate == to_rate:
        return np.asarray(s, dtype=np.int16)
    x = np.asarray(s, dtype=np.float64) / 32768.0
    return float_to_int16(soxr.resample(x, from_rate, to_rate))


def load_wav(path, *, rate: int = 16000) -> np.ndarray:
    """Read a WAV file (any rate, any accepted format) as mono int16 at ``rate`` Hz: training
    and evaluation data. `read_wav`, then `resample_int16` when the file's rate differs.

    Args:
        path: the file.
        rate: the rate to return, in Hz (the zoo's speech front ends take 16 kHz).

    Returns:
        ``(frames * rate / file rate,)`` int16.

    Raises:
        DataError: one line naming the file, what was found and what is accepted.
    """
    path = Path(path)
    info, fmt, data = _open_checked(path)
    samples = _to_int16(path, info, _decode(path, info, fmt, data))
    return resample_int16(samples, info.rate, rate)
