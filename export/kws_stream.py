"""Streaming keyword spotting, the Python reference of the C app ``kws_app`` (export/c_backend/frontend).

Per 10 ms hop of 16 kHz int16 audio: the integer front end's frame (`zoo.training.tasks.int_frontend`,
or its q15 twin for a model trained on ``int_logmel_q15``),
mapped to the step model's int8 input with integers (`InputMap`), one step of the int8 step model
under TensorFlow Lite Micro (the C backend is bit-exact with it), the head's int8 logits, integer
posteriors (`Posteriors`: a softmax through a 256-entry exp table, uint8 0..255 per class) and
micro_speech's recognizer (`Recognizer`: mean posterior over a window of hops, a threshold, a
suppression time). Every number is an integer, so the C app prints exactly the same lines.

The models were trained on 1 s windows (99 frames) from a zero state, so the state is reset every
``period`` (99) hops. ``instances`` copies of the state run staggered by ``period / instances``
hops (one step each per hop) and the hop's scores are the oldest copy's: with 1, a keyword that
straddles a reset is cut in two; more copies cost one step each per hop.

`read_audio` reads a file as ``kws_app`` does (its C reader, ``frontend/kws_audio.c``): a WAV
file by the zoo's WAV contract (`zoo.training.data.wav`, 16 kHz only), raw int16 otherwise,
decided by the content.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from zoo.export import device_runtime
from zoo.training.data.errors import DataError
from zoo.training.data.wav import read_wav
from zoo.export.card_schema import read_export_card
from zoo.export.tflite_graph import read_graph
from zoo.training.tasks.int_frontend import (FILTERS, FRAME, HOP, InputMap, frames_function,
                                             integer_features)
from zoo.training.tasks.speech_layout import SILENCE, UNKNOWN

MAX_INSTANCES = 8
SAMPLE_RATE = 16000
# Files that start with these are refused rather than read as raw samples (kws_audio.c's list).
OTHER_CONTAINERS = {b"RIFX": "big-endian RIFF (RIFX)", b"RF64": "RF64", b"BW64": "BW64",
                    b"FORM": "AIFF (FORM)", b"fLaC": "FLAC", b"OggS": "Ogg", b"ID3": "MP3 (ID3)",
                    b"riff": "Sony Wave64 (riff)", b".snd": "Sun/NeXT AU (.snd)"}


def read_audio(path) -> np.ndarray:
    """The mono int16 samples ``kws_app`` streams from ``path``, decided by the content as its C
    reader decides: a RIFF/WAVE file through `zoo.training.data.wav.read_wav` at 16 kHz only
    (every accepted format mixed to mono int16, every other refused); a file that starts with
    another container's mark, or is named ``.wav`` in any case without being RIFF/WAVE, is
    refused; anything else is raw little-endian int16 samples (a non-zero, even size).

    Args:
        path: the file.

    Returns:
        ``(n,)`` int16 samples at 16 kHz.

    Raises:
        DataError: one line naming the file, what was found and what is accepted.

    Example:

    ```python
    samples = read_audio("recording.wav")
    logits, posteriors, detections = StreamReference(export_dir).run(samples, Recognizer())
    ```
    """
    path = Path(path)
    if path.is_dir():
        raise DataError(f"{path}: a folder, not an audio file")
    try:
        blob = path.read_bytes()
    except OSError as exc:
        raise DataError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if blob[:4] == b"RIFF":
        return read_wav(path, rate=SAMPLE_RATE)
    other = next((name for mark, name in OTHER_CONTAINERS.items() if blob.startswith(mark)), None)
    if other:
        raise DataError(f"{path}: {other}, not RIFF/WAVE; accepted: RIFF/WAVE, or raw 16 kHz "
                        "int16 samples")
    if path.suffix.lower() == ".wav" and blob:
        raise DataError(f"{path}: named .wav but not a RIFF/WAVE file (no RIFF/WAVE header); raw "
                        "int16 samples need a name that does not end in .wav")
    if not blob:
        raise DataError(f"{path}: an empty file: no samples")
    if len(blob) % 2:
        raise DataError(f"{path}: {len(blob)} bytes is not a whole number of raw int16 samples "
                        "(2 bytes each)")
    return np.frombuffer(blob, "<i2").astype(np.int16)


def stream_frames(samples: np.ndarray):
    """int16 frames (T, 400) of a stream and their previous samples (T,): a frame every 160
    samples once 400 have arrived, as ``kws_stream_push``; the first frame's previous sample is 0."""
    x = np.asarray(samples, np.int64).reshape(-1)
    count = 0 if len(x) < FRAME else 1 + (len(x) - FRAME) // HOP
    starts = np.arange(count) * HOP
    frames = x[starts[:, None] + np.arange(FRAME)[None, :]] if count else np.zeros((0, FRAME), np.int64)
    prev = np.where(starts > 0, x[np.maximum(starts - 1, 0)], 0)
    return frames, prev


