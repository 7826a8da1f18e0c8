"""Keyword spotting in C (issue 30): the integer front end in C against its NumPy reference, bit
for bit on real Speech Commands clips; the reference against the float front end (an
independent float64 implementation: python_speech_features' maths in NumPy); the streaming app
against the Python streaming reference (TFLite Micro runs the model) on a long recording built
from clips and background noise."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from zoo.export.c_backend.kws import FRONTEND_DIR, tables_source, write_kws_project
from zoo.experiments.kws_long_recordings import build_recording
from zoo.export.kws_stream import Recognizer, StreamReference, stream_log_mel_q8
from zoo.training.data.audio import FbankFrontend, pad_to
from zoo.training.data.wav import read_wav
from zoo.training.tasks import int_frontend as F
from zoo.training.tasks.speech_layout import CLASSES, WORDS10

pytestmark = pytest.mark.skipif(shutil.which("cc") is None or shutil.which("make") is None,
                                reason="the KWS app builds with the host cc and make")

# The KWS tags these tests measured (docs/kws.md), now in the archive (not installed).
SIRNN = Path(__file__).resolve().parents[2] / "models/archive/sirnn.google12_testset/export-step-int8"


@pytest.fixture(scope="module")
def speech(shared_data) -> Path:
    folder = shared_data / "speech_commands_v0.01"
    if not folder.is_dir():
        pytest.skip(f"{folder}: the shared Speech Commands subset is missing")
    return folder


@pytest.fixture(scope="module")
def word_clips(speech):
    """The 100 clips of the 10 Google-12 words in the shared subset: (label, int16 samples)."""
    return [(i + 2, read_wav(c, rate=16000)) for i, w in enumerate(WORDS10)
            for c in sorted((speech / w).glob("*.wav"))]


@pytest.fixture(scope="module")
def noise(speech):
    return read_wav(speech / "_background_noise_" / "white_noise.wav", rate=16000)


def build_kws_app(export_dir: Path, out: Path) -> Path:
    write_kws_project(export_dir, out)
    done = subprocess.run(["make", "-s", "-C", str(out), "-f", "kws.mk"], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return out / "kws_app"


@pytest.fixture(scope="module")
def kws_app(kws_sirnn_app) -> Path:
    return kws_sirnn_app  # tests/export/conftest.py: SIRNN's kws_app, built once per session


def run_app(app: Path, samples: np.ndarray, tmp_path: Path, *args: str) -> list[list[str]]:
    path = tmp_path / "stream.raw"
    np.asarray(samples, "<i2").tofile(path)
    out = subprocess.run([str(app), *args, str(path)], capture_output=True, text=True, check=True)
    return [line.split() for line in out.stdout.splitlines()]


def test_the_c_tables_are_the_references_formulas():
    assert (FRONTEND_DIR / "kws_frontend_tables.c").read_text() == tables_source()


def test_the_mel_sums_cannot_overflow_uint64():
    t = F.tables()
    # |v[n]| <= (64552 w[n] + 2^14) >> 15 + 1; |Y[k]| = |2 X[k]| <= 2 sum |v| plus the FFT's
    # roundings (9 stages of at most 1 per value, far below 2^10 in total).
    v_max = (64552 * t.window + (1 << 14)) // (1 << 15) + 1
    y_max = 2 * int(v_max.sum()) + 1024
    p_max = (2 * y_max * y_max) >> F.POWER_SHIFT
    assert p_max * int(t.dense_mel().sum(axis=1).max()) < 2 ** 64


def test_c_front_end_equals_the_numpy_reference_on_real_clips(kws_app, word_clips, noise,
                                                              tmp_path):
    # 100 word clips and 10 s of white noise, one stream: 1,963 frames.
    stream = np.concatenate([x for _, x in word_clips] + [noise[:160000]])
    lines = run_app(kws_app, stream, tmp_path, "--features")
    c = np.array([[int(v) for v in line[2:]] for line in lines], np.int16)
    ref = stream_log_mel_q8(stream)
    assert c.shape == ref.shape == (1 + (len(stream) - 400) // 160, 32)
    assert np.array_equal(c, ref), f"{np.sum(c != ref)} of {c.size} values differ"


def test_kws_app_reads_wav_files_and_refuses_other_formats(kws_app, speech, tmp_path):
    clip = sorted((speech / "yes").glob("*.wav"))[0]
    out = subprocess.run([str(kws_app), "--features", str(clip)], capture_output=True, text=True,
                         check=True).stdout
    c = np.array([[int(v) for v in line.split()[2:]] for line in out.splitlines()])
    assert np.array_equal(c, stream_log_mel_q8(read_wav(clip, rate=16000)))
    blob = bytearray(clip.read_bytes())
    blob[22] = 2  # the fmt chunk's channel count: stereo
    bad = tmp_path / "stereo.wav"
    bad.write_bytes(bytes(blob))
    done = subprocess.run([str(kws_app), str(bad)], capture_output=True, text=True)
    assert done.returncode == 2  # more in test_kws_wav.py: every accepted format and refusal
    assert done.stderr.strip() == f"{bad}: block align 2, but 2 channel(s) of 16 bits make 4"


def test_c_front_end_equals_the_reference_at_full_scale(kws_app, tmp_path):
    # The worst cases for overflow: full-scale noise, a full-scale square wave, digital silence.
    rng = np.random.default_rng(0)
    t = np.arange(16000)
    stream = np.concatenate([rng.integers(-32768, 32768, 16000),
                             np.where((t // 8) % 2, 32767, -32768), np.zeros(8000, np.int64)])
    c = np.array([[int(v) for v in line[2:]] for line in run_app(kws_app, stream, tmp_path,
                                                                  "--features")], np.int16)
    ref = stream_log_mel_q8(stream)
    assert np.array_equal(c, ref)
    assert ref.max() > 50 * 256 and ref[-5:].max() == 0  # loud frames are loud, silence is 0


def test_power_spectrum_matches_a_float_fft():
    # The integer FFT against numpy's float64 FFT of the same pre-emphasised, windowed frames.
    rng = np.random.default_rng(1)
    frames = rng.integers(-8000, 8000, (20, 400)).astype(np.int16)
    prev = rng.integers(-8000, 8000, 20)
    x = frames.astype(np.float64)
    y = x - 0.97 * np.concatenate([prev[:, None], x[:, :-1]], axis=1)
    want = 4 * np.abs(np.fft.rfft(y * np.hamming(400), 512)) ** 2
    got = F.power_spectrum(frames, prev).astype(np.float64)
    assert np.max(np.abs(got - want)) / want.max() < 1e-3


def test_int_log_mel_tracks_the_float_front_end_on_real_clips(word_clips):
    x = np.stack([pad_to(c, 16000) for _, c in word_clips])
    fl = FbankFrontend()(x)
    il = F.log_mel(F.clip_log_mel_q8(x))
    assert np.corrcoef(fl.ravel(), il.ravel())[0, 1] > 0.98
    # Where the float filter energy is above e^5 (64 % of the values here), the integer front
    # end is within 0.06 nats for 99 % of them; below that, the FFT's rounding noise and the
    # P >> 6 truncation dominate (digital silence: ln(eps) = -36 against a floor of -11.8).
    loud = fl > 5
    assert loud.mean() > 0.6
    err = np.abs(fl - il)[loud]
    assert np.percentile(err, 99) < 0.06 and err.mean() < 0.01


def test_input_map_is_the_float_quantization_within_one_step(word_clips):
    import json

    norm = json.loads((SIRNN / "normalization.json").read_text())
    ref = StreamReference(SIRNN)
    q8 = F.clip_log_mel_q8(np.stack([pad_to(c, 16000) for _, c in word_clips[:20]]))
    m = ref.input_map
    scale = np.log(2) / (256 * np.asarray(norm["std"]) * m.mul / (1 << m.shift))
    real = (F.log_mel(q8) - np.asarray(norm["mean"], np.float32)) / np.asarray(norm["std"])
    want = np.clip(np.round(real / scale) + m.zero_point, -128, 127)
    assert np.max(np.abs(m(q8).astype(int) - want)) <= 1


def long_stream(word_clips, noise, per_word: int = 1, volume: float = 0.02):
    """Clips of every word separated by 1 s of white noise; each clip and each gap fills one
    99-hop window of the stream (15,840 samples), so instance 1's resets fall between words."""
    parts, truth, pos = [], [], 0
    for label, clip in word_clips:
        if truth.count(label) >= per_word:
            continue
        parts += [(volume * noise[pos:pos + 15840]).astype(np.int16), pad_to(clip, 16000)[:15840]]
        truth.append(label)
        pos += 15840
    parts.append((volume * noise[pos:pos + 15840]).astype(np.int16))
    return np.concatenate(parts), truth


