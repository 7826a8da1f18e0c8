"""Google-12 from the layout of the official Speech Commands v0.02 **test-set** archive.

``speech_commands_test_set_v0.02.tar.gz`` (4,890 one-second 16 kHz clips) is the fixed 12-class set
every Google-12 result is reported on. Its layout is one folder per class, taken as it is:
``_silence_``, ``_unknown_`` and the 10 words yes, no, up, down, left, right, on, off, stop, go
(class ids in that order, as `zoo.training.tasks.speech.Google12`).

Two uses:

* ``zoo eval RUN --data-dir <test-set archive or folder>`` on a ``google12`` run scores it on
  every clip of the layout (`zoo.training.tasks.speech_layout.load_layout`; called through
  ``Google12.evaluation_split``).
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

import numpy as np

from zoo.training.data.errors import DataError
from zoo.training.tasks.base import Normalization, Split, Task, TaskData, register_task
from zoo.training.tasks.speech import (INT16, SPLITS, SpeechTask, check_background,
                                   mix_background)
from zoo.training.tasks.speech_layout import (  # noqa: F401  (the layout's names, as before)
    CLASSES, SILENCE, TESTSET_SPEC, UNKNOWN, WORDS10, find_layout, index_layout, layout_waves,
    load_layout, speaker_of, which_set)


@register_task("google12_testset")
class Google12Testset(SpeechTask):
    """Google-12 trained and scored on the official test-set layout, split by speaker.

    Options: the front end of `SpeechTask` (``features``, ``nfilt``, ``winlen``, ``winstep``,
    ``nfft``, ``preemph``, ``lowfreq``, ``highfreq``, ``pad``); ``validation_percentage`` 15 and
    ``testing_percentage`` 15 (the speaker split, see the module doc); ``evaluate_on`` "test"
    (``zoo eval`` scores the test speakers of ``--data-dir``) or "all" (every clip, for a layout
    none of whose speakers were trained on, e.g. the other half of the archive).
    Background-noise mixing of the training split (`SpeechTask`'s options and TF speech_commands'
    defaults): ``noise_mixing`` False, ``background_frequency`` 0.8, ``background_volume`` 0.1.
    The layout has no ``_background_noise_`` folder; its ``_silence_`` clips are slices of those
    files, so the noise is the *training* speakers' ``_silence_`` clips, each scaled to full
    scale (its peak to 32767, as a noise file is played at volume 1). Each training word clip is
    mixed once per load, drawn from the load seed; the silence clips, validation and test are
    untouched.
    """

    description = ("Speech Commands v0.02 official test-set layout (12 classes as its folders), "
                   "split by speaker; log mel filterbank (99 x 32)")
    paper_split = ("by speaker: md5(speaker id) % 100 < 15 validation, < 30 test, else training; "
                   "a _silence_ clip is its own speaker (its file name)")
    class_names = list(CLASSES)
    DEFAULTS = {"pad": "end", "features": "logmel", **SpeechTask.FRONTEND, "validation_percentage": 15.0,
                "testing_percentage": 15.0, "evaluate_on": "test", "noise_mixing": False,
                "background_frequency": 0.8, "background_volume": 0.1}

    def _validate(self):
        o = self._options
        if o["pad"] not in ("end", "front"):
            raise ValueError(f"option pad must be 'end' or 'front', got {o['pad']!r}")
        v, t = o["validation_percentage"], o["testing_percentage"]
        if v < 0 or t < 0 or v + t >= 100:
            raise ValueError("options validation_percentage and testing_percentage must be >= 0 "
                             f"with a sum below 100, got {v} and {t}")
        check_background(o)
        if o["evaluate_on"] not in ("test", "all"):
            raise ValueError(f"option evaluate_on must be 'test' or 'all', got {o['evaluate_on']!r}")
        self.frontend.filterbank()

    @property
    def augmenting(self) -> bool:
        return bool(self._options["noise_mixing"])

    def _load(self, data_dir, *, seed: int) -> TaskData:
        o = self._options
        a, source = load_layout(data_dir, self.frontend, o["pad"])
        sets = np.array([which_set(s, o["validation_percentage"], o["testing_percentage"])
                         for s in a["speakers"].tolist()])
        splits, files, counts = {}, {}, {}
        for s in SPLITS:
            m = sets == s
            x = self._mix_background(data_dir, a, m, seed) if s == "train" and self.augmenting \
                else a["x"][m]
            splits[s] = Split(x, a["y"][m])
            files[s] = a["files"][m].tolist()
            counts[s] = {"clips": int(m.sum()),
                         "speakers": len(set(a["speakers"][m].tolist()) - _silence_ids(a, m))}
        if not len(splits["train"]):
            raise DataError(f"{source}: no clip falls in the training split")
        info = {"files": files, "counts": counts}
        return TaskData(splits["train"], splits["val"], splits["test"],
                        Normalization.fit(splits["train"].x), source, info)

    def _mix_background(self, data_dir, a: dict, train: np.ndarray, seed: int) -> np.ndarray:
        """Features of the training clips (``train``: their mask over the layout ``a``) with
        background noise mixed into the word clips (the class doc)."""
        o, fe = self._options, self.frontend
        rels = a["files"][train].tolist()
        waves = layout_waves(data_dir, rels, fe, o["pad"]).astype(np.float64)
        silence = np.array([r.startswith(SILENCE + "/") for r in rels])
        peaks = np.abs(waves[silence]).max(axis=1) if silence.any() else np.empty(0)
        noise = [w * (INT16[1] / p) for w, p in zip(waves[silence], peaks) if p > 0]
        if not noise:
            raise DataError(f"noise_mixing: no training _silence_ clip with any sound in "
                            f"{data_dir} to mix in (the training split has {silence.sum()})")
        rng = np.random.default_rng([seed, 7])
        for i in np.flatnonzero(~silence):
            waves[i] = np.clip(mix_background(waves[i], noise, rng, o["background_frequency"],
                                              o["background_volume"]), *INT16)
        return fe(waves)

    def evaluation_split(self, data_dir, *, seed: int = 0) -> Split:
        """What ``zoo eval`` scores: the test speakers of ``data_dir``, or all its clips."""
        if self._options["evaluate_on"] == "all":
            a, _ = load_layout(data_dir, self.frontend, self._options["pad"])
            return Split(a["x"], a["y"])
        return self.load(data_dir, seed=seed).test


def _silence_ids(a: dict, mask: np.ndarray) -> set[str]:
    return {s for s, f in zip(a["speakers"][mask].tolist(), a["files"][mask].tolist())
            if f.startswith(SILENCE + "/")}
