"""Google-30 / Google-12 on the shared 300-clip Speech Commands subset.

Oracle for the front end: python_speech_features (a test-only dependency), exactly as EdgeML's
process_google.py calls it.
"""

import math
import time
import wave

import numpy as np
import pytest

from zoo.training.data.audio import FbankFrontend, pad_to
from zoo.training.data.wav import read_wav
from zoo.training.tasks import get_task
from zoo.training.tasks.speech import WORDS10, index_clips

SC = "speech_commands_v0.01"
SHORT = {"down/8d4cdc60_nohash_1.wav": 12288, "two/a8cb6dda_nohash_0.wav": 12971,
         "bed/7ff085e1_nohash_0.wav": 15702}


@pytest.fixture(scope="module")
def g30(shared_data):
    return get_task("google30").load(shared_data / SC)


def _psf_logfbank(signal):
    psf = pytest.importorskip("python_speech_features")
    feat, _ = psf.fbank(signal.astype(np.float64), 16000, winlen=0.025, winstep=0.01, nfilt=32,
                        nfft=512, lowfreq=0, highfreq=8000, preemph=0.97, winfunc=np.hamming)
    return np.log(feat + 1e-10)


def test_split_follows_the_official_lists(g30, shared_data):
    folder = shared_data / SC
    val = (folder / "validation_list.txt").read_text().split()
    test = (folder / "testing_list.txt").read_text().split()
    assert (len(g30.train), len(g30.val), len(g30.test)) == (205, 44, 51)
    assert g30.info["files"]["val"] == val and g30.info["files"]["test"] == test
    assert not set(g30.info["files"]["train"]) & (set(val) | set(test))
    assert g30.train.x.shape == (205, 99, 32) and g30.train.x.dtype == np.float32
    # Labels: alphabetical words; e.g. dog is 7/1/2 train/val/test.
    dog = g30.info["files"]["train"], g30.info["files"]["val"], g30.info["files"]["test"]
    assert [sum(f.startswith("dog/") for f in s) for s in dog] == [7, 1, 2]
    names = get_task("google30").class_names
    assert names == sorted(names) and len(names) == 30
    for split, files in ((g30.train, dog[0]), (g30.test, dog[2])):
        assert [names[y] for y in split.y] == [f.split("/")[0] for f in files]


def test_features_match_python_speech_features(g30, shared_data):
    folder = shared_data / SC
    files = g30.info["files"]
    x = {"train": g30.train.x, "val": g30.val.x, "test": g30.test.x}
    worst = 0.0
    for split in ("train", "val", "test"):
        for i, rel in enumerate(files[split]):
            sig = pad_to(read_wav(folder / rel), 16000)
            ref = _psf_logfbank(sig)
            worst = max(worst, float(np.max(np.abs(x[split][i] - ref) / np.abs(ref))))
    assert worst < 1e-4


def test_short_clips_are_zero_padded_at_the_end(g30, shared_data):
    folder = shared_data / SC
    files = sum(g30.info["files"].values(), [])
    allx = np.concatenate([g30.train.x, g30.val.x, g30.test.x])
    for rel, n in SHORT.items():
        raw = read_wav(folder / rel)
        assert len(raw) == n
        padded = np.concatenate([raw, np.zeros(16000 - n, np.int16)])
        ref = _psf_logfbank(padded)
        np.testing.assert_allclose(allx[files.index(rel)], ref, rtol=1e-4)
    # The frames beyond the clip see only zeros: log(eps + 1e-10), as psf + EdgeML give.
    i = files.index("down/8d4cdc60_nohash_1.wav")
    assert allx[i, -1].max() == pytest.approx(np.log(np.finfo(float).eps + 1e-10), rel=1e-6)


def test_featurising_300_clips_is_fast(shared_data):
    folder = shared_data / SC
    rels = sum(index_clips(folder).values(), [])
    fe = FbankFrontend()
    start = time.perf_counter()
    waves = np.stack([pad_to(read_wav(folder / r, max_samples=16000), 16000) for r in rels])
    feats = fe(waves)
    elapsed = time.perf_counter() - start
    assert feats.shape == (300, 99, 32)
    assert elapsed < 3.0, f"300 clips took {elapsed:.2f} s"


