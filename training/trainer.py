"""Train a zoo model on a task into a resumable run directory.

Run directory::

    config.yaml          fully resolved settings (model and task options included)
    normalization.json   per-feature mean / std from the training split (export uses it)
    history.csv          one row per epoch (loss, accuracy, val_*, learning rate, seconds)
    model.keras          the final model (best validation epoch when early stopping is on)
    metrics.json         test accuracy and loss, parameters, time, epochs, hardware, versions
    tensorboard/         TensorBoard logs
    checkpoints/epoch-NNNN/   only while the run is unfinished: the newest committed epoch
                         (model.keras with optimizer state, state.json, best_weights.npz)
    .zoo-run             the zoo's marker: only such a directory is replaced by --overwrite

Guarantees (docs/reliability.md): one process at a time (a lock beside the directory), every
file replaced atomically, one atomic commit per epoch, and --overwrite swaps the new run in
only once it has finished.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any

import keras
import numpy as np
import yaml

import zoo
from zoo import qat
from zoo.training import callbacks as cb
from zoo.layers import recurrent_layers
from zoo.training import augment, distill, qat_stage, rundir
from zoo.core import storage
from zoo.training.artifacts import load_keras_model
from zoo.training.provenance import check_same_data, hardware, versions
from zoo.training.warm_start import warm_start_weights
from zoo.training.config import TrainConfig
from zoo.training.rundir import RunDirError  # noqa: F401  (re-exported)
from zoo.training.rundir import check_out  # re-exported; no Keras needed there
from zoo.core.storage import RUN_MARKER
from zoo.training.workdir import WorkDir, prepare_run_dir  # re-exported

FINAL_FILES = rundir.RunDirectory.FINAL_FILES
# The weight-averaging callback's name among the stateful ones (its state in each checkpoint).
EMA_STATE = "ema"
_log = logging.getLogger(__name__)


def epoch_batches(x, y, batch_size: int, seed: int, first_epoch: int, last_epoch: int,
                  transform=None, mixup: float = 0.0):
    """Batches of epochs ``first_epoch..last_epoch-1``; each epoch's order (and, with
    ``transform(x_batch, rng)``, e.g. the augmentation, its random numbers, and ``mixup``'s)
    depends only on (seed, epoch), so a resumed run sees exactly the batches an uninterrupted
    one would. With ``mixup`` (alpha > 0) each batch is `zoo.training.augment.mixup`'s
    ``(x, y, sample_weight)``."""
    n = len(x)
    for epoch in range(first_epoch, last_epoch):
        order = np.random.default_rng([seed, epoch]).permutation(n)
        rng = np.random.default_rng([seed, epoch, 1])
        mix_rng = np.random.default_rng([seed, epoch, 2])
        for start in range(0, n, batch_size):
            idx = order[start:start + batch_size]
            xb = x[idx] if transform is None else transform(x[idx], rng)
            yield augment.mixup(xb, y[idx], mix_rng, mixup) if mixup else (xb, y[idx])


def augmenter(config: TrainConfig, task, normalization):
    """The run's augmentation (`zoo.training.augment.Augmenter`), or None when it has none."""
    if not config.augment:
        return None
    options = config.augment
    if options.get("rotation") and not task.sensors and getattr(task, "sensors_optional", False):
        # The windows recipes rotate the xyz sensors the channel names reveal; data without
        # them (unnamed channels, or not motion sensors) trains without the rotation.
        _log.warning("augment rotation %s skipped: the data names no acc/gyro/mag x, y, z "
                     "channels (task option sensors lists them by index)", options["rotation"])
        options = {**options, "rotation": 0}
    return augment.Augmenter(options, task.sensors, normalization.mean, normalization.std)


def loss_and_metrics(kind: str):
    if kind == "regression":
        return keras.losses.MeanSquaredError(), [keras.metrics.MeanAbsoluteError(name="mae")]
    return (keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            [keras.metrics.SparseCategoricalAccuracy(name="accuracy")])


