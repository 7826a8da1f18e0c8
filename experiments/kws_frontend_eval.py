"""int8 accuracy of the shipped KWS step models on the float front end and on the integer one.

    python -m experiments.kws_frontend_eval --data-dir ARCHIVE [--models sirnn gru fastgrnn]

The clips are the ``google12_testset`` test speakers of the layout (the split the cards report).
Both paths run the int8 step + head models under TensorFlow Lite Micro (`export.c_backend.check
.reference`), one 1 s window per clip:

* float: `FbankFrontend` -> the run's normalization -> the step model's input quantization (what
  the cards' int8 accuracy measures, with TFLite Micro instead of LiteRT);
* integer: the C app's front end (`training.tasks.int_frontend`) -> `InputMap` (integers only).

The models were trained on the float features; the integer ones are fed to them as they are.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from export.c_backend.check import quantized_windows, reference
from export.kws_stream import input_map
from training.data.audio import FbankFrontend, pad_to, read_wav
from training.data.sources import locate
from training.tasks import get_task
from training.tasks.int_frontend import clip_log_mel_q8
from training.tasks.speech_layout import TESTSET_SPEC

PRETRAINED = Path(__file__).resolve().parents[1] / "models" / "pretrained"


def test_clips(data_dir):
    """(int16 clips padded to 1 s (N, 16000), labels) of the test speakers."""
    data = get_task("google12_testset").load(data_dir, seed=0)
    folder = locate(TESTSET_SPEC, data_dir, download=False).folder()
    files = data.info["files"]["test"]
    waves = np.stack([pad_to(read_wav(folder / f, rate=16000, max_samples=16000), 16000)
                      for f in files])
    return waves, data.test.y


def accuracies(export_dir: Path, waves: np.ndarray, y: np.ndarray) -> dict:
    norm = json.loads((export_dir / "normalization.json").read_text())
    mean, std = (np.asarray(norm[k], np.float32) for k in ("mean", "std"))
    x_float = quantized_windows(export_dir, (FbankFrontend()(waves) - mean) / std)
    x_int = input_map(export_dir)(clip_log_mel_q8(waves))
    pred_f = reference(export_dir, x_float, "tflite-micro")[0].argmax(axis=1)
    pred_i = reference(export_dir, x_int, "tflite-micro")[0].argmax(axis=1)
    pct = lambda v: round(100.0 * float(np.mean(v)), 2)
    return {"clips": len(y), "float_frontend_int8_acc": pct(pred_f == y),
            "int_frontend_int8_acc": pct(pred_i == y), "agreement": pct(pred_f == pred_i)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", required=True, help="the test-set archive or folder")
    parser.add_argument("--models", nargs="+", default=["sirnn", "gru", "fastgrnn"])
    args = parser.parse_args(argv)
    waves, y = test_clips(args.data_dir)
    for model in args.models:
        export_dir = PRETRAINED / f"{model}.google12_testset" / "export-step-int8"
        print(model, json.dumps(accuracies(export_dir, waves, y)))


if __name__ == "__main__":
    main()