@pytest.mark.parametrize("instances", [1, 2])
def test_kws_app_equals_the_python_streaming_reference(kws_app, word_clips, noise, tmp_path,
                                                       instances):
    stream, _ = long_stream(word_clips, noise)
    ref = StreamReference(SIRNN, instances=instances)
    logits, post, detections = ref.run(stream, Recognizer())
    lines = run_app(kws_app, stream, tmp_path, "--instances", str(instances))
    frames = [ln for ln in lines if ln[0] == "frame"]
    assert len(frames) == len(logits) == 1 + (len(stream) - 400) // 160
    c_logits = np.array([[int(v) for v in ln[3:15]] for ln in frames])
    c_post = np.array([[int(v) for v in ln[16:28]] for ln in frames])
    assert np.array_equal(c_logits, logits) and np.array_equal(c_post, post)
    c_detect = [(int(ln[1]), int(ln[2]), int(ln[4])) for ln in lines if ln[0] == "detect"]
    assert c_detect == detections and len(detections) > 0
    assert all(CLASSES[c] == ln[3] for (_, c, _), ln in
               zip(detections, [ln for ln in lines if ln[0] == "detect"]))


def test_a_users_words_are_all_reported_silence_and_unknown_only_by_name(kws_app, noise,
                                                                         tmp_path):
    """The recognizer skips the classes *named* _silence_ and _unknown_, not classes 0 and 1: the
    same model relabelled with a user's twelve words (the audio_folder task's sorted folders,
    none of them silence) reports its class 0 on a stream of background noise, in C and in the
    Python twin, where with the Google-12 names neither reports anything."""
    import json
    import shutil

    user = tmp_path / "user-words"
    shutil.copytree(SIRNN, user)
    card = json.loads((user / "model_card.json").read_text())
    card["class_names"] = [f"word{i:02d}" for i in range(len(CLASSES))]
    (user / "model_card.json").write_text(json.dumps(card))
    stream = noise[:5 * 16000].astype(np.int16)  # background noise: the model says _silence_
    twin_google = StreamReference(SIRNN)
    _, _, google = twin_google.run(stream, twin_google.recognizer())
    twin_user = StreamReference(user)
    _, _, words = twin_user.run(stream, twin_user.recognizer())
    assert google == [] and [c for _, c, _ in words][:1] == [0], (google, words)
    detect = [ln for ln in run_app(build_kws_app(user, tmp_path / "c"), stream, tmp_path,
                                   "--quiet") if ln[0] == "detect"]
    assert [(int(ln[1]), int(ln[2]), int(ln[4])) for ln in detect] == words
    assert {ln[3] for ln in detect} == {"word00"}
    assert [ln for ln in run_app(kws_app, stream, tmp_path, "--quiet") if ln[0] == "detect"] == []