def build_model(config: TrainConfig, task) -> keras.Model:
    head = "sequence" if task.kind == "sequence" else "last"
    model = zoo.create_model(config.model, task.input_shape, task.num_classes, head=head,
                             **config.model_options)
    optimizers = {"adam": keras.optimizers.Adam, "sgd": keras.optimizers.SGD,
                  "momentum": lambda **kw: keras.optimizers.SGD(momentum=0.9, **kw),
                  "rmsprop": keras.optimizers.RMSprop}
    if config.optimizer not in optimizers:
        raise ValueError(f"unknown optimizer {config.optimizer!r}; valid: {sorted(optimizers)}")
    optimizer = optimizers[config.optimizer](learning_rate=config.lr, **config.optimizer_options())
    loss, metrics = loss_and_metrics(task.kind)
    model.compile(optimizer=optimizer, loss=loss, metrics=metrics)
    return model


def recurrent_cell(model: keras.Model):
    rnns = recurrent_layers(model)
    if not rnns:
        raise ValueError(f"model {model.name} has no recurrent layer")
    return rnns[0].cell


def distribution_scope(config: TrainConfig):
    """A context for building the model: MirroredStrategy (TensorFlow) or DataParallel (JAX)."""
    import contextlib

    if config.distribute == "none":
        return contextlib.nullcontext()
    if config.distribute != "mirrored":
        raise ValueError(f"unknown --distribute {config.distribute!r}; valid: none, mirrored")
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        # All GPUs; without any, every logical CPU device (MirroredStrategy alone takes CPU:0 only).
        devices = [d.name for d in tf.config.list_logical_devices("GPU")] or [
            d.name for d in tf.config.list_logical_devices("CPU")]
        return tf.distribute.MirroredStrategy(devices).scope()
    if keras.backend.backend() == "jax":
        keras.distribution.set_distribution(keras.distribution.DataParallel())
        return contextlib.nullcontext()
    raise ValueError(f"--distribute mirrored is not supported on backend {keras.backend.backend()}")


def macs_per_sequence(model: keras.Model) -> int | None:
    """Multiply-accumulates of one sequence, recorded so `zoo bench` need not reload the model
    (None for a model without a recurrent layer or a static length, e.g. the DS-CNN)."""
    from zoo.macs import model_macs_per_sequence

    try:
        return int(model_macs_per_sequence(model))
    except ValueError:  # no recurrent layer, or no static sequence length
        return None


def resolved_config(config: TrainConfig, task) -> dict:
    """The config as saved: registry defaults and task options filled in."""
    entry = zoo.get_model_entry(config.model)
    data = config.to_dict()
    resolved = {**entry.options(), **qat_stage.final_model_options(config), **entry.fixed}
    data["model_options_resolved"] = {k: v for k, v in resolved.items()
                                      if isinstance(v, (int, float, str, bool, type(None)))}
    data["task_options_resolved"] = task.options()
    return data


def train(config: TrainConfig, run_dir: str | Path, *, data_dir=None, overwrite: bool = False,
          verbose: int | None = None, callbacks=()) -> dict:
    """Train ``config`` into ``run_dir`` and return the metrics written to ``metrics.json``.

    Progress (one line per epoch, the result) is logged at INFO (`zoo.core.logs`).

    ``run_dir`` is locked for the whole run (a second process fails naming this one). When it
    holds an unfinished run of the same settings, training resumes from its newest committed
    checkpoint. With ``overwrite``, a finished run of the zoo's is replaced, but only once the
    new run has finished: until then it is built beside it (see ``docs/reliability.md``).
    ``callbacks``: more Keras callbacks, run after the run's own (its epoch is committed when
    they see it), e.g. a search reporting each epoch to its scheduler (``zoo tune``).
    """
    from zoo.training.tasks import get_task

    run_dir = Path(run_dir)
    if keras.backend.backend() != config.backend:
        raise RuntimeError(f"this process runs Keras on {keras.backend.backend()!r}, the config "
                           f"asks for {config.backend!r}; set KERAS_BACKEND before importing keras")
    real = storage.real_target(run_dir)
    # First, from what is on disk alone: a refused --out (a finished run, a user's folder) is
    # answered before any data is read or model built, and gets no lock file beside it.
    check_out(real, overwrite)
    rundir.check_out_not_in_data(real, data_dir)
    task = get_task(config.task, **config.task_options)
    from_data = getattr(task, "options_from_data", None)
    if from_data is not None:  # classes read off the user's data: recorded in the run's config
        config.task_options = {**config.task_options, **from_data(data_dir)}
        task = get_task(config.task, **config.task_options)
    check_monitor(config, task)
    augment.check_mixup(config.augment, task)
    # Invalid model options (or init_from, or a distill teacher) fail here, before the run
    # directory exists: a failed first try must not leave an "unfinished run" that refuses the
    # corrected command.
    try:
        probe = build_model(config, task)
    except TypeError as err:  # a layer argument of the wrong type (e.g. a string for a number)
        raise ValueError(f"model {config.model} cannot be built with options "
                         f"{config.model_options}: {err}") from None
    init_weights = warm_start_weights(probe, config.init_from) if config.init_from else None
    del probe
    _check_stage_model(config, task)
    teachers = distill.load_teachers(config.distill, task) if config.distill else []
    refuse = functools.partial(check_out, overwrite=overwrite)
    with storage.replacing(real, RUN_MARKER, "run directory", check=refuse) as replacement:
        work = prepare_run_dir(real, config, overwrite)
        metrics = _train_in_cleaning_up(work, _Job(config, task, init_weights, data_dir, verbose,
                                                   teachers, tuple(callbacks)))
        if work.path != real:
            _keep_extras(real)
            replacement.swap_in(work.path)
    _log.info(result_line(metrics, run_dir))
    return metrics


