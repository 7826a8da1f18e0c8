"""A user's folder of spoken words, made from the shared Speech Commands test-set archive: how
``zoo train --task audio_folder`` is measured on words recorded at a rate other than 16 kHz.

The 10 words of Google-12 (yes, no, up, down, left, right, on, off, stop, go; not ``_silence_``
or ``_unknown_``) of the archive, each clip resampled from 16 kHz to ``--rate`` (soxr, as the
zoo resamples) and written with soundfile as ``--subtype`` WAV, in two user layouts split by
speaker: ``OUT/train/<word>/<speaker>_nohash_<n>.wav`` and ``OUT/test/...`` (a speaker's clips in
one of them: the md5 of the speaker id, ``--test-percent`` of them to test).

    python -m zoo.experiments.user_words_layout --data-dir ../shared/data/archives/speech_commands_test_set_v0.02_part_A.tar.gz \\
        --rate 8000 --subtype PCM_U8 --out words8k
    zoo train --task audio_folder --model sirnn --data-dir words8k/train --out runs/words8k
    zoo export runs/words8k --form c
    python -m zoo.experiments.user_words_layout --score runs/words8k --test words8k/test

``--score`` prints the run's accuracy on every clip of the test layout: the Keras model (float)
and its int8 step export (``RUN/export-c-int8``, run by LiteRT step by step, the state fed back).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
from pathlib import Path

import numpy as np
import soundfile

from zoo.training.data.sources import locate
from zoo.core.flags import int_in, number_in
from zoo.training.data.wav import read_wav, resample_int16
from zoo.training.tasks.speech_layout import TESTSET_SPEC, WORDS10, speaker_of

_log = logging.getLogger(__name__)


def test_speaker(speaker: str, percent: float) -> bool:
    return int(hashlib.md5(speaker.encode()).hexdigest(), 16) % 100 < percent


def write_layout(data_dir, out: Path, rate: int, subtype: str, test_percent: float = 20.0,
                 words=WORDS10) -> dict[str, int]:
    """Write the two layouts (see the module doc); returns the clip count of each."""
    folder = locate(TESTSET_SPEC, data_dir, download=False).folder()
    counts = {"train": 0, "test": 0}
    for word in words:
        for clip in sorted((folder / word).glob("*.wav")):
            rel = f"{word}/{clip.name}"
            speaker = speaker_of(rel)
            split = "test" if test_speaker(speaker, test_percent) else "train"
            x = resample_int16(read_wav(clip, rate=16000), 16000, rate)
            dest = Path(out) / split / word / clip.name.removesuffix(".wav.wav").removesuffix(".wav")
            dest = dest.with_name(dest.name + ".wav")
            dest.parent.mkdir(parents=True, exist_ok=True)
            soundfile.write(dest, x.astype(np.float64) / 32768, rate, subtype=subtype)
            counts[split] += 1
    return counts


def score(run: Path, test: Path) -> dict[str, float]:
    """Accuracy (%) of a finished audio_folder run on every clip of the layout ``test``: its
    Keras model and its int8 step export ``RUN/export-c-int8`` (LiteRT)."""
    from zoo.export import device_runtime
    from zoo.export.c_backend.project import read_step_export
    from zoo.training.evaluate import evaluate_run, load_run

    keras_report = evaluate_run(run, data_dir=test)
    record, _, norm = load_run(run)
    split = record.config.make_task().evaluation_split(test)
    export = run / "export-c-int8"
    model = device_runtime.open_export(str(export), read_step_export(export), "litert", 1)
    x = norm.apply(split.x).astype("float32")
    pred = np.array([np.argmax(model.predict(x[i])) for i in range(len(x))])
    return {"clips": len(x), "float": 100 * keras_report["accuracy"],
            "int8": 100 * float(np.mean(pred == split.y))}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    parser.add_argument("--score", type=Path, help="a finished run to score on --test (and its "
                        "export-c-int8)")
    parser.add_argument("--test", type=Path, help="the test layout for --score")
    parser.add_argument("--data-dir", help="the Speech Commands test-set archive "
                        "or folder (e.g. part A in shared/data/archives)")
    parser.add_argument("--out", type=Path, help="a new folder")
    parser.add_argument("--rate", type=int_in(1000, 384000), default=8000,
                        help="sample rate of the WAVs written (Hz, 1000..384000; default 8000)")
    parser.add_argument("--subtype", default="PCM_U8",
                        help="soundfile subtype: PCM_U8, PCM_16, PCM_24, PCM_32, FLOAT, DOUBLE")
    parser.add_argument("--test-percent", type=number_in(0, 99, low_open=True), default=20.0,
                        help="share of the speakers written to OUT/test (default 20)")
    args = parser.parse_args(argv)
    if args.score:
        print(json.dumps(score(args.score, args.test)))
        return 0
    if not args.data_dir or not args.out:
        parser.error("--data-dir and --out are required (or --score RUN --test DIR)")
    if args.out.exists():
        parser.error(f"--out {args.out} exists; give a new folder")
    counts = write_layout(args.data_dir, args.out, args.rate, args.subtype, args.test_percent)
    print(f"{args.out}: {counts['train']} training clips, {counts['test']} test clips, "
          f"{args.rate} Hz {args.subtype}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
