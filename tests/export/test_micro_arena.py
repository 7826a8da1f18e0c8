"""The smallest TFLite Micro arena of a model (`zoo.export.micro`), found without the
interpreter's crashes taking the exporting process down."""

import keras
import numpy as np


def test_an_arena_that_crashes_tflite_micro_is_a_no(tmp_path):
    """TFLite Micro segfaults on some arenas too small for a model instead of failing (every
    int8 step model here below ~450 bytes): the probe runs in a process of its own, so the
    bisection reads it as "does not fit" (it used to kill the exporting process)."""
    from zoo.export.micro import smallest_arena, works_with_arena
    from zoo.export.quantize import convert
    from zoo.export.step import calibration_pairs, step_models

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8, 3)), keras.layers.LSTM(4), keras.layers.Dense(2)])
    x = np.random.default_rng(0).normal(size=(12, 8, 3)).astype(np.float32)
    step, _ = step_models(model)
    xs, hs, _ = calibration_pairs(model, x, sequences=12, pairs=64)
    tflite = convert(step, "int8", {"x_t": xs, "h_prev": hs}, form="step", child=False)
    assert works_with_arena(tflite, 100) is False
    arena = smallest_arena(tflite)
    assert works_with_arena(tflite, arena) and not works_with_arena(tflite, arena - 1)
