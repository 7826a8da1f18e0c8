"""What an export starts from (`ExportSource`): a finished run of ``zoo train`` (`read_run`: its
task's data, normalised as in training) or a Keras model with calibration windows of the user's
(`read_keras`: ``zoo export MODEL.keras --calibration X.npy``), each with the Keras float model's
logits on the windows the export is checked on.

Calibration windows are raw model inputs (N, T, C), from an ``.npy`` file, an ``.npz`` holding
``X`` (and optionally integer labels ``y``) or an array; labels may also come apart (``labels``:
an ``.npy`` file or an array). A wrong shape, a non-finite value, too few windows, labels of
another length or outside the model's classes is one line naming the file (`CalibrationError`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from zoo.export.card_schema import NORMALIZATION_FILE
from zoo.training import rundir

__all__ = ["ExportSource", "CalibrationError", "read_run", "read_keras", "read_windows",
           "load_keras_model", "frontend_entry", "MIN_WINDOWS"]
_log = logging.getLogger(__name__)
# Fewest calibration windows taken: the int8 ranges come from them, and the check runs on them.
MIN_WINDOWS = 10


class CalibrationError(ValueError):
    """Calibration windows or labels that cannot be used; the message names the file."""


@dataclass
class ExportSource:
    """A float model (normalised input -> logits) and the data an export is made and checked
    with. ``y_test`` is None for windows without labels: the export is then checked for its
    agreement with the float model only."""

    name: str                      # the model's name, as the card's ``model``
    model: object                  # keras.Model: normalised (N, T, C) -> logits
    norm: object                   # zoo.training.tasks.Normalization of the raw features
    x_train: np.ndarray            # normalised calibration sequences
    x_test: np.ndarray             # normalised sequences the export is checked on
    y_test: np.ndarray | None
    keras_logits: np.ndarray       # the float model's on x_test
    class_names: list
    data_source: str
    task: str | None = None
    task_options: dict | None = None
    model_options: dict | None = None
    run_dir: str | None = None
    frontend: dict | None = None
    card_fields: dict = field(default_factory=dict)  # further card keys (keras_model, layers)

    @property
    def classes(self) -> int:
        return len(self.class_names)

    @property
    def labelled(self) -> bool:
        return self.y_test is not None

    @property
    def float_accuracy(self) -> float | None:
        if self.y_test is None:
            return None
        return float(np.mean(self.keras_logits.argmax(-1) == self.y_test))

    @property
    def title(self) -> str:
        return f"{self.name} on {self.task or 'your data'}"


# ------------------------------------------------------------------------------------- a run
def read_run(run_dir: Path, data_dir=None) -> ExportSource:
    """The finished run, its task's data (normalised as in training) and the Keras float model's
    logits on the test split. Only classification tasks: the check is accuracy."""
    from zoo.training.evaluate import load_run
    from zoo.training.runs import check_model_fits_task

    record, model, norm = load_run(run_dir)
    config = record.config
    task, data = _task_data(record, run_dir, data_dir)
    check_model_fits_task(model, task, run_dir)
    if task.kind != "classification":
        raise ValueError(f"zoo export checks classification accuracy; task {task.name} is "
                         f"{task.kind}")
    test = data.test
    trained_on_all = config.settings.task_options.get("val_fraction") == 0.0
    if not len(test.x) and len(data.train.x) and trained_on_all:
        # A run trained on all its data on purpose (val_fraction 0, as zoo tune's best): no
        # window was held out, so the int8 model is checked against the float one on the
        # training windows, and the log says so.
        _log.warning("%s: the run held no windows out (it trained on all its data); the export "
                     "is checked on its %d training windows", run_dir, len(data.train))
        test = data.train
    if not len(test.x):  # Keras predict on no window fails with UnboundLocalError
        raise ValueError(f"{run_dir}: the run has no test split ({data.source}: "
                         f"{_split_sizes(data)}), so there is nothing to check the export on; "
                         "give the data more groups (or speakers), or a test_fraction")
    x_test = norm.apply(test.x).astype(np.float32)
    return ExportSource(
        name=config.model, model=model, norm=norm,
        x_train=norm.apply(data.train.x).astype(np.float32), x_test=x_test,
        y_test=np.asarray(test.y), class_names=list(task.class_names),
        keras_logits=model.predict(x_test, batch_size=256, verbose=0),
        data_source=str(data.source), task=task.name, task_options=task.options(),
        model_options=dict(config.model_options),
        run_dir=str(Path(run_dir).resolve()), frontend=frontend_entry(task))


def _split_sizes(data) -> str:
    return f"{len(data.train.x)} train / {len(data.val.x)} val / {len(data.test.x)} test windows"


def _task_data(record, run_dir: Path, data_dir):
    """The run's task and data (``record``: its `zoo.training.run_record.RunRecord`, read with
    its metrics.json checked: a damaged one is a damaged run, named rather than exported)."""
    task = record.config.make_task()
    if data_dir is None:  # where the run found its data, else the task's default location
        data_dir = rundir.RunDirectory(run_dir).data_source(record)
    return task, task.load(data_dir, seed=record.config.seed)


def frontend_entry(task) -> dict | None:
    """What a device must compute before the model, for a task with a front end (the speech
    tasks: float or integer log-mel, as the run was trained); None for sensor tasks."""
    frontend = getattr(task, "frontend", None)
    if frontend is None:
        return None
    return {**frontend.describe(),
            "normalisation": f"per filter: (feature - mean[j]) / std[j], mean and std in "
                             f"{NORMALIZATION_FILE} (training split statistics; std < 1e-6 -> 1)"}


# ------------------------------------------------------------------------------ a Keras model
def load_keras_model(path) -> object:
    """The model in a ``.keras`` file (the zoo's layers registered), without its optimizer."""
    import keras

    import zoo

    path = Path(path)
    if path.suffix != ".keras" or not path.is_file():
        raise FileNotFoundError(f"{path}: not a .keras file (save one with model.save("
                                "'model.keras'))")
    _check_keras_archive(path)
    zoo.register_layers()
    try:
        return keras.saving.load_model(path, compile=False)
    except (ValueError, OSError, TypeError, KeyError) as err:
        import re

        unknown = re.search(r"Could not locate class '([^']+)'", str(err))
        if unknown:  # the first line blames the model, not the layer class it could not find
            raise ValueError(f"{path}: layer class {unknown.group(1)!r} is not registered "
                             "with Keras (a custom layer); decorate it with "
                             "@keras.saving.register_keras_serializable() and export from "
                             "Python after importing it (zoo.export.export_model)") from None
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(f"{path}: cannot be loaded as a Keras model ({first})") from None


def _check_keras_archive(path: Path) -> None:
    """A ``.keras`` file is a zip archive; an empty, damaged or HDF5 one is said as such (Keras
    answered "File not found" for them)."""
    import zipfile

    with open(path, "rb") as handle:
        head = handle.read(8)
    if head.startswith(b"\x89HDF"):
        raise ValueError(f"{path}: an HDF5 (.h5) model file named .keras; load it with "
                         "keras.models.load_model and save it again as model.save('model.keras')")
    if not head:
        raise ValueError(f"{path}: empty (0 bytes), not a Keras model; save one with "
                         "model.save('model.keras')")
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{path}: not a .keras archive (a .keras file is a zip of the model's "
                         "config and weights): damaged, or another kind of file")


def read_keras(model, calibration, labels=None) -> ExportSource:
    """A Keras model (a `keras.Model` or a ``.keras`` path) and its calibration windows as an
    `ExportSource`: the model read as a `zoo.export.layer_chain.LayerChain` (a leading
    Normalization becomes the export's normalisation; a final softmax is left out), the windows
    normalised, the float model's logits on them."""
    from zoo.export.layer_chain import layer_chain, logits_model
    from zoo.training.tasks import Normalization

    path = None
    if not hasattr(model, "layers"):
        path, model = Path(model), load_keras_model(model)
    chain = layer_chain(model)
    x, y, where, names = read_labelled_windows(calibration, labels, chain.features,
                                               chain.timesteps, classes=chain.classes)
    norm = (Normalization(*chain.normalization) if chain.normalization is not None
            else Normalization.identity(chain.features))
    floats = logits_model(chain)
    x = norm.apply(x)
    return ExportSource(
        name=path.stem if path else chain.name, model=floats, norm=norm, x_train=x, x_test=x,
        y_test=y,
        keras_logits=_float_logits(floats, x),
        class_names=names, data_source=where,
        card_fields={"keras_model": str(path) if path else f"in-memory model {model.name!r}",
                     "layers": chain.describe()})


def _float_logits(model, x: np.ndarray) -> np.ndarray:
    """The model's logits on ``x``: called directly for a few windows (`keras.Model.predict`
    first compiles a function, half a second), predicted in batches for many."""
    if len(x) <= 256:
        return np.asarray(model(x, training=False))
    return model.predict(x, batch_size=256, verbose=0)


def read_windows(calibration, labels, features: int, timesteps: int | None, *,
                 classes: int | None = None, min_windows: int = MIN_WINDOWS,
                 class_names: list | None = None):
    """(x float32 (N, T, C), y int64 (N,) or None, where): the calibration windows and their
    labels as class indices below ``classes`` (`read_labelled_windows`), checked (at least
    ``min_windows``); ``where`` names the windows in messages."""
    return read_labelled_windows(calibration, labels, features, timesteps, classes=classes,
                                 min_windows=min_windows, class_names=class_names)[:3]


def read_labelled_windows(calibration, labels, features: int, timesteps: int | None, *,
                          classes: int | None = None, min_windows: int = MIN_WINDOWS,
                          class_names: list | None = None):
    """(x, y, where, class names): `read_windows`, and the names of the model's outputs in
    order. Labels may be integers (class indices, or the classes' names when those are whole
    numbers) or strings: mapped through ``class_names`` (an export's), else, for a model with
    no names yet, the sorted distinct labels name its outputs in order (as the windows task
    sorts its classes), which needs one label per output. A label outside the names is
    refused, naming it."""
    x, y, where = _load_windows(calibration)
    if labels is not None:
        if y is not None:
            raise CalibrationError(f"{where} holds labels y and labels were given too; pass one")
        y, label_where = _load_array(labels, "labels")
    else:
        label_where = where
    x = _checked_windows(x, where, features, timesteps, min_windows)
    names = list(class_names) if class_names else (
        [str(i) for i in range(classes)] if classes is not None else None)
    if y is not None:
        y, names = _class_indices(np.asarray(y), label_where, len(x), classes, names,
                                  named=bool(class_names))
    return x, y, where, names


def _class_indices(y: np.ndarray, where: str, n: int, classes: int | None, names: list | None,
                   named: bool):
    """``(indices, names)`` of labels ``y``: string labels through ``names`` (or, when nothing
    named the classes yet, the sorted labels become the names); integer labels as indices,
    or by value when every name is a whole number (a run trained on labels 1, 2, 5)."""
    if y.ndim == 1 and y.dtype.kind in "US":
        if y.dtype.kind == "S":
            y = y.astype(str)
        if len(y) != n:
            raise CalibrationError(f"{where}: {len(y)} labels for {n} windows")
        if not named:
            from zoo.training.tasks.windows import label_names

            found = label_names(y, where)
            if classes is not None and len(found) != classes:
                raise CalibrationError(
                    f"{where}: {len(found)} distinct string labels {found} for a model of "
                    f"{classes} outputs; string labels name the outputs in sorted order, so "
                    f"each of the {classes} classes needs windows (or give integer class "
                    "indices)")
            names = found
        return _through_names(y, names, where), names
    if named and y.ndim == 1 and y.dtype.kind in "iu" and names and all(
            _whole(name) for name in names) and names != [str(i) for i in range(len(names))]:
        return _through_names(np.array([str(int(v)) for v in y.tolist()]), names, where), names
    return _checked_labels(y, where, n, classes), names


def _whole(text: str) -> bool:
    return text.lstrip("-").isdigit()


def _through_names(y: np.ndarray, names: list, where: str) -> np.ndarray:
    index = {str(name): i for i, name in enumerate(names)}
    unknown = sorted(set(y.tolist()) - set(index))
    if unknown:
        raise CalibrationError(f"{where}: label(s) {unknown} are not among the model's classes "
                               f"{list(names)}; its outputs were never trained on them")
    return np.array([index[v] for v in y.tolist()], dtype=np.int64)


def _load_windows(calibration):
    if not isinstance(calibration, (str, Path)):
        return calibration, None, "calibration"
    path = Path(calibration)
    if path.suffix == ".npz":
        _check_magic(path, (b"PK\x03\x04", b"PK\x05\x06"), ".npz archive (numpy.savez)")
        try:
            with np.load(path, allow_pickle=False) as data:
                keys = set(data.files)
                key = "X" if "X" in keys else "x" if "x" in keys else None
                if key is None:
                    raise CalibrationError(f"{path}: no array X in it (it holds "
                                           f"{sorted(keys)}); valid: X (N, T, C), optional y")
                return data[key], (data["y"] if "y" in keys else None), str(path)
        except (OSError, ValueError) as err:
            if isinstance(err, CalibrationError):
                raise
            raise CalibrationError(f"{path}: cannot be read as .npz ({err})") from None
    x, where = _load_array(path, "calibration windows")
    return x, None, where


def _check_magic(path: Path, magics: tuple, what: str) -> None:
    """A file that is not what its name says (text, a pickle) is said in one line, before
    numpy's reader suggests allow_pickle (loading a pickle runs its code)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(8)
    except OSError as err:
        raise CalibrationError(f"{path}: cannot be read ({err.strerror or err})") from None
    if not any(head.startswith(m) for m in magics):
        try:
            kind = "empty" if not head else "text" if head.decode("utf-8") else "?"
        except UnicodeDecodeError:
            kind = "binary data of another kind"
        raise CalibrationError(f"{path}: {kind}, not an {what}")


def _load_array(source, what: str):
    if not isinstance(source, (str, Path)):
        return source, what
    path = Path(source)
    if path.suffix != ".npy":
        raise CalibrationError(f"{path}: {what} must be an .npy file (or an .npz holding X and "
                               "y)")
    _check_magic(path, (b"\x93NUMPY",), ".npy array (numpy.save)")
    try:
        return np.load(path, allow_pickle=False), str(path)
    except (OSError, ValueError) as err:
        raise CalibrationError(f"{path}: cannot be read as .npy ({err})") from None


def _checked_windows(x, where: str, features: int, timesteps: int | None,
                     min_windows: int) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype.kind not in "fiu":
        raise CalibrationError(f"{where}: windows of dtype {x.dtype}; valid: numbers")
    want = f"(N, {timesteps or 'T'}, {features})"
    if x.ndim != 3 or x.shape[2] != features or (timesteps and x.shape[1] != timesteps):
        raise CalibrationError(f"{where}: windows of shape {x.shape}; the model takes {want} "
                               "raw inputs")
    if len(x) < min_windows:
        raise CalibrationError(f"{where}: {len(x)} windows; at least {min_windows} are needed"
                               + (" (the int8 ranges are calibrated on them)"
                                  if min_windows > 1 else ""))
    bad = np.argwhere(~np.isfinite(x))
    if len(bad):
        n, t, c = (int(v) for v in bad[0])
        raise CalibrationError(f"{where}: window {n}, step {t}, feature {c} is "
                               f"{x[n, t, c]}; valid: finite numbers")
    with np.errstate(over="ignore"):
        x32 = x.astype(np.float32)
    if not np.all(np.isfinite(x32)):
        raise CalibrationError(f"{where}: values beyond float32's range")
    return x32


def _checked_labels(y, where: str, n: int, classes: int | None) -> np.ndarray:
    y = np.asarray(y)
    if y.dtype.kind not in "iuf" or y.ndim != 1:
        raise CalibrationError(f"{where}: labels of dtype {y.dtype} and shape {y.shape}; valid: "
                               "one label per window: an integer class index (0..classes-1, "
                               "the model's output order) or a class name")
    if len(y) != n:
        raise CalibrationError(f"{where}: {len(y)} labels for {n} windows")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y) & (y == np.round(y))):
        raise CalibrationError(f"{where}: labels must be whole numbers (class indices)")
    if y.dtype.kind == "u" and y.size and int(y.max()) > np.iinfo(np.int64).max:
        i = int(np.argmax(y))  # would wrap to a negative number as int64
        raise CalibrationError(f"{where}: label {int(y[i])} at index {i}; the model has "
                               f"{classes} classes (valid: 0..{(classes or 1) - 1})")
    y = y.astype(np.int64)
    bad = np.flatnonzero((y < 0) | (y >= (classes if classes is not None else np.inf)))
    if bad.size:
        i = int(bad[0])
        valid = f"0..{classes - 1}" if classes is not None else ">= 0"
        raise CalibrationError(f"{where}: label {int(y[i])} at index {i}; the model has "
                               f"{classes} classes (valid: {valid})" if classes is not None
                               else f"{where}: label {int(y[i])} at index {i}; valid: {valid}")
    return y
