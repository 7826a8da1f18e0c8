"""Long-memory synthetic tasks (after Arjovsky et al. 2016), generated in numpy.

Training data come from the load ``seed``; validation and test data from ``split_seed`` (fixed by
default), so every training run is scored on the same held-out sequences. The generators use
``numpy.random.default_rng([seed, stream])`` with a distinct ``stream`` per split, so train and
test never coincide even when ``seed == split_seed``. Inputs need no z-scoring (the papers do not
normalise them): the normalisation is the identity.
"""

from __future__ import annotations

import numpy as np

from zoo.training.tasks.base import (Normalization, Split, Task, TaskData, check_generated_size,
                                 register_task)

BLANK, DELIMITER, DATA_SYMBOLS, COPY_LEN = 8, 9, 8, 10


def adding_batch(rng: np.random.Generator, n: int, timesteps: int) -> tuple[np.ndarray, np.ndarray]:
    """``x`` (n, T, 2): value ~ U[0, 1] and a marker; one marker in each half. ``y`` = sum of the
    two marked values. Predicting the constant 1 gives MSE Var(u1 + u2) = 1/6."""
    x = np.zeros((n, timesteps, 2), dtype=np.float32)
    x[:, :, 0] = rng.uniform(0, 1, size=(n, timesteps))
    half = timesteps // 2
    first = rng.integers(0, half, size=n)
    second = rng.integers(half, timesteps, size=n)
    rows = np.arange(n)
    x[rows, first, 1] = 1
    x[rows, second, 1] = 1
    y = (x[rows, first, 0] + x[rows, second, 0]).astype(np.float32)
    return x, y


def copy_batch(rng: np.random.Generator, n: int, timesteps: int) -> tuple[np.ndarray, np.ndarray]:
    """``x`` one-hot (n, T + 20, 10): 10 symbols from {0..7}, T - 1 blanks (8), the delimiter (9),
    10 blanks. ``y`` (n, T + 20): T + 10 blanks, then the 10 symbols. A memoryless model that
    predicts blank, then uniform over the 8 symbols, scores cross-entropy 10 log 8 / (T + 20)."""
    length = timesteps + 2 * COPY_LEN
    data = rng.integers(0, DATA_SYMBOLS, size=(n, COPY_LEN))
    seq = np.full((n, length), BLANK, dtype=np.int64)
    seq[:, :COPY_LEN] = data
    seq[:, COPY_LEN + timesteps - 1] = DELIMITER
    y = np.full((n, length), BLANK, dtype=np.int64)
    y[:, -COPY_LEN:] = data
    x = np.eye(10, dtype=np.float32)[seq]
    return x, y


class _Synthetic(Task):
    DEFAULTS = {"timesteps": 200, "n_train": 10000, "n_val": 1000, "n_test": 1000, "split_seed": 1}

    def _validate(self):
        o = self._options
        if not isinstance(o["timesteps"], int) or o["timesteps"] < 2:
            raise ValueError(f"option timesteps must be an integer >= 2, got {o['timesteps']!r}")
        for k in ("n_train", "n_val", "n_test"):
            low = 1 if k == "n_train" else 0  # no training sequence: model.fit waited for ever
            if not isinstance(o[k], int) or o[k] < low:
                raise ValueError(f"option {k} must be an integer >= {low}, got {o[k]!r}")
        check_generated_size(self, o["n_train"] + o["n_val"] + o["n_test"],
                             "n_train, n_val, n_test and timesteps")

    def _batch(self, rng, n):  # pragma: no cover - abstract
        raise NotImplementedError

    def _load(self, data_dir, *, seed: int) -> TaskData:
        o = self._options
        gen = lambda s, stream, n: Split(*self._batch(np.random.default_rng([s, stream]), n))  # noqa: E731
        train = gen(seed, 0, o["n_train"])
        val = gen(o["split_seed"], 1, o["n_val"])
        test = gen(o["split_seed"], 2, o["n_test"])
        return TaskData(train, val, test, Normalization.identity(self.input_shape[1]),
                        source=f"generated (seed={seed}, split_seed={o['split_seed']})")


@register_task("adding")
class Adding(_Synthetic):
    kind = "regression"
    description = "adding problem: sum of the two marked values in a length-T sequence (MSE)"
    paper_split = "generated: n_train from the load seed; n_val / n_test from split_seed"
    class_names = ["sum"]

    @property
    def input_shape(self):
        return (self._options["timesteps"], 2)

    def _batch(self, rng, n):
        return adding_batch(rng, n, self._options["timesteps"])

    @staticmethod
    def baseline_mse() -> float:
        return 1 / 6


@register_task("copy")
class CopyMemory(_Synthetic):
    kind = "sequence"
    description = "copy memory: recall 10 symbols after T blanks, per-step 10-way classification"
    paper_split = "generated: n_train from the load seed; n_val / n_test from split_seed"
    class_names = [f"a{i}" for i in range(8)] + ["blank", "delimiter"]

    @property
    def input_shape(self):
        return (self._options["timesteps"] + 2 * COPY_LEN, 10)

    def _batch(self, rng, n):
        return copy_batch(rng, n, self._options["timesteps"])

    def baseline_cross_entropy(self) -> float:
        return COPY_LEN * float(np.log(DATA_SYMBOLS)) / (self._options["timesteps"] + 2 * COPY_LEN)
