"""Keyword spotting on long recordings: the streaming pipeline's detections, keyword by keyword.

    python -m zoo.experiments.kws_long_recordings --data-dir ARCHIVE [--noise-dir DIR] [--seed 0]

**Recordings.** The clips of the 10 words of one speaker split of the ``google12_testset`` task
(the task's own speaker split, `zoo.experiments.kws_frontend_eval.load_clips`) are dealt into
recordings of one clip per word (in a shuffled order; recording r takes the r-th clip of each
word, so a recording of the last rows has fewer words). Each clip is placed after a gap of 0.5
to 2 s drawn uniformly in samples (also before the first clip and after the last), so the clips
fall at arbitrary offsets, not on the 99-hop windows. Under the whole recording (gaps and clips)
runs a slice, at a random offset, of one of the real ``_background_noise_`` files
(``--noise-dir``), at ``--noise-volume`` times its recorded level; the clips are added on top.
Every draw comes from ``--seed``.

**Scoring** (`score`). A report is made at the end of its hop's frame (sample ``160 t + 400``).
Keyword i's window runs from its clip's first sample to ``LATE`` (0.5 s) after its last; the
gaps are at least as long, so no two windows overlap. Per keyword: a *hit* is exactly one
report of its word in its window, *missed* none, *duplicated* more than one. Every other report
(a wrong word, or a report outside every window) is a *false alarm*.

**Two sets of clips** per model: all the split's word clips, and only those the model classifies
right as a standalone 1 s clip (the same int8 path as `zoo.experiments.kws_frontend_eval`: the clip
zero-padded to 1 s, one window from a zero state), which separates the streaming pipeline from
the model's clip accuracy.

**Choice.** A grid of recognizer settings (window, threshold, suppression) and instance counts
is scored on the **validation speakers** only, on the all-clips recordings of every model,
summed. The rule: the most *net* reports (hits - duplicated - false alarms: every wrong report
costs one keyword); ties go to fewer false alarms, then fewer instances (each costs a step per
hop on the device), then the grid's order. The chosen setting and today's defaults are then
reported once on the **test speakers** (never tuned there).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import logging
import sys
from pathlib import Path

import numpy as np

from zoo.experiments.kws_frontend_eval import load_clips
from zoo.export.c_backend.check import reference
from zoo.export.kws_stream import Recognizer, StreamReference, stream_log_mel_q8
from zoo.pretrained import resolve_tag
from zoo.training.data.audio import pad_to
from zoo.training.data.wav import read_wav
from zoo.core.flags import int_in, number_in, program_name
from zoo.training.tasks.int_frontend import FRAME, HOP, clip_log_mel_q8
from zoo.training.tasks.speech_layout import CLASSES, WORDS10

_log = logging.getLogger(__name__)

RATE = 16000
LATE = RATE // 2  # samples after a clip's end in which its report still counts
GAP = (RATE // 2, 2 * RATE)  # the silence (noise) between clips, in samples
REPO = Path(__file__).resolve().parents[1]
# `zoo.pretrained.resolve_tag` names: the archived tags by their archive/ name (sirnn.kws12 is the
# installed tag of their job now)
TAGS = ("archive/sirnn.google12_testset", "archive/sirnn.google12_testset_int")
NOISE_DIR = REPO.parent / "shared" / "data" / "speech_commands_v0.01" / "_background_noise_"
WINDOWS, THRESHOLDS, SUPPRESSIONS, INSTANCES = (10, 20, 30, 50), (100, 120, 140, 160, 180, 200), \
    (50, 100, 150), (1, 2, 4)


@dataclasses.dataclass(frozen=True)
class Recording:
    """int16 samples, and per keyword its class id and its clip's [start, end) in samples."""

    samples: np.ndarray
    labels: tuple[int, ...]
    spans: tuple[tuple[int, int], ...]


