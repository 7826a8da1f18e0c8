"""Google-30 and Google-12 keyword spotting from Speech Commands v0.01 (v0.02 accepted).

Split: the official ``validation_list.txt`` / ``testing_list.txt``; every other clip is training
(the split rule of the dataset's README). Each clip is zero-padded at the end to 1 s and turned
into a 99 x 32 log mel filterbank (`zoo.training.data.audio.FbankFrontend`, EdgeML's featurisation).

Google-12 follows TensorFlow's ``examples/speech_commands/input_data.py``: classes
``_silence_``, ``_unknown_`` and the 10 words yes, no, up, down, left, right, on, off, stop, go; in
each split, with n clips of the 10 words, ``ceil(n * 10%)`` unknown clips (other words, drawn
without replacement) and ``ceil(n * 10%)`` silence clips (a random 1 s slice of a random
``_background_noise_`` file at a random volume U(0, 1), nothing in the foreground) are added.
The draws use ``split_seed`` (default 59185, TF's RANDOM_SEED) and do not depend on the training
seed, so validation and test sets are the same for every run. See docs/tasks.md for where this
differs from TF.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from zoo.training.data.audio import FbankFrontend, pad_to
from zoo.training.data.cache import cache_key, cached_arrays
from zoo.training.data.errors import DataError
from zoo.training.data.sources import Archive, DatasetSpec, fingerprint, locate
from zoo.training.data.wav import read_wav
from zoo.training.tasks.base import Normalization, Split, Task, TaskData, register_task
from zoo.training.tasks.int_frontend import INT_FEATURES, IntLogMelFrontend
from zoo.training.tasks.speech_layout import SILENCE, UNKNOWN, WORDS10, find_layout, load_layout

_TORCHAUDIO = "torchaudio datasets/speechcommands.py _CHECKSUMS"
SPECS = {
    "v0.01": DatasetSpec(
        key="speech_commands_v0.01", title="Speech Commands v0.01", marker="testing_list.txt",
        folders=("speech_commands_v0.01",),
        archives=(Archive("speech_commands_v0.01.tar.gz",
                          "http://download.tensorflow.org/data/speech_commands_v0.01.tar.gz",
                          sha256="743935421bb51cccdb6bdd152e04c5c70274e935c82119ad7faeec31780d811d",
                          checksum_source=_TORCHAUDIO),),
        homepage="https://arxiv.org/abs/1804.03209"),
    "v0.02": DatasetSpec(
        key="speech_commands_v0.02", title="Speech Commands v0.02", marker="testing_list.txt",
        folders=("speech_commands_v0.02",),
        archives=(Archive("speech_commands_v0.02.tar.gz",
                          "http://download.tensorflow.org/data/speech_commands_v0.02.tar.gz",
                          sha256="af14739ee7dc311471de98f5f9d2c9191b18aedfe957f4a6ff791c709868ff58",
                          size=2428923189,
                          checksum_source="tensorflow_datasets url_checksums/speech_commands.txt; "
                                          + _TORCHAUDIO),),
        homepage="https://arxiv.org/abs/1804.03209"),
}

WORDS30 = ("bed", "bird", "cat", "dog", "down", "eight", "five", "four", "go", "happy", "house",
           "left", "marvin", "nine", "no", "off", "on", "one", "right", "seven", "sheila", "six",
           "stop", "three", "tree", "two", "up", "wow", "yes", "zero")
NOISE_DIR = "_background_noise_"
SPLITS = ("train", "val", "test")
INT16 = (-32768, 32767)


# ----------------------------------------------------------------------------- file index


def _read_list(path: Path, clips: set[str]) -> list[str]:
    if not path.is_file():
        raise DataError(f"{path}: missing (the official split list)")
    out = []
    for i, line in enumerate(path.read_text().splitlines()):
        entry = line.strip()
        if not entry:
            continue
        if entry not in clips:
            raise DataError(f"{path}: line {i + 1}: {entry!r} is not a clip of the dataset")
        out.append(entry)
    return out


def index_clips(folder: Path) -> dict[str, list[str]]:
    """Relative clip paths (``word/file.wav``) per split, from the official lists."""
    clips = sorted(p.relative_to(folder).as_posix() for p in folder.glob("*/*.wav")
                   if not p.parent.name.startswith("_"))
    if not clips:
        raise DataError(f"{folder}: no word/*.wav clips found")
    clip_set = set(clips)
    val = _read_list(folder / "validation_list.txt", clip_set)
    test = _read_list(folder / "testing_list.txt", clip_set)
    both = sorted(set(val) & set(test))
    if both:
        raise DataError(f"{folder / 'validation_list.txt'} and {folder / 'testing_list.txt'} both "
                        f"list {both[0]!r} ({len(both)} clips in both)")
    held = set(val) | set(test)
    return {"train": [c for c in clips if c not in held], "val": val, "test": test}


def _read_clip(folder: Path, rel: str, fe: FbankFrontend, pad: str) -> np.ndarray:
    return pad_to(read_wav(folder / rel, rate=fe.sample_rate, max_samples=fe.clip_samples),
                  fe.clip_samples, pad)


def read_noise(folder: Path, fe: FbankFrontend) -> dict[str, np.ndarray]:
    noise_dir = folder / NOISE_DIR
    files = sorted(noise_dir.glob("*.wav"))
    if not files:
        raise DataError(f"{noise_dir}: no background-noise wavs (needed for silence clips and "
                        "noise mixing)")
    out = {}
    for f in files:
        x = read_wav(f, rate=fe.sample_rate)
        if len(x) <= fe.clip_samples:
            raise DataError(f"{f}: {len(x)} samples, need more than {fe.clip_samples} to cut 1 s slices")
        out[f"{NOISE_DIR}/{f.name}"] = x
    return out


def check_background(options: dict) -> None:
    """The background-mixing options of a speech task: ValueError naming them and what is
    valid (``background_frequency`` in [0, 1], ``background_volume`` >= 0)."""
    frequency, volume = options["background_frequency"], options["background_volume"]
    if not 0 <= frequency <= 1 or not 0 <= volume:
        raise ValueError("options background_frequency must be in [0, 1] and background_volume "
                         f">= 0, got {frequency} and {volume}")


def mix_background(x: np.ndarray, noise: list[np.ndarray], rng: np.random.Generator,
                   frequency: float, volume: float) -> np.ndarray:
    """``x`` (one clip's samples) with background noise, as TF speech_commands mixes it: with
    probability ``frequency``, plus U(0, ``volume``) times a random ``len(x)``-sample slice of a
    random array of ``noise`` (each at least ``len(x)`` long); otherwise ``x`` as it is. No
    noise: ``x``, and nothing drawn."""
    if not noise or rng.uniform() >= frequency:
        return x
    bg = noise[int(rng.integers(len(noise)))]
    off = int(rng.integers(0, len(bg) - len(x))) if len(bg) > len(x) else 0
    return x + rng.uniform(0, volume) * bg[off:off + len(x)]


# ----------------------------------------------------------------------------- task


class SpeechTask(Task):
    """Shared loader for Google-30 / Google-12.

    Options (front end): ``features`` "logmel" (float, as below), "int_logmel" (the integer
    front end of the C app, `zoo.training.tasks.int_frontend`) or "int_logmel_q15" (its cheaper
    dual 16-bit twin, `zoo.training.tasks.int_frontend_q15`; both ignore the options that follow),
    ``nfilt`` 32, ``winlen`` 0.025 s, ``winstep`` 0.01 s, ``nfft`` 512,
    ``preemph`` 0.97, ``lowfreq`` 0, ``highfreq`` 8000, ``pad`` "end" (EdgeML process_g30.py;
    its SRNN script pads at the "front").
    Options (training-time augmentation, TF speech_commands defaults when enabled; training
    split only, drawn from the load seed): ``noise_mixing`` False, ``background_frequency``
    0.8, ``background_volume`` 0.1, ``time_shift_ms`` 0 (TF uses 100).
    ``version``: "v0.01" (default) or "v0.02" (which archive to look for or download).
    """

    FRONTEND = {"nfilt": 32, "winlen": 0.025, "winstep": 0.01, "nfft": 512, "preemph": 0.97,
                "lowfreq": 0.0, "highfreq": 8000.0}
    AUGMENT = {"noise_mixing": False, "background_frequency": 0.8, "background_volume": 0.1,
               "time_shift_ms": 0}
    DEFAULTS = {"version": "v0.01", "pad": "end", "features": "logmel", **FRONTEND, **AUGMENT}
    # One feature frame per 10 ms hop (winstep 0.01 s; the integer front end's HOP of 160
    # samples at 16 kHz); a window is a 1 s clip.
    rows_per_second, window_seconds = 100.0, 1.0

    def _validate(self):
        o = self._options
        if o["version"] not in SPECS:
            raise ValueError(f"option version must be one of {sorted(SPECS)}, got {o['version']!r}")
        if o["pad"] not in ("end", "front"):
            raise ValueError(f"option pad must be 'end' or 'front', got {o['pad']!r}")
        check_background(o)
        if not 0 <= o["time_shift_ms"] < 1000:
            raise ValueError(f"option time_shift_ms must be in [0, 1000), got {o['time_shift_ms']}")
        self.frontend.filterbank()  # validates highfreq

    @property
    def frontend(self) -> FbankFrontend:
        features = self._options.get("features", "logmel")
        if features not in ("logmel", *INT_FEATURES):
            raise ValueError(f"option features must be one of 'logmel', "
                             f"{', '.join(repr(f) for f in INT_FEATURES)}, got {features!r}")
        if features in INT_FEATURES:  # an integer front end of the C app (docs/kws.md)
            return IntLogMelFrontend(features=features)
        return FbankFrontend(**{k: self._options[k] for k in self.FRONTEND})

    @property
    def input_shape(self) -> tuple[int, int]:
        return self.frontend.output_shape

    @property
    def augmenting(self) -> bool:
        return bool(self._options["noise_mixing"] or self._options["time_shift_ms"])

    # -- shared pieces -------------------------------------------------------------------

    def _word_features(self, data_dir):
        """Features of every word clip in the three splits (cached), plus the index."""
        spec = SPECS[self._options["version"]]
        located = locate(spec, data_dir)
        fe, pad = self.frontend, self._options["pad"]
        if located.is_archive:
            fp = located.archive_fingerprint()
        else:
            base = located.path
            files = sorted(p for p in base.glob("*/*.wav") if not p.parent.name.startswith("_"))
            files += [base / "validation_list.txt", base / "testing_list.txt"]
            fp = fingerprint([f for f in files if f.exists()], base)
        key = cache_key(dataset=spec.key, source=fp, frontend=fe.settings(), pad=pad)

        def compute():
            folder = located.folder()
            index = index_clips(folder)
            rels = [r for s in SPLITS for r in index[s]]
            waves = np.stack([_read_clip(folder, r, fe, pad) for r in rels])
            return {"x": fe(waves), "files": np.array(rels),
                    "split": np.concatenate([np.full(len(index[s]), i) for i, s in enumerate(SPLITS)])}

        arrays, hit = cached_arrays(spec.key, key, compute)
        return arrays, located, hit, key

    def _augment_train(self, located, rels: list[str], seed: int) -> np.ndarray:
        """Features of the training clips with TF-style time shift and background mixing."""
        o, fe = self._options, self.frontend
        folder = located.folder()
        noise = list(read_noise(folder, fe).values()) if o["noise_mixing"] else []
        rng = np.random.default_rng([seed, 7])
        shift = int(round(o["time_shift_ms"] * fe.sample_rate / 1000))
        waves = np.empty((len(rels), fe.clip_samples), dtype=np.float64)
        for i, rel in enumerate(rels):
            if rel.startswith(SILENCE):  # silence rows are regenerated by the caller
                waves[i] = 0
                continue
            x = _read_clip(folder, rel, fe, o["pad"]).astype(np.float64)
            if shift:
                amount = int(rng.integers(-shift, shift))  # TF: randint(-ts, ts)
                x = np.roll(x, amount)
                if amount > 0:
                    x[:amount] = 0
                elif amount < 0:
                    x[amount:] = 0
            x = mix_background(x, noise, rng, o["background_frequency"], o["background_volume"])
            waves[i] = np.clip(x, *INT16)
        return fe(waves)


@register_task("google30")
class Google30(SpeechTask):
    description = "Speech Commands v0.01, 30 words, 32-filter log mel filterbank (99 x 32)"
    paper_split = ("official validation_list.txt / testing_list.txt, the rest is training "
                   "(51,088 / 6,798 / 6,835 clips in v0.01); no silence class")
    class_names = list(WORDS30)

    def _load(self, data_dir, *, seed: int) -> TaskData:
        a, located, hit, words_key = self._word_features(data_dir)
        files = a["files"].tolist()
        word = np.array([f.split("/")[0] for f in files])
        keep = np.isin(word, WORDS30)  # v0.02's five extra words are not Google-30 classes
        y = np.searchsorted(np.array(WORDS30), word).astype(np.int64)
        splits, info_files = {}, {}
        for i, s in enumerate(SPLITS):
            m = keep & (a["split"] == i)
            x = a["x"][m]
            if s == "train" and self.augmenting:
                x = self._augment_train(located, [files[j] for j in np.flatnonzero(m)], seed)
            splits[s] = Split(x, y[m])
            info_files[s] = [files[j] for j in np.flatnonzero(m)]
        excluded = sorted(set(word[~keep].tolist()))
        info = {"files": info_files, "excluded_words": excluded, "cache_hit": hit,
                "counts": {s: len(splits[s]) for s in SPLITS}}
        return TaskData(splits["train"], splits["val"], splits["test"],
                        Normalization.fit(splits["train"].x), located.source, info)


@register_task("google12")
class Google12(SpeechTask):
    description = ("Speech Commands v0.01, 10 words + unknown + silence (TF speech_commands "
                   "recipe), log mel filterbank (99 x 32)")
    paper_split = ("official validation/testing lists; per split the 10 words plus ceil(10%) "
                   "unknown and ceil(10%) silence clips (22,246 / 3,081 train / test in the papers)")
    class_names = [SILENCE, UNKNOWN, *WORDS10]
    DEFAULTS = {**SpeechTask.DEFAULTS, "silence_percentage": 10.0, "unknown_percentage": 10.0,
                "split_seed": 59185}

    def _validate(self):
        super()._validate()
        for k in ("silence_percentage", "unknown_percentage"):
            if not 0 <= self._options[k] <= 100:
                raise ValueError(f"option {k} must be in [0, 100], got {self._options[k]}")

    def _silence(self, located, counts: dict[str, int], words_key: str):
        """Silence clips per split: volume U(0, 1) x a random 1 s slice of a random noise file."""
        fe, seed = self.frontend, self._options["split_seed"]
        key = cache_key(words=words_key, counts=counts, seed=seed, frontend=fe.settings())

        def compute():
            noise = read_noise(located.folder(), fe)
            names = sorted(noise)
            out = {}
            for i, s in enumerate(SPLITS):
                rng = np.random.default_rng([seed, 100 + i])
                waves = np.empty((counts[s], fe.clip_samples))
                labels = []
                for j in range(counts[s]):
                    name = names[int(rng.integers(len(names)))]
                    off = int(rng.integers(0, len(noise[name]) - fe.clip_samples))
                    vol = float(rng.uniform(0, 1))
                    waves[j] = np.clip(vol * noise[name][off:off + fe.clip_samples], *INT16)
                    labels.append(f"{SILENCE}:{name}@{off}x{vol:.4f}")
                out[f"x_{s}"] = fe(waves) if counts[s] else np.empty((0, *fe.output_shape), np.float32)
                out[f"files_{s}"] = np.array(labels, dtype=str)
            return out

        arrays, _ = cached_arrays("speech_silence", key, compute)
        return arrays

    def evaluation_split(self, data_dir, *, seed: int = 0) -> Split:
        """What ``zoo eval`` scores: every clip when ``data_dir`` is the official test-set layout
        (``speech_commands_test_set_v0.02``: its ``_silence_`` and ``_unknown_`` folders are the
        classes as they are), else this task's own test split."""
        if find_layout(data_dir):
            a, _ = load_layout(data_dir, self.frontend, self._options["pad"])
            return Split(a["x"], a["y"])
        return self.load(data_dir, seed=seed).test

    def _load(self, data_dir, *, seed: int) -> TaskData:
        o = self._options
        a, located, hit, words_key = self._word_features(data_dir)
        files = a["files"].tolist()
        word = np.array([f.split("/")[0] for f in files])
        wanted = np.isin(word, WORDS10)
        missing = sorted(set(WORDS10) - set(word.tolist()))
        if missing:
            raise DataError(f"{located.source}: no clips of the Google-12 word(s) {', '.join(missing)}")
        word_id = {w: i + 2 for i, w in enumerate(WORDS10)}
        rows, counts, n_silence = {}, {}, {}
        for i, s in enumerate(SPLITS):
            in_split = a["split"] == i
            known = np.flatnonzero(in_split & wanted)
            unknown_pool = np.flatnonzero(in_split & ~wanted)
            n = len(known)
            k_unknown = min(len(unknown_pool), math.ceil(n * o["unknown_percentage"] / 100))
            rng = np.random.default_rng([o["split_seed"], i])
            unknown = np.sort(rng.choice(unknown_pool, size=k_unknown, replace=False))
            rows[s] = (known, unknown)
            n_silence[s] = math.ceil(n * o["silence_percentage"] / 100)
            counts[s] = {"words": n, "unknown": k_unknown, "unknown_available": len(unknown_pool),
                         "silence": n_silence[s]}
        silence = self._silence(located, n_silence, words_key)
        splits, info_files = {}, {}
        for s in SPLITS:
            known, unknown = rows[s]
            idx = np.concatenate([known, unknown]).astype(np.int64)
            x_words = a["x"][idx]
            if s == "train" and self.augmenting:
                x_words = self._augment_train(located, [files[j] for j in idx], seed)
            y = np.concatenate([[word_id[w] for w in word[known]], np.ones(len(unknown)),
                                np.zeros(n_silence[s])]).astype(np.int64)
            splits[s] = Split(np.concatenate([x_words, silence[f"x_{s}"]]), y)
            info_files[s] = [files[j] for j in idx] + silence[f"files_{s}"].tolist()
        info = {"files": info_files, "counts": counts, "cache_hit": hit}
        return TaskData(splits["train"], splits["val"], splits["test"],
                        Normalization.fit(splits["train"].x), located.source, info)
