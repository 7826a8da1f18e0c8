"""The audio_folder task (the user's own words), on user layouts written here from the shared
Speech Commands clips: at 16 kHz 16-bit (whose features must be the front end of what `wave`
reads, bit for bit), and resampled to 8 / 44.1 kHz in 8- and 24-bit, float and stereo."""

from __future__ import annotations

import logging
import os
import shutil
import wave
from pathlib import Path

import numpy as np
import pytest
import soundfile

from zoo.training.data.errors import DataError
from zoo.training.tasks import get_task
from zoo.training.tasks.audio_folder import fit_clip, split_groups
from zoo.training.tasks.int_frontend import IntLogMelFrontend

WORDS = ("cat", "dog", "yes")
FORMATS = {"cat": (16000, "PCM_16", 1), "dog": (44100, "PCM_24", 2), "yes": (8000, "PCM_U8", 1)}


def _wave(path: Path) -> np.ndarray:
    with wave.open(str(path)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), "<i2")


@pytest.fixture(scope="module")
def originals(shared_data) -> dict[str, list[Path]]:
    src = shared_data / "speech_commands_v0.01"
    return {w: sorted((src / w).glob("*.wav")) for w in WORDS}


def write_layout(root: Path, originals, formats=FORMATS) -> Path:
    """The shared clips of `WORDS` as a user layout, each word at its rate / subtype / channels
    (scipy-free: soundfile writes the 16 kHz samples at the new rate by soxr)."""
    import soxr

    for word, clips in originals.items():
        rate, subtype, channels = formats[word]
        (root / word).mkdir(parents=True)
        for clip in clips:
            x = _wave(clip) / 32768
            if rate != 16000:
                x = soxr.resample(x, 16000, rate)
            if channels == 2:
                x = np.stack([x, x], axis=1)
            soundfile.write(root / word / clip.name, x, rate, subtype=subtype)
    return root


@pytest.fixture(scope="module")
def layout(tmp_path_factory, originals) -> Path:
    return write_layout(tmp_path_factory.mktemp("words") / "words", originals)


@pytest.fixture(scope="module")
def loaded(layout):
    task = get_task("audio_folder", val_fraction=0.2, test_fraction=0.2)
    return task, task.load(layout)


def test_classes_splits_and_features(loaded, layout, originals):
    task, data = loaded
    assert task.class_names == list(WORDS) and task.input_shape == (99, 32)
    groups = data.info["groups"]
    assert not set(groups["train"]) & set(groups["val"]) and not set(groups["train"]) & set(groups["test"])
    assert sum(len(getattr(data, s)) for s in ("train", "val", "test")) == 30
    # The 16 kHz 16-bit word: features are the integer front end of what `wave` reads, exactly.
    fe = IntLogMelFrontend()
    for split in ("train", "val", "test"):
        for rel, x, y in zip(data.info["files"][split], getattr(data, split).x, getattr(data, split).y):
            word, name = rel.split("/")
            assert task.class_names[y] == word
            speaker = name.split("_nohash_")[0]
            assert speaker in groups[split]
            if word == "cat":
                want = fe(fit_clip(_wave(layout / rel), 16000)[0][None])[0]
                np.testing.assert_array_equal(x, want)


def test_resampled_words_keep_their_features(loaded, originals):
    """44.1 kHz 24-bit stereo and 8 kHz 8-bit copies, read back at 16 kHz, give the features of
    the original clips. 44.1 kHz: on the louder half of the cells, within 0.05 on average in
    ln-energy units (measured <= 0.02: only rounding). 8 kHz 8-bit: 8-bit quantisation noise
    (-48 dB) fills the quiet cells and nothing is left above its 4 kHz Nyquist, so on the
    loudest tenth of the cells of the filters below 3.5 kHz (0-21), within 0.25 (measured
    <= 0.12)."""
    task, data = loaded
    fe = IntLogMelFrontend()
    by_file = {r: x for s in ("train", "val", "test")
               for r, x in zip(data.info["files"][s], getattr(data, s).x)}
    for word, clips in (("dog", originals["dog"]), ("yes", originals["yes"])):
        for clip in clips:
            want = fe(fit_clip(_wave(clip), 16000)[0][None])[0]
            diff = np.abs(by_file[f"{word}/{clip.name}"] - want)
            if word == "dog":
                assert np.mean(diff[want > np.percentile(want, 50)]) < 0.05, clip
            else:
                low = want[:, :22]
                assert np.mean(diff[:, :22][low > np.percentile(low, 90)]) < 0.25, clip


