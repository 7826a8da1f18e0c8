"""int8 accuracy of the shipped KWS step models on the float front end and on the integer one.

    python -m zoo.experiments.kws_frontend_eval --data-dir ARCHIVE [--models sirnn gru NAME=EXPORT ...]

The clips are the ``google12_testset`` test speakers of the layout (the split the cards report).
Both paths run the int8 step + head models under TensorFlow Lite Micro (`zoo.export.c_backend.check
.reference`), one 1 s window per clip:

* float: `FbankFrontend` -> the run's normalization -> the step model's input quantization (what
  the cards' int8 accuracy measures, with TFLite Micro instead of LiteRT);
* integer: the C app's front end (`zoo.training.tasks.int_frontend`) -> `InputMap` (integers only).

A model trained on the float features gets the integer ones as they are (through `InputMap`); a
model trained on the integer ones (``features: int_logmel`` or ``int_logmel_q15``) is scored on
those alone.

``--c-check`` also streams every clip (as it is, not padded) through the C app ``kws_app``
(`zoo.export.c_backend.kws`) and through the Python streaming reference (`zoo.export.kws_stream`), and
counts the clips whose every hop (features, int8 logits, posteriors, detections) is identical.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from zoo.export import device_runtime
from zoo.export.c_backend.check import quantized_windows, reference
from zoo.export.card_schema import read_export_card
from zoo.export.c_backend.kws import write_kws_project
from zoo.export.kws_stream import Recognizer, StreamReference, input_map
from zoo.training.data.audio import FbankFrontend, pad_to
from zoo.training.data.sources import locate
from zoo.training.data.wav import read_wav
from zoo.training.tasks import get_task
from zoo.training.tasks.int_frontend import INT_FEATURES, clip_log_mel_q8, integer_features
from zoo.training.tasks.speech_layout import TESTSET_SPEC

PRETRAINED = Path(__file__).resolve().parents[1] / "models" / "pretrained"


def load_clips(data_dir, split: str = "test"):
    """(int16 clips padded to 1 s (N, 16000), labels, the clips as they are) of the speakers of
    the ``google12_testset`` task's split ``split`` ("train", "val" or "test"), in its order."""
    data = get_task("google12_testset").load(data_dir, seed=0)
    folder = locate(TESTSET_SPEC, data_dir, download=False).folder()
    files = data.info["files"][split]
    clips = [read_wav(folder / f, rate=16000, max_samples=16000) for f in files]
    labels = {"train": data.train, "val": data.val, "test": data.test}[split].y
    return np.stack([pad_to(c, 16000) for c in clips]), labels, clips


def trained_on_integer_features(card) -> bool:
    """Whether the export's model (its `ModelCard`) was trained on an integer front end
    (``features: int_logmel`` or ``int_logmel_q15``); the float front end's features are then
    not what it was trained on. The card's ``frontend`` says which (its task's ``features``)."""
    return card.frontend is not None and card.frontend.features in INT_FEATURES


def accuracies(export_dir: Path, waves: np.ndarray, y: np.ndarray) -> dict:
    card = read_export_card(str(export_dir))
    model = device_runtime.StepModel(str(export_dir), card, "tflite-micro", 1)
    features = integer_features(card.frontend.features if card.frontend else None)
    x_int = input_map(export_dir)(clip_log_mel_q8(waves, features=features))
    pred_i = reference(model, x_int)[0].argmax(axis=1)
    pct = lambda v: round(100.0 * float(np.mean(v)), 2)
    result = {"clips": len(y),
              "trained_on": features if trained_on_integer_features(card) else "logmel",
              "int_frontend_int8_acc": pct(pred_i == y)}
    if result["trained_on"] == "logmel":
        norm = json.loads((export_dir / "normalization.json").read_text())
        mean, std = (np.asarray(norm[k], np.float32) for k in ("mean", "std"))
        x_float = quantized_windows(model, (FbankFrontend()(waves) - mean) / std)
        pred_f = reference(model, x_float)[0].argmax(axis=1)
        result.update(float_frontend_int8_acc=pct(pred_f == y), agreement=pct(pred_f == pred_i))
    return result


def c_check(export_dir: Path, clips: list[np.ndarray]) -> dict:
    """Clips whose kws_app output equals the streaming reference's, line for line."""
    ref, rec = StreamReference(export_dir), Recognizer()
    same = 0
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "kws"
        write_kws_project(export_dir, project)
        subprocess.run(["make", "-s", "-C", str(project), "-f", "kws.mk"], check=True)
        for clip in clips:
            (Path(tmp) / "clip.raw").write_bytes(clip.astype("<i2").tobytes())
            out = subprocess.run([str(project / "kws_app"), str(Path(tmp) / "clip.raw")],
                                 capture_output=True, text=True, check=True).stdout.split("\n")
            logits, post, detections = ref.run(clip, rec)
            want = [f"frame {t} logits {' '.join(map(str, lg))} post {' '.join(map(str, p))}"
                    for t, (lg, p) in enumerate(zip(logits.tolist(), post.tolist()))]
            got = [line for line in out if line.startswith("frame")]
            found = [tuple(int(v) for v in line.split()[1:3]) for line in out
                     if line.startswith("detect")]
            same += got == want and found == [(t, c) for t, c, _ in detections]
    return {"clips": len(clips), "identical": same}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    parser.add_argument("--data-dir", required=True, help="the test-set archive or folder")
    parser.add_argument("--models", nargs="+", default=["sirnn", "gru", "fastgrnn"],
                        help="shipped models (MODEL means models/pretrained/MODEL.kws12)"
                             ", or NAME=EXPORT: an int8 step export folder of any KWS run")
    parser.add_argument("--c-check", action="store_true",
                        help="also compare kws_app with the streaming reference on every clip")
    args = parser.parse_args(argv)
    waves, y, clips = load_clips(args.data_dir)
    for model in args.models:
        model, _, folder = model.partition("=")
        export_dir = (Path(folder) if folder
                      else PRETRAINED / f"{model}.kws12" / "export-step-int8")
        result = accuracies(export_dir, waves, y)
        if args.c_check:
            result["c_check"] = c_check(export_dir, clips)
        print(model, json.dumps(result))


if __name__ == "__main__":
    main()