def _check_stage_model(config: TrainConfig, task) -> None:
    """A QAT stage's model is built once before the run, so that a model without an int8 QAT
    mode is refused now and not after its float epochs."""
    if qat_stage.stage_options(config):
        stage = qat_stage.stage_config(config, 0)
        try:
            build_model(stage, task)
        except (TypeError, ValueError) as err:
            raise ValueError(f"qat_stage: model {config.model} cannot be trained with QAT "
                             f"(options {stage.model_options}): {err}") from None


def result_line(metrics: dict, run_dir: str | Path) -> str:
    """``test: accuracy 90.44%, loss 0.2512  (3,523 parameters, 41s training) -> RUN``: the
    line a finished `train` ends with."""
    summary = (", ".join(cb.format_metric(k, v) for k, v in metrics["test"].items())
               or "no test split (score test data: zoo eval RUN --data-dir PATH)")
    return (f"test: {summary}  ({metrics['parameters']:,} parameters, "
            f"{metrics['training_seconds']:.0f}s training) -> {run_dir}")


def _keep_extras(run_dir: Path) -> None:
    """The exports (and anything else not the run's) in a run about to be replaced, moved
    aside (`rundir.move_aside_extras`) and said where."""
    moved = rundir.move_aside_extras(run_dir)
    if moved:
        aside, names = moved
        _log.info(f"kept what {run_dir} held besides the run ({', '.join(names)}) in {aside}: "
                  "exports there were made from the replaced model")


def check_monitor(config: TrainConfig, task) -> None:
    """``config.monitor`` must be a quantity this task's training logs (checked before a run)."""
    metric = "mae" if task.kind == "regression" else "accuracy"
    valid = ["loss", metric, "val_loss", f"val_{metric}"]
    if config.monitor not in valid:
        raise ValueError(f"--monitor {config.monitor!r} is not logged for task {task.name}; "
                         f"valid: {', '.join(valid)}")


@dataclasses.dataclass(frozen=True)
class _Job:
    """What one `train` call trains, handed down its stages whole."""

    config: TrainConfig
    task: Any
    init_weights: list | None
    data_dir: Any
    verbose: int | None
    teachers: list = dataclasses.field(default_factory=list)  # distill's (`distill.Teacher`)
    # the caller's Keras callbacks, after the run's (a search's per-epoch report: zoo tune)
    callbacks: tuple = ()


@dataclasses.dataclass
class _Start:
    """Where the fit starts: the model, the epochs already done and their history (from
    ``checkpoint``, or none for a fresh run), and the batches of one epoch."""

    model: keras.Model
    initial_epoch: int
    history: list
    checkpoint: cb.Checkpoint | None
    steps_per_epoch: int


