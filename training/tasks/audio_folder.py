"""Keyword spotting on the user's own words: one folder of WAV files per class.

The layout of ``keras.utils.audio_dataset_from_directory``::

    DIR/
      yes/  alice_nohash_0.wav  bob_nohash_0.wav ...
      no/   ...
      _background_noise_/  (optional) long recordings of noise, mixed into training clips

Class names are the folder names, sorted (``_background_noise_`` is not a class; a ``_silence_``
or ``_unknown_`` folder is an ordinary class, so a silence class exists only if the user has
one). WAV files are read by `zoo.training.data.wav` (any rate, 8/16/24/32-bit PCM, float,
WAVE_FORMAT_EXTENSIBLE, stereo mixed down), resampled to 16 kHz with soxr, zero-padded at the
end or cut to ``clip_seconds`` (the log says how many were cut: their first ``clip_seconds`` are
kept), and featurised by the integer log-mel front end by default (``features: int_logmel``,
`zoo.training.tasks.int_frontend`), so that ``zoo export RUN --form c`` writes the C keyword app
for the user's own words (docs/kws.md).

Speaker groups: ``speaker_pattern`` (a regular expression with one group, searched in the file
name; default Speech Commands' ``<speaker>_nohash_<n>.wav``); a file it does not match is its
own group (said once in the log). Validation and test hold out whole groups: the groups ordered
by the md5 of their name (no seed: a group keeps its place when the data is copied), the first
``round(val_fraction G)`` to validation and the next ``round(test_fraction G)`` to test (at
least one each when the fraction is above 0 and three groups exist), the rest training.
``val_fold: [k, n]`` (`zoo sweep cv`) holds out every n-th of the sorted non-test groups from
the k-th instead. ``data.info`` names the groups of each split (``train_subjects`` /
``val_subjects`` too, the names `zoo sweep cv` reads).

The classes and the training folder are fixed when a run starts (`options_from_data`, called by
the trainer): they are recorded in the run's config, so ``zoo eval`` and ``zoo export`` rebuild
the same task. ``zoo eval RUN`` scores the held-out test groups of the training folder;
``zoo eval RUN --data-dir TEST`` scores every clip of another folder of the same layout
(`evaluation_split`), refusing a class the run does not know.

Example:

    zoo train --task audio_folder --model sirnn --data-dir my_words/ --out runs/my-words
    zoo eval runs/my-words --data-dir my_test_words/
    zoo export runs/my-words --form c
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
from pathlib import Path

import numpy as np

from zoo.training.data.audio import FbankFrontend
from zoo.training.data.cache import cache_key, cached_arrays
from zoo.training.data.errors import DataError
from zoo.training.data.sources import fingerprint
from zoo.training.data.wav import load_wav, wav_format
from zoo.training.tasks.base import (Normalization, Split, Task, TaskData, check_fold,
                                     check_fraction, register_task)
from zoo.training.tasks.int_frontend import IntLogMelFrontend
from zoo.training.tasks.speech import INT16, SpeechTask, check_background, mix_background

_log = logging.getLogger(__name__)

RATE = 16000
NOISE_DIR = "_background_noise_"
SPEECH_COMMANDS_SPEAKER = r"^(.+?)_nohash_"  # Speech Commands: <speaker>_nohash_<n>.wav
SPLITS = ("train", "val", "test")


def is_wav(path: Path) -> bool:
    return path.is_file() and path.suffix.lower() == ".wav" and not path.name.startswith(".")


def class_folders(folder: Path) -> list[Path]:
    """The class folders of a user layout, sorted by name (``_background_noise_`` and hidden
    folders are not classes).

    Raises:
        DataError: ``folder`` is missing or not a folder, or holds no class folder.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"{folder}: not a folder (audio_folder takes a folder with one subfolder "
                        "of WAV files per class)")
    classes = sorted(p for p in folder.iterdir()
                     if p.is_dir() and p.name != NOISE_DIR and not p.name.startswith("."))
    if not classes:
        raise DataError(f"{folder}: no class folders (expected one subfolder of WAV files per "
                        "class, e.g. yes/*.wav, no/*.wav)")
    return classes