@dataclasses.dataclass(frozen=True)
class Counts:
    """A recording's (or a sum of recordings') outcome; see `score`."""

    keywords: int = 0
    hits: int = 0
    missed: int = 0
    duplicated: int = 0
    false_alarms: int = 0

    def __add__(self, other: "Counts") -> "Counts":
        pairs = zip(dataclasses.astuple(self), dataclasses.astuple(other))
        return Counts(*(a + b for a, b in pairs))

    @property
    def net(self) -> int:
        return self.hits - self.duplicated - self.false_alarms


def split_word_clips(data_dir, split: str) -> list[tuple[int, np.ndarray]]:
    """(class id, int16 samples as recorded) of every word clip (not silence or unknown) of the
    ``google12_testset`` speaker split ``split`` ("train", "val" or "test") of ``data_dir``: the
    task's own split (`zoo.experiments.kws_frontend_eval.load_clips`)."""
    _, labels, clips = load_clips(data_dir, split)
    return [(int(label), clip) for label, clip in zip(labels, clips)
            if CLASSES[int(label)] in WORDS10]


def load_noises(noise_dir: Path) -> list[np.ndarray]:
    files = sorted(Path(noise_dir).glob("*.wav"))
    if not files:
        raise FileNotFoundError(f"{noise_dir}: no background-noise .wav files")
    return [read_wav(f, rate=RATE) for f in files]