def stream_log_mel_q8(samples: np.ndarray, batch: int = 512,
                      features: str = "int_logmel") -> np.ndarray:
    """int16 ``L`` (T, 32) of a stream by the integer front end called ``features``."""
    frames, prev = stream_frames(samples)
    frames_log_mel_q8 = frames_function(features)
    out = [frames_log_mel_q8(frames[i:i + batch], prev[i:i + batch])
           for i in range(0, len(frames), batch)]
    return np.concatenate(out) if out else np.zeros((0, FILTERS), np.int16)


@dataclasses.dataclass(frozen=True)
class Posteriors:
    """uint8 posteriors from int8 logits: ``e_c = exp_table[max - l_c]`` (Q16 of
    ``exp(-scale (max - l_c))``), ``p_c = (255 e_c + sum / 2) // sum``."""

    exp_table: np.ndarray

    @classmethod
    def fit(cls, logit_scale: float) -> "Posteriors":
        d = np.arange(256, dtype=np.float64)
        return cls(np.round(np.exp(-float(logit_scale) * d) * 65535).astype(np.int64))

    def __call__(self, logits: np.ndarray) -> np.ndarray:
        lg = logits.astype(np.int64)
        if lg.size == 0:  # no hop yet (a stream shorter than one frame)
            return np.zeros(lg.shape, np.uint8)
        e = self.exp_table[lg.max(axis=-1, keepdims=True) - lg]
        total = e.sum(axis=-1, keepdims=True)
        return ((255 * e + total // 2) // total).astype(np.uint8)


# The classes a recognizer never reports, by name: the speech tasks' silence and unknown. A user's
# own words (the audio_folder task) have neither, so every one of them can be detected.
NOT_KEYWORDS = (SILENCE, UNKNOWN)


def ignored_classes(class_names) -> tuple[int, ...]:
    """The indices of ``class_names`` that a `Recognizer` skips (`NOT_KEYWORDS`); ``kws_app``
    gets the same set as its ``kws_ignored_class`` table."""
    return tuple(i for i, name in enumerate(class_names) if name in NOT_KEYWORDS)


@dataclasses.dataclass(frozen=True)
class Recognizer:
    """micro_speech's RecognizeCommands in hops: the mean (integer division) of the last
    ``window`` posteriors per class; the top class is reported when its mean is over
    ``threshold`` (of 255) and it is not ``ignore`` (silence, unknown: the Google-12 layout's
    classes 0 and 1 by default; `StreamReference.recognizer` takes them from the model's class
    names) and either differs from the last reported class or ``suppression`` hops have passed
    since that report. The first report needs ``minimum_count`` hops of history."""

    window: int = 50
    threshold: int = 160
    suppression: int = 100
    minimum_count: int = 5
    ignore: tuple[int, ...] = (0, 1)

    def run(self, posteriors: np.ndarray) -> list[tuple[int, int, int]]:
        """``(hop, class, mean score)`` of every detection."""
        out, last_class, last_hop = [], -1, None
        csum = np.concatenate([np.zeros((1, posteriors.shape[1]), np.int64),
                               np.cumsum(posteriors.astype(np.int64), axis=0)])
        for t in range(len(posteriors)):
            count = min(t + 1, self.window)
            if count < self.minimum_count:
                continue
            mean = (csum[t + 1] - csum[t + 1 - count]) // count
            top = int(np.argmax(mean))
            if mean[top] <= self.threshold or top in self.ignore:
                continue
            if top != last_class or last_hop is None or t - last_hop > self.suppression:
                out.append((t, top, int(mean[top])))
                last_class, last_hop = top, t
        return out


class StreamReference:
    """The streaming pipeline of one int8 step export (its card, step.tflite, head.tflite,
    normalization.json) under TensorFlow Lite Micro."""

    def __init__(self, export_dir: Path, instances: int = 1, period: int = 99):
        self.export_dir = Path(export_dir)
        card = read_export_card(str(self.export_dir))
        self.model = device_runtime.StepModel(str(self.export_dir), card, "tflite-micro", 1)
        if not 1 <= instances <= MAX_INSTANCES or period < instances:
            raise ValueError(f"instances must be in 1..{MAX_INSTANCES} and at most period "
                             f"({period}); got {instances}")
        self.input_map = input_map(self.export_dir, card)
        self.features = integer_features(card.frontend.features if card.frontend else None)
        self.posteriors = Posteriors.fit(self.model.lo_quant[0])
        self.classes = int(np.prod(self.model.head.output_quant(0)[2]))
        self.class_names = list(card.class_names or [])
        self.instances, self.period = int(instances), int(period)

    def recognizer(self, **settings) -> Recognizer:
        """A `Recognizer` (``settings``: its window, threshold...) that skips this model's
        silence and unknown classes, found by name, as ``kws_app`` does."""
        return Recognizer(ignore=ignored_classes(self.class_names), **settings)

    def offsets(self) -> list[int]:
        """The hop at which each instance first resets: ``k * period // instances``."""
        return [k * self.period // self.instances for k in range(self.instances)]

    def logits(self, q8: np.ndarray) -> np.ndarray:
        """int8 logits (T, classes) per frame of ``q8`` (T, 32): every instance steps; the
        reported one is the oldest (the most hops since its reset; the first on ties)."""
        xq = self.input_map(q8)
        offsets = self.offsets()
        states = [self.model.initial_state() for _ in offsets]
        out = []
        for t in range(len(xq)):
            ages = []
            for k, off in enumerate(offsets):
                age = (t - off) % self.period if t >= off else t  # hops since its last reset
                if t >= off and age == 0:
                    states[k] = self.model.initial_state()
                states[k] = self.model.run_step(xq[t].reshape(self.model.x_shape), states[k])
                ages.append(age)
            out.append(self.head_logits(states[int(np.argmax(ages))]))
        return np.asarray(out, np.int8).reshape(len(out), self.classes)

    def head_logits(self, h: np.ndarray) -> np.ndarray:
        """The head's int8 logits on state ``h`` (`device_runtime.StepModel.head_raw`:
        requantized into the head's input quantization when it differs, as
        `zoo.export.c_backend.check.reference` and the C code do)."""
        return self.model.head_raw(h).reshape(-1)

    def run(self, samples: np.ndarray, recognizer: Recognizer):
        """(int8 logits (T, C), uint8 posteriors (T, C), detections) of a stream of int16
        samples; T = 0 for fewer samples than a frame (400), as ``kws_app`` prints no hop."""
        logits = self.logits(stream_log_mel_q8(samples, features=self.features))
        post = self.posteriors(logits)
        return logits, post, recognizer.run(post)


def input_map(export_dir: Path, card=None) -> InputMap:
    """The export's `InputMap`: its normalization and its step model's input quantization
    (``card``: the export's `ModelCard`, when the caller has read it)."""
    export_dir = Path(export_dir)
    card = card or read_export_card(str(export_dir))
    norm = json.loads((export_dir / (card.normalization or "normalization.json")).read_text())
    graph = read_graph((export_dir / card.files.step).read_bytes())
    x = graph.tensor(graph.inputs[card.step_io.x])
    return InputMap.fit(norm["mean"], norm["std"], float(x.scale), int(x.zero_point))