@pytest.mark.parametrize("model", ["gru", "fastgrnn"])
def test_kws_app_equals_the_reference_for_the_other_shipped_step_models(model, word_clips, noise,
                                                                        tmp_path):
    # FastGRNN's h_t and h_{t-1} are quantized differently: the state goes back through a table.
    export_dir = SIRNN.parents[1] / f"{model}.google12_testset" / "export-step-int8"
    app = build_kws_app(export_dir, tmp_path / "kws")
    stream, _ = long_stream(word_clips[::10], noise)
    logits, post, detections = StreamReference(export_dir).run(stream, Recognizer())
    lines = run_app(app, stream, tmp_path)
    frames = [ln for ln in lines if ln[0] == "frame"]
    assert np.array_equal(np.array([[int(v) for v in ln[3:15]] for ln in frames]), logits)
    assert np.array_equal(np.array([[int(v) for v in ln[16:28]] for ln in frames]), post)
    assert [(int(ln[1]), int(ln[2]), int(ln[4])) for ln in lines if ln[0] == "detect"] == detections


def test_each_keyword_is_reported_once_at_most_and_in_its_own_second(word_clips, noise):
    """One clip of each word, each in its own 1 s window between 1 s of noise. The shipped SiRNN
    was trained on the float front end (retraining on the integer one is issue 30 item 3), so
    not every word is found; what the recognizer must guarantee is checked: no word twice, no
    report during the leading noise, no report of a wrong word (each report falls in the window
    of its clip or the noise second after it)."""
    stream, truth = long_stream(word_clips, noise)
    _, _, detections = StreamReference(SIRNN).run(stream, Recognizer())
    slot = lambda hop: (hop - 99) // 198  # clip i fills hops 99 + 198 i .. 197 + 198 i
    found = {}
    for hop, cls, _ in detections:
        assert hop >= 99 + 5, f"a report at hop {hop}, in the leading noise"
        found.setdefault(slot(hop), []).append(cls)
    assert all(len(v) == 1 for v in found.values()), found
    wrong = {i: v[0] for i, v in found.items() if i >= len(truth) or truth[i] != v[0]}
    assert not wrong, wrong
    # measured: 7 of the 10 words (yes no right on off stop go); up, down and left are missed
    assert len(found) >= 7, found


