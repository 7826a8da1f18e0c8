"""A Keras model read for export (`zoo.export.layer_chain`) and split into its streaming step and
head (`zoo.export.step`): the state vector's layout, the layers refused in one line, and the float
step loop checked against Keras's own recurrent loop. Small untrained models: no data."""

import keras
import numpy as np
import pytest

import zoo
from zoo.export.layer_chain import UnsupportedLayerError, layer_chain, logits_model
from zoo.export.step import (calibration_pairs, recurrent_layers, state_size, step_chain,
                             step_models, trajectories)

T, F = 9, 3


def _chain_model(*layers, inputs=(T, F)):
    x = inp = keras.Input(inputs)
    for layer in layers:
        x = layer(x)
    return keras.Model(inp, x)


def test_state_size_of_one_state_vector_and_of_several():
    sirnn = zoo.create_model("sirnn", (10, 3), 2, units=20)
    assert len(recurrent_layers(sirnn)) == 1
    assert state_size(sirnn) == 20
    assert state_size(zoo.create_model("lstm", (10, 3), 2, units=5)) == 10  # h and c
    stacked = _chain_model(keras.layers.GRU(4, return_sequences=True), keras.layers.LSTM(5),
                           keras.layers.Dense(2))
    chain = layer_chain(stacked)
    assert [(p["state"], p["offset"], p["size"]) for p in chain.state_layout] == \
        [("h", 0, 4), ("h", 4, 5), ("c", 9, 5)]
    assert state_size(stacked) == 14
    assert state_size(zoo.create_model("dscnn", (49, 10), 12)) is None  # no recurrent layer


def _models():
    norm = keras.layers.Normalization(mean=[1.0, -2.0, 0.5], variance=[4.0, 0.25, 1.0])
    return {
        "lstm": _chain_model(keras.layers.LSTM(5), keras.layers.Dense(3)),
        "gru_lstm_dense_softmax": _chain_model(
            norm, keras.layers.Dense(4, activation="tanh"),
            keras.layers.GRU(4, return_sequences=True), keras.layers.Dropout(0.2),
            keras.layers.LSTM(5), keras.layers.Dense(6, activation="relu"),
            keras.layers.Dropout(0.3), keras.layers.Dense(3, activation="softmax")),
        "sirnn_simple_rnn": _chain_model(zoo.SiRNN(6, rank=2, return_sequences=True),
                                         keras.layers.SimpleRNN(4), keras.layers.Dense(2)),
    }


@pytest.mark.parametrize("name", sorted(_models()))
def test_float_step_loop_is_the_keras_model(name):
    """The step model fed its own state over a window, then the head, gives the logits of
    Keras's recurrent layers run on the whole window (their own loop): the split is exact; and
    the leading Normalization, left to device code, is the layer's arithmetic."""
    model = _models()[name]
    rng = np.random.default_rng(1)
    raw = rng.normal(size=(4, T, F)).astype(np.float32) * 2 + 1
    chain = layer_chain(model)
    floats = logits_model(chain)
    x = raw if chain.normalization is None else (raw - chain.normalization[0]) / chain.normalization[1]
    want = floats.predict(x, verbose=0)
    *_, scales = calibration_pairs(floats, x, sequences=len(x), pairs=10, scales="auto")
    states = trajectories(floats, x, scales=scales)
    _, head = step_models(floats, scales)
    got = np.concatenate([np.asarray(head(states[i:i + 1, -1])) for i in range(len(x))])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    if scales is not None:  # each part held times a power of two: exactly the unscaled state
        factors = np.concatenate([np.full(p["size"], f, np.float32)
                                  for p, f in zip(chain.state_layout, scales)])
        np.testing.assert_array_equal(states, trajectories(floats, x) * factors)
        largest = np.abs(states).max(axis=(0, 1))
        for part in chain.state_layout:  # every part now spans (0.5, 1] at most
            assert 0.5 < largest[part["offset"]:part["offset"] + part["size"]].max() <= 1.0
    probabilities = model.predict(raw, verbose=0)  # the model as the user built it
    np.testing.assert_allclose(keras.ops.softmax(want) if chain.softmax else want,
                               probabilities, rtol=1e-4, atol=1e-5)


