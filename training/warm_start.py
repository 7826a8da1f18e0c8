"""``--init-from``: a finished run's trained weights for a new model of the same shapes (a QAT
fine-tune of a float run included: the QAT model's extra ``qat_ranges`` are then set from the
data)."""

from __future__ import annotations

import keras

from zoo.training import rundir, storage
from zoo.training.artifacts import load_keras_model
from zoo import qat


def warm_start_weights(model: keras.Model, run_dir) -> list:
    """The trained weights of the run in ``run_dir`` (``init_from``), checked to fit ``model``."""
    path = rundir.RunDirectory(run_dir).model
    with storage.shared(run_dir, "--init-from run"):  # not while `zoo train` replaces it
        if not path.is_file():
            raise FileNotFoundError(f"init_from: {path} does not exist (a finished `zoo train` "
                                    "run directory holds model.keras)")
        source = load_keras_model(path, role=" (--init-from)")
    ours, theirs = model.weights, source.weights
    if qat.qat_cells(model) and not qat.qat_cells(source):
        # A float run fine-tuned with QAT: its weights, and the QAT ranges this model starts
        # with (set from the data before the first epoch).
        kept = [w for w in ours if not w.path.endswith("qat_ranges")]
        return _with_ranges_of(model, _checked_weights(kept, theirs, run_dir))
    return _checked_weights(ours, theirs, run_dir)


def _with_ranges_of(model: keras.Model, weights: list) -> list:
    """``weights`` (every weight of ``model`` but its QAT ranges, in order) with the ranges
    ``model`` holds now put back in their places."""
    it = iter(weights)
    return [keras.ops.convert_to_numpy(w) if w.path.endswith("qat_ranges") else next(it)
            for w in model.weights]


def _checked_weights(ours: list, theirs: list, run_dir) -> list:
    """The values of ``theirs`` after checking they match ``ours`` one for one."""
    mismatch = [(a.path, tuple(a.shape), b.path, tuple(b.shape))
                for a, b in zip(ours, theirs) if tuple(a.shape) != tuple(b.shape)]
    if len(ours) != len(theirs) or mismatch:
        detail = (f"first mismatch: ours {mismatch[0][0]} {mismatch[0][1]} vs theirs "
                  f"{mismatch[0][2]} {mismatch[0][3]}" if mismatch else
                  f"{len(ours)} weights here vs {len(theirs)} there")
        raise ValueError(f"init_from {run_dir}: its weights do not match this model's "
                         f"({detail}); the same model and shape options are needed "
                         "(state_clip, state_quant_bits and constraints may differ)")
    return [keras.ops.convert_to_numpy(w) for w in theirs]
