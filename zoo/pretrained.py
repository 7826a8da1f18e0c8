"""Pretrained models, timm style: ``zoo.create_model("sirnn", pretrained="har2")``.

A pretrained model is tagged ``<model>.<use>`` (timm's ``model.tag``: ``sirnn.har2``,
``sirnn.kws12``), one per model and task, and ships as a folder ``pretrained/<tag>/`` of the
installed ``zoo.models`` package (``models/pretrained/`` in a source checkout; the earlier
generations are in ``models/archive/``, not installed: `archive_root`)::

    card.json            `zoo.pretrained_card.PretrainedCfg`: what it is, the data, split,
                         seeds and command that made it, its accuracy, size and cost per
                         second of signal, and the sha256 of every file below
    model.keras          the trained float model (input: normalised features)
    config.yaml, normalization.json, metrics.json
                         the rest of its `zoo train` run directory, so `zoo export` takes the
                         folder as it takes any run
    export-step-int8/    the checked int8 streaming export (step.tflite, head.tflite,
                         stream.tflite, model card, C++); export/device_bench.py runs it.
                         A model without a recurrent layer (the DS-CNN) ships its int8
                         whole-window model instead (export-sequence-int8/), a 16x8
                         tag TFLite's 16x8 step model (export-step-int16x8/); card.json
                         names the folder

Loading checks every file against its sha256 in ``card.json`` first, so a damaged or edited file
is an error naming it, never a silently different model.

Example:

    >>> import zoo
    >>> zoo.list_pretrained()                           # doctest: +SKIP
    ['dscnn.kws12', 'fastgrnn.kws12', 'gru.dsa19', 'gru.har2', 'gru.kws12', 'sirnn.dsa19', ...]
    >>> model = zoo.create_model("sirnn", pretrained="har2")   # doctest: +SKIP
    >>> model.predict(raw_windows)                      # (N, 128, 9) raw UCI HAR signals
"""

from __future__ import annotations

import difflib
import hashlib
import importlib.resources
import json
import logging
from pathlib import Path

from zoo.pretrained_card import (CARD, CARD_VERSION, MODEL_FILE, NORMALIZATION_FILE,
                                 REQUIRED_FILES, PretrainedCfg, PretrainedError, read_tag_card)

__all__ = ["CARD", "CARD_VERSION", "MODEL_FILE", "NORMALIZATION_FILE", "REQUIRED_FILES",
           "PretrainedCfg", "PretrainedError", "read_tag_card", "pretrained_root", "list_pretrained",
           "get_pretrained_cfg", "requested_tag", "resolve_tag", "tag_or_path", "sha256",
           "verified_dir", "load_pretrained", "archive_root"]
_log = logging.getLogger(__name__)


def pretrained_root() -> Path:
    """The folder holding one sub-folder per pretrained tag."""
    return Path(str(importlib.resources.files("zoo.models"))) / "pretrained"


def archive_root() -> Path:
    """The folder of the earlier generations of the tags (``models/archive/``, beside
    ``pretrained/``): kept in the repository, not installed; a wheel install has none. Every
    function here takes it as ``root``: ``load_pretrained("sirnn.har2_gen1",
    root=archive_root())``."""
    return pretrained_root().parent / "archive"


def _cards(root: Path | None = None) -> dict[str, PretrainedCfg | ValueError]:
    """Every tag in ``root`` (default: the installed ones) -> its card, or the error reading
    it: one damaged card must not hide the others, and asking for it must name its file."""
    root = pretrained_root() if root is None else Path(root)
    cards = {}
    for path in sorted(root.glob(f"*/{CARD}")) if root.is_dir() else []:
        try:
            cards[path.parent.name] = read_tag_card(path)
        except ValueError as err:
            cards[path.parent.name] = err
    return cards


def list_pretrained(pattern: str | None = None, root: Path | None = None) -> list[str]:
    """Tags of the shipped pretrained models (``model.name``), sorted; ``pattern`` filters;
    ``root``: another folder of tags (`archive_root`). A tag whose card is damaged is left out,
    with a warning naming the file."""
    tags = []
    for tag, card in sorted(_cards(root).items()):
        if pattern is not None and pattern not in tag:
            continue
        if isinstance(card, ValueError):
            _log.warning("pretrained model %s left out: %s", tag, card)
            continue
        tags.append(tag)
    return tags


