"""``card.json``, the card of a pretrained tag, as one type: `PretrainedCfg` (timm's name).

`zoo ship` (`zoo.export.ship`) builds it and writes `PretrainedCfg.to_dict`; every reader (the
pretrained loader, ``zoo list``, the C export of a shipped tag, the device scripts of
``tools/cortexm``) reads it through `read_tag_card`, which checks every key, its type and its
range and refuses what it does not know: a damaged or hand-edited card is one `PretrainedError`
line naming the file and the key, never a KeyError far from the file.

Standard library only (``zoo list`` reads cards without loading Keras).

Example:

    >>> from zoo.pretrained import pretrained_root
    >>> card = read_tag_card(pretrained_root() / "sirnn.har2" / "card.json")   # doctest: +SKIP
    >>> card.metrics.export_accuracy, card.export.folder                    # doctest: +SKIP
    (97.0, 'export-step-int8')
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any, Callable

__all__ = ["CARD", "CARD_VERSION", "MODEL_FILE", "NORMALIZATION_FILE", "REQUIRED_FILES",
           "PretrainedError", "PretrainedCfg", "Metrics", "ShippedExport", "CFigures",
           "TrainingData", "SeedResult", "Cost", "C_BACKEND", "read_tag_card", "check_tag_name"]

CARD = "card.json"
CARD_VERSION = 2  # 2: frames_per_step, cost (input_shape: the raw window)
MODEL_FILE = "model.keras"
NORMALIZATION_FILE = "normalization.json"
# Files every card must list (and so sha256-check): what the loader opens.
REQUIRED_FILES = (MODEL_FILE, NORMALIZATION_FILE)
# ``MODEL.NAME``: a folder name, so no path (``/``, ``..``) and not hidden.
_TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*(\.[A-Za-z0-9][A-Za-z0-9_-]*)+")


class PretrainedError(ValueError):
    """A pretrained tag that cannot be trusted: a damaged or inconsistent card, file or model.
    The message is one line naming the file and what is wrong."""


def check_tag_name(tag, option: str = "tag") -> str:
    """``tag`` if it is a tag name (``MODEL.NAME``: letters, digits, ``_`` and ``-`` between
    dots); ValueError naming ``option`` otherwise (a tag names a folder)."""
    if not isinstance(tag, str) or not _TAG.fullmatch(tag):
        raise ValueError(f"{option} {tag!r} is not a tag name: MODEL.NAME, letters, digits, '_' "
                         "and '-' between dots, e.g. sirnn.har2 (no '/', '..', leading '.' or "
                         "empty name: it names a folder)")
    return tag


# ------------------------------------------------------------------------------ value checks
# A check takes (value, where) and returns the value (as the record keeps it) or raises
# ValueError naming ``where`` (the key's path in the card).
Check = Callable[[Any, str], Any]


def _typed(*types: type, what: str) -> Check:
    def check(value, where):
        if isinstance(value, bool) and bool not in types or not isinstance(value, types):
            raise ValueError(f"{where} must be {what}, got {str(value)[:60]!r}")
        return value
    return check


_str = _typed(str, what="a string")
_int = _typed(int, what="an integer")
_number = _typed(int, float, what="a number")
_dict = _typed(dict, what="a JSON object")


def _count(value, where):
    if _int(value, where) < 1:
        raise ValueError(f"{where} must be an integer >= 1, got {value!r}")
    return value


def _optional(check: Check) -> Check:
    return lambda value, where: None if value is None else check(value, where)


def _list_of(check: Check) -> Check:
    def checked(value, where):
        if not isinstance(value, list):
            raise ValueError(f"{where} must be a list, got {str(value)[:60]!r}")
        return [check(v, f"{where}[{i}]") for i, v in enumerate(value)]
    return checked


def _dict_of(check: Check) -> Check:
    def checked(value, where):
        return {_str(k, f"{where} key"): check(v, f"{where}.{k}")
                for k, v in _dict(value, where).items()}
    return checked


def _input_shape(value, where):
    if not (isinstance(value, (list, tuple)) and len(value) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value)):
        raise ValueError(f"{where} must be [timesteps, features], two integers >= 1, got "
                         f"{value!r}")
    return tuple(value)


def _files(value, where):
    """Relative paths inside the tag folder -> sha256; every file the loader opens listed (an
    unlisted file would load unchecked)."""
    if not (isinstance(value, dict) and value
            and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())):
        raise ValueError(f"{where} must map each file of the tag (relative path) to its sha256, "
                         f"got {str(value)[:60]!r}")
    for rel in value:
        parts = rel.replace("\\", "/").split("/")
        if rel.startswith(("/", "\\")) or ".." in parts or not all(parts) or ":" in parts[0]:
            raise ValueError(f"{where} entry {rel!r} is outside the tag folder; refusing it")
    for needed in REQUIRED_FILES:
        if needed not in value:
            raise ValueError(f"{where} does not list {needed}, which loading opens: it would "
                             "load unchecked (reinstall edge-rnn-zoo)")
    return dict(value)


def _key(check: Check, *, omit_none: bool = False, **default):
    """A card key checked by ``check``; ``omit_none``: left out of the JSON when None."""
    return dataclasses.field(**default, metadata={"check": check, "omit_none": omit_none})


def _record(cls) -> Check:
    return lambda value, where: cls.from_dict(value, where)


class _Record:
    """A JSON object of the card as a frozen dataclass: every key known, checked, in order."""

    @classmethod
    def from_dict(cls, data, where: str = "card"):
        fields = {f.name: f for f in dataclasses.fields(cls)}
        if not isinstance(data, dict):
            raise ValueError(f"{where} must be a JSON object, got {type(data).__name__}")
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise ValueError(f"{where}: unknown key {unknown[0]!r}; known: {', '.join(fields)}")
        required = [n for n, f in fields.items() if f.default is dataclasses.MISSING
                    and f.default_factory is dataclasses.MISSING]
        missing = [n for n in required if n not in data]
        if missing:
            raise ValueError(f"{where} is missing {missing}")
        prefix = "" if where == "card" else f"{where}."
        return cls(**{name: fields[name].metadata["check"](value, prefix + name)
                      for name, value in data.items()})

    def to_dict(self) -> dict:
        """The record as the card's JSON holds it (keys in field order)."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None and f.metadata.get("omit_none"):
                continue
            out[f.name] = _plain(value)
        return out


