"""What `zoo.create_model` hands a Keras user: a model ready for ``model.fit``.

The zoo's heads give logits (as timm's do): the numbers a softmax would turn into
probabilities. Keras's ``loss="sparse_categorical_crossentropy"`` reads its input as
probabilities, so a logits model compiled with it trains stuck near chance, without an error
(10 % on 10 classes, loss 9.7, in issue 42). So `create_model` returns the model compiled for
its head, and says so in a warning when it is then compiled with a loss that reads the other
kind of output:

* logits (``head_activation=None``, the default) with classes: Adam at the zoo recipes'
  learning rate 1e-2 with gradient clipping 1 (``models/recipes/har2-sirnn.yaml``; Keras's
  1e-3 barely moved the README's iRNN in 3 epochs), ``SparseCategoricalCrossentropy(
  from_logits=True)``, accuracy;
* ``head_activation="softmax"``: the same loss with ``from_logits=False``;
* one output and no activation (a regression): mean squared error and mean absolute error.
"""

from __future__ import annotations

import functools
import warnings

import keras

# Keras's cross-entropy loss functions: each reads probabilities unless called with
# from_logits=True (their default is False), which a function passed as the loss never is.
_CROSS_ENTROPY = ("sparse_categorical_crossentropy", "categorical_crossentropy",
                  "binary_crossentropy", "categorical_focal_crossentropy",
                  "binary_focal_crossentropy")


def compile_for_head(model: keras.Model, num_classes: int, head_activation) -> keras.Model:
    """``model`` compiled for its head (module doc) and guarded against a loss that reads the
    other kind of output (`guard_compile`). Returns ``model``.

    Example:

    ```python
    import numpy as np, zoo
    model = zoo.create_model("gru", input_shape=(16, 3), num_classes=4, units=8)
    model.fit(np.zeros((8, 16, 3)), np.arange(8) % 4, epochs=1, verbose=0)  # compiled already
    ```
    """
    if num_classes == 1 and head_activation is None:
        loss, metrics = keras.losses.MeanSquaredError(), [keras.metrics.MeanAbsoluteError("mae")]
    else:
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=head_activation is None)
        metrics = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
    optimizer = keras.optimizers.Adam(learning_rate=1e-2, clipnorm=1.0)
    model.compile(optimizer=optimizer, loss=loss, metrics=metrics)
    guard_compile(model, logits=head_activation is None and num_classes > 1,
                  probabilities=head_activation == "softmax")
    return model


def guard_compile(model: keras.Model, *, logits: bool, probabilities: bool) -> None:
    """Make ``model.compile`` warn when its loss reads the other kind of output than the model
    gives: probabilities from a logits model, or logits from a softmax one."""
    keras_compile = model.compile

    @functools.wraps(keras_compile)
    def compile(*args, **kwargs):
        loss = kwargs["loss"] if "loss" in kwargs else args[1] if len(args) > 1 else None
        reads_logits = from_logits(loss)
        if logits and reads_logits is False:
            warnings.warn(f"model {model.name!r} outputs logits (zoo.create_model's default "
                          f"head); loss {_name(loss)} reads probabilities, so training would "
                          "stay near chance. Use keras.losses.SparseCategoricalCrossentropy("
                          "from_logits=True) (create_model compiles the model with it), or "
                          "create_model(..., head_activation='softmax')", UserWarning,
                          stacklevel=2)
        elif probabilities and reads_logits is True:
            warnings.warn(f"model {model.name!r} outputs probabilities (head_activation="
                          f"'softmax'); loss {_name(loss)} has from_logits=True and reads "
                          "logits. Use from_logits=False", UserWarning, stacklevel=2)
        return keras_compile(*args, **kwargs)

    model.compile = compile


def from_logits(loss) -> bool | None:
    """Whether a Keras cross-entropy ``loss`` (a name, a function or a `keras.losses.Loss`)
    reads logits (True) or probabilities (False); None for any other loss."""
    if isinstance(loss, str):
        try:
            loss = keras.losses.get(loss)  # a function for snake_case, a Loss for CamelCase
        except (ValueError, TypeError):
            return None
    if isinstance(loss, keras.losses.Loss):
        config = loss.get_config()
        return bool(config["from_logits"]) if "from_logits" in config else None
    return False if getattr(loss, "__name__", "") in _CROSS_ENTROPY else None


def _name(loss) -> str:
    if isinstance(loss, str):
        return repr(loss)
    return getattr(loss, "__name__", None) or type(loss).__name__
