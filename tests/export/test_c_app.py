"""The generated C project's own guards (issues 31, 32 and 44): ``zoo_app`` refuses what is not a
file of whole windows, or a bad ``--bench``, with a message and exit status 2 (a directory
aborted the sanitizer build, an empty file or ``--bench 0`` exited 0 silently), and
``zoo_model.c`` refuses to build under ``-ffast-math``, which folds its input rounding away.
``kws_app`` refuses a numeric flag that is not a whole number in its range, as ``zoo_app`` does.

The project is the C export of the shipped ``sirnn.har2_gen1`` tag (no check: these are the app's
tests), built with the host compiler."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from zoo.export.c_backend import c_names
from zoo.export.c_backend.command import export_c

REPO = Path(__file__).resolve().parents[2]
T, F = 128, 9  # sirnn.har2_gen1's windows

pytestmark = pytest.mark.skipif(shutil.which("cc") is None or shutil.which("make") is None,
                                reason="builds zoo_app with the host cc and make")


@pytest.fixture(scope="module")
def c_project(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("c") / "sirnn-c"
    export_c(REPO / "models" / "archive" / "sirnn.har2_gen1", out, check=False)
    return out


@pytest.fixture(scope="module", params=["O2", "sanitizers"])
def zoo_app(request, c_project, tmp_path_factory) -> Path:
    """zoo_app as `make` builds it, and with AddressSanitizer + UBSan (abort on any report)."""
    build = tmp_path_factory.mktemp(request.param) / "c"
    shutil.copytree(c_project, build)
    flags = ([] if request.param == "O2" else
             ["CFLAGS=-std=c99 -Wall -Wextra -Werror -O1 -g -fsanitize=address,undefined "
              "-fno-sanitize-recover=all"])
    done = subprocess.run(["make", "-s", "-C", str(build)] + flags, capture_output=True, text=True)
    if done.returncode and request.param == "sanitizers":
        pytest.skip(f"no sanitizer build here: {done.stderr[-200:]}")
    assert done.returncode == 0, done.stderr
    return build / "zoo_app"


def window_file(path: Path, x: np.ndarray, mark: bytes = b"RAW ", shape=(T, F)) -> Path:
    """A zoo_app window file written here by its documented layout (docs/c_backend.md), not by
    the zoo's writer: "ZOOW", the kind, T and F as uint32 little-endian, then the values."""
    dtype = "i1" if mark == b"INT8" else "<f4"
    path.write_bytes(b"ZOOW" + mark + struct.pack("<II", *shape) + x.astype(dtype).tobytes())
    return path


@pytest.fixture(scope="module")
def windows(tmp_path_factory) -> Path:
    return window_file(tmp_path_factory.mktemp("windows") / "two.zoow", np.zeros((2, T, F)))