def _plain(value):
    if isinstance(value, _Record):
        return value.to_dict()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


# ------------------------------------------------------------------------------------ records
@dataclasses.dataclass(frozen=True)
class Metrics(_Record):
    """Accuracy (%) of the tag: the subject (or speaker) CV of its recipe over seeds, the
    visible official test windows for the shipped seed and every seed, and the shipped
    export's (int8 / int16x8 / float TFLite) accuracy beside its Keras float model's."""

    val_accuracy_subject_cv_mean: float = _key(_number)
    val_accuracy_subject_cv_std: float | None = _key(_optional(_number))
    test_accuracy_visible: float = _key(_number)
    test_accuracy_visible_seeds: list = _key(_list_of(_number))
    export_accuracy: float = _key(_number)
    export_float_accuracy: float = _key(_number)
    export_argmax_agreement: float = _key(_number)

    @property
    def export_drop_points(self) -> float:
        """Points the shipped export is below its float model (negative: above)."""
        return round(self.export_float_accuracy - self.export_accuracy, 2)


@dataclasses.dataclass(frozen=True)
class CFigures(_Record):
    """The zoo's C backend on the tag's int8 step export, measured on a Cortex-M4 by
    ``tools/cortexm/c_cards.py`` (`zoo.export.ship.record_c_figures` writes them)."""

    const_bytes: int = _key(_count)
    state_bytes: int = _key(_count)
    cortex_m4_flash_bytes_Os: int = _key(_count)
    cortex_m4_ram_bytes: int = _key(_count)
    cortex_m4_instructions_per_step_O2: float = _key(_number)
    bit_exact_with: str = _key(_str)
    measured_by: str = _key(_str)


@dataclasses.dataclass(frozen=True)
class ShippedExport(_Record):
    """The export the tag ships (a folder of the tag, `zoo export`'s files and model card)."""

    folder: str = _key(_str)
    form: str = _key(_str)
    quantize: str = _key(_str)
    bytes: dict = _key(_dict_of(_count))
    total_bytes: int = _key(_count)
    tflite_micro_arena_bytes: int | None = _key(_optional(_count))
    c: CFigures | None = _key(_optional(_record(CFigures)), omit_none=True, default=None)


