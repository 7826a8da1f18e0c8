"""Google-12 from the layout of the official Speech Commands v0.02 **test-set** archive.

``speech_commands_test_set_v0.02.tar.gz`` (4,890 one-second 16 kHz clips) is the fixed 12-class set
every Google-12 result is reported on. Its layout is one folder per class, taken as it is:
``_silence_``, ``_unknown_`` and the 10 words yes, no, up, down, left, right, on, off, stop, go
(class ids in that order, as `training.tasks.speech.Google12`).

Two uses:

* ``zoo eval RUN --data-dir <test-set archive or folder>`` on a ``google12`` run scores it on
  every clip of the layout (`load_layout`; called through ``Google12.evaluation_split``).
* The task ``google12_testset`` splits the layout **by speaker** into train / validation / test,
  so that a keyword model can be trained where the 2.3 GB training archive is not available.

Speaker id: the 8 hex digits before ``_nohash_`` (``yes/1b4c9b89_nohash_0.wav``,
``_unknown_/bed_1b4c9b89_nohash_0.wav.wav``); a ``_silence_`` clip is its own speaker, named by
its file name without ``.wav`` (``_silence_/1024.wav`` -> ``1024``).

Split rule: ``bucket = int(md5(speaker id).hexdigest(), 16) % 100``; validation if
``bucket < validation_percentage`` (15), test if ``bucket < validation_percentage +
testing_percentage`` (15 + 15), else training. Not TF's ``which_set`` (sha1 of the speaker id):
the official test set *is* the speakers that rule sends to "test" (their sha1 percentage is in
[10, 20)), so it cannot split them again; and not sha256, whose parity chose part A of the shared
archive. On part A (2,286 clips, 114 speakers + 202 silence clips) the counts are in
``docs/kws.md``.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np

from training.data.audio import FbankFrontend, pad_to, read_wav
from training.data.cache import cache_key, cached_arrays
from training.data.errors import DataError
from training.data.sources import Archive, DatasetSpec, Located, fingerprint, locate
from training.tasks.base import Normalization, Split, Task, TaskData, register_task
from training.tasks.speech import SILENCE, SPLITS, UNKNOWN, WORDS10, SpeechTask

TESTSET_SPEC = DatasetSpec(
    key="speech_commands_test_set_v0.02", title="Speech Commands v0.02 test set",
    marker=SILENCE, folders=("speech_commands_test_set_v0.02",),
    archives=(Archive("speech_commands_test_set_v0.02.tar.gz",
                      "http://download.tensorflow.org/data/speech_commands_test_set_v0.02.tar.gz",
                      sha256=None),),
    homepage="https://arxiv.org/abs/1804.03209")

CLASSES = (SILENCE, UNKNOWN, *WORDS10)
_SPEAKER = re.compile(r"([0-9a-f]{8})_nohash_\d+\.wav(\.wav)?$")


def speaker_of(rel: str) -> str:
    """Speaker id of a clip path ``class/file`` of the test-set layout (see the module doc).

    Raises:
        DataError: a word or ``_unknown_`` clip whose name has no ``<8 hex>_nohash_<n>.wav``.
    """
    folder, name = rel.split("/", 1)
    if folder == SILENCE:
        return name[:-len(".wav")]
    match = _SPEAKER.search(name)
    if match is None:
        raise DataError(f"{rel}: file name has no speaker id (expected <8 hex digits>_nohash_<n>.wav)")
    return match.group(1)


def which_set(speaker: str, validation_percentage: float, testing_percentage: float) -> str:
    """"train", "val" or "test" for a speaker id: ``int(md5(id), 16) % 100`` against the cut-offs."""
    bucket = int(hashlib.md5(speaker.encode()).hexdigest(), 16) % 100
    if bucket < validation_percentage:
        return "val"
    if bucket < validation_percentage + testing_percentage:
        return "test"
    return "train"


def index_layout(folder: Path) -> list[str]:
    """Sorted ``class/file.wav`` paths of the layout; every class folder must hold clips.

    Raises:
        DataError: a class folder missing or empty, or a folder of wavs that is not a class
            (never dropped silently).
    """
    missing = [c for c in CLASSES if not any((folder / c).glob("*.wav"))]
    if missing:
        raise DataError(f"{folder}: no clips in the class folder(s) {', '.join(missing)} "
                        f"(the test-set layout has the 12 folders {', '.join(CLASSES)})")
    extra = sorted({p.parent.name for p in folder.glob("*/*.wav")} - set(CLASSES))
    if extra:
        raise DataError(f"{folder}: folder(s) {', '.join(extra)} are not Google-12 classes "
                        f"(expected only {', '.join(CLASSES)})")
    return sorted(p.relative_to(folder).as_posix() for c in CLASSES for p in (folder / c).glob("*.wav"))


def _source_fingerprint(located: Located):
    if located.is_archive:
        return located.archive_fingerprint()
    files = sorted(located.path.glob("*/*.wav"))
    return fingerprint(files, located.path)


def load_layout(data_dir, frontend: FbankFrontend, pad: str = "end", *, download: bool = True
                ) -> tuple[dict[str, np.ndarray], str]:
    """Features of every clip of a test-set layout (cached): ``x``, ``y``, ``files``, ``speakers``.

    Args:
        data_dir: the layout's folder, a folder holding it, or its ``.tar.gz`` / ``.zip``.
        frontend: the feature front end (the run's).
        pad: where a clip shorter than 1 s is zero-padded ("end" or "front").
        download: whether a missing official archive may be downloaded.

    Returns:
        ``(arrays, source)``; ``arrays["y"]`` are class ids in the order of `CLASSES`.
    """
    located = locate(TESTSET_SPEC, data_dir, download=download)
    key = cache_key(dataset=TESTSET_SPEC.key, source=_source_fingerprint(located),
                    frontend=frontend.settings(), pad=pad)

    def compute():
        folder = located.folder()
        rels = index_layout(folder)
        speakers = [speaker_of(r) for r in rels]  # checks every name before featurising
        waves = np.stack([pad_to(read_wav(folder / r, rate=frontend.sample_rate,
                                          max_samples=frontend.clip_samples),
                                 frontend.clip_samples, pad) for r in rels])
        y = np.array([CLASSES.index(r.split("/")[0]) for r in rels], dtype=np.int64)
        return {"x": frontend(waves), "y": y, "files": np.array(rels),
                "speakers": np.array(speakers)}

    arrays, _ = cached_arrays(TESTSET_SPEC.key, key, compute)
    return arrays, located.source


def find_layout(data_dir) -> bool:
    """Whether ``data_dir`` is (or holds) a test-set layout or archive, without downloading."""
    if data_dir is None:
        return False
    path = Path(data_dir)
    if path.is_file():
        return path.name.startswith("speech_commands_test_set")
    return (path / SILENCE).is_dir() or any(
        (path / name / SILENCE).is_dir() for name in TESTSET_SPEC.folders) or any(
        (path / a.filename).is_file() for a in TESTSET_SPEC.archives)


@register_task("google12_testset")
class Google12Testset(SpeechTask):
    """Google-12 trained and scored on the official test-set layout, split by speaker.

    Options: the front end of `SpeechTask` (``nfilt``, ``winlen``, ``winstep``, ``nfft``,
    ``preemph``, ``lowfreq``, ``highfreq``, ``pad``); ``validation_percentage`` 15 and
    ``testing_percentage`` 15 (the speaker split, see the module doc); ``evaluate_on`` "test"
    (``zoo eval`` scores the test speakers of ``--data-dir``) or "all" (every clip, for a layout
    none of whose speakers were trained on, e.g. the other half of the archive).
    """

    description = ("Speech Commands v0.02 official test-set layout (12 classes as its folders), "
                   "split by speaker; log mel filterbank (99 x 32)")
    paper_split = ("by speaker: md5(speaker id) % 100 < 15 validation, < 30 test, else training; "
                   "a _silence_ clip is its own speaker (its file name)")
    class_names = list(CLASSES)
    DEFAULTS = {"pad": "end", **SpeechTask.FRONTEND, "validation_percentage": 15.0,
                "testing_percentage": 15.0, "evaluate_on": "test"}

    def _validate(self):
        o = self._options
        if o["pad"] not in ("end", "front"):
            raise ValueError(f"option pad must be 'end' or 'front', got {o['pad']!r}")
        v, t = o["validation_percentage"], o["testing_percentage"]
        if v < 0 or t < 0 or v + t >= 100:
            raise ValueError("options validation_percentage and testing_percentage must be >= 0 "
                             f"with a sum below 100, got {v} and {t}")
        if o["evaluate_on"] not in ("test", "all"):
            raise ValueError(f"option evaluate_on must be 'test' or 'all', got {o['evaluate_on']!r}")
        self.frontend.filterbank()

    @property
    def augmenting(self) -> bool:
        return False

    def _load(self, data_dir, *, seed: int) -> TaskData:
        o = self._options
        a, source = load_layout(data_dir, self.frontend, o["pad"])
        sets = np.array([which_set(s, o["validation_percentage"], o["testing_percentage"])
                         for s in a["speakers"].tolist()])
        splits, files, counts = {}, {}, {}
        for s in SPLITS:
            m = sets == s
            splits[s] = Split(a["x"][m], a["y"][m])
            files[s] = a["files"][m].tolist()
            counts[s] = {"clips": int(m.sum()),
                         "speakers": len(set(a["speakers"][m].tolist()) - _silence_ids(a, m))}
        if not len(splits["train"]):
            raise DataError(f"{source}: no clip falls in the training split")
        info = {"files": files, "counts": counts}
        return TaskData(splits["train"], splits["val"], splits["test"],
                        Normalization.fit(splits["train"].x), source, info)

    def evaluation_split(self, data_dir, *, seed: int = 0) -> Split:
        """What ``zoo eval`` scores: the test speakers of ``data_dir``, or all its clips."""
        if self._options["evaluate_on"] == "all":
            a, _ = load_layout(data_dir, self.frontend, self._options["pad"])
            return Split(a["x"], a["y"])
        return self.load(data_dir, seed=seed).test


def _silence_ids(a: dict, mask: np.ndarray) -> set[str]:
    return {s for s, f in zip(a["speakers"][mask].tolist(), a["files"][mask].tolist())
            if f.startswith(SILENCE + "/")}