@pytest.fixture(scope="module")
def background(speech):
    """The real background-noise files of the shared subset (running tap, white noise)."""
    return [read_wav(p, rate=16000) for p in sorted((speech / "_background_noise_").glob("*.wav"))]


PHASES = 6  # offsets of a clip against the 99-hop resets at which it is streamed alone


def reported_alone_at_every_phase(ref, recognizer, label, clip, background) -> bool:
    """Whether the reference reports ``clip`` once, as its word, and nothing else, when it is
    streamed alone in background noise (0.5 s before it, 0.75 s after) starting at each of
    `PHASES` offsets spread over the reset period."""
    for phase in range(PHASES):
        lead = 8000 + phase * 15840 // PHASES
        noise = background[phase % len(background)]
        x = noise[:lead + 28000].astype(np.int32)
        x[lead:lead + len(clip)] += clip
        _, _, detections = ref.run(np.clip(x, -32768, 32767).astype(np.int16), recognizer)
        if [c for _, c, _ in detections] != [label]:
            return False
    return True


def spottable_clips(ref, recognizer, word_clips, background):
    """Per word, its first clip (in file order) that the reference classifies right as a
    standalone 1 s clip and reports alone at every phase; a word with no such clip is left out."""
    from zoo.experiments.kws_long_recordings import classified_right

    right = classified_right(ref, word_clips)
    chosen = {}
    for (label, clip), ok in zip(word_clips, right):
        if ok and label not in chosen and reported_alone_at_every_phase(ref, recognizer, label,
                                                                        clip, background):
            chosen[label] = clip
    return list(chosen.items())


def test_a_long_recording_reports_each_keyword_once_and_nothing_else(kws_app, word_clips,
                                                                     background, tmp_path):
    """Issue 30's goal: a long recording, keywords at arbitrary offsets (seeded gaps of 0.5-2 s,
    not aligned to the 99-hop resets) with the real background noise under all of it, streamed
    with 4 instances and the default recognizer: each keyword is reported exactly once, in its
    clip or the 0.5 s after it, and nothing else is reported; the C app prints the same reports.

    The clips are chosen by the reference itself (`spottable_clips`), to test the pipeline
    rather than the model's clip accuracy (74-80 % on 1 s clips): per word, the first clip it
    classifies right as a 1 s clip *and* reports when the clip is streamed alone at six offsets
    against the resets. Clips that pass only the 1 s test are not enough: the first such clip of
    each word, at the offsets of seeds 0-5, gave 3 to 7 of the 10 words and 1 to 3 false alarms
    (measured, 4 instances). 9 words have a clip that passes (no clip of "down" does).

    It can fail (measured when it was written): run with 1 instance (the app's default), only
    "yes" has a clip that passes; this recording streamed with 1 instance gives 3 of its 9 words
    and 3 false alarms, with 2 instances 8 words and 2 false alarms, with suppression 0 every
    word 19 to 60 times, with threshold 100 3 false alarms. With the integer-front-end SiRNN
    (``sirnn.google12_testset_int``) in place of this one, 8 words qualify and it passes.
    Seed 0 is not the only layout, nor always a pass: over seeds 0-9 this model passes 9 (seed
    2 misses one word), the integer-front-end one 7."""
    ref, recognizer = StreamReference(SIRNN, instances=4), Recognizer()
    clips = spottable_clips(ref, recognizer, word_clips, background)
    assert len(clips) >= 8, [CLASSES[label] for label, _ in clips]
    rng = np.random.default_rng(0)
    recording = build_recording([clips[i] for i in rng.permutation(len(clips))], background, rng)
    _, _, detections = ref.run(recording.samples, recognizer)
    reports = [(CLASSES[c], 160 * hop + 400) for hop, c, _ in detections]  # the frame's end
    assert len(reports) == len(recording.labels), reports
    for (word, at), label, (start, end) in zip(reports, recording.labels, recording.spans):
        assert word == CLASSES[label] and start <= at < end + 8000, (reports, recording.spans)
    lines = run_app(kws_app, recording.samples, tmp_path, "--quiet", "--instances", "4")
    assert [(int(ln[1]), int(ln[2]), int(ln[4])) for ln in lines] == detections


