"""Keras's own SimpleRNN and LSTM, registered as baselines at the zoo's default size (the GRU,
which also trains with QAT, is `zoo.gru`)."""

import keras

from zoo.registry import register_model

_KERAS = "Keras built-in layer"
register_model("simple_rnn", keras.layers.SimpleRNN, defaults={"units": 80}, paper=_KERAS,
               description="Keras SimpleRNN (tanh) baseline")
register_model("lstm", keras.layers.LSTM, defaults={"units": 80}, paper=_KERAS,
               description="Keras LSTM baseline")
