"""The int8 C backend (`zoo export --form c`) against TensorFlow Lite itself.

The oracle is the runtime: the generated C, compiled with the host compiler (warnings are
errors), must give the same int8 logits and the same final int8 state as the TFLite int8 step +
head models run by TFLite Micro (or by LiteRT's builtin kernels with --match litert), streamed
with the zoo's state feedback, on every window of the HAR-2 test split (701 windows), on the
pure-integer path and from raw float features. Two cells: the shipped SiRNN and a GRU trained
here (gates: LOGISTIC / TANH tables, SPLIT and STRIDED_SLICE views)."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from zoo.export.c_backend import CExportError, arith, c_names
from zoo.export.c_backend.command import export_c
from zoo.export.c_backend.windows import write_windows

pytestmark = pytest.mark.skipif(shutil.which("cc") is None or shutil.which("make") is None,
                                reason="the C backend's checks build with the host cc and make")


def assert_bit_exact(check: dict, windows: int = 701) -> None:
    assert check["windows"] == windows
    assert check["identical_logits"] == windows, check
    assert check["identical_states"] == windows, check
    assert check["identical_logits_raw_float_input"] == windows, check
    assert check["max_abs_logit_diff"] == 0


@pytest.fixture(scope="module")
def sirnn_c(int8_step, tmp_path_factory):
    export_dir, _ = int8_step
    out = tmp_path_factory.mktemp("c") / "sirnn-c"
    # The legacy prefix, zoo: the names of an export made before prefixes
    return out, export_c(export_dir, out, prefix="zoo")


@pytest.mark.slow
def test_sirnn_c_equals_tflite_micro_on_every_test_window(sirnn_c):
    out, summary = sirnn_c
    assert_bit_exact(summary["check"])
    assert summary["bit_exact_with"] == "tflite-micro"
    assert json.loads((out / "c_check.json").read_text())["check"] == summary["check"]
    assert c_names(out) == ("zoo", "zoo_model.h", "zoo_model.c")
    for name in ("zoo_model.h", "zoo_model.c", "zoo_int8.h", "main.c", "Makefile", "README.md",
                 "step.tflite", "head.tflite", "model_card.json"):
        assert (out / name).is_file(), name


@pytest.mark.slow
def test_sirnn_c_matches_litert_builtin_kernels_when_asked(int8_step, tmp_path):
    # LiteRT rounds fixed-point rescaling once, TFLite Micro twice: one C file cannot match both.
    export_dir, _ = int8_step
    summary = export_c(export_dir, tmp_path / "c-litert", match="litert", prefix="har_litert")
    assert summary["check"]["runtime"] == "litert-ref"
    assert_bit_exact(summary["check"])
    assert c_names(tmp_path / "c-litert") == ("har_litert", "har_litert_model.h",
                                              "har_litert_model.c")
    source = (tmp_path / "c-litert" / "har_litert_model.c").read_text()
    assert "#define ZOO_FC_SINGLE_ROUNDING 1" in source and "int har_litert_predict(" in source


@pytest.mark.slow
def test_gru_c_from_a_run_directory_equals_tflite_micro(har_dir, tmp_path_factory, caplog):
    from zoo.training.config import TrainConfig
    from zoo.training.trainer import train

    run = tmp_path_factory.mktemp("runs") / "har2-gru"
    train(TrainConfig(task="har2", model="gru", model_options={"units": 16}, epochs=2,
                      batch_size=64, lr=1e-2, clipnorm=1.0, seed=0),
          run, data_dir=har_dir, verbose=0)
    out = tmp_path_factory.mktemp("c") / "gru-c"
    with caplog.at_level(logging.INFO, logger="zoo"):
        summary = export_c(run, out, data_dir=har_dir, allow_drop=True, calibration_pairs=300,
                           micro=False)
    lines = [record.getMessage().strip() for record in caplog.records]
    assert_bit_exact(summary["check"])
    assert lines[-1].startswith(f"wrote {out}: har2_gru_model.c")  # the run's name: har2-gru
    assert not [line for line in lines if ".partial-" in line or ".zoo-c-step-" in line]
    ops = json.loads((out / "model_card.json").read_text())["ops"]["step"]
    assert {"LOGISTIC", "TANH", "SPLIT", "STRIDED_SLICE"} <= set(ops)


def test_generated_code_is_plain_c99_without_heap_libm_or_float_on_the_int8_path(sirnn_c):
    out, _ = sirnn_c
    model_c = (out / "zoo_model.c").read_text() + (out / "zoo_int8.h").read_text()
    for banned in ("malloc", "<math.h>", '#include "tensorflow', "TfLite"):
        assert banned not in model_c
    # No float on the int8 path: the kernels, both models, the feedback and the head.
    assert "float" not in (out / "zoo_int8.h").read_text().replace("float-abi", "")
    for function in ("static void zoo_step_run(", "static void zoo_head_run(",
                     "void zoo_push_q(", "int zoo_predict("):
        body = model_c.split(function, 1)[1].split("\n}\n", 1)[0]
        assert "float" not in body and "double" not in body, function
    subprocess.run(["cc", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-O2", "-c",
                    str(out / "zoo_model.c"), "-o", str(out / "pedantic.o")], check=True)


def test_cross_build_for_a_cortex_m4_when_the_toolchain_is_there(sirnn_c, tmp_path):
    if shutil.which("arm-none-eabi-gcc") is None:
        pytest.skip("arm-none-eabi-gcc is not installed (optional: apt-get install "
                    "gcc-arm-none-eabi)")
    out, _ = sirnn_c
    build = tmp_path / "m4"
    shutil.copytree(out, build)
    subprocess.run(["make", "-s", "-C", str(build), "CC=arm-none-eabi-gcc", "CPU=cortex-m4"],
                   check=True)
    assert (build / "zoo_model.o").is_file()


def test_the_cortex_m4_dsp_path_gives_the_portable_paths_bits(int8_step, tmp_path):
    # The SMLAD / SMMULR / SSAT kernels (ZOO_USE_ARM_DSP) run under qemu-arm and print the state
    # after each of 128 steps and the logits; the host build of the same driver and export (the
    # portable C, checked against TFLite Micro above) must print the same lines. The export has
    # its default prefix: tools/cortexm's driver takes the names from it (names_header).
    if shutil.which("arm-none-eabi-gcc") is None or shutil.which("qemu-arm") is None:
        pytest.skip("arm-none-eabi-gcc and qemu-arm are not installed (optional)")
    out = tmp_path / "c"
    prefix = export_c(int8_step[0], out, check=False)["prefix"]  # checked above
    assert prefix != "zoo" and c_names(out)[0] == prefix
    cortexm = Path(__file__).resolve().parents[2] / "tools" / "cortexm"
    build = tmp_path / "m4"
    subprocess.run(["make", "-s", "-C", str(cortexm), f"B={build}", f"C={out}", "NAME=test",
                    f"PYTHON={sys.executable}", "c-app"], check=True, capture_output=True)
    host = tmp_path / "host_app"
    subprocess.run(["cc", "-std=c99", "-O2", f"-I{out}", f"-I{build / 'names-test'}",
                    str(cortexm / "c_main.c"), str(out / c_names(out)[2]), "-o", str(host)],
                   check=True)
    m4 = subprocess.run(["qemu-arm", "-cpu", "cortex-a15", str(build / "c-test.elf"), "sirnn",
                         "print", "128"], check=True, capture_output=True, text=True).stdout
    ref = subprocess.run([str(host), "sirnn", "print", "128"], check=True, capture_output=True,
                         text=True).stdout
    assert m4.count("\n") == 129 and m4 == ref


def test_refuses_what_it_cannot_compile_with_a_clear_error(int8_step, tmp_path):
    export_dir, _ = int8_step
    float_step = tmp_path / "float-step"
    shutil.copytree(export_dir, float_step)
    card = json.loads((float_step / "model_card.json").read_text())
    card["quantize"] = "none"
    (float_step / "model_card.json").write_text(json.dumps(card))
    with pytest.raises(CExportError, match="int8 step export"):
        export_c(float_step, tmp_path / "out")
    with pytest.raises(CExportError, match="--match 'xnnpack'"):
        export_c(export_dir, tmp_path / "out2", match="xnnpack")


def test_an_existing_folder_is_never_replaced_unless_it_is_a_zoo_c_export(sirnn_c, int8_step,
                                                                           tmp_path):
    export_dir, _ = int8_step
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(CExportError, match="already exists"):
        export_c(export_dir, mine)
    with pytest.raises(CExportError, match="not written by `zoo export --form c`"):
        export_c(export_dir, mine, overwrite=True)
    assert (mine / "notes.txt").read_text() == "keep me"


def test_zoo_app_names_a_file_that_is_not_whole_windows(sirnn_c, tmp_path):
    out, _ = sirnn_c
    subprocess.run(["make", "-s", "-C", str(out)], check=True)
    bad = tmp_path / "bad.zoow"
    write_windows(bad, np.zeros((1, 128, 9), np.float32), "raw")
    bad.write_bytes(bad.read_bytes()[:-40])  # the header and a window less 10 floats
    done = subprocess.run([str(out / "zoo_app"), str(bad)], capture_output=True, text=True)
    assert done.returncode == 2 and "not a whole number of windows" in done.stderr


# --------------------------------------------------------------- the fixed-point arithmetic
@pytest.mark.parametrize("real", [1e-9, 3.1e-5, 0.0123, 0.5, 0.99999, 1.0, 7.25, 1234.5])
def test_quantize_multiplier_represents_the_real_multiplier(real):
    q, shift = arith.quantize_multiplier(real)
    assert (1 << 30) <= q < (1 << 31)
    assert abs(Fraction(q, 1 << 31) * Fraction(2) ** shift - Fraction(real)) \
        <= Fraction(real) * Fraction(1, 1 << 30)


def test_multiply_by_quantized_multiplier_rounds_like_gemmlowp_twice():
    # Independent oracle: exact rationals, rounded half up (high mul) then half away from zero
    # (the divide), the two roundings TFLite Micro's default build makes.
    rng = np.random.default_rng(0)
    for _ in range(2000):
        x = int(rng.integers(-(1 << 24), 1 << 24))
        q = int(rng.integers(1 << 30, 1 << 31))
        shift = int(rng.integers(-20, 3))
        left, right = max(shift, 0), max(-shift, 0)
        high = Fraction(x * (1 << left) * q, 1 << 31)
        high_rounded = int(np.floor(high + Fraction(1, 2))) if high >= 0 else \
            -int(np.floor(-high + Fraction(1, 2) - Fraction(1, 1 << 31)))
        value = Fraction(high_rounded, 1 << right)
        expected = int(np.floor(abs(value) + Fraction(1, 2))) * (1 if value >= 0 else -1)
        assert arith.multiply_by_quantized_multiplier(x, q, shift) == expected, (x, q, shift)
