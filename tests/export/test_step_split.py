"""Finding the recurrent layer of a model for export (`zoo.export.step`): its state width, and the
models a step export refuses. Small untrained models: no data."""

import keras
import pytest

import zoo
from zoo.export.step import recurrent_layers, split_model, state_size


def test_state_size_of_one_state_vector_and_of_two():
    sirnn = zoo.create_model("sirnn", (10, 3), 2, units=20)
    assert len(recurrent_layers(sirnn)) == 1
    assert state_size(sirnn) == 20
    lstm = zoo.create_model("lstm", (10, 3), 2, units=5)
    assert len(recurrent_layers(lstm)) == 1
    assert state_size(lstm) is None  # (h, c): no single state vector


def test_split_model_refuses_two_states_and_extra_layers():
    layer, head = split_model(zoo.create_model("fastgrnn", (10, 3), 2, units=4))
    assert int(layer.cell.state_size) == 4 and head.units == 2
    with pytest.raises(ValueError, match="single state vector"):
        split_model(zoo.create_model("lstm", (10, 3), 2, units=5))
    with pytest.raises(ValueError, match="classifier of the last state"):
        split_model(zoo.create_model("fastgrnn", (10, 3), 2, units=4, head="sequence"))
    extra = keras.Sequential([keras.Input((10, 3)), keras.layers.GRU(4),
                              keras.layers.Dropout(0.1), keras.layers.Dense(2)])
    with pytest.raises(ValueError, match="one recurrent layer -> Dense"):
        split_model(extra)