def index_folder(folder: Path, classes: list[str] | None = None) -> tuple[list[str], list[str]]:
    """``(clips, class names)``: the sorted ``class/.../file.wav`` paths of a user layout.

    Args:
        folder: the layout.
        classes: the classes a run knows; a folder of another class is refused (evaluation),
            a known class may be missing. None: the folders found are the classes (training),
            each must hold at least two clips.

    Raises:
        DataError: one line naming the folder at fault.
    """
    found = class_folders(folder)
    names = [p.name for p in found]
    if classes is not None:
        unknown = sorted(set(names) - set(classes))
        if unknown:
            raise DataError(f"{folder / unknown[0]}: class {unknown[0]!r} is not one the run "
                            f"knows ({', '.join(classes)})")
    clips, skipped = [], []
    for path in found:
        files = sorted(path.rglob("*"))
        named = [f for f in files if f.is_dir() and f.suffix.lower() == ".wav"]
        if named:  # tasks.md: refused, not skipped (a clip the user meant to give)
            raise DataError(f"{named[0]}: a folder named like a WAV file; a clip must be a WAV "
                            "file (rename the folder, or move the clip out of it)")
        wavs = [f for f in files if is_wav(f)]
        skipped += [f for f in files if f.is_file() and not is_wav(f) and not f.name.startswith(".")]
        if not wavs:
            raise DataError(f"{path}: class folder with no WAV files")
        if classes is None and len(wavs) < 2:
            raise DataError(f"{path}: class {path.name!r} has {len(wavs)} clip; a class needs at "
                            "least two (one to train on, one to check)")
        clips += [f.relative_to(folder).as_posix() for f in wavs]
    if skipped:
        _log.warning("%s: %d file(s) that are not .wav ignored, e.g. %s", folder, len(skipped),
                     skipped[0])
    return clips, (names if classes is None else list(classes))


def speaker_groups(clips: list[str], pattern: str) -> list[str]:
    """The speaker group of each clip: ``pattern``'s first group in the file name; a clip whose
    name it does not match is its own group (``class/file``), said once in the log."""
    regex = re.compile(pattern)
    groups, unmatched = [], []
    for rel in clips:
        match = regex.search(rel.rsplit("/", 1)[-1])
        if match is None or not match.group(1):
            unmatched.append(rel)
            groups.append(rel)
        else:
            groups.append(match.group(1))
    if unmatched:
        _log.warning("%d of %d file names do not match speaker_pattern %r (e.g. %s): each is its "
                     "own speaker group", len(unmatched), len(clips), pattern, unmatched[0])
    return groups


def split_groups(groups: list[str], val_fraction: float, test_fraction: float,
                 val_fold: list | None) -> dict[str, list[str]]:
    """Groups per split (see the module doc): md5 order, validation first, then test."""
    order = sorted(set(groups), key=lambda g: (hashlib.md5(g.encode()).hexdigest(), g))
    n = len(order)

    def share(fraction: float) -> int:
        return 0 if fraction <= 0 else max(1, round(fraction * n)) if n >= 3 else 0

    n_val, n_test = share(val_fraction), share(test_fraction)
    val, test, train = order[:n_val], order[n_val:n_val + n_test], order[n_val + n_test:]
    if val_fold is not None:
        rest = sorted(val + train)
        k, folds = val_fold
        if folds > len(rest):
            raise DataError(f"val_fold {list(val_fold)}: {len(rest)} speaker groups outside the "
                            f"test split, fewer than {folds} folds")
        val = rest[k::folds]
        train = [g for g in rest if g not in set(val)]
    if not train:
        raise DataError(f"{n} speaker group(s): none left for training after validation and "
                        "test (lower val_fraction / test_fraction, or add speakers)")
    if n < 3 and (val_fraction > 0 or test_fraction > 0) and val_fold is None:
        _log.warning("%d speaker group(s) %s: fewer than 3, so no validation split (no early "
                     "stopping) and no test split; score a test folder with zoo eval RUN "
                     "--data-dir DIR, or add speakers (speaker_pattern names them)", n, order)
    return {"train": sorted(train), "val": sorted(val), "test": sorted(test)}


