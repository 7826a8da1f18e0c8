"""DS-CNN: the forward pass against a NumPy re-implementation (TF 'same' padding, strides,
depthwise 3 x 3, inference-mode batch norm), the reference's parameter count, serialization and
the registry's options."""

import numpy as np
import pytest

import keras
import zoo
from zoo.dscnn import DSCNN


def _pad_same(x, k, s):
    """TF 'same' padding of a (H, W, C) map for kernel k and stride s (extra row/col at the end)."""
    pads = []
    for n, kk, ss in zip(x.shape[:2], k, s):
        out = -(-n // ss)
        total = max((out - 1) * ss + kk - n, 0)
        pads.append((total // 2, total - total // 2))
    return np.pad(x, (*pads, (0, 0))), [-(-n // ss) for n, ss in zip(x.shape[:2], s)]


def _conv(x, w, b, s=(1, 1)):
    xp, (oh, ow) = _pad_same(x, w.shape[:2], s)
    out = np.zeros((oh, ow, w.shape[3]))
    for i in range(w.shape[0]):
        for j in range(w.shape[1]):
            patch = xp[i:i + oh * s[0]:s[0], j:j + ow * s[1]:s[1]]
            out += patch @ w[i, j]
    return out + b


def _depthwise(x, w, b):
    xp, (oh, ow) = _pad_same(x, w.shape[:2], (1, 1))
    out = np.zeros((oh, ow, x.shape[2]))
    for i in range(w.shape[0]):
        for j in range(w.shape[1]):
            out += xp[i:i + oh, j:j + ow] * w[i, j, :, 0]
    return out + b


def _bn(x, gamma, beta, mean, var, eps=1e-3):
    return gamma * (x - mean) / np.sqrt(var + eps) + beta


def _numpy_dscnn(layer, x):
    w = {v.path.split("/", 1)[1]: np.asarray(v) for v in layer.weights}
    def bn(h, name):
        return np.maximum(_bn(h, w[f"{name}/gamma"], w[f"{name}/beta"], w[f"{name}/moving_mean"],
                              w[f"{name}/moving_variance"]), 0)
    h = bn(_conv(x[..., None], w["conv0/kernel"], w["conv0/bias"], (2, 2)), "bn0")
    for i in range(1, layer.blocks + 1):
        h = bn(_depthwise(h, w[f"dw{i}/kernel"], w[f"dw{i}/bias"]), f"bn_dw{i}")
        h = bn(_conv(h, w[f"pw{i}/kernel"], w[f"pw{i}/bias"]), f"bn_pw{i}")
    return h.mean(axis=(0, 1))


def test_forward_matches_numpy():
    layer = DSCNN(8, blocks=2)
    x = np.random.default_rng(0).normal(size=(3, 21, 11)).astype("float32")
    layer(x)
    rng = np.random.default_rng(1)
    for v in layer.weights:  # non-trivial batch-norm statistics too
        shape = tuple(v.shape)
        val = rng.uniform(0.5, 1.5, shape) if "variance" in v.path else rng.normal(0, 0.3, shape)
        v.assign(val.astype("float32"))
    got = np.asarray(layer(x, training=False))
    ref = np.stack([_numpy_dscnn(layer, xi.astype(np.float64)) for xi in x])
    assert got.shape == (3, 8)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)


def test_reference_parameter_count_and_round_trip(tmp_path):
    model = zoo.create_model("dscnn", input_shape=(99, 32), num_classes=12)
    # DS-CNN-S: conv 10x4x1x64 + 64; 4 x (dw 3x3x64 + 64, pw 64x64 + 64); 5 BNs of 4 x 64;
    # head 64 x 12 + 12. None depends on the input size.
    conv0, block, bns, head = 10 * 4 * 64 + 64, (9 * 64 + 64) + (64 * 64 + 64), 9 * 4 * 64, 780
    assert model.count_params() == conv0 + 4 * block + bns + head == 24908
    x = np.random.default_rng(2).normal(size=(2, 99, 32)).astype("float32")
    model.save(tmp_path / "m.keras")
    again = keras.saving.load_model(tmp_path / "m.keras")
    np.testing.assert_array_equal(again.predict(x, verbose=0), model.predict(x, verbose=0))
    assert again.layers[1].get_config()["units"] == 64
    assert again.layers[1].get_config()["bn_momentum"] == 0.99


def test_options_and_errors():
    assert "dscnn" in zoo.list_models()
    assert zoo.get_model_entry("dscnn").options()["blocks"] == 4
    with pytest.raises(ValueError, match="head='last'"):
        zoo.create_model("dscnn", input_shape=(99, 32), num_classes=12, head="sequence")
    with pytest.raises(ValueError, match="unknown option.*'k'"):
        zoo.create_model("dscnn", input_shape=(99, 32), num_classes=12, k=5)
