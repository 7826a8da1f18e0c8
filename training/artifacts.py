"""The files a run leaves, read back checked: one rule per file, and one line naming the file and
the field at fault (with what is valid) when it does not hold, instead of a KeyError or a
TypeError three calls later.

A run's files are the zoo's to write, but they sit in a user's folder and get edited, copied and
truncated. Every reader of a run (resume, ``zoo eval``, ``zoo export``, ``--init-from``) goes
through these functions:

* `check_run_config`    ``config.yaml``: the `TrainConfig` rules (task, model, options, ...)
* `check_state`         a checkpoint's ``state.json``: ``epochs_done``, ``history``
* `load_arrays`         an ``.npz`` the zoo wrote: never a pickle, never a damaged archive
* `load_normalization`  ``normalization.json``: equal-length finite ``mean``, ``std > 0``,
                        as many features as the model takes
* `load_keras_model`    ``model.keras``: a damaged archive called damaged (Keras says "File not
                        found ... accessible .keras zip" for a file that is there)
"""

from __future__ import annotations

import dataclasses
import zipfile
import zlib
from pathlib import Path

import numpy as np

from zoo.core.storage import read_json

__all__ = ["ArtifactError", "check_run_config", "check_state", "load_arrays",
           "load_normalization", "load_keras_model"]


class ArtifactError(ValueError):
    """A file of a run that does not hold what the zoo writes there; the message names it."""


def _field_error(path, field, value, valid):
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    return ArtifactError(f"{path}: {field} is {shown}; valid: {valid}")


# ----------------------------------------------------------------------------- config.yaml
REQUIRED_CONFIG = ("task", "model")


def check_run_config(config, path):
    """``config`` (``config.yaml`` as read) checked against `TrainConfig`'s rules; returns the
    `TrainConfig`. Keys that are not settings (``*_resolved`` records) are not checked.

    Raises:
        ArtifactError: naming ``path``, the setting and what is valid.
    """
    from zoo.training.config import TrainConfig

    if not isinstance(config, dict):
        raise ArtifactError(f"{path}: not a zoo run config (a YAML {type(config).__name__}, "
                            "expected a mapping of settings)")
    missing = [k for k in REQUIRED_CONFIG if k not in config]
    if missing:
        raise ArtifactError(f"{path}: missing setting {missing[0]!r} (a zoo run config names "
                            f"its {' and '.join(REQUIRED_CONFIG)})")
    # Settings this version does not know (a run from another version) are not judged here;
    # resuming such a run is refused by `TrainConfig.from_dict` in the trainer.
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    settings = {k: v for k, v in config.items() if k in known}
    try:
        return TrainConfig(**settings)
    except (TypeError, ValueError) as err:
        raise ArtifactError(f"{path}: {err}") from None


# ---------------------------------------------------------------------------- state.json
def _history_rows(value):
    return isinstance(value, list) and all(isinstance(row, dict) for row in value)


STATE_RULES = {
    "epochs_done": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1,
                    "an integer >= 1"),
    "history": (_history_rows, "a list of per-epoch rows (JSON objects)"),
    "callbacks": (lambda v: isinstance(v, dict) and all(isinstance(x, dict) for x in v.values()),
                  "a mapping of callback name to its state (JSON objects)"),
}


def _count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _number(v) -> bool:  # NaN and infinity too: a diverged epoch's loss, Keras's initial best
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# The early-stopping state a resume restores (`callbacks.ResumableEarlyStopping.load_state`);
# stopped_epoch may be missing (checkpoints from before it was kept).
EARLY_STOPPING_RULES = {
    "wait": (_count, "an integer >= 0"),
    "best": (lambda v: v is None or _number(v), "a number (or null)"),
    "best_epoch": (_count, "an integer >= 0"),
}


def check_state(state, path):
    """A checkpoint's ``state.json`` (as read) holds ``epochs_done``, one history row of numbers
    per epoch done and the callbacks' states (the early-stopping counters checked); returns it.
    Raises `ArtifactError` naming the file and the field."""
    if not isinstance(state, dict):
        raise ArtifactError(f"{path}: not a checkpoint state (a JSON {type(state).__name__}, "
                            "expected an object)")
    for field, (accepts, valid) in STATE_RULES.items():
        if field not in state:
            raise ArtifactError(f"{path}: missing field {field!r} ({valid})")
        if not accepts(state[field]):
            raise _field_error(path, field, state[field], valid)
    if not isinstance(state.get("stopped", False), bool):
        raise _field_error(path, "stopped", state["stopped"], "true or false")
    if len(state["history"]) != state["epochs_done"]:
        raise ArtifactError(f"{path}: history has {len(state['history'])} rows for "
                            f"epochs_done {state['epochs_done']}; valid: one row per epoch")
    for i, row in enumerate(state["history"]):
        for key, value in row.items():
            if not _number(value):
                raise _field_error(path, f"history[{i}].{key}", value, "a number")
    early = state["callbacks"].get("early_stopping")
    if early is not None:
        rules = {**EARLY_STOPPING_RULES, **({"stopped_epoch": EARLY_STOPPING_RULES["wait"]}
                                            if "stopped_epoch" in early else {})}
        for field, (accepts, valid) in rules.items():
            if field not in early:
                raise ArtifactError(f"{path}: missing field callbacks.early_stopping.{field} "
                                    f"({valid})")
            if not accepts(early[field]):
                raise _field_error(path, f"callbacks.early_stopping.{field}", early[field], valid)
    ema = state["callbacks"].get("ema")  # weight averaging: which weights the model holds
    if ema is not None and not (isinstance(ema, dict)
                                and isinstance(ema.get("average_in_model"), bool)):
        found = ema.get("average_in_model") if isinstance(ema, dict) else ema
        raise _field_error(path, "callbacks.ema.average_in_model", found, "true or false")
    return state