def test_speech_tasks_take_the_integer_front_end_as_an_option(word_clips):
    from zoo.training.tasks import get_task

    x = np.stack([pad_to(c, 16000) for _, c in word_clips[:4]])
    for task in ("google12", "google12_testset"):
        fe = get_task(task, features="int_logmel").frontend
        assert np.array_equal(fe(x), F.log_mel(F.clip_log_mel_q8(x)))
        assert fe.settings() != get_task(task).frontend.settings()  # a separate feature cache
    with pytest.raises(ValueError, match="option features must be one of 'logmel', 'int_logmel', "
                                         "'int_logmel_q15', got 'int8'"):
        get_task("google12", features="int8").frontend


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
def test_the_cortex_m4_build_equals_the_reference(tmp_path):
    """The pipeline cross-compiled for a Cortex-M4 (CLZ, SMULL / SMLAL / UMLAL, the C backend's
    DSP path) and run under qemu-arm gives the reference's features and logits, hop by hop."""
    cortexm = Path(__file__).resolve().parents[2] / "tools" / "cortexm"
    write_kws_project(SIRNN, tmp_path / "k", prefix="words")  # the driver reads its names
    build = subprocess.run(["make", "-s", "-C", str(cortexm), "-f", "kws.mk", f"K={tmp_path / 'k'}",
                            f"PYTHON={sys.executable}",
                            f"B={tmp_path / 'b'}", f"{tmp_path / 'b'}/kws.elf"],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stdout + build.stderr
    hops = 250
    out = subprocess.run(["qemu-arm", "-cpu", "cortex-a15", str(tmp_path / "b" / "kws.elf"), "kws",
                          "print", str(hops)], capture_output=True, text=True, timeout=120).stdout
    rows = [line.split(":", 1)[1].split("|") for line in out.splitlines() if line.startswith("hop")]
    feats = np.array([[int(v) for v in r[0].split()] for r in rows])
    logits = np.array([[int(v) for v in r[1].split()] for r in rows])
    samples = driver_samples(240 + 160 * hops)
    ref = StreamReference(SIRNN, instances=1, period=99)
    q8 = stream_log_mel_q8(samples)
    assert np.array_equal(feats, q8)
    assert np.array_equal(logits, ref.logits(q8))


def test_a_model_that_does_not_take_32_features_is_refused_before_anything_is_written(tmp_path):
    har = SIRNN.parents[1] / "sirnn.har2_gen4" / "export-step-int8"  # 9 features per step
    with pytest.raises(ValueError, match=r"takes 9 features per step; the KWS front end gives 32"):
        write_kws_project(har, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_zoo_export_form_c_of_a_kws_run_adds_the_kws_app(tmp_path, monkeypatch):
    from zoo.export import card_schema
    from zoo.export.c_backend.command import export_c
    from zoo.export.c_backend.kws import FRONTEND_FILES, input_source, is_kws_export
    from zoo.export.c_backend.names import rename_kws

    out = tmp_path / "c"
    reads, real = [], card_schema.load_card_json
    monkeypatch.setattr(card_schema, "load_card_json", lambda p: reads.append(p) or real(p))
    summary = export_c(SIRNN.parent, out)
    assert len(reads) == 1, reads  # the export's card, parsed once (issue 43 item 3: 6 times)
    monkeypatch.undo()
    assert summary["kws_files"] == [*FRONTEND_FILES, "kws_input.c"]
    assert all((out / name).is_file() for name in summary["kws_files"])
    assert summary["prefix"] == "sirnn_google12_testset"  # the tag's name
    assert (out / "kws_input.c").read_text() == rename_kws(input_source(SIRNN), summary["prefix"])
    assert "int32_t sirnn_google12_testset_kws_input_mul[32]" in (out / "kws_input.c").read_text()
    assert "kws_app" in (out / "README.md").read_text()
    assert not is_kws_export(SIRNN.parents[2] / "pretrained" / "sirnn.har2" / "export-step-int8")


def test_the_integer_front_end_refuses_signals_that_are_not_one_second():
    with pytest.raises(ValueError, match=r"expected signals of shape \(N, 16000\), got \(2, 16500\)"):
        F.IntLogMelFrontend()(np.zeros((2, 16500), np.int16))
