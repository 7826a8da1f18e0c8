"""FastGRNN's hard-thresholding callback on each Keras backend: the sparsity the run ends with,
counted here with NumPy from the weights the subprocess prints."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]

# 12 batches in all: phase 2 (thresholding every 2 batches) covers batches 4-7 and phase 3
# (frozen support) 8-12, so the run ends in phase 3 after training on the masked weights.
SCRIPT = """
import json, keras, numpy as np, zoo
from zoo.training.callbacks import HardThresholding
from zoo.training.trainer import recurrent_cell

keras.utils.set_random_seed(0)
model = zoo.create_model("fastgrnn", input_shape=(12, 3), num_classes=2, units=8)
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
rng = np.random.default_rng(0)
x = rng.normal(size=(48, 12, 3)).astype("float32")
y = (x[:, :, 0].mean(axis=1) > 0).astype("int32")
cell = recurrent_cell(model)
callback = HardThresholding(cell, sparsity_w=0.25, sparsity_u=0.5, total_batches=12, trim_every=2)
model.fit(x, y, batch_size=8, epochs=2, callbacks=[callback], verbose=0)
print(json.dumps({"backend": keras.backend.backend(),
                  "w": [keras.ops.convert_to_numpy(v).tolist() for v in cell.kernels],
                  "u": [keras.ops.convert_to_numpy(v).tolist() for v in cell.recurrent_kernels]}))
"""


@pytest.mark.parametrize("backend", ["jax", "tensorflow"])
def test_hard_thresholding_leaves_the_requested_density(backend):
    # KERAS_BACKEND must be set before keras is first imported: hence a fresh process.
    env = {**os.environ, "KERAS_BACKEND": backend, "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["backend"] == backend
    for key, density in (("w", 0.25), ("u", 0.5)):
        assert result[key], f"no {key} matrices"
        for matrix in map(np.asarray, result[key]):
            # Distinct random magnitudes have no ties: exactly ceil(density * size) survive the
            # threshold, and training inside the frozen support moves none of them to zero.
            assert np.count_nonzero(matrix) == math.ceil(density * matrix.size), (key, matrix)
