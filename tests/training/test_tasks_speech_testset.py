"""The official Speech Commands test-set layout: the by-speaker split of ``google12_testset`` on the
shared part-A archive, the clip checks on a few of its clips, and ``zoo eval`` of a google12 run
(trained on the 300-clip v0.01 subset) on that layout.

Oracles: the shared data README's per-class counts of part A; speaker ids re-derived here from
the file names; features recomputed from the wav bytes with the stdlib ``wave`` module.
"""

import hashlib
import os
import struct
import subprocess
import sys
import tarfile
import wave
from pathlib import Path

import numpy as np
import pytest

from zoo.training.data.audio import FbankFrontend
from zoo.training.data.errors import DataError
from zoo.training.data.wav import read_wav
from zoo.training.tasks import get_task
from zoo.training.tasks.speech_testset import CLASSES, index_layout, speaker_of

REPO = Path(__file__).resolve().parents[2]
PART_A = "archives/speech_commands_test_set_v0.02_part_A.tar.gz"
# shared/data/README.md section 4: clips per class in part A.
README_COUNTS = {"yes": 195, "no": 189, "up": 202, "down": 185, "left": 195, "right": 184,
                 "on": 187, "off": 191, "stop": 190, "go": 174, "_silence_": 202, "_unknown_": 192}


@pytest.fixture(scope="module")
def part_a(shared_data):
    return get_task("google12_testset").load(shared_data / PART_A)


@pytest.fixture(scope="module")
def few_clips(shared_data, tmp_path_factory) -> Path:
    """2 clips of each of the 12 class folders of part A, extracted as the official layout."""
    dst = tmp_path_factory.mktemp("testset") / "speech_commands_test_set_v0.02"
    with tarfile.open(shared_data / PART_A) as tar:
        names = sorted(m for m in tar.getnames() if m.endswith(".wav"))
        chosen = [n for c in CLASSES for n in [m for m in names if m.startswith(c + "/")][:2]]
        for name in chosen:
            (dst / name).parent.mkdir(parents=True, exist_ok=True)
            (dst / name).write_bytes(tar.extractfile(name).read())
    return dst


def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / src.name
    for p in src.glob("*/*.wav"):
        (dst / p.parent.name).mkdir(parents=True, exist_ok=True)
        (dst / p.parent.name / p.name).write_bytes(p.read_bytes())
    return dst


@pytest.mark.slow
def test_part_a_split_by_speaker(part_a):
    files = part_a.info["files"]
    everything = sum(files.values(), [])
    assert len(everything) == len(set(everything)) == 2286
    per_class = {c: sum(f.startswith(c + "/") for f in everything) for c in CLASSES}
    assert per_class == README_COUNTS
    # Speaker ids from the names, independently of the loader: 8 hex digits before _nohash_.
    def speaker(f):
        cls, name = f.split("/")
        return "silence:" + name if cls == "_silence_" else name.split("_nohash_")[0][-8:]
    speakers = {s: {speaker(f) for f in files[s]} for s in files}
    assert not speakers["train"] & speakers["val"] and not speakers["train"] & speakers["test"]
    assert not speakers["val"] & speakers["test"]
    assert len(set().union(*speakers.values())) == 114 + 202
    # The documented rule, recomputed: md5(speaker id) % 100 < 15 val, < 30 test.
    for s, fs in files.items():
        for f in fs[::25]:
            sid = speaker(f).removeprefix("silence:").removesuffix(".wav")
            b = int(hashlib.md5(sid.encode()).hexdigest(), 16) % 100
            assert s == ("val" if b < 15 else "test" if b < 30 else "train"), f
    assert (len(part_a.train), len(part_a.val), len(part_a.test)) == (1566, 310, 410)
    # Labels are the folders, in the Google-12 class order.
    names = get_task("google12").class_names
    assert names == list(CLASSES)
    assert [names[y] for y in part_a.test.y] == [f.split("/")[0] for f in files["test"]]


def _wave_samples(path):
    with wave.open(str(path), "rb") as w:
        return np.frombuffer(w.readframes(w.getnframes()), "<i2")


