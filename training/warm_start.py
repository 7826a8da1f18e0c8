"""``--init-from``: trained weights for a new model: a finished run's, or a shipped pretrained
model's by its tag (``--init-from sirnn.har2``), fine-tuned on other data.

What carries over is every weight of the same shape in the same place. Three differences are
bridged, each said in the log: a QAT fine-tune of a float run (the QAT model's extra
``qat_ranges`` are then set from the data), a float model started from a QAT one (its ranges are
left behind), and another number of classes (the head is a fresh one, as timm's
``reset_classifier``; `zoo.registry.reset_head`). Windows of another length carry over (a
recurrent cell's weights do not depend on it); another number of features per step does not,
and is refused naming both shapes. A premultiplied iRNN run starting a lean model of the same
shapes is folded into the lean graph exactly (`zoo.IRNNCell.lean_weights`; a QAT source's
ranges, which bound the premultiplied graph's tensors, are left behind and the lean model's set
from the data); lean into premultiplied is refused.
"""

from __future__ import annotations

import logging
from pathlib import Path

import keras

from zoo import qat
from zoo.irnn import IRNNCell
from zoo.layers import recurrent_layers
from zoo.training import rundir
from zoo.core import storage
from zoo.training.artifacts import load_keras_model

_log = logging.getLogger(__name__)


def warm_start_weights(model: keras.Model, run_dir) -> list:
    """The weights ``model`` starts from (``init_from``): those of the run in ``run_dir``, or of
    the pretrained model of that tag, checked to fit ``model`` (module doc).

    Raises:
        FileNotFoundError: neither a finished run directory nor a pretrained tag.
        ValueError: the weights do not fit (features per step, or the model's options differ).
    """
    path = _model_file(run_dir)
    with storage.shared(path.parent, "--init-from run"):  # not while `zoo train` replaces it
        source = load_keras_model(path, role=" (--init-from)")
    _check_inputs(model, source, run_dir)
    keep, dropped = _kept(model, source, run_dir), _dropped(model, source)
    ours = [w for w in model.weights if not keep(w)]
    theirs = [w for w in source.weights if not dropped(w)]
    values = iter(_checked_weights(ours, theirs, run_dir, folded_values(model, source, run_dir)))
    return [keras.ops.convert_to_numpy(w) if keep(w) else next(values) for w in model.weights]


def _model_file(source) -> Path:
    """``model.keras`` of a run directory, else of the pretrained tag ``source`` (sha256-checked)."""
    path = rundir.RunDirectory(source).model
    if path.is_file() or Path(source).exists():
        if not path.is_file():
            raise FileNotFoundError(f"init_from: {path} does not exist (a finished `zoo train` "
                                    "run directory holds model.keras)")
        return path
    from zoo import pretrained

    tags = pretrained.list_pretrained()
    if str(source) not in tags:
        raise FileNotFoundError(f"init_from: {source} is neither a finished `zoo train` run "
                                f"directory nor a pretrained tag ({', '.join(tags)})")
    return pretrained.verified_dir(str(source)) / "model.keras"


def folded_values(model: keras.Model, source: keras.Model, run_dir) -> dict:
    """``{id(weight of source): value}`` for the weights of each premultiplied iRNN cell of
    ``source`` whose counterpart in ``model`` is lean: the lean graph's equal weights
    (`zoo.IRNNCell.lean_weights`). Same-shaped weights of two different graphs would otherwise
    load as they are and compute another step; the other way (lean into premultiplied) has no
    exact fold and is an error."""
    values = {}
    for theirs, a, b in _graph_changes(model, source):
        if a.premultiply:
            raise ValueError(f"init_from {run_dir}: its {theirs.name} is lean (premultiply "
                             "false) and this model's is premultiplied; only premultiplied -> "
                             "lean folds exactly (train the lean model from a premultiplied run)")
        folded = b.lean_weights()
        values.update({id(w): folded[w.name] for w in b.weights if w.name in folded})
    return values