# ----------------------------------------------------------------------------------- .npz
def load_arrays(path, what="array file"):
    """Every array of the ``.npz`` at ``path``, read in full (so the zip checks its CRC-32).
    A pickle inside is refused, never loaded: unpickling runs code, and the zoo never writes one.

    Raises:
        ArtifactError: damaged, truncated, or holding pickled objects; naming ``path``.
    """
    try:
        with np.load(path, allow_pickle=False) as saved:
            return {name: saved[name] for name in saved.files}
    except ValueError as err:
        if "allow_pickle" in str(err) or "pickle" in str(err).lower():
            raise ArtifactError(f"{path}: holds pickled Python objects, which the zoo never "
                                f"writes and refuses to load (a pickle can run code); not a "
                                f"valid {what}") from None
        raise ArtifactError(f"{path}: not a valid {what} ({err})") from None
    except (OSError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as err:
        raise ArtifactError(f"{path}: not a valid {what}, damaged or truncated "
                            f"({type(err).__name__}: {err})") from None


# ---------------------------------------------------------------------- normalization.json
def load_normalization(path, features=None):
    """The `Normalization` in ``path``: ``mean`` and ``std`` equal-length lists of numbers finite
    in float32 (what the model computes in), every ``std > 0`` and at least the floor the zoo
    writes (`STD_FLOOR`: a smaller one is an edit, which `Normalization` would silently replace by
    1, changing every prediction; 1e-300 passed ``> 0`` and was 0 in float32), and ``features``
    of them when given (what the model takes)."""
    from zoo.training.tasks import Normalization
    from zoo.training.tasks.base import STD_FLOOR

    data = read_json(path, "normalization file")
    valid = f"equal-length lists of finite float32 numbers, every std > 0 and >= {STD_FLOOR:g}"
    for key in ("mean", "std"):
        values = data.get(key)
        if not isinstance(values, list) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            raise ArtifactError(f"{path}: {key} must be a list of numbers ({valid}), got "
                                f"{str(values)[:60]}")
    mean, std = np.asarray(data["mean"], np.float64), np.asarray(data["std"], np.float64)
    if mean.shape != std.shape:
        raise ArtifactError(f"{path}: mean has {mean.size} values and std {std.size}; valid: "
                            f"{valid}")
    with np.errstate(over="ignore"):
        mean32, std32 = mean.astype(np.float32), std.astype(np.float32)
    for key, values in (("mean", mean32), ("std", std32)):
        bad = np.flatnonzero(~np.isfinite(values) if key == "mean"
                             else ~(np.isfinite(values) & (values >= STD_FLOOR)))
        if bad.size:
            shown = (mean if key == "mean" else std)[bad[0]]
            raise ArtifactError(f"{path}: {key}[{int(bad[0])}] is {shown:g}; valid: {valid}")
    if features is not None and mean.size != features:
        raise ArtifactError(f"{path}: {mean.size} features, but the model takes {features}; "
                            "the file does not belong to this run")
    return Normalization(mean32, std32)


# ---------------------------------------------------------------------------- model.keras
def load_keras_model(path, role=""):
    """`keras.saving.load_model`, with a damaged file reported as such (Keras says "File not
    found" for a file that exists but is not a valid archive). ``role`` is appended to the
    message: what the file was for (e.g. that a checkpoint can no longer be resumed)."""
    import keras

    import zoo

    zoo.register_layers()  # whatever imported Keras first in this program

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file{role}")
    if not zipfile.is_zipfile(path):
        raise ArtifactError(f"{path}: cannot be loaded as a Keras model, the file is damaged (not "
                            f"a valid .keras zip archive){role}")
    try:
        return keras.saving.load_model(path)
    except Exception as err:  # noqa: BLE001 - Keras raises many types for a damaged archive
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        if "File not found" in first:  # Keras's word for any unreadable archive
            first = "unreadable archive"
        raise ArtifactError(f"{path}: cannot be loaded as a Keras model, the file is damaged or "
                            f"not a zoo model ({type(err).__name__}: {first[:200]}){role}"
                            ) from None