@pytest.mark.slow
def test_features_are_the_frontend_of_the_clips(part_a, shared_data, few_clips):
    fe = FbankFrontend()
    rels = sorted(p.relative_to(few_clips).as_posix() for p in few_clips.glob("*/*.wav"))
    assert len(rels) == 24
    for rel in rels:
        x = fe(_wave_samples(few_clips / rel)[None])[0]
        split = next(s for s in ("train", "val", "test") if rel in part_a.info["files"][s])
        i = part_a.info["files"][split].index(rel)
        np.testing.assert_array_equal(getattr(part_a, split).x[i], x)
    assert speaker_of("_unknown_/bed_4c7c95de_nohash_0.wav.wav") == "4c7c95de"
    assert speaker_of("_silence_/1024.wav") == "1024"


def _extensible(path: Path) -> None:
    """Rewrite a PCM wav as WAVE_FORMAT_EXTENSIBLE (16-bit PCM sub-format), same samples."""
    samples = _wave_samples(path).tobytes()
    guid = bytes.fromhex("0100000000001000800000aa00389b71")
    fmt = struct.pack("<HHIIHHHHI", 0xFFFE, 1, 16000, 32000, 2, 16, 22, 16, 4) + guid
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack(
        "<I", len(samples)) + samples
    path.write_bytes(b"RIFF" + struct.pack("<I", len(body)) + body)


def _rewrite(path: Path, *, rate=16000, channels=1, width=2, n=16000) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(b"\x01" * n * channels * width)


def test_wave_format_extensible_16_bit_is_accepted(few_clips, tmp_path):
    layout = _copy(few_clips, tmp_path)
    rel = sorted(layout.glob("yes/*.wav"))[0]
    before = _wave_samples(rel)
    _extensible(rel)
    with pytest.raises(Exception):  # the stdlib reader refuses it (Python 3.11), ours must not
        _wave_samples(rel)
    np.testing.assert_array_equal(read_wav(rel), before)
    assert len(get_task("google12_testset", validation_percentage=0, testing_percentage=0)
               .load(layout).train) == 24


@pytest.mark.parametrize("damage,msg", [
    (lambda p: _rewrite(p, rate=8000), "found 8000 Hz"),
    (lambda p: _rewrite(p, channels=9), "9 channels"),
    (lambda p: p.unlink() or p.mkdir(), "a folder, not a WAV file"),
    (lambda p: _rewrite(p, n=0), "no samples"),
    (lambda p: p.write_bytes(p.read_bytes()[:30]), "truncated header"),
    (lambda p: p.write_bytes(p.read_bytes()[:5000]), "truncated: header says 32000 bytes"),
    (lambda p: p.write_bytes(b""), "not a RIFF/WAVE file"),
])
def test_bad_clips_name_the_file(few_clips, tmp_path, damage, msg):
    layout = _copy(few_clips, tmp_path)
    bad = sorted(layout.glob("_unknown_/*.wav"))[1]
    damage(bad)
    with pytest.raises(DataError, match=msg) as e:
        get_task("google12_testset").load(layout)
    assert str(bad) in str(e.value)


def test_layout_errors(few_clips, tmp_path):
    layout = _copy(few_clips, tmp_path)
    (layout / "marvin").mkdir()
    (layout / "marvin" / "x_nohash_0.wav").write_bytes((layout / "yes").glob("*").__next__().read_bytes())
    with pytest.raises(DataError, match="marvin are not Google-12 classes"):
        index_layout(layout)
    for p in (layout / "marvin").iterdir():
        p.unlink()
    for p in (layout / "go").iterdir():
        p.unlink()
    with pytest.raises(DataError, match="no clips in the class folder.*go"):
        get_task("google12_testset").load(layout)
    with pytest.raises(DataError, match="yes/nohash.wav: file name has no speaker id"):
        speaker_of("yes/nohash.wav")
    with pytest.raises(ValueError, match="evaluate_on must be 'test' or 'all'"):
        get_task("google12_testset", evaluate_on="everything")


