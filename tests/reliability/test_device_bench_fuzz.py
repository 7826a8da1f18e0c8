"""`export/device_bench.py` on damaged exports: every problem is one line and exit status 2,
never a traceback or a crash. 30 corrupted copies of a real TFLite model per runtime (LiteRT
and TFLite Micro, whichever are installed): empty, truncated, random bytes, and bytes changed
at random places (half of them in the first 2 KB, where the FlatBuffer's tables are)."""

import json
import shutil

import numpy as np
import pytest

from zoo.export import device_bench

T, D = 6, 3


@pytest.fixture(scope="module")
def good_export(tmp_path_factory):
    """A small float model (reshape + dense, builtin ops both runtimes run) as `zoo export`
    lays it out: model.tflite, model_card.json, testset.npz."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    inp = keras.Input((T, D), batch_size=1)
    model = keras.Model(inp, keras.layers.Dense(2)(keras.layers.Flatten()(inp)))
    tflite = tf.lite.TFLiteConverter.from_keras_model(model).convert()
    folder = tmp_path_factory.mktemp("export") / "good"
    folder.mkdir()
    (folder / "model.tflite").write_bytes(tflite)
    rng = np.random.default_rng(0)
    np.savez(folder / "testset.npz", x=rng.normal(size=(4, T, D)).astype(np.float32),
             y=np.array([0, 1, 0, 1]))
    card = {"form": "sequence", "quantize": "none", "files": {"model": "model.tflite"},
            "timesteps": T, "features": D, "testset": "testset.npz", "arena_bytes": 16384}
    (folder / "model_card.json").write_text(json.dumps(card))
    return folder


def _bench(folder, runtime, capfd):
    rc = device_bench.main([str(folder), "--runtime", runtime, "--runs", "2", "--warmup", "0",
                            "--json"])
    out, err = capfd.readouterr()
    return rc, out, err


def _assert_one_clear_line(rc, err, what):
    assert rc == 2, what
    assert "Traceback" not in err, (what, err)
    lines = [line for line in err.splitlines() if line.startswith("device_bench.py: error: ")]
    assert len(lines) == 1, (what, err)
    return lines[0]


def corruptions(model: bytes, n: int = 30):
    rng = np.random.default_rng(14)
    yield "empty", b""
    for cut in sorted(rng.integers(1, len(model), size=5)):
        yield f"truncated to {cut} bytes", model[:cut]
    yield "random bytes", rng.integers(0, 256, len(model), dtype=np.uint8).tobytes()
    yield "random bytes, TFL3 kept", (model[:8] + rng.integers(0, 256, len(model) - 8,
                                                               dtype=np.uint8).tobytes())
    for i in range(n - 8):
        data = bytearray(model)
        span = min(len(data), 2048) if i % 2 == 0 else len(data)
        for pos in rng.integers(0, span, size=int(rng.integers(1, 9))):
            data[pos] = int(rng.integers(0, 256))
        yield f"bytes changed ({i})", bytes(data)


RUNTIMES = [pytest.param(name, marks=pytest.mark.skipif(
    not __import__("importlib").util.find_spec(module.split(".")[0]), reason=f"{name} missing"))
    for name, module in (("litert", "ai_edge_litert"), ("tflite-micro", "tflite_micro"))]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_thirty_corrupted_models_no_crash_no_traceback(good_export, runtime, tmp_path, capfd):
    rc, out, err = _bench(good_export, runtime, capfd)
    assert rc == 0 and json.loads(out.splitlines()[-1])["test_sequences"] == 4, err
    model = (good_export / "model.tflite").read_bytes()
    outcomes = {"ran": 0, "refused": 0}
    cases = list(corruptions(model))
    assert len(cases) == 30
    for what, data in cases:
        folder = tmp_path / "damaged"
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(good_export, folder)
        (folder / "model.tflite").write_bytes(data)
        rc, out, err = _bench(folder, runtime, capfd)
        if rc == 0:  # a change the model survives (a weight): it must still give a report
            assert "per_sequence" in json.loads(out.splitlines()[-1]), what
            outcomes["ran"] += 1
        else:
            line = _assert_one_clear_line(rc, err, what)
            assert "model.tflite" in line, line
            outcomes["refused"] += 1
    print(runtime, outcomes)
    assert outcomes["refused"] >= 10  # the empty, truncated and random ones at least


def test_card_entry_outside_the_folder_is_not_opened(good_export, tmp_path, capfd):
    folder = tmp_path / "e"
    shutil.copytree(good_export, folder)
    card = json.loads((folder / "model_card.json").read_text())
    for bad in ("../../../../etc/passwd", "/etc/passwd"):
        card["files"]["model"] = bad
        (folder / "model_card.json").write_text(json.dumps(card))
        rc, _, err = _bench(folder, "litert", capfd)
        line = _assert_one_clear_line(rc, err, bad)
        assert repr(bad) in line and ("outside the export folder" in line
                                      or "relative path" in line)


def test_wrong_shape_testset_and_bad_card(good_export, tmp_path, capfd):
    folder = tmp_path / "e"
    shutil.copytree(good_export, folder)
    np.savez(folder / "testset.npz", x=np.zeros((4, T, D + 1), np.float32), y=np.zeros(4))
    rc, _, err = _bench(folder, "litert", capfd)
    assert "(N, 6, 3)" in _assert_one_clear_line(rc, err, "shape")
    (folder / "model_card.json").write_text("{not json")
    rc, _, err = _bench(folder, "litert", capfd)
    assert "model_card.json: not valid JSON" in _assert_one_clear_line(rc, err, "json")
    (folder / "model_card.json").write_text(json.dumps({"form": "sequence"}))
    rc, _, err = _bench(folder, "litert", capfd)
    assert "'files' must name model" in _assert_one_clear_line(rc, err, "files")


def test_a_runtime_crash_in_the_trial_run_is_one_line(good_export, monkeypatch, capfd):
    """The child-process trial run turns a segfault into an error (simulated: the child kills
    itself with SIGSEGV where the runtime would have read out of bounds)."""
    import os
    import signal

    def crash(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGSEGV)

    monkeypatch.setattr(device_bench, "open_model", crash)
    rc, _, err = _bench(good_export, "tflite-micro", capfd)
    line = _assert_one_clear_line(rc, err, "segfault")
    assert "crashed (SIGSEGV)" in line and "model.tflite" in line
