"""The official Speech Commands v0.02 **test-set** layout: its 12 class folders read as they are.

``speech_commands_test_set_v0.02`` holds one folder per class: ``_silence_``, ``_unknown_`` and the
10 words yes, no, up, down, left, right, on, off, stop, go (class ids in that order, as
`zoo.training.tasks.speech.Google12`). `load_layout` featurises every clip of it (cached); `speaker_of`
and `which_set` give the speaker split of the task ``google12_testset``
(`zoo.training.tasks.speech_testset`, whose module doc gives the rule), and `find_layout` tells
``Google12.evaluation_split`` whether a ``--data-dir`` is such a layout.

The class names live here, below both task modules, so that neither imports the other.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np

from zoo.training.data.audio import FbankFrontend, pad_to
from zoo.training.data.cache import cache_key, cached_arrays
from zoo.training.data.errors import DataError
from zoo.training.data.sources import Archive, DatasetSpec, Located, fingerprint, locate
from zoo.training.data.wav import read_wav

WORDS10 = ("yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go")
SILENCE, UNKNOWN = "_silence_", "_unknown_"

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
    """Speaker id of a clip path ``class/file`` of the test-set layout (see `zoo.training.tasks.speech_testset`).

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
        waves = _read_clips(folder, rels, frontend, pad)
        y = np.array([CLASSES.index(r.split("/")[0]) for r in rels], dtype=np.int64)
        return {"x": frontend(waves), "y": y, "files": np.array(rels),
                "speakers": np.array(speakers)}

    arrays, _ = cached_arrays(TESTSET_SPEC.key, key, compute)
    return arrays, located.source


def layout_waves(data_dir, rels: list[str], frontend: FbankFrontend, pad: str = "end"
                 ) -> np.ndarray:
    """The samples of clips ``rels`` of a test-set layout (found as `load_layout` finds it, not
    downloaded), each padded to one clip: ``(len(rels), frontend.clip_samples)``."""
    return _read_clips(locate(TESTSET_SPEC, data_dir, download=False).folder(), rels, frontend,
                       pad)


def _read_clips(folder: Path, rels: list[str], frontend: FbankFrontend, pad: str) -> np.ndarray:
    return np.stack([pad_to(read_wav(folder / r, rate=frontend.sample_rate,
                                     max_samples=frontend.clip_samples),
                            frontend.clip_samples, pad) for r in rels])


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