C_BACKEND = "zoo C backend"  # Cost.runtime of a per-step figure taken from ``export.c``


@dataclasses.dataclass(frozen=True)
class TargetCost(_Record):
    """One core's figures of the tag's C, measured by ``zoo profile`` (`zoo.export.profile`,
    written by ``zoo ship --profile``): instructions per step (a keyword tag: the whole 10 ms
    hop, front end to recognizer; ``frontend_instructions_per_step`` its front end's part), per
    window (steps + the head once) and per second of signal, flash and RAM of the smallest
    program running it (-Os), and whether its logits and state were the host build's
    (``bit_exact``). ``note``: what the build is not (the Cortex-M55 without Helium)."""

    instructions_per_step: float = _key(_number)
    instructions_per_window: int = _key(_int)
    instructions_per_second: int | None = _key(_optional(_int))
    flash_bytes: int = _key(_count)
    ram_bytes: int = _key(_count)
    bit_exact: bool = _key(_typed(bool, what="true or false"))
    frontend_instructions_per_step: float | None = _key(_optional(_number), omit_none=True,
                                                        default=None)
    note: str | None = _key(_optional(_str), omit_none=True, default=None)


def head_instructions_of(target: "TargetCost", steps_per_window: float) -> float:
    """The classifier head's instructions once per window, from one target's own measured
    figures (`TargetCost`): its window (every step, then the head once) less its steps; 0 for a
    keyword tag, whose head runs every 10 ms hop inside its step (``zoo profile`` counts the
    whole hop). Rounded to 0.1, as the step is.

        >>> head_instructions_of(TargetCost(instructions_per_step=14776.0,
        ...     instructions_per_window=236949, instructions_per_second=92558, flash_bytes=8092,
        ...     ram_bytes=648, bit_exact=True), steps_per_window=16)
        533.0
    """
    if target.frontend_instructions_per_step is not None:
        return 0.0
    return round(target.instructions_per_window
                 - target.instructions_per_step * round(steps_per_window), 1)


