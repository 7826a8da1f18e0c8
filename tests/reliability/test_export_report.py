"""What ``zoo export`` prints (issue 52): no TFLite "Created TensorFlow Lite XNNPACK delegate"
line, TFLite Micro's accuracy next to LiteRT's on the same windows, and for --form c of a .keras
model a refusal whose commands run (they carry its --calibration)."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STEP = REPO / "models/archive/sirnn.har2_int16x8/export-step-int16x8/step.tflite"


def test_litert_interpreters_do_not_print_the_xnnpack_line():
    code = ("from zoo.export.device_runtime import LiteInterpreter; "
            f"LiteInterpreter({str(STEP)!r}, 'litert', 1); print('opened')")
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**env, "PYTHONPATH": str(REPO)}, cwd=REPO, timeout=300)
    assert done.returncode == 0 and "opened" in done.stdout, done.stderr
    assert "XNNPACK" not in done.stderr


def test_the_c_refusal_for_a_keras_model_names_commands_that_run(tmp_path):
    import shlex

    import pytest

    from edge_rnn_zoo.cli import build_parser
    from zoo.export.c_backend.command import _made_here
    from zoo.export.exporter import AccuracyDropError, ExportOptions

    keras_file, calib = tmp_path / "lstm12x2.keras", tmp_path / "calib.npy"
    keras_file.write_bytes(b"PK\x03\x04")
    calib.write_bytes(b"\x93NUMPY")
    inspect = shlex.join(["zoo", "export", str(keras_file), "--calibration", str(calib),
                          "--form", "step", "--quantize", "int8"])
    nxt = shlex.join(["zoo", "export", str(keras_file), "--calibration", str(calib),
                      "--form", "step", "--quantize", "int16x8"])

    def lossy(step_dir, options):
        raise AccuracyDropError("lost", summary="8.67 points lost", inspect=inspect, command=nxt)

    with pytest.raises(AccuracyDropError) as err:
        _made_here(keras_file, tmp_path / "step", ExportOptions(), lossy)
    said = str(err.value)
    for command in said.split("`")[1::2]:
        words = shlex.split(command)[1:]
        args = build_parser(words[0]).parse_args(words)
        args.check(args)  # zoo export's usage check: accepted
    assert inspect in said and nxt in said and "--accept-int8-loss" in said