def build_recording(clips, noises, rng: np.random.Generator, volume: float = 1.0) -> Recording:
    """The clips in the order given, each after a gap of `GAP` samples, plus a last gap; one
    noise file's slice (at ``volume``) under all of it."""
    gaps = rng.integers(GAP[0], GAP[1] + 1, len(clips) + 1)
    length = int(gaps.sum()) + sum(len(c) for _, c in clips)
    noise = noises[int(rng.integers(len(noises)))]
    if len(noise) < length:  # a recording longer than the file: the file again, end to end
        noise = np.tile(noise, length // len(noise) + 1)
    start = int(rng.integers(len(noise) - length + 1))
    mix = volume * noise[start:start + length].astype(np.float64)
    spans, pos = [], 0
    for gap, (_, clip) in zip(gaps, clips):
        pos += int(gap)
        mix[pos:pos + len(clip)] += clip
        spans.append((pos, pos + len(clip)))
        pos += len(clip)
    samples = np.clip(np.round(mix), -32768, 32767).astype(np.int16)
    return Recording(samples, tuple(label for label, _ in clips), tuple(spans))


def build_recordings(clips, noises, seed: int, volume: float = 1.0) -> list[Recording]:
    """Recording r: the r-th clip of each word (each word's clips shuffled), in a shuffled order."""
    rng = np.random.default_rng(seed)
    by_word = {}
    for label, clip in clips:
        by_word.setdefault(label, []).append(clip)
    for word_clips in by_word.values():
        rng.shuffle(word_clips)
    rows = max((len(v) for v in by_word.values()), default=0)
    out = []
    for r in range(rows):
        row = [(label, v[r]) for label, v in sorted(by_word.items()) if r < len(v)]
        order = rng.permutation(len(row))
        out.append(build_recording([row[i] for i in order], noises, rng, volume))
    return out


def classified_right(ref: StreamReference, clips) -> np.ndarray:
    """Whether the model classifies each clip right as a standalone 1 s clip (zero-padded at the
    end, one window from a zero state: the int8 path of `zoo.experiments.kws_frontend_eval`)."""
    if not clips:
        return np.zeros(0, bool)
    waves = np.stack([pad_to(c, RATE) for _, c in clips])
    logits = reference(ref.model, ref.input_map(clip_log_mel_q8(waves, features=ref.features)))[0]
    return logits.argmax(axis=1) == np.array([label for label, _ in clips])


def score(detections, recording: Recording) -> Counts:
    """`Counts` of one recording's detections ``(hop, class, score)`` (see the module doc)."""
    per_keyword = [0] * len(recording.labels)
    false_alarms = 0
    for hop, cls, _ in detections:
        at = HOP * hop + FRAME
        owner = next((i for i, (s, e) in enumerate(recording.spans) if s <= at < e + LATE), None)
        if owner is None or recording.labels[owner] != cls:
            false_alarms += 1
        else:
            per_keyword[owner] += 1
    return Counts(keywords=len(per_keyword), hits=per_keyword.count(1),
                  missed=per_keyword.count(0), duplicated=sum(n > 1 for n in per_keyword),
                  false_alarms=false_alarms)


def stream_posteriors(export_dir: Path, recordings, instances: int) -> list[np.ndarray]:
    """Each recording's uint8 posteriors per hop (`StreamReference` with ``instances``)."""
    ref = StreamReference(export_dir, instances=instances)
    return [ref.posteriors(ref.logits(stream_log_mel_q8(r.samples, features=ref.features)))
            for r in recordings]


def grid() -> list[tuple[int, Recognizer]]:
    return [(k, Recognizer(window=w, threshold=t, suppression=s)) for k, w, t, s in
            itertools.product(INSTANCES, WINDOWS, THRESHOLDS, SUPPRESSIONS)]


def score_setting(posteriors, recordings, recognizer: Recognizer) -> Counts:
    return sum((score(recognizer.run(p), r) for p, r in zip(posteriors, recordings)), Counts())


def rank_key(setting, counts: Counts):
    """The choice rule (module doc): most net reports, then fewest false alarms, then fewest
    instances; `sorted` keeps the grid's order on full ties."""
    instances, _ = setting
    return (-counts.net, counts.false_alarms, instances)


def describe(setting) -> str:
    k, r = setting
    return f"{k} | {r.window} | {r.threshold} | {r.suppression}"


class Scorer:
    """The recordings of each (tag, clip set) of one split, and their posteriors per instance
    count (computed once: the recognizer grid reruns only the recognizer)."""

    def __init__(self, clips, noises, args):
        self.recordings, self._posteriors = {}, {}
        for tag in args.tags:
            right = classified_right(StreamReference(self.export_dir(tag)), clips)
            chosen = {"all": clips, "right": [c for c, ok in zip(clips, right) if ok]}
            for subset, subset_clips in chosen.items():
                self.recordings[tag, subset] = build_recordings(subset_clips, noises, args.seed,
                                                                args.noise_volume)
            _log.info("%s: %d of %d clips classified right as 1 s clips; %d recordings, %.0f s "
                      "of audio", tag, int(right.sum()), len(clips),
                      len(self.recordings[tag, "all"]),
                      sum(len(r.samples) for r in self.recordings[tag, "all"]) / RATE)

    @staticmethod
    def export_dir(tag: str) -> Path:
        return resolve_tag(tag) / "export-step-int8"  # an archived name: one line naming its successor

    def counts(self, tag: str, subset: str, setting) -> Counts:
        instances, recognizer = setting
        key = (tag, subset, instances)
        if key not in self._posteriors:
            _log.info("streaming %s (%s clips), %d instance(s)", tag, subset, instances)
            self._posteriors[key] = stream_posteriors(self.export_dir(tag),
                                                      self.recordings[tag, subset], instances)
        return score_setting(self._posteriors[key], self.recordings[tag, subset], recognizer)


def choose_on_validation(scorer: Scorer, tags, top: int):
    """Scores the grid on the validation recordings; prints the top rows and the defaults'
    rows; returns the chosen setting."""
    rows = []
    for setting in grid():
        per_tag = {(t, s): scorer.counts(t, s, setting) for t in tags for s in ("all", "right")}
        total = sum((per_tag[t, "all"] for t in tags), Counts())
        rows.append((setting, total, per_tag))
    ranked = sorted(rows, key=lambda row: rank_key(row[0], row[1]))
    defaults = [row for row in rows if row[0][1] == Recognizer()]
    best_per_k = [(f"best K={k}", next(row for row in ranked if row[0][0] == k)) for k in INSTANCES]
    head = "| rank | instances | window | threshold | suppression | net (all clips, both tags) | " \
           + " | ".join(f"{t} {s}: hits, missed, dup, FA" for t in tags for s in ("all", "right"))
    print(f"\n### Validation speakers: {len(rows)} settings; the top {top}, the best per instance "
          "count, the chosen recognizer at the other instance counts, and the recognizer's "
          "defaults (window 50, threshold 160, suppression 100)\n")
    print(head + " |")
    print("|" + "---|" * (6 + 2 * len(tags)))
    shown = [(str(i + 1), row) for i, row in enumerate(ranked[:top])]
    chosen_elsewhere = [("chosen recognizer", row) for row in rows if row[0][1] == ranked[0][0][1]
                        and row[0][0] != ranked[0][0][0]]
    shown += best_per_k + chosen_elsewhere + [("defaults", row) for row in defaults]
    for label, (setting, total, per_tag) in shown:
        cells = " | ".join(f"{c.hits}, {c.missed}, {c.duplicated}, {c.false_alarms}"
                           for c in per_tag.values())
        print(f"| {label} | {describe(setting)} | {total.net} | {cells} |")
    return ranked[0][0]


def report_on_test_speakers(scorer: Scorer, tags, chosen):
    """The chosen setting, and the defaults at 1 and at the chosen instance count, on the test
    recordings of each tag and clip set."""
    settings = {"chosen": chosen, "defaults": (1, Recognizer())}
    if chosen[0] != 1:
        settings[f"defaults, {chosen[0]} instances"] = (chosen[0], Recognizer())
    print("\n### Test speakers (reported once, not tuned)\n")
    print("| tag | clips | setting | instances | window | threshold | suppression | hits | missed "
          "| duplicated | false alarms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for tag, subset, (name, setting) in itertools.product(tags, ("all", "right"), settings.items()):
        c = scorer.counts(tag, subset, setting)
        print(f"| {tag} | {subset} | {name} | {describe(setting)} | {c.hits}/{c.keywords} | "
              f"{c.missed} | {c.duplicated} | {c.false_alarms} |")


def progress_to_stderr() -> None:
    """This script's progress records on stderr, so that stdout holds the tables alone."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    _log.addHandler(handler)
    _log.setLevel(logging.INFO)
    _log.propagate = False  # absl's root handler would print each record again


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog=program_name("zoo.experiments.kws_long_recordings"),
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     allow_abbrev=False)
    parser.add_argument("--data-dir", required=True,
                        help="the Speech Commands v0.02 test-set layout (folder or archive)")
    parser.add_argument("--noise-dir", type=Path, default=NOISE_DIR,
                        help="a folder of 16 kHz background-noise .wav files (default: the shared "
                             "v0.01 subset's _background_noise_)")
    parser.add_argument("--noise-volume", type=number_in(0), default=1.0,
                        help="the noise's gain over its recorded level (default 1)")
    parser.add_argument("--seed", type=int_in(0), default=0,
                        help="for every draw of the recordings")
    parser.add_argument("--tags", nargs="+", default=list(TAGS),
                        help="KWS tags by name: installed (sirnn.kws12) or archive/TAG (default: "
                             "the two archived tags this study measured)")
    parser.add_argument("--top", type=int_in(1), default=10, help="validation rows to print")
    args = parser.parse_args(argv)
    progress_to_stderr()
    noises = load_noises(args.noise_dir)
    _log.info("validation speakers")
    chosen = choose_on_validation(Scorer(split_word_clips(args.data_dir, "val"), noises, args),
                              args.tags, args.top)
    k, r = chosen
    print(f"\nchosen on validation: instances {k}, window {r.window}, threshold {r.threshold}, "
          f"suppression {r.suppression}")
    _log.info("test speakers")
    test = Scorer(split_word_clips(args.data_dir, "test"), noises, args)
    report_on_test_speakers(test, args.tags, chosen)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