def test_speaker_pattern_and_unmatched_files(layout, tmp_path, caplog):
    copy = tmp_path / "words"
    shutil.copytree(layout, copy)
    for f in (copy / "cat").glob("*.wav"):
        f.rename(f.with_name("take-" + f.name))
    (copy / "dog" / sorted(os.listdir(copy / "dog"))[0]).rename(copy / "dog" / "odd name.wav")
    with caplog.at_level(logging.WARNING, logger="zoo.training.tasks.audio_folder"):
        data = get_task("audio_folder").load(copy)
    said = [r.getMessage() for r in caplog.records if "speaker_pattern" in r.getMessage()]
    assert len(said) == 1 and "1 of 30 file names" in said[0] and "own speaker group" in said[0]
    every = sum((data.info["groups"][s] for s in ("train", "val", "test")), [])
    assert "dog/odd name.wav" in every and any(g.startswith("take-") for g in every)
    cat_speakers = {f.name.split("_")[0] for f in (layout / "cat").glob("*.wav")}
    custom = get_task("audio_folder", speaker_pattern=r"^take-([0-9a-f]+)_").load(copy)
    groups = sum((custom.info["groups"][s] for s in ("train", "val", "test")), [])
    assert cat_speakers <= set(groups) and len(groups) == len(cat_speakers) + 20  # 20 unmatched
    with pytest.raises(ValueError, match="speaker_pattern must be a regular expression with a group"):
        get_task("audio_folder", speaker_pattern="nohash")


def test_folds_by_speaker_group():
    groups = [f"s{i}" for i in range(10) for _ in range(3)]
    parts = [split_groups(groups, 0.1, 0.2, [k, 4]) for k in range(4)]
    test = parts[0]["test"]
    assert len(test) == 2 and all(p["test"] == test for p in parts)
    vals = [set(p["val"]) for p in parts]
    assert set().union(*vals) == set(groups) - set(test) and sum(map(len, vals)) == 8
    for p in parts:
        assert set(p["val"]).isdisjoint(p["train"]) and set(p["train"]) | set(p["val"]) | set(test) == set(groups)
    with pytest.raises(DataError, match="8 speaker groups outside the test split, fewer than 9 folds"):
        split_groups(groups, 0.1, 0.2, [0, 9])


def test_clips_cut_padded_and_said(layout, tmp_path, caplog):
    copy = tmp_path / "words"
    shutil.copytree(layout, copy)
    long_clip = sorted((copy / "cat").glob("*.wav"))[0]
    x = _wave(long_clip)
    soundfile.write(long_clip, np.concatenate([x, x[:8000]]), 16000, subtype="PCM_16")
    with caplog.at_level(logging.WARNING, logger="zoo.training.tasks.audio_folder"):
        data = get_task("audio_folder", clip_seconds=1.0).load(copy)
    assert data.info["clips_cut"] == 1
    assert any("1 of 30 clips were longer than 1 s and were cut" in r.getMessage() for r in caplog.records)
    assert np.array_equal(fit_clip(np.arange(5), 3)[0], [0, 1, 2]) and fit_clip(np.arange(5), 3)[1]
    assert np.array_equal(fit_clip(np.arange(2), 3)[0], [0, 1, 0]) and not fit_clip(np.arange(2), 3)[1]
    half = get_task("audio_folder", clip_seconds=0.5)
    assert half.input_shape == (49, 32)


def test_noise_mixing_when_the_folder_has_noise(layout, shared_data, tmp_path):
    copy = tmp_path / "words"
    shutil.copytree(layout, copy)
    plain = get_task("audio_folder").load(copy, seed=1)
    noise = copy / "_background_noise_"
    noise.mkdir()
    shutil.copy(shared_data / "speech_commands_v0.01/_background_noise_/white_noise.wav", noise)
    task = get_task("audio_folder")
    mixed, again = task.load(copy, seed=1), task.load(copy, seed=1)
    assert task.class_names == list(WORDS)  # the noise folder is not a class
    assert not np.array_equal(mixed.train.x, plain.train.x)
    np.testing.assert_array_equal(mixed.train.x, again.train.x)  # drawn from the load seed
    np.testing.assert_array_equal(mixed.val.x, plain.val.x)
    np.testing.assert_array_equal(mixed.test.x, plain.test.x)
    off = get_task("audio_folder", noise_mixing=False).load(copy, seed=1)
    np.testing.assert_array_equal(off.train.x, plain.train.x)


