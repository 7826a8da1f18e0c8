"""`device_bench.py` against an export whose card, test set or arena does not fit its model
(issue 23, items 7 and 9, and the TFLite Micro arena): each is one line naming the file and what
is valid, never a traceback, a silently wrong accuracy or a timing of another sequence length.

And the export contract (issue 22): the card schema is `export/card_schema.py`, standard library
only, and `device_bench.py` copied beside it runs with neither the zoo nor TensorFlow importable.

The models are tiny Keras models converted here (a flatten + dense sequence model, a dense step
and head pair), so every expectation is known independently of the zoo's exporter."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from zoo.export import device_bench

REPO = Path(__file__).resolve().parents[2]
T, D, H = 6, 3, 4
HAS_MICRO = __import__("importlib").util.find_spec("tflite_micro") is not None


def _tflite(model):
    import tensorflow as tf

    return tf.lite.TFLiteConverter.from_keras_model(model).convert()


@pytest.fixture(scope="module")
def sequence_export(tmp_path_factory):
    """model.tflite takes x[1, T, D] and gives 2 logits; a 4-window test set, labels 0 / 1."""
    import keras

    keras.utils.set_random_seed(0)
    inp = keras.Input((T, D), batch_size=1)
    model = keras.Model(inp, keras.layers.Dense(2)(keras.layers.Flatten()(inp)))
    folder = tmp_path_factory.mktemp("seq") / "export"
    folder.mkdir()
    (folder / "model.tflite").write_bytes(_tflite(model))
    rng = np.random.default_rng(0)
    np.savez(folder / "testset.npz", x=rng.normal(size=(4, T, D)).astype(np.float32),
             y=np.array([0, 1, 0, 1]))
    card = {"form": "sequence", "quantize": "none", "files": {"model": "model.tflite"},
            "timesteps": T, "features": D, "testset": "testset.npz"}
    (folder / "model_card.json").write_text(json.dumps(card))
    return folder


@pytest.fixture(scope="module")
def step_export(tmp_path_factory):
    """step.tflite: (x_t[1, D], h[1, H]) -> h_t[1, H]; head.tflite: h[1, H] -> 2 logits; the
    card's step_io read off the converted model (not assumed)."""
    import keras

    from zoo.export.device_bench import LiteInterpreter

    keras.utils.set_random_seed(1)
    x = keras.Input((D,), batch_size=1, name="x")
    h = keras.Input((H,), batch_size=1, name="h")
    h_t = keras.layers.Activation("tanh")(keras.layers.Add()([keras.layers.Dense(H)(x),
                                                              keras.layers.Dense(H)(h)]))
    step = keras.Model([x, h], h_t)
    head_in = keras.Input((H,), batch_size=1)
    head = keras.Model(head_in, keras.layers.Dense(2)(head_in))
    folder = tmp_path_factory.mktemp("step") / "export"
    folder.mkdir()
    (folder / "step.tflite").write_bytes(_tflite(step))
    (folder / "head.tflite").write_bytes(_tflite(head))
    interp = LiteInterpreter(str(folder / "step.tflite"), "litert", 1)
    sizes = [int(np.prod(d["shape"])) for d in interp.inputs]
    io = {"x": sizes.index(D), "h": sizes.index(H), "h_out": 0}
    rng = np.random.default_rng(0)
    np.savez(folder / "testset.npz", x=rng.normal(size=(4, T, D)).astype(np.float32),
             y=np.array([0, 1, 1, 0]))
    card = {"form": "step", "quantize": "none", "files": {"step": "step.tflite",
                                                           "head": "head.tflite"},
            "timesteps": T, "features": D, "state_size": H, "step_io": io,
            "testset": "testset.npz"}
    (folder / "model_card.json").write_text(json.dumps(card))
    return folder


def _variant(good, tmp_path, card_changes=(), drop_testset=False, testset=None):
    folder = tmp_path / "variant"
    shutil.copytree(good, folder)
    card = json.loads((folder / "model_card.json").read_text())
    for key, value in dict(card_changes).items():
        card[key] = value
    (folder / "model_card.json").write_text(json.dumps(card))
    if drop_testset:
        (folder / "testset.npz").unlink()
    if testset is not None:
        (folder / "testset.npz").unlink()
        if isinstance(testset, bytes):
            (folder / "testset.npz").write_bytes(testset)
        else:
            np.savez(folder / "testset.npz", **testset)
    return folder


def _bench(folder, capfd, runtime="litert"):
    rc = device_bench.main([str(folder), "--runtime", runtime, "--runs", "2", "--warmup", "0",
                            "--json"])
    out, err = capfd.readouterr()
    return rc, out, err


def _error(folder, capfd, runtime="litert"):
    rc, out, err = _bench(folder, capfd, runtime)
    assert rc == 2 and "Traceback" not in err, (rc, out, err)
    lines = [line for line in err.splitlines() if line.startswith("device_bench.py: error: ")]
    assert len(lines) == 1, err
    return lines[0]


def test_good_exports_run(sequence_export, step_export, capfd):
    for folder in (sequence_export, step_export):
        rc, out, err = _bench(folder, capfd)
        report = json.loads(out.splitlines()[-1])
        assert rc == 0 and report["test_sequences"] == 4, err
        assert report["sequence_steps"] == T and report["sequence_steps_from"] == "test set"


