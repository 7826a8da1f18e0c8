"""Every registered model converts to a float32 TFLite model of builtin ops only whose outputs match
Keras within 1e-4 (run with ai-edge-litert): the export requirement of the zoo.

Weights are perturbed away from their initial values so that the outputs are O(1) (iRNN's
eta = 0.01 would otherwise make every model output nearly the bias).
"""

import collections

import keras
import numpy as np
import pytest

import zoo
from zoo.export.convert import (NonBuiltinOpError, check_builtin_only, op_names, run_tflite,
                            to_tflite, unrolled_copy)

T, D_IN, UNITS, C = 6, 3, 8, 3
TOL = 1e-4
# The recurrent models (the DS-CNN keyword CNN has its own tests in test_dscnn.py).
MODELS = [n for n in zoo.list_models()
          if issubclass(zoo.get_model_entry(n).layer_class, keras.layers.RNN)]


@pytest.fixture(autouse=True)
def _seed():
    """Deterministic initial weights (the cells' initializers are unseeded)."""
    keras.utils.set_random_seed(0)


def small(name):
    opts = {"units": UNITS}
    if zoo.get_model_entry(name).options().get("rank"):
        opts["rank"] = 4  # iRNN's default rank 16 exceeds 8 units
    return opts


def perturb(model, seed=1, scale=0.3):
    rng = np.random.default_rng(seed)
    for w in model.trainable_weights:
        w.assign(np.asarray(w.numpy(), "float32") + rng.normal(0, scale, w.shape).astype("float32"))
    return model


def data(shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


def check_against_keras(model, tflite, x):
    """Max |TFLite - Keras| over ``x`` (batch looped by `run_tflite`), asserted below TOL."""
    batch = model.inputs[0].shape[0]
    if x.shape[1] > 32:  # long sequences: a traced predict beats the eager loop
        ref = model.predict(x, batch_size=batch, verbose=0)
    else:
        ref = np.concatenate([np.asarray(model(x[i:i + batch])) for i in range(0, len(x), batch)])
    out = run_tflite(tflite, x)
    assert out.dtype == np.float32 and out.shape == ref.shape
    assert np.abs(ref).max() > 0.1, "outputs too small for a 1e-4 comparison to mean much"
    diff = float(np.abs(out - ref).max())
    assert diff <= TOL, diff
    return diff


def check_float_builtin(tflite):
    ops = set(op_names(tflite))
    check_builtin_only(tflite)
    assert "WHILE" in ops or "FULLY_CONNECTED" in ops
    assert not ops & {"QUANTIZE", "DEQUANTIZE"}, ops  # a float32 model
    return ops


@pytest.mark.slow  # about 2 s per model (SavedModel export + conversion)
@pytest.mark.parametrize("name", MODELS)
def test_float_tflite_matches_keras(name):
    model = perturb(zoo.create_model(name, (T, D_IN), C, batch_size=1, **small(name)))
    tflite = to_tflite(model)
    ops = check_float_builtin(tflite)
    assert "WHILE" in ops  # the time loop stays a loop
    check_against_keras(model, tflite, data((4, T, D_IN)))


@pytest.mark.slow
def test_irnn_paper_size_har_shape():
    """iRNN at the paper's size (D = 80, rank 16, Eq. 9) on HAR-2's (128, 9) windows."""
    # A small perturbation: larger etas let the unbounded ReLU state grow without limit over
    # 128 steps (REFERENCE.md 6.1), and float32 agreement is then only relative.
    model = perturb(zoo.create_model("irnn", (128, 9), 2, batch_size=1), scale=0.01)
    assert model.layers[1].units == 80
    tflite = to_tflite(model)
    check_float_builtin(tflite)
    assert len(tflite) < 64_000  # 3.5k float parameters plus the loop's graph
    check_against_keras(model, tflite, data((3, 128, 9)))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["irnn", "fastgrnn", "gated_antisymmetric", "stablernn"])
def test_unrolled_tflite_is_loop_free_and_matches(name):
    model = perturb(zoo.create_model(name, (T, D_IN), C, batch_size=1, **small(name)))
    tflite = to_tflite(model, unroll=True)
    ops = check_float_builtin(tflite)
    assert "WHILE" not in ops
    check_against_keras(model, tflite, data((2, T, D_IN)))


@pytest.mark.slow
def test_sequence_head():
    """head="sequence": per-step logits, as for the copy-memory task."""
    model = perturb(zoo.create_model("fastgrnn", (T, D_IN), C, head="sequence", batch_size=1,
                                     units=UNITS))
    tflite = to_tflite(model)
    check_float_builtin(tflite)
    check_against_keras(model, tflite, data((3, T, D_IN)))


def test_dynamic_batch_is_rejected_clearly():
    model = zoo.create_model("fastgrnn", (T, D_IN), C, units=UNITS)
    with pytest.raises(ValueError, match="static batch size"):
        to_tflite(model)


def test_unrolled_copy_keeps_weights_and_outputs():
    model = perturb(zoo.create_model("sirnn", (T, D_IN), C, batch_size=1, **small("sirnn")))
    copy = unrolled_copy(model)
    assert copy.layers[1].unroll and not model.layers[1].unroll
    x = data((1, T, D_IN))
    np.testing.assert_allclose(np.asarray(copy(x)), np.asarray(model(x)), atol=1e-6)


def _with_custom_op(tflite, custom_code):
    """``tflite`` with its first operator code turned into a custom op named ``custom_code``."""
    from ai_edge_litert import schema_py_generated as schema
    from ai_edge_litert.tools import flatbuffer_utils

    model = flatbuffer_utils.read_model_from_bytearray(bytearray(tflite))
    code = model.operatorCodes[0]
    code.builtinCode = code.deprecatedBuiltinCode = schema.BuiltinOperator.CUSTOM
    code.customCode = custom_code
    return bytes(flatbuffer_utils.convert_object_to_bytearray(model))


@pytest.fixture(scope="module")
def simple_rnn_tflite():
    return to_tflite(zoo.create_model("simple_rnn", (T, D_IN), C, batch_size=1, units=UNITS))


def test_check_builtin_only_names_flex_and_custom_ops(simple_rnn_tflite):
    tflite = simple_rnn_tflite
    names = op_names(tflite)
    counts = collections.Counter(names)
    assert counts["WHILE"] == 1 and counts["FULLY_CONNECTED"] >= 2
    flex = _with_custom_op(tflite, "FlexTensorListReserve")
    assert "FlexTensorListReserve" in op_names(flex) and len(op_names(flex)) == len(names)
    with pytest.raises(NonBuiltinOpError, match="Flex.*FlexTensorListReserve"):
        check_builtin_only(flex)
    with pytest.raises(NonBuiltinOpError, match="custom ops MyOp"):
        check_builtin_only(_with_custom_op(tflite, "MyOp"))


def test_run_tflite_batches_and_rejects_wrong_shape(simple_rnn_tflite):
    x = data((3, T, D_IN))
    out = run_tflite(simple_rnn_tflite, x)
    assert out.shape == (3, C)
    np.testing.assert_array_equal(run_tflite(simple_rnn_tflite, x[1:2]), out[1:2])
    with pytest.raises(ValueError, match="does not match"):
        run_tflite(simple_rnn_tflite, data((1, T + 1, D_IN)))
