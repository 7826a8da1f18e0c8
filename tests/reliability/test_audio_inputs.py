"""A user's WAV folder, attacked (issue 52): a header's absurd sample rate is refused naming the
file (1 Hz asked the resampler for 25 GB), a file that is no WAV is refused without quoting its
bytes, a folder named ``x.wav`` is refused, two speakers warn that there is no validation or
test split, and the log says whether ``_background_noise_`` was mixed in."""

import logging
import os
import struct

import numpy as np
import pytest
import soundfile

from zoo.training.data.errors import DataError
from zoo.training.data.wav import load_wav
from zoo.training.tasks import get_task


def _clip(path, rate=8000, seconds=0.25, seed=0):
    x = np.random.default_rng(seed).normal(scale=0.1, size=int(rate * seconds))
    soundfile.write(path, x, rate, subtype="PCM_16")
    return path


def _with_rate(path, rate):
    """The WAV at ``path`` with its header's sample rate (and byte rate) set to ``rate``."""
    data = bytearray(path.read_bytes())
    at = data.index(b"fmt ") + 8
    struct.pack_into("<II", data, at + 4, rate, (rate * 2) & 0xFFFFFFFF)
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("rate", [1, 999, 384001, 2147483647])
def test_a_header_rate_outside_sane_is_refused_naming_the_file(tmp_path, rate):
    path = _with_rate(_clip(tmp_path / "odd.wav"), rate)
    with pytest.raises(DataError, match=rf"odd.wav: a sample rate of {rate} Hz in its header "
                                        r"\(valid: 1,000 to 384,000 Hz\)"):
        load_wav(path, rate=16000)


def test_sane_rates_at_the_ends_are_read(tmp_path):
    for rate in (1000, 384000):
        assert len(load_wav(_clip(tmp_path / f"{rate}.wav", rate=rate, seconds=0.01))) == 160


def test_a_file_that_is_no_wav_is_refused_without_its_bytes(tmp_path):
    secret = tmp_path / "passwd"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    link = tmp_path / "clip.wav"
    os.symlink(secret, link)
    with pytest.raises(DataError) as err:
        load_wav(link)
    assert "clip.wav" in str(err.value) and "looks like text" in str(err.value)
    assert "root" not in str(err.value).replace(str(tmp_path), "")


def _words(root, speakers=("alice", "bob"), noise=False):
    for word in ("no", "yes"):
        (root / word).mkdir(parents=True)
        for i, speaker in enumerate(speakers):
            _clip(root / word / f"{speaker}_nohash_0.wav", seed=i)
            _clip(root / word / f"{speaker}_nohash_1.wav", seed=i + 10)
    if noise:
        (root / "_background_noise_").mkdir()
        _clip(root / "_background_noise_" / "hum.wav", seconds=2.0)
    return root


def test_a_folder_named_like_a_wav_is_refused(tmp_path):
    root = _words(tmp_path / "words")
    (root / "yes" / "take2.wav").mkdir()
    with pytest.raises(DataError, match=r"take2.wav: a folder named like a WAV file"):
        get_task("audio_folder", clip_seconds=0.25).load(root)


def test_two_speakers_warn_of_no_validation_or_test_split(tmp_path, caplog):
    root = _words(tmp_path / "words")
    with caplog.at_level(logging.WARNING):
        data = get_task("audio_folder", clip_seconds=0.25).load(root)
    assert len(data.val) == len(data.test) == 0
    assert "2 speaker group(s)" in caplog.text and "no validation split" in caplog.text


@pytest.mark.parametrize("noise", [False, True])
def test_the_log_says_whether_background_noise_was_mixed_in(tmp_path, caplog, noise):
    root = _words(tmp_path / "words", speakers=("a", "b", "c", "d"), noise=noise)
    with caplog.at_level(logging.INFO):
        get_task("audio_folder", clip_seconds=0.25).load(root)
    said = "mixed into" if noise else "no _background_noise_"
    assert said in caplog.text


def test_eval_of_a_two_speaker_run_asks_for_test_data_in_one_line(tmp_path, capsys):
    from edge_rnn_zoo.cli import main

    root = _words(tmp_path / "words")
    assert main(["train", "--task", "audio_folder", "--model", "lstm", "--units", "2",
                 "--epochs", "1", "--recipe", "none", "--task-option", "clip_seconds=0.25",
                 "--data-dir", str(root), "--out", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    assert main(["eval", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "no test windows" in err and "--data-dir" in err and "Traceback" not in err
