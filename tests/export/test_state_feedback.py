"""The state-feedback decision of a step export (one function, `device_runtime.state_feedback`, used
by device_runtime.py's loop and the exporter's stream check), on hand-built quantizations where the
step model's state input and output differ: no TensorFlow, no trained model."""

import numpy as np
import pytest

from zoo.export import device_runtime
from zoo.export.card_schema import ModelCard

INT8 = np.int8
H_IN = (INT8, (0.01, 0))    # h_prev: what the step model consumes
H_OUT = (INT8, (0.02, 0))   # h_t: what the step model returns (a different scale)


def test_same_quantization_compares_dtype_scale_and_zero_point():
    same = device_runtime.same_quantization
    assert same((INT8, (0.01, 3)), (np.dtype("int8"), (0.01, 3)))
    assert not same((INT8, (0.01, 3)), (np.int16, (0.01, 3)))
    assert not same((INT8, (0.01, 3)), (INT8, (0.02, 3)))
    assert not same((INT8, (0.01, 3)), (INT8, (0.01, 4)))


def test_feedback_follows_the_state_the_loop_keeps():
    """The loop keeps h in h_prev's quantization (requantizing h_t when it differs), so the head
    is fed directly only when its input shares h_prev's quantization, whatever h_t's is."""
    feedback = device_runtime.state_feedback
    assert feedback(H_IN, H_IN, H_IN) == (True, True)
    assert feedback(h_in=H_IN, h_out=H_OUT, head_in=H_IN) == (False, True)
    # h_t happens to share the head's quantization, but the state handed to the head is in
    # h_prev's: comparing h_t's quantization with the head's would feed it unconverted.
    assert feedback(h_in=H_IN, h_out=H_OUT, head_in=H_OUT) == (False, False)


class _Fake:
    """An interpreter with the runtime interface, computing ``fn`` on dequantized inputs."""

    def __init__(self, inputs, output, fn):
        self.inputs, self.outputs, self.fn = inputs, [output], fn
        self.values = {}

    def input_quant(self, i):
        return self.inputs[i]

    def output_quant(self, i):
        return self.outputs[i]

    def set(self, i, value):
        self.values[i] = value

    def invoke(self):
        floats = [device_runtime.dequantize(self.values[i], *self.inputs[i][:2])
                  for i in range(len(self.inputs))]
        self.result = device_runtime.quantize(self.fn(*floats), *self.outputs[0][:2])

    def get(self, i):
        return self.result

    def reset(self):
        pass


def _step_model(monkeypatch, tmp_path, head_in):
    """StepModel over a hand-built pair: step h_t = 0.5 h_prev + x_t, head logits (h, -h)."""
    F32 = (np.float32, (0.0, 0))
    step = _Fake([F32 + ((1, 1),), H_IN + ((1, 1),)], H_OUT + ((1, 1),),
                 lambda x, h: 0.5 * h + x)
    head = _Fake([head_in + ((1, 1),)], F32 + ((1, 2),), lambda h: np.concatenate([h, -h], -1))
    monkeypatch.setattr(device_runtime, "open_model",
                        lambda path, *a: step if path.endswith("step.tflite") else head)
    card = ModelCard(form="step", timesteps=3, features=1,
                                  files={"step": "step.tflite", "head": "head.tflite"},
                                  step_io={"x": 0, "h": 1, "h_out": 0})
    return device_runtime.StepModel(str(tmp_path), card, "litert", 1)


@pytest.mark.parametrize("head_in", [H_IN, H_OUT], ids=["head-like-h_prev", "head-like-h_t"])
def test_step_model_logits_are_the_float_loop_when_h_in_and_h_out_differ(monkeypatch, tmp_path,
                                                                         head_in):
    model = _step_model(monkeypatch, tmp_path, head_in)
    x = np.array([[0.4], [0.2], [0.6]], np.float32)
    h = 0.0
    for x_t in x[:, 0]:
        h = 0.5 * h + x_t  # 0.4, 0.4, 0.8
    # Each step rounds to h_t's grid (0.02) and back to h_prev's (0.01); the head's grid adds
    # half a step: a few hundredths at most. Feeding the int8 state of one scale as the other
    # would double or halve it (off by 0.8).
    np.testing.assert_allclose(model.predict(x), [h, -h], atol=0.03)