def _train_in_cleaning_up(work: WorkDir, job: _Job) -> dict:
    """`_train_in`; when it fails (bad data, a model that cannot be built) in a directory this
    call created, before any epoch was committed, the directory goes again: it holds nothing
    worth keeping, and left behind it would refuse a corrected command as an unfinished run."""
    try:
        return _train_in(work.path, job, work.checkpoint, work.saved)
    except Exception:
        if work.created and cb.latest_checkpoint(work.path) is None:
            storage.remove_owned(work.path)
            if work.found_empty:
                work.path.mkdir(exist_ok=True)
        raise


@dataclasses.dataclass
class _Arrays:
    """The task's splits, normalised with the training statistics."""
    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


def _train_in(run_dir: Path, job: _Job, checkpoint: cb.Checkpoint | None, saved=None) -> dict:
    """Train into ``run_dir`` (the directory or its staging twin): the run's stages in order.
    ``saved``: what a resumed run's config.yaml recorded when it started (`WorkDir.saved`)."""
    config = job.config
    keras.utils.set_random_seed(config.seed)
    if config.mixed_precision:
        keras.mixed_precision.set_global_policy("mixed_float16")
    run = rundir.RunDirectory(run_dir)
    distill.check_resumed_teachers(saved, job.teachers, checkpoint)  # before it is rewritten
    data = job.task.load(job.data_dir, seed=config.seed)
    _log.debug("%s: data from %s", config.task, data.source)
    if not len(data.train):  # model.fit on no batch at all waits for ever
        raise ValueError(f"task {config.task}: the training split of {data.source} is empty; "
                         "nothing to train on")
    fingerprint = check_same_data(saved, data, checkpoint)
    arrays = _normalised(data)
    _write_settings(run, config, job.task, data, job.teachers, fingerprint)
    start = _start(run, job, checkpoint,
                   steps_per_epoch=int(np.ceil(len(arrays.x_train) / config.batch_size)))
    model, history = start.model, start.history
    if job.teachers:  # fresh or resumed: the loss is set on the model trained from here
        distill.install(model, job.teachers, config.distill, data.normalization)
        _log.info(distill.describe(config.distill, job.teachers))
    _log.info(f"{config.model} on {config.task}: {model.count_params():,} parameters, "
              f"{len(arrays.x_train)} train / {len(arrays.x_val)} val / {len(arrays.x_test)} "
              f"test sequences, backend {keras.backend.backend()}")
    resumed_seconds = sum(row.get("seconds", 0.0) for row in history[:start.initial_epoch])
    transform = augmenter(config, job.task, data.normalization)
    clock = time.perf_counter()
    marked = qat_stage.resumed(checkpoint)
    stateful = _run_epochs(run, job, start, arrays, transform) if marked is None else {}
    mark = None
    if qat_stage.stage_options(config):
        job, start, stateful, mark = _qat_stage(run, job, start, stateful, arrays, transform,
                                                marked, data.normalization)
    # The epochs' own time (each row of the history, resumed ones too): the setup before the
    # first epoch (callbacks, tracing, a QAT stage's model) is not training.
    train_seconds = sum(row.get("seconds", 0.0) for row in start.history)
    _log.debug("%.1f s from the first epoch's start to the last one's end (%.1f s of epochs "
               "resumed)", time.perf_counter() - clock, resumed_seconds)
    metrics = _final_metrics(job.config, start, arrays, stateful, train_seconds, data)
    if mark is not None:
        metrics["qat_stage"] = mark.state()
    _write_final(run_dir, start.model, history, metrics)
    return metrics


def _run_epochs(run: rundir.RunDirectory, job: _Job, start: _Start, arrays: _Arrays, transform,
                extra: dict | None = None) -> dict:
    """Fit ``start.model`` up to ``job.config.epochs`` with the run's callbacks (and ``extra``
    stateful ones, kept in each checkpoint); returns the stateful callbacks."""
    callbacks, stateful = _callbacks(run, job, start, len(arrays.x_val) > 0, extra)
    tracking = qat.tracking_callbacks(start.model, arrays.x_train, job.config.seed,
                                      fresh=start.checkpoint is None)
    # After weight averaging's swap (first when on): at each epoch's start the QAT ranges are
    # tracked on the raw weights the epoch trains, as without averaging.
    lead = callbacks.index(stateful[EMA_STATE]) + 1 if EMA_STATE in stateful else 0
    callbacks = callbacks[:lead] + tracking + callbacks[lead:]
    _fit(start, job, arrays, callbacks, stateful, transform)
    _check_trained(run, start.model, start.history)
    if "early_stopping" in stateful:
        said = stateful["early_stopping"].summary(job.config.epochs, len(start.history))
        if said:
            _log.info(said if extra is None else f"qat stage: {said}")
    return stateful


