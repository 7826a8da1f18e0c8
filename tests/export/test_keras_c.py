"""``.keras`` exports to C (`zoo.export.export_model(..., form="c")`) are bit-exact with TensorFlow
Lite Micro on the calibration windows, for a model of every zoo cell (every registered recurrent
model, Keras's LSTM and SimpleRNN among them), Keras's own GRU, and stacked pairs (issue 42).

Each model is tiny and untrained (the C backend must match the int8 models whatever their
weights), saved as a ``.keras`` file and exported from it with real HAR windows (the first 24
steps of 16 test windows, raw, with their labels). The reference is the tflite-micro Python
interpreter running the export's own step and head models (`zoo.export.c_backend.check`): the
C code's int8 logits and final state must equal it on every window, from int8 and from raw
float input. Conversions run in this process (``in_process``: no WHILE loop in a step model) and
skip the stream model and the arena search, to keep the module fast (about 5 s a model).
"""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest

import zoo
import zoo.export

STEPS, WINDOWS, UNITS = 24, 16, 6
FAST = dict(in_process=True, stream=False, micro=False, allow_drop=True, calibration_pairs=200)


def _recurrent_names() -> list[str]:
    """Every registered model that is a recurrent layer (the DS-CNN is not)."""
    return [name for name in zoo.list_models()
            if issubclass(zoo.get_model_entry(name).layer_class, keras.layers.RNN)]


def _single(name: str) -> keras.Model:
    options = {"rank": 2} if name in ("irnn", "sirnn") else {}
    return zoo.create_model(name, (STEPS, 9), 6, units=UNITS, **options)


def _stacked(first, second) -> keras.Model:
    x = inputs = keras.Input((STEPS, 9))
    x = keras.layers.Normalization(mean=[0.0] * 9, variance=[0.09] * 9)(x)
    x = first(x)
    x = second(x)
    return keras.Model(inputs, keras.layers.Dense(6, activation="softmax")(x))


MODELS = {
    **{name: (lambda name=name: _single(name)) for name in _recurrent_names()},
    "keras_gru": lambda: keras.Sequential([keras.Input((STEPS, 9)), keras.layers.GRU(UNITS),
                                           keras.layers.Dense(6)]),
    "lstm+lstm": lambda: _stacked(keras.layers.LSTM(5, return_sequences=True),
                                  keras.layers.LSTM(4)),
    "gru+simple_rnn": lambda: _stacked(keras.layers.GRU(5, return_sequences=True),
                                       keras.layers.SimpleRNN(4)),
    "sirnn+fastgrnn": lambda: _stacked(zoo.SiRNN(6, rank=2, return_sequences=True),
                                       zoo.FastGRNN(4)),
}


@pytest.fixture(scope="module")
def windows(har_dir, tmp_path_factory):
    """``windows.npz``: X, the raw HAR-6 test windows (first STEPS steps), and their labels y."""
    from zoo.training.tasks import get_task

    test = get_task("har6").load(har_dir, seed=0).test
    path = tmp_path_factory.mktemp("calibration") / "windows.npz"
    np.savez(path, X=test.x[:WINDOWS, :STEPS].astype(np.float32),
             y=test.y[:WINDOWS].astype(np.int64))
    return path


# The fast lane (-m "not slow") keeps one model of each kind of state vector: one state, an
# LSTM's h and c, a stacked pair; CI runs all (about 5 s each).
FAST_LANE = ("sirnn", "lstm", "lstm+lstm")


@pytest.fixture(scope="module", params=[
    pytest.param(name, marks=() if name in FAST_LANE else pytest.mark.slow) for name in sorted(MODELS)])
def exported(request, windows, tmp_path_factory):
    """(model name, Keras model, C export folder, its summary): the model saved as a .keras file
    and exported from it to C, checked on the calibration windows."""
    keras.utils.set_random_seed(0)
    model = MODELS[request.param]()
    folder = tmp_path_factory.mktemp("keras-c")
    path = folder / f"{request.param.replace('+', '_')}.keras"
    model.save(path)
    summary = zoo.export.export_model(path, calibration=windows, out=folder / "c", form="c",
                                      **FAST)
    return request.param, model, folder / "c", summary


def test_c_is_bit_exact_with_tflite_micro_on_every_window(exported):
    name, _, c_dir, summary = exported
    check = summary["check"]
    assert check["runtime"] == "tflite-micro" and check["windows"] == WINDOWS, name
    assert check["identical_logits"] == check["identical_states"] == WINDOWS, (name, check)
    assert check["identical_logits_raw_float_input"] == WINDOWS, (name, check)
    assert json.loads((c_dir / "c_check.json").read_text())["check"] == check


def test_the_card_records_the_state_vector_layout(exported):
    """The card's ``step_io.state_layout`` tiles the state the C code carries: every layer's
    states in order (absent for one state vector); the labels gave an accuracy check."""
    from zoo.export.card_schema import read_export_card
    from zoo.export.layer_chain import layer_chain

    name, model, c_dir, summary = exported
    card = read_export_card(str(c_dir))
    chain = layer_chain(model)
    assert card.state_size == summary["units"] == chain.state_size
    layout = card.step_io.state_layout
    if len(chain.state_layout) == 1:
        assert layout is None
    else:
        assert [(p.state, p.offset, p.size) for p in layout] == \
            [(p["state"], p["offset"], p["size"]) for p in chain.state_layout]
    assert card.accuracy.tflite is not None and card.keras_model.endswith(".keras")