@dataclasses.dataclass(frozen=True)
class Cost(_Record):
    """What the tag costs a Cortex-M4 per window and per second of signal, beside per step
    (issue 43 item 2): what the device spends, the classifier head included, as ``zoo profile``
    prints it and as ``targets`` record it per core.

    A step reads ``frames_per_step`` samples (a speech model: one 10 ms hop of features), so a
    step model runs ``steps_per_second`` = rows per second / frames per step; a whole-window
    model (the DS-CNN) runs once per window, ``1 / window_seconds``. Per window =
    ``window_seconds`` x (steps per second x ``instructions_per_step`` +
    ``frontend_instructions_per_second``, the features' own cost: a speech model's integer
    log-mel front end, 0 for sensor samples; None when not measured) + ``head_instructions``
    (the classifier head, run once per window after the last step: `head_instructions_of` the
    Cortex-M4 target; 0 where it is inside the step: a keyword tag's hop, the DS-CNN's whole
    window; None on a card without it, whose totals then leave the head out); per second =
    per window / ``window_seconds``. The two totals are None when a part is not measured. So
    a sensor tag's per window is its Cortex-M4 target's ``instructions_per_window``; a keyword
    tag's differs from it by the rounding of its step to 0.1 instruction (x 100 hops).
    ``runtime`` says what ran the step (`C_BACKEND`: the figure of ``export.c``),
    ``measured_by`` how.

    Example:

        >>> Cost.derive(window_seconds=2.56, steps_per_second=12.5, instructions_per_step=22560.0,
        ...             frontend_instructions_per_second=0, head_instructions=645.0,
        ...             runtime=C_BACKEND, measured_by="zoo profile").instructions_per_window
        722565
    """

    window_seconds: float = _key(_number)
    steps_per_second: float = _key(_number)
    instructions_per_step: float | None = _key(_optional(_number))
    frontend_instructions_per_second: float | None = _key(_optional(_number))
    instructions_per_second: int | None = _key(_optional(_int))
    instructions_per_window: int | None = _key(_optional(_int))
    runtime: str | None = _key(_optional(_str))
    measured_by: str | None = _key(_optional(_str))
    head_instructions: float | None = _key(_optional(_number), omit_none=True, default=None)
    targets: dict | None = _key(_optional(_dict_of(_record(TargetCost))), omit_none=True,
                                default=None)

    @classmethod
    def derive(cls, *, window_seconds: float, steps_per_second: float,
               instructions_per_step: float | None, frontend_instructions_per_second: float | None,
               runtime: str | None, measured_by: str | None, targets: dict | None = None,
               head_instructions: float | None = None) -> "Cost":
        """The record with its totals computed from its parts (``targets``: `TargetCost` by
        core name, as ``zoo profile`` measured them; ``head_instructions``: the head once per
        window, see the class)."""
        per_window = None
        if instructions_per_step is not None and frontend_instructions_per_second is not None:
            per_window = (window_seconds * (steps_per_second * instructions_per_step
                                            + frontend_instructions_per_second)
                          + (head_instructions or 0.0))
        return cls(window_seconds=window_seconds, steps_per_second=steps_per_second,
                   instructions_per_step=instructions_per_step,
                   frontend_instructions_per_second=frontend_instructions_per_second,
                   instructions_per_second=(None if per_window is None
                                            else round(per_window / window_seconds)),
                   instructions_per_window=None if per_window is None else round(per_window),
                   runtime=runtime, measured_by=measured_by, head_instructions=head_instructions,
                   targets=targets)

    def check(self) -> None:
        """ValueError unless the totals are the parts' (a hand-edited card)."""
        again = self.derive(**{k: getattr(self, k) for k in (
            "window_seconds", "steps_per_second", "instructions_per_step",
            "frontend_instructions_per_second", "runtime", "measured_by", "targets",
            "head_instructions")})
        if again != self:
            raise ValueError(f"cost: instructions_per_second {self.instructions_per_second} and "
                             f"instructions_per_window {self.instructions_per_window} are not "
                             f"its parts' ({again.instructions_per_second}, "
                             f"{again.instructions_per_window})")

    def with_head_from_targets(self) -> "Cost":
        """This cost with ``head_instructions`` taken from its Cortex-M4 target's measured
        figures (`head_instructions_of`) and the totals recomputed; unchanged without one."""
        m4 = (self.targets or {}).get("cortex-m4")
        if m4 is None:
            return self
        head = head_instructions_of(m4, self.steps_per_second * self.window_seconds)
        return self.derive(**{**{k: getattr(self, k) for k in (
            "window_seconds", "steps_per_second", "instructions_per_step",
            "frontend_instructions_per_second", "runtime", "measured_by", "targets")},
            "head_instructions": head})


@dataclasses.dataclass(frozen=True)
class SeedResult(_Record):
    """One seed of the recipe: its validation subjects, the validation accuracy of its
    selected epoch and its accuracy on the visible test windows (%)."""

    seed: int | None = _key(_optional(_int))
    val_subjects: list | None = _key(_optional(_list_of(_int)))
    val_accuracy: float = _key(_number)
    test_accuracy_visible: float = _key(_number)


@dataclasses.dataclass(frozen=True)
class TrainingData(_Record):
    """The data the shipped run was trained on: its task options (front end, frames per step,
    subjects), window counts and source file, and every seed of the recipe."""

    task_options: dict = _key(_dict)
    train_windows: int = _key(_int)
    val_windows: int = _key(_int)
    test_windows: int = _key(_int)
    source: str = _key(_str)
    seeds: list = _key(_list_of(_record(SeedResult)))
    seed: int | None = _key(_optional(_int))