def _qat_stage(run: rundir.RunDirectory, job: _Job, start: _Start, stateful: dict,
               arrays: _Arrays, transform, marked: dict | None, normalization):
    """The QAT stage after the float epochs (`zoo.training.qat_stage`), begun from the float
    model's weights, or resumed inside it (``marked``: its checkpoint's `StageMark` state).
    Returns the stage's job, start, stateful callbacks and mark."""
    if marked is None:
        best = stateful["early_stopping"].best_epoch + 1 if "early_stopping" in stateful \
            else len(start.history)
        mark = qat_stage.StageMark(len(start.history), {"best_epoch": int(best),
                                                        **_scores(start.model, arrays)})
    else:
        mark = qat_stage.StageMark(marked["start_epoch"], marked["float"])
    stage = dataclasses.replace(job, config=qat_stage.stage_config(job.config, mark.start_epoch))
    if marked is None:
        with distribution_scope(stage.config):
            model = build_model(stage.config, job.task)
        model.set_weights(qat_stage.qat_weights(model, start.model))
        if job.teachers:
            distill.install(model, job.teachers, job.config.distill, normalization)
        start = _Start(model, mark.start_epoch, start.history, None, start.steps_per_epoch)
        val = mark.float_scores.get("val", {})
        _log.info(f"qat stage: {stage.config.epochs - mark.start_epoch} epochs of quantization-"
                  f"aware training at lr {stage.config.lr:g} from the float weights of epoch "
                  f"{mark.float_scores['best_epoch']}"
                  + "".join(f", {cb.format_metric('val_' + k, v)}" for k, v in val.items()))
    return stage, start, _run_epochs(run, stage, start, arrays, transform,
                                     {qat_stage.STATE: mark}), mark


def _scores(model: keras.Model, arrays: _Arrays) -> dict:
    """``{"val": {...}, "test": {...}}``: ``model`` evaluated on the splits that have data."""
    splits = {"val": (arrays.x_val, arrays.y_val), "test": (arrays.x_test, arrays.y_test)}
    return {name: {k: float(v) for k, v in model.evaluate(
                x, y, batch_size=256, verbose=0, return_dict=True).items()}
            for name, (x, y) in splits.items() if len(x)}


def _normalised(data) -> _Arrays:
    norm = data.normalization
    return _Arrays(*(a for split in (data.train, data.val, data.test)
                     for a in (norm.apply(split.x).astype("float32"), split.y)))


def _write_settings(run: rundir.RunDirectory, config: TrainConfig, task, data,
                    teachers=(), fingerprint: dict | None = None) -> None:
    """``config.yaml`` (with where the data was found, so eval / export / analyze reuse it, its
    fingerprint, and the teachers distilled from, by sha256) and the normalization, before the
    first epoch."""
    saved = {**resolved_config(config, task), "data_source_resolved": str(data.source)}
    if fingerprint is not None:
        saved["data_fingerprint_resolved"] = fingerprint
    if teachers:
        saved["distill_resolved"] = distill.provenance(config.distill, teachers)
    storage.write_text_atomic(run.config, yaml.safe_dump(saved, sort_keys=False))
    storage.write_text_atomic(run.normalization,
                             json.dumps(data.normalization.to_dict(), indent=1))


