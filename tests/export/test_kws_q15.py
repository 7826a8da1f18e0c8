"""The q15 front end (``features: int_logmel_q15``, docs/kws.md section 8): its C
(``kws_frontend_q15.c``, host cc and the Cortex-M4 build under qemu-arm) against its NumPy
reference bit for bit, on real clips and at full scale; the reference against the float front end
(python_speech_features' maths in float64, an independent implementation); an export of a model
trained on it gets this front end, and its streaming app equals the Python streaming reference."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from zoo.export.c_backend import c_names
from zoo.export.c_backend.kws import FRONTEND_DIR, write_kws_project
from zoo.export.c_backend.names import rename_kws
from zoo.export.kws_stream import StreamReference, stream_log_mel_q8
from zoo.training.data.audio import FbankFrontend, pad_to
from zoo.training.data.wav import read_wav
from zoo.training.tasks import int_frontend as F
from zoo.training.tasks import int_frontend_q15 as Q
from zoo.training.tasks.speech_layout import WORDS10

pytestmark = pytest.mark.skipif(shutil.which("cc") is None or shutil.which("make") is None,
                                reason="the KWS app builds with the host cc and make")

REPO = Path(__file__).resolve().parents[2]
SIRNN = REPO / "models/archive/sirnn.google12_testset/export-step-int8"
Q15 = "int_logmel_q15"


@pytest.fixture(scope="module")
def word_clips(shared_data):
    speech = shared_data / "speech_commands_v0.01"
    if not speech.is_dir():
        pytest.skip(f"{speech}: the shared Speech Commands subset is missing")
    return [read_wav(c, rate=16000) for w in WORDS10 for c in sorted((speech / w).glob("*.wav"))]


@pytest.fixture(scope="module")
def q15_export(tmp_path_factory) -> Path:
    """The shipped float-trained SiRNN's step export, its card saying it was trained on the q15
    features: what an export of a model trained on them carries (the front end follows the
    card; the model's accuracy is not at stake here)."""
    out = tmp_path_factory.mktemp("q15") / "export-step-int8"
    shutil.copytree(SIRNN, out)
    card = json.loads((out / "model_card.json").read_text())
    card["frontend"] = {**card["frontend"], "features": Q15}
    (out / "model_card.json").write_text(json.dumps(card, indent=2))
    return out


@pytest.fixture(scope="module")
def q15_app(q15_export, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("q15") / "kws"
    write_kws_project(q15_export, out)
    done = subprocess.run(["make", "-s", "-C", str(out), "-f", "kws.mk"], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return out / "kws_app"


def app_lines(app: Path, samples: np.ndarray, tmp_path: Path, *args: str) -> list[list[str]]:
    path = tmp_path / "stream.raw"
    np.asarray(samples, "<i2").tofile(path)
    out = subprocess.run([str(app), *args, str(path)], capture_output=True, text=True, check=True)
    return [line.split() for line in out.stdout.splitlines()]


def extremes() -> np.ndarray:
    """Full-scale noise, a full-scale square wave, the two rails, digital silence."""
    rng = np.random.default_rng(0)
    t = np.arange(16000)
    return np.concatenate([rng.integers(-32768, 32768, 16000), np.where((t // 8) % 2, 32767, -32768),
                           np.full(4000, -32768), np.full(4000, 32767), np.zeros(8000, np.int64)])


def test_the_export_writes_the_front_end_its_model_was_trained_on(q15_export, q15_app):
    project = q15_app.parent
    prefix = c_names(project)[0]  # the public names take the export's prefix
    assert (project / "kws_frontend.c").read_text() == rename_kws(
        (FRONTEND_DIR / "kws_frontend_q15.c").read_text(), prefix)
    assert StreamReference(q15_export).features == Q15
    assert StreamReference(SIRNN).features == "int_logmel"  # float-trained: the integer one


def test_c_equals_the_numpy_reference_on_real_clips_and_at_full_scale(q15_app, word_clips,
                                                                     tmp_path):
    stream = np.concatenate(word_clips + [extremes()])
    c = np.array([[int(v) for v in line[2:]] for line in app_lines(q15_app, stream, tmp_path,
                                                                    "--features")], np.int16)
    ref = stream_log_mel_q8(stream, features=Q15)
    assert c.shape == ref.shape == (1 + (len(stream) - 400) // 160, 32)
    assert np.array_equal(c, ref), f"{np.sum(c != ref)} of {c.size} values differ"
    assert ref[-3:].max() == 0 and ref.max() > 50 * 256  # silence is 0, full scale is loud


def test_the_streaming_app_equals_the_python_reference(q15_export, q15_app, word_clips, tmp_path):
    stream = np.concatenate(word_clips[:20])
    lines = app_lines(q15_app, stream, tmp_path, "--instances", "2")
    logits = np.array([[int(v) for v in ln[3:15]] for ln in lines if ln[0] == "frame"])
    ref = StreamReference(q15_export, instances=2)
    assert np.array_equal(logits, ref.logits(stream_log_mel_q8(stream, features=Q15)))


def test_the_16_bit_lanes_stay_in_range_at_full_scale():
    # The reference raises OverflowError when a lane that C adds without halving leaves int16.
    rng = np.random.default_rng(3)
    worst = [np.full((1, 400), v) for v in (-32768, 32767)]
    worst += [np.where((np.arange(400) // p) % 2, 32767, -32768)[None] for p in (1, 2, 3, 8, 64)]
    frames = np.concatenate(worst + [rng.integers(-32768, 32768, (200, 400))])
    prev = rng.integers(-32768, 32768, len(frames))
    q8 = Q.frames_log_mel_q8(frames, prev)
    assert q8.min() >= 0 and q8.max() < 2 ** 15


def test_the_reference_tracks_the_float_front_end_on_real_clips(word_clips):
    x = np.stack([pad_to(c, 16000) for c in word_clips])
    want = FbankFrontend()(x.astype(np.float32))
    got = F.log_mel(F.clip_log_mel_q8(x, features=Q15))
    assert np.corrcoef(want.ravel(), got.ravel())[0, 1] > 0.97  # measured 0.978
    loud = want > 5  # energies above e^5: 64 % of the values of these clips
    assert np.abs(got - want)[loud].mean() < 0.1  # nats; measured 0.060 (int_logmel: 0.008)


def test_the_block_scale_keeps_quiet_clips(word_clips):
    # The same clips at 1/64 of their level: each frame is scaled to its own peak, so the q15
    # features follow the float ones better than int_logmel's fixed scale does (measured:
    # correlation 0.941 against 0.877).
    x = np.stack([pad_to(c, 16000) for c in word_clips]) // 64
    want = FbankFrontend()(x.astype(np.float32)).ravel()
    corr = {f: np.corrcoef(want, F.log_mel(F.clip_log_mel_q8(x, features=f)).ravel())[0, 1]
            for f in F.INT_FEATURES}
    assert corr[Q15] > 0.92 and corr[Q15] > corr["int_logmel"] + 0.03, corr


def test_speech_tasks_take_it_as_an_option(word_clips):
    from zoo.training.tasks import get_task

    x = np.stack([pad_to(c, 16000) for c in word_clips[:4]])
    fe = get_task("google12_testset", features=Q15).frontend
    assert np.array_equal(fe(x), F.log_mel(F.clip_log_mel_q8(x, features=Q15)))
    assert fe.settings() != get_task("google12_testset", features="int_logmel").frontend.settings()
    assert fe.describe()["features"] == Q15 and "radix-4" in fe.describe()["steps"]


def driver_samples(count: int) -> np.ndarray:
    """tools/cortexm/kws_main.c's samples: a square wave of period 36 (+-3000) plus LCG noise."""
    out, lcg = np.empty(count, np.int64), 12345
    for n in range(count):
        lcg = (lcg * 1664525 + 1013904223) % (1 << 32)
        noise = (lcg >> 16) - (1 << 16 if lcg >> 31 else 0)
        out[n] = (3000 if (n // 18) % 2 else -3000) + int(noise / 16)  # C's division truncates
    return out


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None or shutil.which("qemu-arm") is None,
                    reason="needs arm-none-eabi-gcc and qemu-arm (apt: gcc-arm-none-eabi qemu-user)")
def test_the_cortex_m4_build_equals_the_reference(q15_export, tmp_path):
    """The DSP instructions (SHADD16, SMUAD, SMUSDX, PKHTB, ...) of the Cortex-M4 build under
    qemu-arm give what the plain C gives on the host: the reference's features and logits."""
    write_kws_project(q15_export, tmp_path / "k")  # the default prefix: the driver reads it
    build = subprocess.run(["make", "-s", "-C", str(REPO / "tools" / "cortexm"), "-f", "kws.mk",
                            f"PYTHON={sys.executable}",
                            f"K={tmp_path / 'k'}", f"B={tmp_path / 'b'}", f"{tmp_path / 'b'}/kws.elf"],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stdout + build.stderr
    hops = 250
    out = subprocess.run(["qemu-arm", "-cpu", "cortex-a15", str(tmp_path / "b" / "kws.elf"), "kws",
                          "print", str(hops)], capture_output=True, text=True, timeout=120).stdout
    rows = [line.split(":", 1)[1].split("|") for line in out.splitlines() if line.startswith("hop")]
    feats = np.array([[int(v) for v in r[0].split()] for r in rows])
    logits = np.array([[int(v) for v in r[1].split()] for r in rows])
    q8 = stream_log_mel_q8(driver_samples(240 + 160 * hops), features=Q15)
    assert np.array_equal(feats, q8)
    assert np.array_equal(logits, StreamReference(q15_export).logits(q8))