def run(app: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([str(app), *map(str, args)], capture_output=True, text=True, timeout=60)


def test_two_windows_give_two_lines(zoo_app, windows):
    done = run(zoo_app, windows)
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 2, done.stderr


@pytest.mark.parametrize("case", ["directory", "empty-file", "missing-file", "bench-0",
                                  "bench-not-a-number", "bench-without-n", "unknown-option",
                                  "two-files", "bench-2x", "bench-wraps", "bench-space",
                                  "int8-flag"])
def test_zoo_app_refuses_with_a_message_and_status_2(case, zoo_app, windows, tmp_path):
    empty = tmp_path / "empty.f32"
    empty.write_bytes(b"")
    args, words = {
        "directory": ([tmp_path], ["cannot read", str(tmp_path)]),
        "empty-file": ([empty], ["an empty file", "16-byte header"]),
        "missing-file": ([tmp_path / "nope.f32"], ["cannot open"]),
        "bench-0": (["--bench", "0", windows], ["--bench", "1..", "got 0"]),
        "bench-not-a-number": (["--bench", "x", windows], ["--bench", "got x"]),
        "bench-without-n": ([windows, "--bench"], ["--bench", "got nothing"]),
        "unknown-option": (["--int16", windows], ["unknown option --int16"]),
        # the kind of the windows is in the file now, not in a flag
        "int8-flag": (["--int8", windows], ["unknown option --int8", "header"]),
        "two-files": ([windows, windows], ["one WINDOWS file"]),
        # issue 44: atoi read "2x" as 2 and wrapped 2^32 + 99 to 99
        "bench-2x": (["--bench", "2x", windows], ["--bench", "got 2x"]),
        "bench-wraps": (["--bench", "4294967395", windows], ["--bench", "got 4294967395"]),
        "bench-space": (["--bench", " 3", windows], ["--bench", "got  3"]),
    }[case]
    done = run(zoo_app, *args)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stdout == "" and all(w in done.stderr for w in words), done.stderr
    assert "Sanitizer" not in done.stderr and "runtime error" not in done.stderr


# ----------------------------------------------------------------- the window file (issue 43)
# Without the kind in the file, an export's normalized test windows read as raw features were
# normalized twice: 87 % instead of 98 %, no warning. Now the file says what it holds.
@pytest.mark.parametrize("case", ["headerless", "other-shape", "other-kind", "no-windows",
                                  "half-window", "nan-raw", "inf-normalized"])
def test_zoo_app_refuses_a_window_file_it_cannot_trust(case, zoo_app, tmp_path):
    x = np.zeros((3, T, F), np.float32)
    bad = x.copy()
    bad[2, 5, 1] = np.nan if case == "nan-raw" else np.inf
    path = tmp_path / f"{case}.zoow"
    if case == "headerless":  # the old format: bare float32, raw or normalized, nobody knows
        x.astype("<f4").tofile(path)
    elif case == "half-window":
        path.write_bytes(window_file(path, x).read_bytes()[:-4])
    else:
        window_file(path, bad if case.startswith(("nan", "inf")) else x[:0] if case ==
                    "no-windows" else x, {"other-kind": b"F64 ", "inf-normalized": b"NORM"}.get(
                        case, b"RAW "), (T, F + 1) if case == "other-shape" else (T, F))
    words = {"headerless": ["no zoo window header", "python -m zoo.export.c_backend.windows"],
             "other-shape": [f"windows of {T} x {F + 1}", f"takes {T} x {F}"],
             "other-kind": ["window kind 'F64 '", "'RAW ', 'NORM', 'INT8'"],
             "no-windows": ["0 bytes after the header is no windows"],
             "half-window": ["not a whole number of windows"],
             "nan-raw": ["window 2, step 5, feature 1 is nan", "finite"],
             "inf-normalized": ["window 2, step 5, feature 1 is inf", "finite"]}[case]
    done = run(zoo_app, path)
    assert done.returncode == 2 and done.stdout == "", (done.returncode, done.stdout[:100])
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith(f"{path}: "), done.stderr
    assert all(w in done.stderr for w in words), done.stderr
    assert "Sanitizer" not in done.stderr and "runtime error" not in done.stderr


def test_each_kind_of_window_is_fed_as_its_header_says(zoo_app, c_project, tmp_path):
    """Normalized windows (NORM) give the logits of the int8 windows the step model's own
    quantization makes of them (INT8, quantized here from the model's scale and zero point:
    round half to even, as the zoo's loops), and raw ones (RAW) those of their normalization."""
    import json

    from zoo.export.tflite_graph import read_graph

    card = json.loads((c_project / "model_card.json").read_text())
    step = read_graph((c_project / "step.tflite").read_bytes())
    xt = step.tensor(step.inputs[card["step_io"]["x"]])
    norm = json.loads((c_project / "normalization.json").read_text())
    mean, std = np.float32(norm["mean"]), np.float32(norm["std"])
    x = np.random.default_rng(0).normal(0, 1.5, (4, T, F)).astype(np.float32)
    q = np.clip(np.round(x / np.float32(xt.scale)) + xt.zero_point, -128, 127)
    raw = (x * std + mean).astype(np.float32)
    q_raw = np.clip(np.round(((raw - mean) / std) / np.float32(xt.scale)) + xt.zero_point, -128,
                    127)
    out = {kind: run(zoo_app, "--state", window_file(tmp_path / f"{kind}.zoow", v, kind))
           for kind, v in ((b"NORM", x), (b"INT8", q), (b"RAW ", raw))}
    assert all(done.returncode == 0 for done in out.values())
    assert out[b"NORM"].stdout == out[b"INT8"].stdout != ""
    q_file = window_file(tmp_path / "q_raw.zoow", q_raw, b"INT8")
    assert out[b"RAW "].stdout == run(zoo_app, "--state", q_file).stdout


def test_bench_counts_the_windows_it_timed(zoo_app, windows):
    done = run(zoo_app, "--bench", 3, windows)
    assert done.returncode == 0 and done.stdout.split()[:2] == ["windows", "6"], done.stdout


@pytest.mark.parametrize("flag", ["-ffast-math", "-Ofast"])
def test_zoo_model_c_refuses_fast_math_and_says_why(flag, c_project, tmp_path):
    source = c_project / c_names(c_project)[2]
    done = subprocess.run(["cc", "-std=c99", "-O2", flag, "-c", str(source),
                           "-o", str(tmp_path / "model.o")], capture_output=True, text=True)
    assert done.returncode != 0
    assert "#error" in done.stderr and "-ffast-math" in done.stderr, done.stderr
    plain = subprocess.run(["cc", "-std=c99", "-O2", "-c", str(source), "-o",
                            str(tmp_path / "model.o")], capture_output=True, text=True)
    assert plain.returncode == 0, plain.stderr


def test_the_generated_sources_hold_no_unfilled_placeholder(c_project):
    prefix, header, source = c_names(c_project)
    assert (prefix, header) == ("sirnn_har2_gen1", "sirnn_har2_gen1_model.h")  # the tag's name
    for name in (header, source, "main.c", "Makefile"):
        assert "${" not in (c_project / name).read_text(), name


def test_zoo_app_help_prints_the_usage_and_exits_0(zoo_app):
    done = run(zoo_app, "--help")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.startswith(f"usage: {zoo_app} [--state] [--bench N] WINDOWS\n")
    assert "128 x 9 values" in done.stdout and "--help" in done.stdout  # the model's T x F


def test_kws_app_help_prints_the_usage_and_exits_0(kws_sirnn_app):
    done = run(kws_sirnn_app, "--help")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.startswith(f"usage: {kws_sirnn_app} [options] AUDIO\n")
    for flag in ("--features", "--quiet", "--instances", "--period", "--window", "--threshold",
                 "--suppression", "--min-count", "--help"):
        assert f"  {flag} " in done.stdout, flag


# kws_app's numeric flags (issue 44): each parsed whole and range-checked by zoo_args.h, as
# zoo_app's --bench; atoi took "2x" as 2 and wrapped 4294967395 to 99.
KWS_FLAGS = [("--instances", "2x", "1..8"), ("--period", "4294967395", "1..1048576"),
             ("--window", "", "1..128"), ("--threshold", "1e2", "0..255"),
             ("--suppression", "-1", "0..1073741824"), ("--min-count", " 5", "1..128"),
             ("--instances", "9", "1..8"), ("--period", None, "1..1048576")]


@pytest.mark.parametrize("flag,value,valid", KWS_FLAGS)
def test_kws_app_refuses_a_numeric_flag_that_is_not_a_whole_number_in_range(
        flag, value, valid, kws_sirnn_app, tmp_path):
    audio = tmp_path / "silence.raw"
    audio.write_bytes(bytes(3200))
    args = [flag] + ([] if value is None else [value])
    done = run(kws_sirnn_app, *args, audio) if value is not None else run(kws_sirnn_app, audio,
                                                                           *args)
    got = "nothing" if value is None else value
    assert done.returncode == 2 and done.stdout == "", (done.returncode, done.stdout)
    assert done.stderr == f"{flag} N: N must be an integer {valid}, got {got}\n", done.stderr


def test_kws_app_takes_the_same_flags_when_they_are_whole_numbers(kws_sirnn_app, tmp_path):
    audio = tmp_path / "silence.raw"
    audio.write_bytes(bytes(3200))
    done = run(kws_sirnn_app, "--instances", "+2", "--period", "50", "--window", "128",
               "--threshold", "0", "--suppression", "1073741824", "--min-count", "1", audio)
    frames = [line for line in done.stdout.splitlines() if line.startswith("frame ")]
    assert done.returncode == 0 and len(frames) == 8, done.stderr  # 1 + (1600 - 400) // 160


def test_kws_app_refuses_more_instances_than_the_period(kws_sirnn_app, tmp_path):
    audio = tmp_path / "silence.raw"
    audio.write_bytes(bytes(3200))
    done = run(kws_sirnn_app, "--instances", "4", "--period", "3", audio)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("--instances 4 is more than --period 3"), done.stderr
