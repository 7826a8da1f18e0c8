"""The QAT stage of a run (the ``qat_stage`` setting): quantization-aware training at the end of
the same `zoo train`, so that one command ends in a model whose int8 export computes what it was
trained to (docs/qat.md).

After the float epochs (all of them, or up to early stopping, whose best weights are restored),
the trainer builds the run's model again with ``qat="int8"`` and ``qat_percentile`` set to the
stage's ``percentile``, copies the float weights into it (`qat_weights`), calibrates its ranges
on the float step (`zoo.qat.calibrate_ranges`, as ``--init-from`` a float run does) and trains it
``epochs`` more epochs at the constant ``lr``, the ranges tracked every epoch. Everything else is
the run's: batch, augmentation, optimizer, monitor and patience (early stopping keeps the stage's
best epoch). It is the two commands of docs/qat.md in one::

    zoo train ... --out RUN
    zoo train ... --init-from RUN --option qat=int8 --option qat_percentile=98 --epochs 10 \\
        --lr 0.001 --lr-schedule step --out RUN-qat

The stage's epochs continue the run's numbering (``history.csv``, the progress lines, the
checkpoints). Each of its checkpoints records where it began and what the float model scored
(`StageMark`, under ``callbacks.qat_stage`` in ``state.json``) and holds the QAT model, so a
killed run resumes inside the stage; one killed after its last float epoch begins the stage
again from that epoch's checkpoint. The run's ``model.keras`` is the QAT model, ``config.yaml``'s
``model_options_resolved`` its options, and ``metrics.json``'s ``qat_stage`` the float model's
validation and test scores beside the final ones.

Example:

    zoo train --task audio_folder --model sirnn --data-dir my_words/ --qat-stage epochs=10
"""

from __future__ import annotations

import dataclasses

import keras

from zoo.training.artifacts import ArtifactError
from zoo.training.config import TrainConfig, check_qat_stage

STATE = "qat_stage"  # its key among a checkpoint's callback states


def stage_options(config: TrainConfig) -> dict | None:
    """The run's QAT stage, its options resolved (`zoo.training.config.QAT_STAGE_OPTIONS`), or
    None when it has none."""
    return check_qat_stage(config.qat_stage)


def final_model_options(config: TrainConfig) -> dict:
    """The options of the model the run ends with: with a QAT stage, the float model's plus
    ``qat="int8"`` and the stage's percentile."""
    options = stage_options(config)
    if options is None:
        return dict(config.model_options)
    return {**config.model_options, "qat": "int8",
            "qat_percentile": float(options["percentile"])}


def stage_config(config: TrainConfig, start_epoch: int) -> TrainConfig:
    """The settings the stage trains with: the QAT model, the stage's constant learning rate,
    and the run's epochs ``start_epoch`` .. ``start_epoch + epochs - 1`` (0-based)."""
    options = stage_options(config)
    if options is None:
        raise ValueError("this run has no QAT stage (qat_stage unset or epochs 0)")
    return dataclasses.replace(config, model_options=final_model_options(config),
                               lr=float(options["lr"]), lr_schedule="step",
                               lr_decay_epochs=None, epochs=start_epoch + options["epochs"],
                               init_from=None, qat_stage=None)


class StageMark(keras.callbacks.Callback):
    """The stage's record in each of its checkpoints (`state`): the epoch it began at (0-based:
    the float epochs run) and the float model's scores (``{"best_epoch", "val", "test"}``).

    Args:
        start_epoch: the number of float epochs run before the stage.
        float_scores: what the float model scored, as ``metrics.json`` reports it.
    """

    def __init__(self, start_epoch: int, float_scores: dict):
        super().__init__()
        self.start_epoch = int(start_epoch)
        self.float_scores = float_scores

    def state(self) -> dict:
        return {"start_epoch": self.start_epoch, "float": self.float_scores}


def resumed(checkpoint) -> dict | None:
    """The `StageMark` state of a checkpoint committed inside the stage, or None (a float
    epoch's checkpoint, or none). Raises `ArtifactError` naming ``state.json`` when it is not
    one the trainer wrote."""
    if checkpoint is None:
        return None
    state = checkpoint.callback_states.get(STATE)
    if state is None:
        return None
    start = state.get("start_epoch") if isinstance(state, dict) else None
    if (not isinstance(start, int) or isinstance(start, bool) or not 0 < start
            < checkpoint.epochs_done or not isinstance(state.get("float"), dict)):
        raise ArtifactError(f"{checkpoint.folder / 'state.json'}: callbacks.{STATE} is "
                            f"{state!r}; valid: start_epoch, an integer between 1 and the "
                            "epochs done, and float, the float model's scores")
    return state


def qat_weights(qat_model: keras.Model, float_model: keras.Model) -> list:
    """The weights of ``qat_model``: ``float_model``'s, one for one, and its own QAT ranges (the
    only weights the float model lacks), to be calibrated before the first stage epoch."""
    ours = [w for w in qat_model.weights if not w.path.endswith("qat_ranges")]
    theirs = float_model.weights
    shapes = [(tuple(a.shape), tuple(b.shape)) for a, b in zip(ours, theirs)]
    if len(ours) != len(theirs) or any(a != b for a, b in shapes):
        raise ValueError(f"qat_stage: the QAT model of {qat_model.name} does not take the float "
                         f"model's weights ({len(ours)} weights against {len(theirs)}, shapes "
                         f"{[s for s in shapes if s[0] != s[1]][:1]})")
    values = iter(keras.ops.convert_to_numpy(w) for w in theirs)
    return [keras.ops.convert_to_numpy(w) if w.path.endswith("qat_ranges") else next(values)
            for w in qat_model.weights]