def _graph_changes(model: keras.Model, source: keras.Model):
    """``(source layer, our cell, their cell)`` for each pair of iRNN cells in the same place
    whose graphs differ (one premultiplied, the other lean)."""
    for ours, theirs in zip(recurrent_layers(model), recurrent_layers(source)):
        a, b = ours.cell, theirs.cell
        if isinstance(a, IRNNCell) and isinstance(b, IRNNCell) and a.premultiply != b.premultiply:
            yield theirs, a, b


def _check_inputs(model: keras.Model, source: keras.Model, where) -> None:
    ours, theirs = tuple(model.inputs[0].shape[1:]), tuple(source.inputs[0].shape[1:])
    if ours[-1] != theirs[-1]:
        raise ValueError(f"init_from {where} takes windows of {_shape(theirs)} (steps x "
                         f"features), this task's are {_shape(ours)}: its weights need the same "
                         f"{theirs[-1]} features per step (the same channels in the same order, "
                         "and frames_per_step)")
    if ours[0] != theirs[0]:
        _log.warning("init_from %s was trained on windows of %s steps, these have %s: its "
                     "weights carry over (a recurrent step does not depend on the length)",
                     where, theirs[0], ours[0])


def _shape(shape) -> str:
    return " x ".join("T" if s is None else str(s) for s in shape)


def _head(model: keras.Model) -> keras.layers.Layer | None:
    last = model.layers[-1]
    return last if isinstance(last, keras.layers.Dense) else None


def _new_head(model: keras.Model, source: keras.Model) -> bool:
    """Whether ``model``'s head gets fresh weights: it has another number of classes."""
    ours, theirs = _head(model), _head(source)
    return bool(ours and theirs and ours.units != theirs.units)


def _folds_graph(model: keras.Model, source: keras.Model) -> bool:
    """Whether a premultiplied iRNN cell of ``source`` starts a lean one of ``model``
    (`folded_values`): the two graphs' QAT ranges bound different tensors."""
    return any(b.premultiply for _, _, b in _graph_changes(model, source))


def _kept(model: keras.Model, source: keras.Model, where):
    """Which of ``model``'s weights keep their own values: its QAT ranges when the source has
    none, or has a premultiplied graph's (set from the data before the first epoch), its head
    when the classes differ."""
    head = {id(w) for w in _head(model).weights} if _new_head(model, source) else set()
    if head:
        _log.info("init_from %s: its %d-class head is replaced by a fresh %d-class one", where,
                  _head(source).units, _head(model).units)
    ranges = bool(qat.qat_cells(model)) and (not qat.qat_cells(source)
                                              or _folds_graph(model, source))
    return lambda w: id(w) in head or (ranges and w.path.endswith("qat_ranges"))


def _dropped(model: keras.Model, source: keras.Model):
    """Which of the source's weights are left behind: its head when the classes differ, its QAT
    ranges when ``model`` has none or folds its graph into the lean one."""
    head = {id(w) for w in _head(source).weights} if _new_head(model, source) else set()
    ranges = bool(qat.qat_cells(source)) and (not qat.qat_cells(model)
                                               or _folds_graph(model, source))
    return lambda w: id(w) in head or (ranges and w.path.endswith("qat_ranges"))


def _checked_weights(ours: list, theirs: list, run_dir, folded: dict) -> list:
    """The values of ``theirs`` (``folded``'s for the weights it holds, by ``id``) after
    checking they match ``ours`` one for one."""
    mismatch = [(a.path, tuple(a.shape), b.path, tuple(b.shape))
                for a, b in zip(ours, theirs) if tuple(a.shape) != tuple(b.shape)]
    if len(ours) != len(theirs) or mismatch:
        detail = (f"first mismatch: ours {mismatch[0][0]} {mismatch[0][1]} vs theirs "
                  f"{mismatch[0][2]} {mismatch[0][3]}" if mismatch else
                  f"{len(ours)} weights here vs {len(theirs)} there")
        raise ValueError(f"init_from {run_dir}: its weights do not match this model's "
                         f"({detail}); the same model and shape options are needed "
                         "(state_clip, state_quant_bits and constraints may differ)")
    return [folded[id(w)] if id(w) in folded else keras.ops.convert_to_numpy(w) for w in theirs]