def _start(run: rundir.RunDirectory, job: _Job, checkpoint: cb.Checkpoint | None,
           steps_per_epoch: int) -> _Start:
    """The model to train, the epoch to start from and the history so far: a fresh (or
    warm-started) model, or the newest committed checkpoint of an unfinished run."""
    config = job.config
    with distribution_scope(config):
        if checkpoint:
            model = load_keras_model(
                checkpoint.folder / run.model.name,
                role=f"; {run.root} cannot be resumed from this checkpoint: start it afresh "
                     "with --overwrite (the run is replaced only once the new one finishes), "
                     "or choose another --out")
            _log.info(f"resuming {run.root} after epoch {checkpoint.epochs_done}/"
                      f"{config.epochs}")
            return _Start(model, checkpoint.epochs_done, checkpoint.history, checkpoint,
                          steps_per_epoch)
        model = build_model(config, job.task)
        if job.init_weights is not None:
            model.set_weights(job.init_weights)
            _log.info(f"initialised from {config.init_from}")
        return _Start(model, 0, [], None, steps_per_epoch)


def epoch_learning_rate(config: TrainConfig):
    """The learning rate of epoch ``e`` (0-based) as a function, or None for a constant rate:
    ``config.lr_schedule`` step (``lr_decay_factor`` every ``lr_decay_epochs``) or cosine
    (Keras's `CosineDecay` evaluated per epoch over ``config.epochs``)."""
    if config.lr_schedule == "cosine":
        cosine = keras.optimizers.schedules.CosineDecay(config.lr, decay_steps=config.epochs)
        return lambda epoch: float(cosine(epoch))
    if config.lr_decay_epochs:
        return lambda epoch: config.lr * config.lr_decay_factor ** (epoch // config.lr_decay_epochs)
    return None


def _callbacks(run: rundir.RunDirectory, job: _Job, start: _Start, has_val: bool,
               extra: dict | None = None) -> tuple[list, dict]:
    """The run's callbacks, and those whose state a checkpoint keeps (restored on resume; with
    ``extra``, more of them, such as the QAT stage's `qat_stage.StageMark`).
    Progress is one line per epoch from `EpochProgress`, or Keras's own bar (``job.verbose``),
    never both."""
    config, initial_epoch, steps_per_epoch = job.config, start.initial_epoch, start.steps_per_epoch
    # Weight averaging first: every callback after it (early stopping's best weights, the
    # checkpoint) sees the average at an epoch's end, and the raw weights at its start.
    stateful = {EMA_STATE: cb.ResumableSwapEMAWeights()} if config.ema_momentum is not None \
        else {}
    # A diverged run (NaN loss) stops; early stopping then restores its best epoch.
    callbacks = [*stateful.values(), keras.callbacks.TerminateOnNaN()]
    if not job.verbose:
        callbacks.append(cb.EpochProgress(config.epochs, initial_epoch))
    rate = epoch_learning_rate(config)
    if rate is not None:  # keyed on the epoch index, so a resumed run picks up the same rate
        callbacks.insert(0, keras.callbacks.LearningRateScheduler(rate))
    if config.early_stopping_patience and has_val:
        stateful["early_stopping"] = cb.ResumableEarlyStopping(
            monitor=config.monitor, patience=config.early_stopping_patience)
    if config.sparsity_w is not None or config.sparsity_u is not None:
        stateful["hard_thresholding"] = cb.HardThresholding(
            recurrent_cell(start.model), config.sparsity_w or 1.0, config.sparsity_u or 1.0,
            total_batches=config.epochs * steps_per_epoch,
            initial_batch=initial_epoch * steps_per_epoch)
    stateful.update(extra or {})
    callbacks += [c for name, c in stateful.items() if name != EMA_STATE]
    if start.checkpoint:
        for name, state in start.checkpoint.callback_states.items():
            if name in stateful and hasattr(stateful[name], "load_state"):
                stateful[name].load_state(state, start.checkpoint.folder)
    if _can_write_tensorboard():
        callbacks.append(keras.callbacks.TensorBoard(log_dir=str(run.tensorboard)))
    else:
        # A warning: Python shows it without any logging set up (a JAX-only box, a notebook).
        _log.warning("no TensorBoard logs: Keras writes them with TensorFlow, which is not "
                     "installed")
    callbacks.append(cb.RunCheckpoint(run.root, start.history, stateful))
    callbacks += list(job.callbacks)
    if EMA_STATE in stateful:  # after every callback that may stop the run
        callbacks.append(stateful[EMA_STATE].keep_if_stopped())
    return callbacks, stateful


def _can_write_tensorboard() -> bool:
    """Keras's TensorBoard callback writes through ``tensorflow.summary`` on every backend; a
    JAX-only environment (e.g. a GPU machine with JAX but no TensorFlow) trains without it."""
    import importlib.util

    try:
        return importlib.util.find_spec("tensorflow") is not None
    except ValueError:  # a "tensorflow" in sys.modules without a module spec
        return False


def _fit(start: _Start, job: _Job, arrays: _Arrays, callbacks, stateful,
         transform=None) -> None:
    config = job.config
    stopped = bool(start.checkpoint and start.checkpoint.stopped)
    if start.initial_epoch < config.epochs and not stopped:
        has_val = len(arrays.x_val) > 0
        start.model.fit(
            epoch_batches(arrays.x_train, arrays.y_train, config.batch_size, config.seed,
                          start.initial_epoch, config.epochs, transform,
                          (config.augment or {}).get("mixup", 0.0)),
            steps_per_epoch=start.steps_per_epoch, epochs=config.epochs,
            initial_epoch=start.initial_epoch, shuffle=False,
            validation_data=(arrays.x_val, arrays.y_val) if has_val else None,
            callbacks=callbacks, verbose=1 if job.verbose else 0)
        if config.ema_momentum is not None:
            # Keras's JAX backend leaves each weight and its average one buffer after fit, which
            # the next evaluate donates and deletes ("Array has been deleted" at save): copy.
            for variable in start.model.trainable_variables:
                variable.assign(keras.ops.convert_to_numpy(variable))
    elif "early_stopping" in stateful and stateful["early_stopping"].resumed_best_weights:
        # Killed after the last epoch's checkpoint but before the run was written: finish it
        # the way EarlyStopping.on_train_end would have (restore the best epoch).
        start.model.set_weights(stateful["early_stopping"].resumed_best_weights)


def _check_trained(run: rundir.RunDirectory, model, history: list) -> None:
    if not history:
        raise RuntimeError(f"no epoch was trained into {run.root}; nothing to save")
    if not all(np.all(np.isfinite(w)) for w in model.get_weights()):
        # TerminateOnNaN stopped it and no finite best epoch could be restored.
        raise ValueError(f"training diverged: the model's weights are not finite after epoch "
                         f"{len(history)} (loss {history[-1].get('loss')}); lower --lr or set "
                         f"--clipnorm. Nothing was saved as finished in {run.root}.")


def _final_metrics(config: TrainConfig, start: _Start, arrays: _Arrays, stateful,
                   train_seconds: float, data) -> dict:
    """``metrics.json``: the test split is scored here, once, at the end of the run."""
    model, history = start.model, start.history
    test = model.evaluate(arrays.x_test, arrays.y_test, batch_size=max(config.batch_size, 256),
                          verbose=0, return_dict=True) if len(arrays.x_test) else {}  # none kept
    return {
        "task": config.task, "model": config.model,
        "test": {k: float(v) for k, v in test.items()},
        "parameters": int(model.count_params()),
        "macs_per_sequence": macs_per_sequence(model),
        "training_seconds": round(train_seconds, 2),
        "epochs_run": len(history),
        "best_epoch": (int(stateful["early_stopping"].best_epoch) + 1
                       if "early_stopping" in stateful else len(history)),
        "data": {"train": len(arrays.x_train), "val": len(arrays.x_val),
                 "test": len(arrays.x_test), "source": str(data.source)},
        "hardware": hardware(), "versions": versions(),
    }


def _write_final(run_dir: Path, model: keras.Model, history: list, metrics: dict) -> None:
    """model.keras, history.csv, then metrics.json (whose rename marks the run finished), then
    the checkpoints go."""
    run = rundir.RunDirectory(run_dir)
    tmp = run_dir / ".model.tmp.keras"
    model.save(tmp)
    storage.crash_point("model.keras: written, not renamed")
    os.replace(tmp, run.model)
    storage.crash_point("model.keras: renamed")
    cb.write_history_csv(history, run.history)
    storage.write_json_atomic(run.metrics, metrics)
    shutil.rmtree(run_dir / cb.CHECKPOINTS, ignore_errors=True)
    storage.crash_point("checkpoints removed")