def fit_clip(x: np.ndarray, samples: int) -> tuple[np.ndarray, bool]:
    """``x`` zero-padded at the end or cut to ``samples`` (its start kept); whether it was cut."""
    if len(x) >= samples:
        return x[:samples], len(x) > samples
    return np.concatenate([x, np.zeros(samples - len(x), x.dtype)]), False


def _resolved(data_dir) -> Path:
    if data_dir is None:
        raise DataError("task audio_folder needs --data-dir DIR: a folder with one subfolder of "
                        "WAV files per class")
    return Path(data_dir).expanduser().resolve()


def _check_pattern(pattern) -> None:
    try:
        groups = re.compile(pattern).groups if isinstance(pattern, str) else 0
    except re.error as err:
        raise ValueError(f"option speaker_pattern {pattern!r} is not a regular expression "
                         f"({err})") from None
    if groups < 1:
        raise ValueError(f"option speaker_pattern must be a regular expression with a group "
                         f"(the speaker), e.g. {SPEECH_COMMANDS_SPEAKER!r}; got {pattern!r}")


@register_task("audio_folder")
class AudioFolder(Task):
    """The user's spoken words, one folder of WAV files per class (the module doc).

    Options:
        features: "int_logmel" (default: the C keyword app's integer front end) or "logmel"
            (the float front end, `FbankFrontend`; ``nfilt`` ... ``highfreq`` as for google12).
        clip_seconds: every clip padded at the end or cut to this length (default 1.0).
        speaker_pattern: regular expression whose first group, searched in a file name, is its
            speaker group (default Speech Commands' ``<speaker>_nohash_<n>.wav``).
        val_fraction, test_fraction: shares of the speaker groups held out (default 0.1 each).
        val_fold: ``[k, n]``: fold k of n of the non-test groups as validation (`zoo sweep cv`).
        noise_mixing: "auto" (default: when ``_background_noise_`` holds WAV files), true or
            false: TF speech_commands' mixing of the training clips, ``background_frequency``
            0.8 and ``background_volume`` 0.1, drawn once per load from the load seed.
        classes: the class names (default: the sorted class folders of ``--data-dir``, fixed
            when a run starts).
        train_folder: the folder the run trained on (fixed when a run starts).
    """

    description = ("your own words: one folder of WAV files per class (any rate and format, "
                   "resampled to 16 kHz), split by speaker; integer log mel (99 x 32)")
    paper_split = ("by speaker group (speaker_pattern): md5 order, val_fraction then "
                   "test_fraction of the groups held out")
    DEFAULTS = {"features": "int_logmel", **SpeechTask.FRONTEND, "clip_seconds": 1.0,
                "speaker_pattern": SPEECH_COMMANDS_SPEAKER, "val_fraction": 0.1,
                "test_fraction": 0.1, "val_fold": None, "noise_mixing": "auto",
                "background_frequency": 0.8, "background_volume": 0.1, "classes": None,
                "train_folder": None}

    def _validate(self):
        o = self._options
        if o["features"] not in ("int_logmel", "logmel"):
            raise ValueError(f"option features must be 'int_logmel' or 'logmel', got "
                             f"{o['features']!r}")
        clip = o["clip_seconds"]
        if not isinstance(clip, (int, float)) or isinstance(clip, bool) or not 0.1 <= clip <= 10:
            raise ValueError(f"option clip_seconds must be a number of seconds in [0.1, 10], "
                             f"got {clip!r}")
        _check_pattern(o["speaker_pattern"])
        for k in ("val_fraction", "test_fraction"):
            check_fraction(k, o[k])
        if o["val_fraction"] + o["test_fraction"] >= 1:
            raise ValueError("options val_fraction + test_fraction must be below 1, got "
                             f"{o['val_fraction']} + {o['test_fraction']}")
        o["val_fold"] = check_fold("val_fold", o["val_fold"])
        if o["noise_mixing"] not in (True, False, "auto"):
            raise ValueError(f"option noise_mixing must be true, false or auto, got "
                             f"{o['noise_mixing']!r}")
        check_background(o)
        classes = o["classes"]
        if classes is not None and (not isinstance(classes, (list, tuple)) or len(classes) < 2
                                    or not all(isinstance(c, str) and c for c in classes)
                                    or len(set(classes)) != len(classes)):
            raise ValueError(f"option classes must be a list of two or more different class "
                             f"names, got {classes!r}")
        self.frontend.filterbank()  # validates highfreq

    @property
    def clip_samples(self) -> int:
        return int(round(self._options["clip_seconds"] * RATE))

    @property
    def frontend(self):
        samples = self.clip_samples
        if self._options["features"] == "int_logmel":
            frames = 1 if samples <= 400 else 1 + math.ceil((samples - 400) / 160)
            return IntLogMelFrontend(clip_samples=samples, num_frames=frames)
        return FbankFrontend(**{k: self._options[k] for k in SpeechTask.FRONTEND},
                             clip_samples=samples)

    @property
    def input_shape(self) -> tuple[int, int]:
        return self.frontend.output_shape

    @property
    def class_names(self) -> list[str]:
        return list(self._options["classes"] or [])

    def options_from_data(self, data_dir) -> dict:
        """What a run fixes from its data when it starts: the classes (the sorted class folders
        of ``data_dir`` unless given) and the training folder, to record in its config."""
        folder = _resolved(data_dir)
        classes = self._options["classes"] or [p.name for p in class_folders(folder)]
        return {"classes": list(classes), "train_folder": str(folder)}

    # -- reading ---------------------------------------------------------------------------

    def _read_clips(self, folder: Path, clips: list[str]) -> dict[str, np.ndarray]:
        """Featurised clips of ``folder`` (cached by the files' paths, sizes and mtimes): the
        16 kHz int16 samples fitted to the clip length, their features, whether each was cut
        and its file's rate."""
        fe = self.frontend
        key = cache_key(dataset="audio_folder", source=fingerprint([folder / c for c in clips], folder),
                        frontend=fe.settings(), clip_samples=self.clip_samples, files=clips)

        def compute():
            waves = np.empty((len(clips), self.clip_samples), np.int16)
            cut = np.zeros(len(clips), bool)
            rates = np.zeros(len(clips), np.int64)
            for i, rel in enumerate(clips):
                samples, rates[i] = self._read_clip(folder / rel)
                waves[i], cut[i] = fit_clip(samples, self.clip_samples)
            return {"waves": waves, "x": fe(waves), "cut": cut, "rates": rates}

        arrays, _ = cached_arrays("audio_folder", key, compute)
        self._say_read(folder, arrays)
        return arrays

    @staticmethod
    def _read_clip(path: Path) -> tuple[np.ndarray, int]:
        return load_wav(path, rate=RATE), wav_format(path).rate

    def _say_read(self, folder: Path, a: dict) -> None:
        rates = {int(r): int(n) for r, n in zip(*np.unique(a["rates"], return_counts=True))}
        said = ", ".join(f"{n} at {r} Hz" for r, n in rates.items())
        _log.info("%s: %d clips (%s), at 16 kHz, %g s each", folder, len(a["x"]), said,
                  self._options["clip_seconds"])
        if a["cut"].any():
            _log.warning("%s: %d of %d clips were longer than %g s and were cut to their first "
                         "%g s (option clip_seconds)", folder, int(a["cut"].sum()), len(a["cut"]),
                         self._options["clip_seconds"], self._options["clip_seconds"])

    def _noise(self, folder: Path) -> list[np.ndarray]:
        """The ``_background_noise_`` recordings at 16 kHz (as float), each longer than a clip."""
        option = self._options["noise_mixing"]
        files = sorted(f for f in (folder / NOISE_DIR).glob("*") if is_wav(f)) \
            if (folder / NOISE_DIR).is_dir() else []
        if option is False or (option == "auto" and not files):
            return []
        if not files:
            raise DataError(f"{folder / NOISE_DIR}: noise_mixing is on but there are no WAV files "
                            "to mix in")
        noise = []
        for f in files:
            x = load_wav(f, rate=RATE)
            if len(x) <= self.clip_samples:
                raise DataError(f"{f}: {len(x)} samples at 16 kHz; a background-noise recording "
                                f"must be longer than a clip ({self.clip_samples})")
            noise.append(x.astype(np.float64))
        return noise

    # -- splits ----------------------------------------------------------------------------

    def _load(self, data_dir, *, seed: int) -> TaskData:
        o = self._options
        folder = _resolved(data_dir)
        clips, found = index_folder(folder)
        if o["classes"] is not None and found != list(o["classes"]):
            raise DataError(f"{folder}: class folders {', '.join(found)} differ from the run's "
                            f"classes {', '.join(o['classes'])}")
        o["classes"] = found
        a = self._read_clips(folder, clips)
        y = np.array([found.index(c.split("/", 1)[0]) for c in clips], np.int64)
        groups = np.array(speaker_groups(clips, o["speaker_pattern"]))
        parts = split_groups(groups.tolist(), o["val_fraction"], o["test_fraction"], o["val_fold"])
        splits, files = {}, {}
        for s in SPLITS:
            m = np.isin(groups, parts[s])
            x = a["x"][m]
            if s == "train":
                noise = self._noise(folder)
                self._say_noise(folder, noise)
                if noise:
                    x = self._mixed(a["waves"][m], noise, seed)
            splits[s] = Split(x, y[m])
            files[s] = [c for c, keep in zip(clips, m) if keep]
        info = {"files": files, "groups": parts, "train_subjects": parts["train"],
                "val_subjects": parts["val"], "test_subjects": parts["test"],
                "counts": {s: {"clips": len(splits[s]), "groups": len(parts[s])} for s in SPLITS},
                "clips_cut": int(a["cut"].sum())}
        return TaskData(splits["train"], splits["val"], splits["test"],
                        Normalization.fit(splits["train"].x), str(folder), info)

    def _say_noise(self, folder: Path, noise: list) -> None:
        o = self._options
        if noise:
            _log.info("%s: %d %s recording(s) mixed into the training clips (frequency %g, "
                      "volume %g; option noise_mixing)", folder, len(noise), NOISE_DIR,
                      o["background_frequency"], o["background_volume"])
        else:
            why = ("noise_mixing is false" if o["noise_mixing"] is False
                   else f"no {NOISE_DIR} folder of WAV files")
            _log.info("%s: no background noise mixed in (%s)", folder, why)

    def _mixed(self, waves: np.ndarray, noise: list[np.ndarray], seed: int) -> np.ndarray:
        """Features of the training clips with background noise mixed in (TF speech_commands)."""
        o, rng = self._options, np.random.default_rng([seed, 7])
        mixed = np.empty(waves.shape, np.float64)
        for i, w in enumerate(waves):
            x = mix_background(w.astype(np.float64), noise, rng, o["background_frequency"],
                               o["background_volume"])
            mixed[i] = np.clip(x, *INT16)
        return self.frontend(mixed)

    def evaluation_split(self, data_dir, *, seed: int = 0) -> Split:
        """What ``zoo eval`` scores: the held-out test groups of the training folder, or every
        clip of another folder of the same layout (a class the run does not know is refused,
        naming it; a known class may be missing)."""
        folder = _resolved(data_dir)
        if self._options["train_folder"] in (None, str(folder)):
            return self.load(folder, seed=seed).test
        clips, classes = index_folder(folder, self.class_names)
        a = self._read_clips(folder, clips)
        y = np.array([classes.index(c.split("/", 1)[0]) for c in clips], np.int64)
        return Split(a["x"], y)
