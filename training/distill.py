"""``distill``: knowledge distillation from a stronger teacher (Hinton, Vinyals and Dean,
"Distilling the Knowledge in a Neural Network", 2015), a training setting off by default.

With ``distill: {"teacher": RUN or [RUNS], "alpha": a, "temperature": T}`` the student (the
run's model) is trained on

    loss = (1 - a) * CE(y, student) + a * T^2 * KL(p_teacher || softmax(student / T))

where ``p_teacher`` is the teacher's softmax at temperature T, or for several teachers (an
ensemble) the mean of their softened probabilities. The T^2 keeps the soft term's gradients on
the scale of the hard term's as T changes (Hinton et al. Sec. 2.1).

How it is wired (`install`): the student stays the plain functional model every run trains, and
only that instance's ``compute_loss`` is replaced, so the teachers are never layers of the
student: they are not trained, not in its checkpoints and not in its ``model.keras``, which
loads, evaluates and exports like any run's. The teachers run inside the train step on the very
batch the student sees (augmented in the input pipeline, `zoo.training.trainer.epoch_batches`),
mapped from the student's normalisation to each teacher's own ``normalization.json``. The
validation and test losses are the task's alone, so ``val_loss`` means the same with and without
distillation.

A teacher is a finished ``zoo train`` run directory of the same task (`check_teacher_runs`,
without Keras; `load_teachers` then checks the model's classes and inputs).
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

from zoo.core import storage
from zoo.training.config import check_distill

_log = logging.getLogger(__name__)

# The placeholder `zoo sweep cv` fills in with each fold's number (zoo.experiments.trials).
FOLD = "{fold}"


def check_teacher_runs(options: dict, task: str) -> list[Path]:
    """The teachers' run directories, each checked to be a finished run of ``task`` (from its
    files, without Keras: a sweep plans with it before any trial starts). ValueError or
    FileNotFoundError naming the teacher and what is wrong."""
    from zoo.training.rundir import RunDirectory

    runs = [RunDirectory(path) for path in check_distill(options)["teacher"]]
    for run in runs:
        _teacher_record(run, task)
    return [run.root for run in runs]


def _teacher_record(run, task: str):
    """The record (`zoo.training.run_record.RunRecord`) of teacher ``run`` (a `RunDirectory`),
    a finished run of ``task``; ValueError or FileNotFoundError naming the teacher."""
    if FOLD in str(run.root):
        raise ValueError(f"distill teacher {run.root}: the {FOLD} placeholder is filled in only "
                         "by `zoo sweep cv` (each fold's teacher); give a run directory")
    try:
        run.check_finished()
        # a damaged metrics.json is a damaged run, as `zoo eval` says
        record = run.record()
    except (FileNotFoundError, ValueError) as err:
        raise type(err)(f"distill teacher {run.root}: {err}") from None
    if record.config.task != task:
        raise ValueError(f"distill teacher {run.root} was trained on task "
                         f"{record.config.task!r}, this run is {task!r}; a teacher must be a "
                         "run of the same task")
    return record


@dataclasses.dataclass(frozen=True)
class Teacher:
    """A loaded teacher: its run directory, frozen Keras model, the normalisation its inputs
    take, whether it outputs ``"logits"`` or ``"probabilities"``, and its ``model.keras``
    sha256 (what the student's ``config.yaml`` records)."""

    path: str
    model: Any
    normalization: Any
    outputs: str = "logits"
    sha256: str | None = None


def load_teachers(options: dict, task) -> list[Teacher]:
    """The teachers of ``options`` (the ``distill`` setting), checked against ``task``: a
    finished run of the task (`check_teacher_runs`) whose model takes its inputs and outputs
    one logit (or probability) per class. Each file is read as ``zoo eval`` reads a run's
    (`zoo.training.artifacts`: damage is named), and the model is frozen."""
    from zoo.training.artifacts import load_keras_model, load_normalization
    from zoo.training.data.download import sha256_file
    from zoo.training.rundir import RunDirectory

    teachers = []
    for path in check_distill(options)["teacher"]:
        run = RunDirectory(path)
        root = run.root
        with storage.shared(root, "distill teacher"):  # not while `zoo train` replaces it
            record = _teacher_record(run, task.name)  # read once, holding the lock
            model = load_keras_model(run.model, role=f" (distill teacher {root})")
            sha256 = sha256_file(run.model)  # of the file the model was read from
            features = model.inputs[0].shape[-1]
            norm = load_normalization(run.normalization,
                                      None if features is None else int(features))
        _check_fits(model, task, root)
        _warn_if_split_differs(record.config, task, root)
        model.trainable = False
        teachers.append(Teacher(str(root.resolve()), model, norm, _output_kind(model, root),
                                sha256))
    return teachers


def _check_fits(model, task, run: Path) -> None:
    """The teacher must output one value per class of ``task`` and take its inputs."""
    if task.kind == "regression":
        raise ValueError(f"distill: task {task.name} is a regression; distillation needs "
                         "classes (a teacher's softened probabilities)")
    width = int(model.outputs[0].shape[-1])
    if width != task.num_classes:
        raise ValueError(f"distill teacher {run} outputs {width} values, task {task.name} has "
                         f"{task.num_classes} classes; a teacher needs one logit per class")
    theirs = tuple(model.inputs[0].shape[1:])
    ours = tuple(task.input_shape)
    if len(theirs) != len(ours) or any(t not in (None, o) for t, o in zip(theirs, ours)):
        raise ValueError(f"distill teacher {run} takes inputs of shape {theirs}, task "
                         f"{task.name} gives {ours}")


def _output_kind(model, run: Path) -> str:
    """``"logits"`` for the zoo's heads (a Dense without activation, as `zoo train` builds),
    ``"probabilities"`` for a softmax head; anything else is refused, since its softened
    distribution could not be computed."""
    activation = getattr(getattr(model.layers[-1], "activation", None), "__name__", None)
    if activation in ("linear", "softmax"):
        return "logits" if activation == "linear" else "probabilities"
    raise ValueError(f"distill teacher {run}: its last layer ({model.layers[-1].name}, "
                     f"activation {activation}) outputs neither logits nor a softmax")


def _warn_if_split_differs(config, task, run: Path) -> None:
    """A teacher trained on other subjects than the student may have trained on the student's
    validation subjects, which makes the student's validation accuracy optimistic (why a CV
    sweep gives each fold its own teacher)."""
    keys = ("val_fold", "val_subjects", "val_fraction", "split_seed")
    theirs = config.task_options_resolved or {}  # the teacher's `RunConfig`
    ours = task.options()
    differ = {k: (theirs[k], ours[k]) for k in keys if k in theirs and k in ours
              and theirs[k] != ours[k]}
    if differ:
        _log.warning(f"distill teacher {run} was trained on another split (teacher vs this "
                     f"run: {differ}): it may have seen this run's validation subjects")


def provenance(options: dict, teachers: list[Teacher]) -> dict:
    """What the student's ``config.yaml`` records as ``distill_resolved``: the options with
    their defaults, and each teacher's run directory (absolute) and ``model.keras`` sha256."""
    resolved = check_distill(options)
    return {"alpha": resolved["alpha"], "temperature": resolved["temperature"],
            "teachers": [{"run": t.path, "sha256": t.sha256, "outputs": t.outputs}
                         for t in teachers]}


def check_resumed_teachers(saved, teachers: list[Teacher], checkpoint) -> None:
    """On resume (a ``checkpoint`` to continue), the teachers must be the models the run
    started from: each one's ``model.keras`` sha256 against the one its ``config.yaml``
    (``saved``, its `zoo.training.run_record.RunConfig`, None before it was written)
    recorded when it started (`provenance`). ValueError naming the teacher and both digests
    otherwise (a teacher folder replaced meanwhile, by ``zoo train --overwrite`` or by hand),
    before anything of the run is written; nothing to check for a fresh run, or one whose
    config recorded no digests."""
    if checkpoint is None or not teachers or saved is None:
        return
    pinned = (saved.distill_resolved or {}).get("teachers") or []
    for number, (teacher, was) in enumerate(zip(teachers, pinned), 1):
        if was.get("sha256") not in (None, teacher.sha256):
            raise ValueError(
                f"distill teacher {teacher.path}: its model.keras (sha256 {teacher.sha256}) is "
                f"not the model this run started from (teacher {number} in {saved.path}: "
                f"{was.get('run')}, sha256 {was['sha256']}); its {checkpoint.epochs_done} "
                "epoch(s) so far learnt from that one, so it is not resumed with another. Put "
                "that teacher back, or start afresh (--overwrite, or another --out)")


def describe(options: dict, teachers: list[Teacher]) -> str:
    """The line a run logs: ``distilling from RUN (alpha 0.5, temperature 2)``."""
    resolved = check_distill(options)
    return (f"distilling from {', '.join(t.path for t in teachers)} (alpha "
            f"{resolved['alpha']:g}, temperature {resolved['temperature']:g})")


# ------------------------------------------------------------------------- the loss (Keras)

def soft_targets(outputs: list, kinds: list[str], temperature: float):
    """The teachers' softened distribution: the mean over teachers of softmax(logits / T), a
    probability teacher's logits taken as log(p) (softmax(log p / T) is p^(1/T) renormalised)."""
    from keras import ops

    probs = []
    for out, kind in zip(outputs, kinds):
        out = ops.cast(out, "float32")
        logits = out if kind == "logits" else ops.log(ops.maximum(out, 1e-30))
        probs.append(ops.softmax(logits / temperature, axis=-1))
    return ops.stop_gradient(sum(probs[1:], probs[0]) / len(probs))


def kl_term(teacher_probs, student_logits, temperature: float):
    """T^2 * KL(teacher || softmax(student / T)), summed over classes, averaged over the batch
    (and the time steps of a sequence head), as Keras averages the cross-entropy."""
    from keras import ops

    log_student = ops.log_softmax(ops.cast(student_logits, "float32") / temperature, axis=-1)
    # p * log p is 0 at p = 0; the floor only keeps log finite there.
    log_teacher = ops.log(ops.maximum(teacher_probs, 1e-30))
    kl = ops.sum(teacher_probs * (log_teacher - log_student), axis=-1)
    return temperature ** 2 * ops.mean(kl)


def _teacher_inputs(student_norm, teacher_norm):
    """(scale, shift) mapping a batch normalised for the student to the teacher's own
    normalisation (raw = x * s_s + m_s, teacher input = (raw - m_t) / s_t), or None when the
    two normalisations are the same (then the batch is passed as it is, bit for bit)."""
    import numpy as np

    if teacher_norm.features != student_norm.features:
        raise ValueError(f"distill: the teacher's normalization.json has {teacher_norm.features} "
                         f"features, this run's data {student_norm.features}")
    if np.array_equal(teacher_norm.mean, student_norm.mean) and \
            np.array_equal(teacher_norm.std, student_norm.std):
        return None
    scale = (student_norm.std / teacher_norm.std).astype("float32")
    shift = ((student_norm.mean - teacher_norm.mean) / teacher_norm.std).astype("float32")
    return scale, shift


def install(model, teachers: list[Teacher], options: dict, normalization) -> None:
    """Make ``model`` train on the distillation loss of the module docstring, its teachers fed
    the batch it sees (renormalised for each: `_teacher_inputs`).

    Only this instance's ``compute_loss`` changes: with ``training=False`` (validation, test)
    it is Keras's own. Keras's loss is the compiled cross-entropy plus any regularisation
    losses, so the total is (1 - a) CE + a T^2 KL + regularisation, and a = 0 is the ordinary
    loss exactly.

    Args:
        model: the student, compiled (`zoo.training.trainer.build_model`, or a checkpoint's model
            on resume: call it again on every model that is fitted).
        teachers: `Teacher`s (`load_teachers`).
        options: the ``distill`` setting (alpha and temperature are read from it).
        normalization: the `Normalization` the student's batches were z-scored with.

    Example:

    ```python
    teachers = load_teachers({"teacher": "runs/har2-gru"}, task)
    install(model, teachers, {"teacher": "runs/har2-gru", "alpha": 0.5}, data.normalization)
    model.fit(...)
    ```
    """
    resolved = check_distill(options)
    alpha, temperature = float(resolved["alpha"]), float(resolved["temperature"])
    maps = [_teacher_inputs(normalization, t.normalization) for t in teachers]
    ordinary = model.compute_loss  # the class's, bound to this model

    def compute_loss(x=None, y=None, y_pred=None, sample_weight=None, training=True):
        loss = ordinary(x, y, y_pred, sample_weight, training=training)
        if not training:
            return loss
        outputs = [t.model(x if m is None else x * m[0] + m[1], training=False)
                   for t, m in zip(teachers, maps)]
        soft = kl_term(soft_targets(outputs, [t.outputs for t in teachers], temperature),
                       y_pred, temperature)
        # The compiled cross-entropy alone. (The zoo fits without sample weights; the soft
        # term is a plain batch mean.)
        hard = model.loss(y, y_pred, sample_weight)
        return loss + alpha * (soft - hard)

    # A plain attribute, not a tracked one: Keras saves layers, variables and optimizers it
    # finds on the model, and a function holding the teachers is none of them.
    model.compute_loss = compute_loss