# --------------------------------------------------------------------- card against the model
def test_sequence_card_timesteps_not_the_models(sequence_export, tmp_path, capfd):
    folder = _variant(sequence_export, tmp_path, {"timesteps": T // 2}, drop_testset=True)
    line = _error(folder, capfd)
    assert "model_card.json" in line and f"timesteps {T // 2}" in line
    assert f"(1, {T}, {D})" in line


def test_sequence_card_features_not_the_models(sequence_export, tmp_path, capfd):
    folder = _variant(sequence_export, tmp_path, {"features": 5}, drop_testset=True)
    line = _error(folder, capfd)
    assert "model_card.json" in line and "features 5" in line


def test_step_card_features_not_the_models(step_export, tmp_path, capfd):
    folder = _variant(step_export, tmp_path, {"features": 5}, drop_testset=True)
    line = _error(folder, capfd)
    assert "features is 5" in line and f"takes {D} values" in line


def test_step_io_x_and_h_swapped(step_export, tmp_path, capfd):
    io = json.loads((step_export / "model_card.json").read_text())["step_io"]
    folder = _variant(step_export, tmp_path, {"step_io": {**io, "x": io["h"], "h": io["x"]}})
    line = _error(folder, capfd)
    assert "swapped" in line and "model_card.json" in line


@pytest.mark.parametrize("key", ["x", "h", "h_out"])
def test_step_io_negative_index(step_export, tmp_path, capfd, key):
    io = json.loads((step_export / "model_card.json").read_text())["step_io"]
    folder = _variant(step_export, tmp_path, {"step_io": {**io, key: -1}})
    line = _error(folder, capfd)
    assert f"step_io {key} is -1" in line


def test_step_io_index_past_the_model(step_export, tmp_path, capfd):
    io = json.loads((step_export / "model_card.json").read_text())["step_io"]
    folder = _variant(step_export, tmp_path, {"step_io": {**io, "h_out": 3}})
    line = _error(folder, capfd)
    assert "step_io h_out is 3" in line and "1 outputs" in line


def test_step_without_test_set_says_whose_timesteps_it_timed(step_export, tmp_path, capfd):
    """A step model does not fix T: with no test set the card's timesteps are timed, and the
    report says that it is the card's number, not a measured property of the model."""
    folder = _variant(step_export, tmp_path, {"timesteps": 64}, drop_testset=True)
    rc, out, err = _bench(folder, capfd)
    report = json.loads(out.splitlines()[-1])
    assert rc == 0 and report["sequence_steps"] == 64 and report["sequence_steps_from"] == "card"
    rc = device_bench.main([str(folder), "--runtime", "litert", "--runs", "2", "--warmup", "0"])
    assert "64 steps, T from the card" in capfd.readouterr().out


# ------------------------------------------------------------------------------ the test set
def test_truncated_testset(sequence_export, tmp_path, capfd):
    data = (sequence_export / "testset.npz").read_bytes()
    folder = _variant(sequence_export, tmp_path, testset=data[: len(data) // 2])
    line = _error(folder, capfd)
    assert "testset.npz" in line and "truncated" in line


def test_string_labels(sequence_export, tmp_path, capfd):
    x = np.zeros((4, T, D), np.float32)
    folder = _variant(sequence_export, tmp_path, testset={"x": x, "y": np.array(list("abab"))})
    line = _error(folder, capfd)
    assert "testset.npz" in line and "integer class indices" in line


def test_labels_outside_the_models_classes(sequence_export, tmp_path, capfd):
    x = np.zeros((4, T, D), np.float32)
    folder = _variant(sequence_export, tmp_path, testset={"x": x, "y": np.array([0, 1, 2, 1])})
    line = _error(folder, capfd)
    assert "testset.npz" in line and "2 classes" in line


def test_all_nan_inputs(sequence_export, tmp_path, capfd):
    x = np.full((4, T, D), np.nan, np.float32)
    folder = _variant(sequence_export, tmp_path, testset={"x": x, "y": np.array([0, 1, 0, 1])})
    line = _error(folder, capfd)
    assert "testset.npz" in line and f"{4 * T * D} non-finite" in line


# ------------------------------------------------------------------------- TFLite Micro arena
@pytest.mark.skipif(not HAS_MICRO, reason="tflite-micro missing")
def test_micro_arena_too_small_is_not_a_damaged_file(sequence_export, tmp_path, capfd):
    folder = _variant(sequence_export, tmp_path, {"arena_bytes": 64})
    line = _error(folder, capfd, runtime="tflite-micro")
    assert "arena_bytes 64 is too small" in line and "damaged" not in line
    rc, out, err = _bench(sequence_export, capfd, runtime="tflite-micro")
    assert rc == 0, err


# ------------------------------------------------------------------- the contract (issue 22)
def test_card_schema_needs_only_the_standard_library():
    code = ("import sys; sys.modules['numpy'] = None; sys.path.insert(0, 'export'); "
            "import card_schema; print(card_schema.ModelCard.__name__)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ModelCard", done.stderr


def test_device_bench_copied_beside_card_schema_runs_alone(sequence_export, tmp_path):
    """As docs/device.md says: the four files copied into one folder; the zoo's packages (and
    TensorFlow) made unimportable, so the copy cannot lean on the checkout."""
    device = tmp_path / "device"
    device.mkdir()
    for name in ("device_bench.py", "card_schema.py", "device_checks.py", "device_runtime.py"):
        shutil.copy(REPO / "export" / name, device / name)
    blocked = "export zoo training experiments edge_rnn_zoo tensorflow keras".split()
    code = ("import runpy, sys\n"
            f"for name in {blocked!r}: sys.modules[name] = None\n"
            f"sys.path.insert(0, {str(device)!r})\n"
            f"sys.argv = ['device_bench.py', {str(sequence_export)!r}, '--runtime', 'litert', "
            "'--runs', '2', '--warmup', '0', '--json']\n"
            f"runpy.run_path({str(device / 'device_bench.py')!r}, run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["test_sequences"] == 4