@dataclasses.dataclass(frozen=True)
class PretrainedCfg(_Record):
    """The card of one pretrained tag (``card.json``); see `zoo.pretrained` for the folder.

    ``input_shape`` is the raw window the loaded model takes ([timesteps, channels]);
    ``frames_per_step`` the samples its recurrent step reads at once (the task option of that
    name): ``model.keras``, the export and the device step take ``model_input_shape``, k
    consecutive samples' channels per step. ``files`` holds the sha256 of every file of the
    tag (``model.keras`` and ``normalization.json`` among them), ``training`` the run's
    hyperparameters as its config had them, ``command`` what rebuilds it.
    """

    version: int = _key(_int)
    tag: str = _key(lambda v, where: check_tag_name(v, where))
    model: str = _key(_str)
    task: str = _key(_str)
    input_shape: tuple = _key(_input_shape)
    frames_per_step: int = _key(_count)
    num_classes: int = _key(_count)
    class_names: list = _key(_list_of(_str))
    parameters: int = _key(_count)
    metrics: Metrics = _key(_record(Metrics))
    export: ShippedExport = _key(_record(ShippedExport))
    cost: Cost = _key(_record(Cost))
    data: TrainingData = _key(_record(TrainingData))
    training: dict = _key(_dict)
    command: str = _key(_str)
    files: dict = _key(_files)

    @classmethod
    def from_dict(cls, data, where: str = "card"):
        card = super().from_dict(data, where)
        if card.version != CARD_VERSION:
            raise ValueError(f"version {card.version}: this zoo reads card version "
                             f"{CARD_VERSION}")
        if card.input_shape[0] % card.frames_per_step:
            raise ValueError(f"frames_per_step {card.frames_per_step} does not divide the "
                             f"window's {card.input_shape[0]} samples")
        card.cost.check()
        c = card.export.c
        if c is not None and (card.cost.runtime, card.cost.instructions_per_step) != (
                C_BACKEND, c.cortex_m4_instructions_per_step_O2):
            raise ValueError(f"cost.instructions_per_step {card.cost.instructions_per_step} "
                             f"({card.cost.runtime}) is not export.c's "
                             f"{c.cortex_m4_instructions_per_step_O2} ({C_BACKEND})")
        if len(card.class_names) != card.num_classes:
            raise ValueError(f"class_names has {len(card.class_names)} names for num_classes "
                             f"{card.num_classes}")
        return card

    @property
    def model_input_shape(self) -> tuple[int, int]:
        """What ``model.keras``, the export and the device step take: (steps per window,
        features per step) = (T / k, k * C) for k ``frames_per_step``."""
        (steps, channels), k = self.input_shape, self.frames_per_step
        return steps // k, channels * k

    def with_c_figures(self, figures: CFigures, measured_by: str | None = None) -> "PretrainedCfg":
        """The card with the C backend's figures as ``export.c`` and its cost per step, per
        window and per second taken from them."""
        cost = Cost.derive(**{**{k: getattr(self.cost, k) for k in (
            "window_seconds", "steps_per_second", "frontend_instructions_per_second", "targets",
            "head_instructions")},
            "instructions_per_step": figures.cortex_m4_instructions_per_step_O2,
            "runtime": C_BACKEND, "measured_by": measured_by or figures.measured_by})
        return self.replace(export=dataclasses.replace(self.export, c=figures), cost=cost)

    def replace(self, **changes) -> "PretrainedCfg":
        """A copy with ``changes`` (``tag=...``, ``export=...``), checked as a read card is."""
        return type(self).from_dict({**self.to_dict(), **_plain(changes)})

    def to_json(self) -> str:
        """The text of ``card.json``."""
        return json.dumps(self.to_dict(), indent=2) + "\n"


def read_tag_card(path: Path, folder_is_tag: bool = True) -> PretrainedCfg:
    """The card at ``path`` (``<folder>/<tag>/card.json``), checked, and (``folder_is_tag``)
    its tag its folder's name; anything else is a `PretrainedError` naming the file and what is
    wrong. A copy of a tag under another name (a C export's source) reads with
    ``folder_is_tag=False``."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise PretrainedError(f"{path}: not valid JSON ({err}); the pretrained card is damaged "
                              "(reinstall edge-rnn-zoo)") from None
    except OSError as err:
        raise PretrainedError(f"{path}: cannot be read ({err.strerror or err})") from None
    if not isinstance(data, dict):
        raise PretrainedError(f"{path}: expected a JSON object, got {type(data).__name__}")
    try:
        card = PretrainedCfg.from_dict(data)
    except ValueError as err:
        raise PretrainedError(f"{path}: {err}") from None
    if folder_is_tag and card.tag != path.parent.name:
        raise PretrainedError(f"{path}: tag {card.tag!r} differs from its folder name")
    return card