def _snapshot(folder: Path) -> dict:
    return {p: (p.stat().st_mtime_ns, p.read_bytes() if p.is_file() else None)
            for p in sorted(folder.rglob("*"))}


def _not_audio(root):
    bad = sorted((root / "dog").glob("*.wav"))[3]
    bad.write_text("these are not samples\n")
    return bad, "not a RIFF/WAVE file"


def _empty_class(root):
    (root / "owl").mkdir()
    return root / "owl", "class folder with no WAV files"


def _one_clip(root):
    (root / "owl").mkdir()
    shutil.copy(sorted((root / "cat").glob("*.wav"))[0], root / "owl" / "a_nohash_0.wav")
    return root / "owl", "class 'owl' has 1 clip; a class needs at least two"


def _no_classes(root):
    for p in list(root.iterdir()):
        shutil.rmtree(p)
    (root / "readme.txt").write_text("my words")
    return root, "no class folders"


@pytest.mark.parametrize("damage", [_not_audio, _empty_class, _one_clip, _no_classes])
def test_bad_layouts_one_line_naming_the_file(layout, tmp_path, damage):
    copy = tmp_path / "words"
    shutil.copytree(layout, copy)
    path, msg = damage(copy)
    before = _snapshot(copy)
    with pytest.raises(DataError, match=msg) as e:
        get_task("audio_folder").load(copy)
    text = str(e.value)
    assert text.startswith(str(path)) and "\n" not in text
    assert _snapshot(copy) == before  # nothing of the user's changed


def test_fewer_groups_than_folds_and_missing_dir(layout):
    with pytest.raises(DataError, match="fewer than 40 folds"):
        get_task("audio_folder", val_fold=[0, 40]).load(layout)
    with pytest.raises(DataError, match="needs --data-dir DIR"):
        get_task("audio_folder").load(None)


def test_evaluation_split_of_another_folder(loaded, layout, tmp_path):
    task, data = loaded
    run_task = get_task("audio_folder", val_fraction=0.2, test_fraction=0.2,
                        **task.options_from_data(layout))
    np.testing.assert_array_equal(run_task.evaluation_split(layout).x, data.test.x)
    other = tmp_path / "test_words"
    (other / "yes").mkdir(parents=True)
    for f in sorted((layout / "yes").glob("*.wav"))[:4]:
        shutil.copy(f, other / "yes" / f.name)
    split = run_task.evaluation_split(other)
    assert len(split) == 4 and set(split.y.tolist()) == {2}  # scored whole, known class ids
    (other / "owl").mkdir()
    shutil.copy(f, other / "owl" / f.name)
    with pytest.raises(DataError, match=r"owl: class 'owl' is not one the run knows \(cat, dog, yes\)"):
        run_task.evaluation_split(other)


@pytest.mark.slow
def test_train_eval_and_c_keyword_app_end_to_end(layout, tmp_path):
    """zoo train -> zoo eval --data-dir (another folder) -> zoo export --form c with kws_app,
    through the Python entry points the commands call (2 epochs of a tiny SiRNN)."""
    import yaml

    from zoo.export.c_backend.command import export_c
    from zoo.training.config import TrainConfig
    from zoo.training.evaluate import evaluate_run
    from zoo.training.trainer import train

    run = tmp_path / "run"
    config = TrainConfig(task="audio_folder", model="sirnn", epochs=2, batch_size=16,
                         model_options={"units": 8, "rank": 2, "state_clip": 1.0,
                                        "state_quant_bits": 8},
                         task_options={"val_fraction": 0.2, "test_fraction": 0.2})
    train(config, run, data_dir=layout)
    saved = yaml.safe_load((run / "config.yaml").read_text())["task_options"]
    assert saved["classes"] == list(WORDS) and saved["train_folder"] == str(layout.resolve())
    other = tmp_path / "test_words" / "yes"
    shutil.copytree(layout / "yes", other)
    report = evaluate_run(run, data_dir=other.parent)
    assert report["class_names"] == list(WORDS) and report["test_sequences"] == 10
    export_c(run, tmp_path / "c")
    assert (tmp_path / "c" / "kws_app.c").exists() and (tmp_path / "c" / "kws_input.c").exists()