def test_frontend_is_a_parameter(shared_data):
    # psf-style framing pads the last frame: 1 + ceil((16000 - 480) / 320) = 50 frames.
    t = get_task("google30", nfilt=40, winlen=0.03, winstep=0.02)
    assert t.input_shape == (50, 40)
    d = t.load(shared_data / SC)
    assert d.train.x.shape == (205, 50, 40)


def test_google12_follows_tf_speech_commands(shared_data):
    task = get_task("google12")
    assert task.class_names[:2] == ["_silence_", "_unknown_"] and task.num_classes == 12
    d = task.load(shared_data / SC)
    for split, name in ((d.train, "train"), (d.val, "val"), (d.test, "test")):
        c = d.info["counts"][name]
        n = c["words"]
        files = d.info["files"][name]
        words = [f.split("/")[0] for f in files]
        assert n == sum(w in WORDS10 for w in words)
        assert c["unknown"] == math.ceil(n / 10) == int((split.y == 1).sum())
        assert c["silence"] == math.ceil(n / 10) == int((split.y == 0).sum())
        assert len(split) == n + 2 * math.ceil(n / 10)
        for f, y in zip(files, split.y):
            if y >= 2:
                assert task.class_names[y] == f.split("/")[0]
            elif y == 1:
                assert f.split("/")[0] not in WORDS10
            else:
                assert f.startswith("_silence_:_background_noise_/")
    # Validation/test composition does not depend on the training seed.
    d2 = task.load(shared_data / SC, seed=5)
    assert d2.info["files"]["test"] == d.info["files"]["test"]
    np.testing.assert_array_equal(d2.test.x, d.test.x)


def test_training_time_augmentation(shared_data):
    base = get_task("google30").load(shared_data / SC)
    aug = get_task("google30", noise_mixing=True, background_frequency=1.0, time_shift_ms=100)
    a1, a1b, a2 = (aug.load(shared_data / SC, seed=s) for s in (1, 1, 2))
    assert not np.allclose(a1.train.x, base.train.x)
    np.testing.assert_array_equal(a1.train.x, a1b.train.x)
    assert not np.array_equal(a1.train.x, a2.train.x)
    np.testing.assert_array_equal(a1.test.x, base.test.x)  # evaluation data untouched
    np.testing.assert_array_equal(a1.train.y, base.train.y)


def test_wav_checks(tmp_path):
    """The speech tasks' reading: one rate only, no silent cropping; stereo and 8-bit clips are
    taken by the WAV contract (mixed down, scaled to int16), not refused."""
    def write(path, rate=16000, channels=1, width=2, n=100, frames=b"\x00"):
        with wave.open(str(path), "wb") as w:
            w.setnchannels(channels)
            w.setsampwidth(width)
            w.setframerate(rate)
            w.writeframes(frames * n * channels * width)
        return path

    assert len(read_wav(write(tmp_path / "ok.wav"))) == 100
    from zoo.training.data.errors import DataError
    path = write(tmp_path / "8k.wav", rate=8000)
    with pytest.raises(DataError, match="found 8000 Hz, expected 16000 Hz") as e:
        read_wav(path, rate=16000)
    assert str(path) in str(e.value)
    np.testing.assert_array_equal(read_wav(write(tmp_path / "st.wav", channels=2, frames=b"\x01")),
                                  np.full(100, 257, np.int16))  # 0x0101 on both channels
    np.testing.assert_array_equal(read_wav(write(tmp_path / "u8.wav", width=1, frames=b"\x81")),
                                  np.full(100, 256, np.int16))  # (0x81 - 128) * 256
    with pytest.raises(DataError, match="longer than"):
        read_wav(write(tmp_path / "long.wav", n=16001), max_samples=16000)
