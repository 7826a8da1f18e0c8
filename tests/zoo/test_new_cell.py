"""A new cell is one file plus one registry line: a toy cell written in a temporary module, with
no change to any zoo file, gets the registry, training, MAC counts and ``.keras`` files."""

import contextlib
import importlib
import sys
import textwrap

import keras
import numpy as np

import zoo
from zoo import registry
from zoo.macs import model_macs_per_sequence

TOY_MODULE = textwrap.dedent('''
    """A leaky tanh RNN: h_t = leak h_{t-1} + (1 - leak) tanh(W x_t + U h_{t-1})."""

    import keras
    from keras import ops

    from zoo.layers import CellRNN, next_state, previous_state
    from zoo.registry import register_model


    @keras.saving.register_keras_serializable(package="zoo_toy_test")
    class LeakyCell(keras.layers.Layer):
        def __init__(self, units, leak=0.5, **kwargs):
            super().__init__(**kwargs)
            self.units, self.leak = units, leak
            self.state_size = self.output_size = units

        def build(self, input_shape):
            self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")
            self.recurrent_kernel = self.add_weight(shape=(self.units, self.units),
                                                    name="recurrent_kernel")

        def call(self, inputs, states, training=False):
            h = previous_state(states)
            new = ops.tanh(ops.matmul(inputs, self.kernel) + ops.matmul(h, self.recurrent_kernel))
            h = self.leak * h + (1.0 - self.leak) * new
            return h, next_state(h, states)

        def macs_per_step(self, input_dim):
            return input_dim * self.units + self.units * self.units

        def get_config(self):
            return {**super().get_config(), "units": self.units, "leak": self.leak}


    @keras.saving.register_keras_serializable(package="zoo_toy_test")
    class Leaky(CellRNN):
        cell_class = LeakyCell


    register_model("toy_leaky", Leaky, defaults={"units": 6, "leak": 0.25}, paper="a test")
''')


@contextlib.contextmanager
def toy_cell_module(folder):
    """Import the toy module from ``folder``; on exit neither the zoo registry nor Keras's custom
    objects keep its names, so other tests never see it."""
    (folder / "zoo_toy_cell.py").write_text(TOY_MODULE)
    saved_registry = dict(registry._REGISTRY)
    custom = keras.saving.get_custom_objects()
    saved_custom = set(custom)
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module("zoo_toy_cell")
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("zoo_toy_cell", None)
        registry._REGISTRY.clear()
        registry._REGISTRY.update(saved_registry)
        for key in set(custom) - saved_custom:
            del custom[key]


def test_a_toy_cell_in_its_own_module_works_everywhere(tmp_path):
    with toy_cell_module(tmp_path) as toy_module:
        check_toy_model(toy_module, tmp_path)
    assert "toy_leaky" not in zoo.list_models()
    assert not [k for k in keras.saving.get_custom_objects() if k.startswith("zoo_toy_test>")]


def check_toy_model(toy_module, tmp_path):
    T, d, C = 7, 3, 2
    assert "toy_leaky" in zoo.list_models()
    assert zoo.get_model_entry("toy_leaky").options() == {"units": 6, "leak": 0.25}

    keras.utils.set_random_seed(0)
    model = zoo.create_model("toy_leaky", (T, d), C, units=5)
    cell = model.layers[1].cell
    assert isinstance(cell, toy_module.LeakyCell) and cell.leak == 0.25

    # Training: one step changes every weight.
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, T, d)).astype("float32")
    y = rng.integers(0, C, size=8)
    model.compile(optimizer=keras.optimizers.SGD(0.1),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    before = [np.array(w) for w in model.trainable_weights]
    loss = model.train_on_batch(x, y, return_dict=True)["loss"]  # create_model's accuracy too
    assert np.isfinite(loss)
    assert all(not np.array_equal(b, np.asarray(w))
               for b, w in zip(before, model.trainable_weights))

    # MACs: T steps of the cell's own count, plus the head once.
    assert model_macs_per_sequence(model) == T * (d * 5 + 5 * 5) + 5 * C

    # A .keras file round trip, through the names the module registered.
    model.save(tmp_path / "toy.keras")
    loaded = keras.saving.load_model(tmp_path / "toy.keras")
    assert type(loaded.layers[1]) is toy_module.Leaky and loaded.layers[1].cell.leak == 0.25
    np.testing.assert_array_equal(np.asarray(loaded(x)), np.asarray(model(x)))