def test_the_state_goes_round_in_the_layout_order():
    """h_t's parts are where the layout says: the LSTM's c is the cell's own carry."""
    model = _chain_model(keras.layers.GRU(3, return_sequences=True), keras.layers.LSTM(2),
                         keras.layers.Dense(2))
    step, _ = step_models(model)
    assert step.inputs[1].shape[-1] == 7 and step.outputs[0].shape[-1] == 7
    rng = np.random.default_rng(0)
    x, h = rng.normal(size=(1, F)).astype(np.float32), rng.normal(size=(1, 7)).astype(np.float32)
    gru, lstm = recurrent_layers(model)
    g, _ = gru.cell(x, [h[:, :3]])
    out, (lh, lc) = lstm.cell(g, [h[:, 3:5], h[:, 5:]])
    np.testing.assert_allclose(np.asarray(step([x, h])),
                               np.concatenate([g, lh, lc], axis=-1), rtol=1e-6)


REFUSED = {
    "Bidirectional": (lambda: _chain_model(keras.layers.Bidirectional(keras.layers.GRU(3)),
                                           keras.layers.Dense(2)), "'bidirectional"),
    "Conv1D": (lambda: _chain_model(keras.layers.Conv1D(4, 3), keras.layers.GRU(3),
                                    keras.layers.Dense(2)), "(Conv1D) cannot be exported before"),
    "per-step head": (lambda: _chain_model(keras.layers.GRU(3, return_sequences=True),
                                           keras.layers.Dense(2)), "per-step head"),
    "go_backwards": (lambda: _chain_model(keras.layers.LSTM(3, go_backwards=True),
                                          keras.layers.Dense(2)), "go_backwards"),
    "stacked without sequences": (lambda: _chain_model(
        keras.layers.GRU(3), keras.layers.RepeatVector(4), keras.layers.GRU(3),
        keras.layers.Dense(2)), "(RepeatVector) sits between recurrent layers"),
    "one unit": (lambda: _chain_model(keras.layers.GRU(3), keras.layers.Dense(1, "sigmoid")),
                 "one unit per class"),
    "no recurrent layer": (lambda: _chain_model(keras.layers.Flatten(), keras.layers.Dense(2)),
                           "(Flatten) cannot be exported"),
    "softmax inside": (lambda: _chain_model(keras.layers.GRU(3), keras.layers.Dense(4, "softmax"),
                                            keras.layers.Dense(2)), "softmax that is not"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_an_unsupported_layer_is_refused_in_one_line_naming_it(case):
    build, words = REFUSED[case]
    with pytest.raises(UnsupportedLayerError) as err:
        layer_chain(build())
    message = str(err.value)
    assert words in message and "supported:" in message and "\n" not in message


def test_attention_joining_two_branches_is_refused():
    inp = keras.Input((T, F))
    seq = keras.layers.GRU(4, return_sequences=True)(inp)
    att = keras.layers.Attention(name="attention")([seq, seq])
    model = keras.Model(inp, keras.layers.Dense(2)(keras.layers.GRU(3)(att)))
    with pytest.raises(UnsupportedLayerError, match=r"layer 'attention' \(Attention\) takes 2 "
                                                     r"inputs; supported:"):
        layer_chain(model)


def test_a_pretrained_model_is_read_through_its_nested_model():
    """A loaded tag of one sample per step (the archived sirnn.har2_gen4) is Input ->
    Normalization -> the trained model, read through."""
    from zoo.pretrained import archive_root, load_pretrained

    model = load_pretrained("sirnn.har2_gen4", root=archive_root())
    chain = layer_chain(model)
    assert chain.normalization is not None and len(chain.normalization[0]) == 9
    assert [type(layer).__name__ for layer in chain.recurrent + chain.head] == ["SiRNN", "Dense"]
    with pytest.raises(UnsupportedLayerError, match="Normalization layer"):
        step_chain(model)


def test_a_pretrained_frames_model_is_refused_naming_its_reshape():
    """The installed sirnn.har2 reads 4 samples a step: its loaded model stacks raw windows with
    a Reshape in front, which the .keras export does not take (yet): one line naming it. (Its
    own exports, shipped in the tag, stream 4 samples a step.)"""
    with pytest.raises(UnsupportedLayerError, match=r"layer 'frames' \(Reshape\) cannot be "
                                                    r"exported before the recurrent layers"):
        layer_chain(zoo.create_model("sirnn", pretrained="har2"))