def get_pretrained_cfg(tag: str, root: Path | None = None) -> PretrainedCfg:
    """The card (`zoo.pretrained_card.PretrainedCfg`) of ``tag``, installed or in ``root``;
    ValueError naming the closest tags when there is none."""
    cards = _cards(root)
    if isinstance(cards.get(tag), ValueError):
        raise cards[tag]
    if tag not in cards:
        close = difflib.get_close_matches(tag, cards, n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        where = "" if root is None else f" in {root}"
        raise ValueError(f"no pretrained model {tag!r}{where}.{hint} Shipped: "
                         f"{', '.join(sorted(cards)) or 'none'}")
    return cards[tag]


def requested_tag(name: str, pretrained) -> str:
    """The tag that ``create_model(name, pretrained=...)`` asks for: ``pretrained`` is a task
    (``"har2"``), a full tag, or True (``name`` is then a tag, or a model with one shipped tag)."""
    if isinstance(pretrained, str):
        return pretrained if "." in pretrained else f"{name}.{pretrained}"
    if "." in name:
        return name
    tags = list_pretrained(f"{name}.")
    tags = [t for t in tags if t.split(".")[0] == name]
    if len(tags) != 1:
        raise ValueError(f"model {name!r} has {len(tags)} pretrained tags ({', '.join(tags) or 'none'}); "
                         "name one, e.g. pretrained='har2'")
    return tags[0]


def resolve_tag(name: str, root: Path | None = None) -> Path:
    """The folder of the tag ``name``: an installed tag, as ``create_model`` finds it (``root``:
    another folder of tags, `archive_root`; ``archive/NAME`` asks for the archive by name too).
    A tag that was moved to the archive is one line naming the tag that does its job now (the
    installed tag of the same model and task); an unknown name, one line listing the valid tags.
    """
    name = str(name)
    if root is None and name.startswith("archive/"):
        root, name = archive_root(), name[len("archive/"):]
    cards = _cards(root)
    if name in cards:
        if isinstance(cards[name], ValueError):
            raise cards[name]
        return (pretrained_root() if root is None else Path(root)) / name
    archived = _cards(archive_root()) if root is None else {}
    if isinstance(archived.get(name), PretrainedCfg):
        now = _successor(archived[name], cards)
        raise ValueError(f"{name} moved to models/archive; the job's tag is now "
                         f"{now or 'none (no installed tag of its model and task)'} (its "
                         f"archived folder, models/archive/{name}, is still usable as a path)")
    where = "installed" if root is None else f"in {root}"
    valid = [t for t, card in sorted(cards.items()) if not isinstance(card, ValueError)]
    raise ValueError(f"no tag {name!r} {where}; valid: {', '.join(valid) or 'none'}")


def _successor(card: PretrainedCfg, installed: dict) -> str | None:
    """The installed tag of ``card``'s model and task."""
    for tag, other in sorted(installed.items()):
        if isinstance(other, PretrainedCfg) and (other.model, other.task) == (card.model,
                                                                            card.task):
            return tag
    return None


def tag_or_path(source: str, export: bool = False) -> str:
    """``source`` as the command line gives it: an existing path as it is, a bare name (no
    folder separator, nothing of that name here) as the installed tag's folder (`resolve_tag`,
    whose error names the valid tags; ``export``: the export folder the tag ships); anything
    else as it is, for the caller's own check."""
    import os

    if Path(source).exists() or os.sep in str(source) or str(source).endswith(".keras"):
        return str(source)
    try:
        folder = resolve_tag(source)
    except ValueError as err:
        raise ValueError(f"{source}: no such file or folder; {err}") from None
    return str(folder / get_pretrained_cfg(folder.name).export.folder if export else folder)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verified_dir(tag: str, root: Path | None = None) -> Path:
    """The folder of ``tag`` (installed, or in ``root``) after checking every file of its card
    against its sha256 (each a file inside the folder, symlinks resolved)."""
    cfg = get_pretrained_cfg(tag, root)
    folder = (pretrained_root() if root is None else Path(root)) / tag
    real_folder = folder.resolve()
    for rel, want in cfg.files.items():
        path = folder / rel
        if not path.resolve().is_relative_to(real_folder):
            raise PretrainedError(f"{folder / CARD}: 'files' entry {rel!r} is outside the tag "
                                  f"folder ({path} resolves to {path.resolve()}); refusing it")
        if not path.is_file():
            raise FileNotFoundError(f"pretrained {tag}: {path} is missing")
        got = sha256(path)
        if got != want:
            raise PretrainedError(f"pretrained {tag}: {path} has sha256 {got}, its card says {want}; "
                             "the file is damaged or was edited (reinstall edge-rnn-zoo)")
    return folder


def load_pretrained(tag: str, normalize: bool = True, root: Path | None = None):
    """The trained `keras.Model` of ``tag`` (installed, or in ``root``).

    With ``normalize`` (default) it takes the card's ``input_shape``, raw windows: a model that
    reads several samples per step (``frames_per_step`` k > 1) gets a Reshape in front, (T, C)
    to (T / k, k * C), as the task stacks them; then the training split's per-feature z-score.
    Without it, the trained model as it is: its input is ``model_input_shape``, normalised with
    ``normalization.json``. Every file is sha256-checked first, and the model must take the
    card's shape and give its ``num_classes``: anything else is a `PretrainedError` naming the
    file.

    Example:

        >>> model = load_pretrained("sirnn.har2")                 # doctest: +SKIP
        >>> model.input_shape                                      # doctest: +SKIP
        (None, 128, 9)
    """
    import keras

    from zoo.model_table import register_layers

    register_layers()  # whatever imported Keras first in this program
    cfg = get_pretrained_cfg(tag, root)
    folder = verified_dir(tag, root)
    trained = _load_model(folder / MODEL_FILE)
    _check_model(trained, cfg, folder)
    if not normalize:
        return trained
    mean, std = _read_normalization(folder / NORMALIZATION_FILE, cfg.model_input_shape[-1])
    inputs = keras.Input(shape=cfg.input_shape, name="x")
    frames = inputs
    if cfg.frames_per_step > 1:  # k consecutive samples per step, sample-major (the task's)
        frames = keras.layers.Reshape(cfg.model_input_shape, name="frames")(inputs)
    scaled = keras.layers.Normalization(mean=mean, variance=std ** 2, name="normalization")(frames)
    return keras.Model(inputs, trained(scaled), name=tag.replace(".", "_"))


def _load_model(path: Path):
    import keras

    try:
        return keras.saving.load_model(path)
    except Exception as err:  # Keras raises many kinds on a damaged archive; each is this
        first = str(err).strip().splitlines()[0][:200] if str(err).strip() else ""
        raise PretrainedError(f"{path}: is not a loadable Keras model ({type(err).__name__}: "
                              f"{first}); the file is damaged (reinstall edge-rnn-zoo)") from None


def _check_model(model, cfg: PretrainedCfg, folder: Path) -> None:
    """The model must take the card's input shape (with its frames per step) and give its
    number of classes."""
    takes, gives = tuple(model.input_shape[1:]), model.output_shape[-1]
    card = folder / CARD
    if takes != cfg.model_input_shape:
        frames = (f" at frames_per_step {cfg.frames_per_step}, {cfg.model_input_shape}"
                  if cfg.frames_per_step > 1 else "")
        raise PretrainedError(f"{card}: input_shape {list(cfg.input_shape)}{frames}, but the "
                              f"model ({folder / MODEL_FILE}) takes {takes}")
    if gives != cfg.num_classes:
        raise PretrainedError(f"{card}: num_classes {cfg.num_classes}, but the model "
                              f"({folder / MODEL_FILE}) has {gives} outputs")


def _read_normalization(path: Path, features: int):
    """(mean, std) of ``normalization.json``: ``features`` finite values each, std > 0."""
    import numpy as np

    try:
        stats = json.loads(path.read_text())
        mean, std = (np.asarray(stats[k], "float32") for k in ("mean", "std"))
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as err:
        raise PretrainedError(f"{path}: not a normalization (a JSON object with 'mean' and "
                              f"'std' lists; {type(err).__name__}: {err})") from None
    if mean.shape != (features,) or std.shape != (features,):
        raise PretrainedError(f"{path}: mean and std must hold {features} values (the model's "
                              f"features), got {mean.shape} and {std.shape}")
    if not (np.isfinite(mean).all() and np.isfinite(std).all() and (std > 0).all()):
        raise PretrainedError(f"{path}: mean and std must be finite and std > 0")
    return mean, std