@pytest.mark.slow
def test_zoo_eval_scores_a_google12_run_on_the_test_set_layout(shared_data, few_clips, tmp_path):
    env = {**os.environ, "KERAS_BACKEND": "tensorflow", "ZOO_CACHE_DIR": str(tmp_path / "cache")}
    run = tmp_path / "g12"
    train = [sys.executable, "-m", "edge_rnn_zoo", "train", "--task", "google12", "--model", "gru",
             "--units", "8", "--epochs", "1", "--recipe", "none", "--seed", "1",
             "--data-dir", str(shared_data / "speech_commands_v0.01"), "--out", str(run)]
    proc = subprocess.run(train, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = subprocess.run([sys.executable, "-m", "edge_rnn_zoo", "eval", str(run), "--json",
                           "--data-dir", str(few_clips)], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    import json

    report = json.loads(proc.stdout)
    assert report["test_sequences"] == 24
    cm = np.array(report["confusion_matrix"])
    assert cm.sum(axis=1).tolist() == [2] * 12  # every folder is its class, 2 clips each
    # Independent scoring: features from the wav files, the saved model, the saved statistics.
    from zoo.training.evaluate import load_run

    _, model, norm = load_run(run)
    rels = sorted(p.relative_to(few_clips).as_posix() for p in few_clips.glob("*/*.wav"))
    x = FbankFrontend()(np.stack([_wave_samples(few_clips / r) for r in rels]))
    y = np.array([CLASSES.index(r.split("/")[0]) for r in rels])
    pred = model.predict(norm.apply(x), verbose=0).argmax(-1)
    assert report["accuracy"] == pytest.approx(float(np.mean(pred == y)))


def test_background_mixing_adds_a_scaled_slice_of_one_noise_array():
    """`mix_background` on synthetic clips: each output is the clip plus c times one
    ``len(x)``-sample slice of one noise array with 0 <= c <= volume (found here by search over
    every array and offset), about ``frequency`` of them mixed, and nothing drawn without noise."""
    from zoo.training.tasks.speech import mix_background

    rng = np.random.default_rng(0)
    noise = [rng.normal(size=150), rng.normal(size=100)]  # a longer array and an exact-length one
    slices = [(k, o, n[o:o + 100]) for k, n in enumerate(noise) for o in range(len(n) - 99)]
    draw, mixed, used = np.random.default_rng(1), 0, set()
    for _ in range(400):
        x = rng.normal(size=100)
        out = mix_background(x, noise, draw, frequency=0.5, volume=0.3)
        residual = out - x
        if not residual.any():
            continue
        mixed += 1
        fits = [(k, o, float(residual @ s / (s @ s))) for k, o, s in slices
                if np.allclose(residual, (residual @ s / (s @ s)) * s, atol=1e-12)]
        assert len(fits) == 1 and 0 <= fits[0][2] <= 0.3, fits
        used.add(fits[0][:2])
    assert 160 <= mixed <= 240  # binomial(400, 0.5): 200 +- 4 sd
    assert {k for k, _ in used} == {0, 1} and len(used) > 20  # both arrays, many offsets
    state = draw.bit_generator.state
    x = rng.normal(size=100)
    assert mix_background(x, [], draw, 1.0, 0.3) is x and draw.bit_generator.state == state
    assert np.array_equal(mix_background(x, noise, draw, 0.0, 0.3), x)


@pytest.fixture(scope="module")
def mixable_clips(shared_data, tmp_path_factory) -> Path:
    """6 clips of each class folder of part A (some _silence_ clips then fall in training)."""
    dst = tmp_path_factory.mktemp("mixable") / "speech_commands_test_set_v0.02"
    with tarfile.open(shared_data / PART_A) as tar:
        names = sorted(m for m in tar.getnames() if m.endswith(".wav"))
        for c in CLASSES:
            for name in [m for m in names if m.startswith(c + "/")][:6]:
                (dst / name).parent.mkdir(parents=True, exist_ok=True)
                (dst / name).write_bytes(tar.extractfile(name).read())
    return dst


def test_noise_mixing_changes_only_the_training_words(mixable_clips):
    """``noise_mixing``: the training word clips' features change (all of them with frequency
    1), per load seed; the training _silence_ clips, validation, test and labels do not; a bad
    setting is refused naming it."""
    clean = get_task("google12_testset").load(mixable_clips)
    task = get_task("google12_testset", noise_mixing=True, background_frequency=1.0)
    one, again, other = (task.load(mixable_clips, seed=s) for s in (1, 1, 2))
    files = clean.info["files"]["train"]
    silence = np.array([f.startswith("_silence_/") for f in files])
    assert silence.any() and (~silence).any()
    changed = np.abs(one.train.x - clean.train.x).reshape(len(files), -1).max(axis=1) > 0
    assert changed[~silence].all() and not changed[silence].any()
    np.testing.assert_array_equal(one.train.x, again.train.x)
    assert not np.array_equal(one.train.x, other.train.x)
    for split in ("val", "test"):
        np.testing.assert_array_equal(getattr(one, split).x, getattr(clean, split).x)
    np.testing.assert_array_equal(one.train.y, clean.train.y)
    with pytest.raises(ValueError, match="background_frequency must be in"):
        get_task("google12_testset", noise_mixing=True, background_frequency=1.5)
