"""Pixel MNIST and permuted MNIST: 784 steps x 1 pixel (scaled to [0, 1], then z-scored).

Data: ``mnist.npz`` (the file `keras.datasets.mnist` uses) found under the data location, else
`keras.datasets.mnist.load_data()` when online (Keras checks its sha256 and caches it in
``~/.keras/datasets``). The permutation is ``numpy.random.RandomState(42).permutation(784)``:
The iRNN paper (Kag et al. 2020, App. A.4) says seed 42 without naming the generator.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from zoo.training.data.errors import DataError, DataNotFoundError
from zoo.training.data.paths import data_root, offline
from zoo.training.tasks.base import Normalization, Split, Task, TaskData, check_fraction, register_task

URL = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz"
SHA256 = "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1"  # keras/src/datasets/mnist.py
KEYS = ("x_train", "y_train", "x_test", "y_test")


def permutation(seed: int = 42) -> np.ndarray:
    return np.random.RandomState(seed).permutation(784)


def _keras_mnist():
    """`keras.datasets.mnist.load_data()`; a function so tests can replace it (no network)."""
    import keras

    return keras.datasets.mnist.load_data()


def _read_npz(path: Path):
    try:
        with np.load(path, allow_pickle=False) as z:
            missing = [k for k in KEYS if k not in z.files]
            if missing:
                raise DataError(f"{path}: missing array(s) {', '.join(missing)}")
            arrays = [z[k] for k in KEYS]
    except (OSError, ValueError, EOFError) as exc:
        if isinstance(exc, DataError):
            raise
        raise DataError(f"{path}: not a readable mnist.npz ({exc})") from None
    for name, a, shape in zip(KEYS, arrays, ((28, 28), (), (28, 28), ())):
        if a.shape[1:] != shape or (shape == () and a.ndim != 1):
            raise DataError(f"{path}: {name} has shape {a.shape}, expected (N, {', '.join(map(str, shape))})")
    for xs, ys, xn, yn in ((arrays[0], arrays[1], "x_train", "y_train"),
                           (arrays[2], arrays[3], "x_test", "y_test")):
        if len(xs) != len(ys):
            raise DataError(f"{path}: {xn} has {len(xs)} images but {yn} has {len(ys)} labels")
    return (arrays[0], arrays[1]), (arrays[2], arrays[3]), str(path)


def load_mnist(data_dir=None):
    root = data_root(data_dir)
    for cand in (root, root / "mnist.npz"):
        if cand.is_file():
            return _read_npz(cand)
    if offline():
        raise DataNotFoundError(f"mnist.npz not found in {root} (offline: not downloading). "
                                f"Download {URL} (sha256 {SHA256}) and put it in {root}.")
    try:
        (xtr, ytr), (xte, yte) = _keras_mnist()
    except Exception as exc:  # keras raises plain Exception on a failed download
        raise DataNotFoundError(f"mnist.npz not found in {root}, and keras.datasets.mnist could "
                                f"not download it ({exc}). Download {URL} (sha256 {SHA256}) and "
                                f"put it in {root}.") from None
    return (xtr, ytr), (xte, yte), "keras.datasets.mnist"


class _MNIST(Task):
    DEFAULTS = {"val_fraction": 0.2, "split_seed": 0}
    input_shape = (784, 1)
    class_names = [str(i) for i in range(10)]

    def _validate(self):
        check_fraction("val_fraction", self._options["val_fraction"])

    def _order(self) -> np.ndarray | None:
        return None

    def _load(self, data_dir, *, seed: int) -> TaskData:
        (xtr, ytr), (xte, yte), source = load_mnist(data_dir)
        order = self._order()

        def seq(x):
            x = x.reshape(len(x), 784).astype(np.float32) / 255.0
            return (x if order is None else x[:, order])[:, :, None]

        xtr, xte = seq(xtr), seq(xte)
        ytr, yte = ytr.astype(np.int64), yte.astype(np.int64)
        n_val = int(round(self._options["val_fraction"] * len(xtr)))
        perm = np.random.default_rng(self._options["split_seed"]).permutation(len(xtr))
        val_idx, tr_idx = np.sort(perm[:n_val]), np.sort(perm[n_val:])
        train = Split(xtr[tr_idx], ytr[tr_idx])
        return TaskData(train, Split(xtr[val_idx], ytr[val_idx]), Split(xte, yte),
                        Normalization.fit(train.x), source, {"n_val": n_val})


@register_task("pixel_mnist")
class PixelMNIST(_MNIST):
    description = "MNIST read one pixel per step in scan-line order (784 x 1)"
    paper_split = ("official 60,000 / 10,000; validation = a random val_fraction of the training "
                   "images (split_seed)")


@register_task("permuted_mnist")
class PermutedMNIST(_MNIST):
    description = "MNIST pixels in a fixed random order, RandomState(42).permutation(784) (784 x 1)"
    paper_split = PixelMNIST.paper_split
    DEFAULTS = {**_MNIST.DEFAULTS, "permutation_seed": 42}

    def _order(self):
        return permutation(self._options["permutation_seed"])
