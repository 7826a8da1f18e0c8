"""The export contract: the file names of an export folder and its ``model_card.json`` schema
(`ModelCard`), read and checked.

Standard library only, on purpose: ``device_bench.py`` (and its ``device_checks.py`` and
``device_runtime.py``) import it, and the four files are copied to a device side by side (a Raspberry Pi with numpy and a TFLite
runtime, no TensorFlow, no zoo); the zoo's exporter, its readers and its tests import the same
module, so there is one contract.

Example:
    >>> card = ModelCard.from_dict({"form": "sequence", "files": {"model": "model.tflite"},
    ...                             "timesteps": 128, "features": 9})
    >>> card.schema_version, card.files.model, card.to_dict()["files"]
    (0, 'model.tflite', {'model': 'model.tflite'})
"""

from __future__ import annotations

import dataclasses
import json
import os

__all__ = ["CARD_FILE", "CARD_MARKDOWN_FILE", "NORMALIZATION_FILE", "TESTSET_FILE", "STREAM_FILE",
           "FORMS", "MODEL_NAMES", "CARD_SCHEMA_VERSION", "ExportFolderError", "CardError",
           "ModelCard", "Section", "ModelFiles", "ModelBytes", "ModelOps", "DataUsed", "StepIO",
           "StatePart", "StateQuantization", "TensorQuantization", "AccuracyCheck", "StreamCheck",
           "MicroCheck", "SingleStepCheck", "Frontend", "model_file", "load_card_json",
           "read_export_card", "inside_folder"]

# ------------------------------------------------------------------------------ export directory
# The file names a device reads. `zoo export` writes them through export/exportdir.py.
CARD_FILE = "model_card.json"
CARD_MARKDOWN_FILE = "model_card.md"
NORMALIZATION_FILE = "normalization.json"
TESTSET_FILE = "testset.npz"
STREAM_FILE = "stream.tflite"
FORMS = ("sequence", "step")
MODEL_NAMES = {"sequence": ("model",), "step": ("step", "head")}
STEP_IO_KEYS = ("x", "h", "h_out")


def model_file(name):
    """The file of model ``name`` (``"model"``, ``"step"``, ``"head"``) in an export directory."""
    return f"{name}.tflite"


CARD_SCHEMA_VERSION = 1  # cards written before the schema have no version: read as version 0
# Most values one window may hold (timesteps x features): 2^26 float32 values is 256 MiB, far
# beyond any zoo task (HAR-2 windows are 128 x 9); past it a window cannot be
# allocated (device_bench) and the C code's int index arithmetic would overflow.
MAX_WINDOW_VALUES = 1 << 26


class ExportFolderError(Exception):
    """A bad export folder, card, model or test set: a reader reports it as one line
    (``device_bench.py`` calls it ``BenchError`` and exits with status 2)."""


class CardError(ExportFolderError, ValueError):
    """A model card that does not follow `ModelCard`; the message names the file and the key."""


def _key(*types):
    """A card key holding one of ``types``; None means absent (left out of the JSON)."""
    return dataclasses.field(default=None, metadata={"types": types})


# ------------------------------------------------------------------------------ card sections
class Section:
    """A nested object of the card (``accuracy``, ``step_io``...) as a typed record: its known
    keys are attributes, checked when read (`from_dict`); keys it does not know (a card edited by
    hand or written by a newer zoo) are kept in ``extra`` and written back.

    A key is written when the section was given it (read from the file, passed to the
    constructor or assigned), None as null: the exporter writes ``"tflite": null`` for a test
    set without labels, and leaves out what it did not measure (a skipped TFLite Micro check
    has ``skipped`` alone). A key never given reads as None."""

    def __init__(self, **keys):
        object.__setattr__(self, "_given", set())
        object.__setattr__(self, "extra", {})
        for f in dataclasses.fields(self):
            object.__setattr__(self, f.name, None)
        for name, value in keys.items():
            setattr(self, name, value)

    def __setattr__(self, name, value):
        if name not in self._names():  # a misspelt key would be written nowhere
            raise AttributeError(f"{type(self).__name__} has no key {name!r}; known: "
                                 f"{', '.join(self._names())} (unknown keys go in .extra)")
        object.__setattr__(self, name, value)
        self._given.add(name)

    def __eq__(self, other):
        return type(self) is type(other) and self.to_dict() == other.to_dict()

    @classmethod
    def _names(cls):
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_dict(cls, data, source=CARD_FILE, where=None):
        """The section in ``data`` (its JSON object), every known key checked; ``where`` is its
        dotted key in the card (``tflite_micro.single_step_vs_litert``), named in errors."""
        where = where or cls.KEY
        if not isinstance(data, dict):
            raise CardError(f"{source}: {where} must be a JSON object, got "
                            f"{type(data).__name__} {str(data)[:60]!r}")
        section, fields = cls(), {f.name: f for f in dataclasses.fields(cls)}
        for key, value in data.items():
            if key in fields:
                setattr(section, key, _checked(value, fields[key].metadata, source,
                                               f"{where}.{key}"))
            else:
                section.extra[key] = value
        return section

    def to_dict(self):
        """The section as the card's JSON holds it: its keys in field order, then ``extra``."""
        out = {name: _plain(getattr(self, name)) for name in self._names()
               if name in self._given}
        out.update(self.extra)
        return out


def _checked(value, metadata, source, where):
    """``value`` as a section key holds it: None (not known), a nested section read, a list of
    sections read, or a value of the key's types; otherwise `CardError` naming ``where``."""
    if value is None:
        return None
    if "section" in metadata:
        return metadata["section"].from_dict(value, source, where)
    if "sections" in metadata:
        if not isinstance(value, list):
            raise CardError(f"{source}: {where} must be a list, got {type(value).__name__}")
        return [metadata["sections"].from_dict(item, source, f"{where}[{i}]")
                for i, item in enumerate(value)]
    if not _has_type(value, metadata["types"]):
        raise CardError(f"{source}: {where} must be "
                        f"{' or '.join(t.__name__ for t in metadata['types'])}, got "
                        f"{type(value).__name__} {str(value)[:60]!r}")
    return value


def _plain(value):
    if isinstance(value, Section):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _section_key(section):
    """A key holding a nested `Section`; None means absent."""
    return dataclasses.field(default=None, metadata={"section": section})


def _sections_key(section):
    """A key holding a list of `Section` objects; None means absent."""
    return dataclasses.field(default=None, metadata={"sections": section})


_section = dataclasses.dataclass(init=False, eq=False)
_NUMBER = (int, float)


class _PerModel(Section):
    """A value per model of the export: ``model`` (form "sequence"), ``step`` and ``head``
    (form "step")."""

    def of(self, name):
        """The value of model ``name`` (``MODEL_NAMES``), None when absent."""
        return getattr(self, name) if name in ("model", "step", "head") else self.extra.get(name)

    def items(self):
        """(model name, value) of each model present, in the card's order."""
        return list(self.to_dict().items())


@_section
class ModelFiles(_PerModel):
    """``files``: each model's file in the export folder."""
    KEY = "files"
    model: str = _key(str)
    step: str = _key(str)
    head: str = _key(str)


@_section
class ModelBytes(_PerModel):
    """``bytes``: each model file's size."""
    KEY = "bytes"
    model: int = _key(int)
    step: int = _key(int)
    head: int = _key(int)


@_section
class ModelOps(_PerModel):
    """``ops``: the builtin operators of each model, sorted."""
    KEY = "ops"
    model: list = _key(list)
    step: list = _key(list)
    head: list = _key(list)


@_section
class DataUsed(Section):
    """``data``: where the run's data came from and how much of it the export used."""
    KEY = "data"
    source: str = _key(str)
    train: int = _key(int)
    test: int = _key(int)
    calibration: str = _key(str)  # what calibrated an integer model; null for float modes


@_section
class StatePart(Section):
    """One part of ``step_io.state_layout``: ``layer``'s (its cell class ``cell``) state
    ``state`` (``h``, ``c``) at ``offset`` in the state vector, ``size`` values, held there
    times ``scale``."""
    KEY = "step_io.state_layout[]"
    layer: str = _key(str)
    cell: str = _key(str)
    state: str = _key(str)
    offset: int = _key(int)
    size: int = _key(int)
    scale: float = _key(*_NUMBER)


@_section
class StepIO(Section):
    """``step_io``: the step model's input indices ``x`` and ``h``, its output index ``h_out``,
    and for more than one state part their ``state_layout``."""
    KEY = "step_io"
    x: int = _key(int)
    h: int = _key(int)
    h_out: int = _key(int)
    state_layout: list = _sections_key(StatePart)


@_section
class TensorQuantization(Section):
    """A tensor's quantization: ``scale``, ``zero_point`` and ``dtype`` (``int8``...)."""
    KEY = "state_quantization.x"
    scale: float = _key(*_NUMBER)
    zero_point: int = _key(int)
    dtype: str = _key(str)


@_section
class StateQuantization(Section):
    """``state_quantization``: the step model's ``x``, ``h_in`` and ``h_out`` tensors, whether
    h_out's quantization is h_in's (``tied``) and how the loop feeds the state back."""
    KEY = "state_quantization"
    x: TensorQuantization = _section_key(TensorQuantization)
    h_in: TensorQuantization = _section_key(TensorQuantization)
    h_out: TensorQuantization = _section_key(TensorQuantization)
    tied: bool = _key(bool)
    feedback: str = _key(str)


@_section
class AccuracyCheck(Section):
    """``accuracy``: the export on the whole test split with ai-edge-litert against the Keras
    float model (fractions in [0, 1], drops in points); ``passed`` is the export's gate. Without
    labels ``tflite`` and ``drop_points`` are null, and ``labels`` and
    ``agreement_drop_points`` say what was checked instead."""
    KEY = "accuracy"
    keras_float: float = _key(*_NUMBER)
    tflite: float = _key(*_NUMBER)
    drop_points: float = _key(*_NUMBER)
    argmax_agreement: float = _key(*_NUMBER)
    max_abs_logit_diff: float = _key(*_NUMBER)
    runtime: str = _key(str)
    test_sequences: int = _key(int)
    max_drop_points: float = _key(*_NUMBER)
    passed: bool = _key(bool)
    eval_seconds: float = _key(*_NUMBER)
    labels: str = _key(str)
    agreement_drop_points: float = _key(*_NUMBER)


@_section
class StreamCheck(Section):
    """``stream``: the two-signature ``stream.tflite`` against the step / head pair."""
    KEY = "stream"
    file: str = _key(str)
    bytes: int = _key(int)
    signatures: list = _key(list)
    argmax_agreement_with_step_head: float = _key(*_NUMBER)
    max_abs_logit_diff_vs_step_head: float = _key(*_NUMBER)
    accuracy: float = _key(*_NUMBER)
    eval_seconds: float = _key(*_NUMBER)


@_section
class SingleStepCheck(Section):
    """``tflite_micro.single_step_vs_litert``: one step's raw output, TFLite Micro against
    LiteRT, over ``pairs`` (x_t, h_t-1) pairs."""
    KEY = "tflite_micro.single_step_vs_litert"
    max_abs_diff: float = _key(*_NUMBER)
    differing_elements: int = _key(int)
    elements: int = _key(int)
    pairs: int = _key(int)


@_section
class MicroCheck(Section):
    """``tflite_micro``: the smallest arenas and the first ``test_sequences`` test sequences
    under the tflite-micro interpreter against LiteRT; ``skipped`` alone when TFLite Micro does
    not run the mode."""
    KEY = "tflite_micro"
    skipped: str = _key(str)
    arena_bytes: int = _key(int)
    head_arena_bytes: int = _key(int)
    test_sequences: int = _key(int)
    accuracy: float = _key(*_NUMBER)
    litert_accuracy_same_sequences: float = _key(*_NUMBER)
    argmax_agreement_with_litert: float = _key(*_NUMBER)
    max_abs_logit_diff_vs_litert: float = _key(*_NUMBER)
    single_step_vs_litert: SingleStepCheck = _section_key(SingleStepCheck)
    seconds: float = _key(*_NUMBER)


@_section
class Frontend(Section):
    """``frontend`` (a speech model): what a device computes before the model, in words, and
    the code that does it (``reference_code``)."""
    KEY = "frontend"
    features: str = _key(str)
    input: str = _key(str)
    pre_emphasis: str = _key(str)
    frames: str = _key(str)
    window: str = _key(str)
    fft: str = _key(str)
    mel_filters: str = _key(str)
    log: str = _key(str)
    steps: str = _key(str)
    model_input: str = _key(str)
    reference_code: str = _key(str)
    normalisation: str = _key(str)


@dataclasses.dataclass
class ModelCard:
    """``model_card.json``: how to run an export (what ``device_bench.py`` reads) and what `zoo
    export` measured. Each nested object is a typed `Section` (``card.accuracy.tflite``,
    ``card.files.step``); ``task_options`` and ``model_options`` stay JSON objects (the keyword
    arguments of the task and the model, whose keys are theirs).

    Read by the device script: ``form``, ``files`` (model name -> file), ``timesteps``,
    ``features``, ``step_io`` (form "step": input indices ``x``, ``h`` and output index
    ``h_out`` of the step model, distinct non-negative integers for the inputs), and when
    present ``quantize``, ``testset``, ``arena_bytes``, ``head_arena_bytes``.

    ``step_io.state_layout`` (a step model with more than one state part: an LSTM's h and c,
    stacked recurrent layers) lists the parts of the one state vector in order, each ``layer``,
    ``state`` (``h``, ``c``...), ``offset``, ``size`` (they tile it from 0 to ``state_size``) and
    ``scale`` (the part is held in the vector times it, a power of two). Absent, the vector is
    one recurrent layer's state. A loop feeds back the whole vector as it is.
    """

    schema_version: int = CARD_SCHEMA_VERSION
    form: str = _key(str)
    quantize: str = _key(str)
    unroll: bool = _key(bool)
    files: ModelFiles = _section_key(ModelFiles)
    timesteps: int = _key(int)
    features: int = _key(int)
    state_size: int = _key(int)
    classes: int = _key(int)
    class_names: list = _key(list)
    testset: str = _key(str)
    normalization: str = _key(str)
    task: str = _key(str)
    task_options: dict = _key(dict)
    model: str = _key(str)
    model_options: dict = _key(dict)
    run_dir: str = _key(str)
    parameters: int = _key(int)
    data: DataUsed = _section_key(DataUsed)
    weights: str = _key(str)
    bytes: ModelBytes = _section_key(ModelBytes)
    total_bytes: int = _key(int)
    ops: ModelOps = _section_key(ModelOps)
    step_io: StepIO = _section_key(StepIO)
    state_quantization: StateQuantization = _section_key(StateQuantization)
    accuracy: AccuracyCheck = _section_key(AccuracyCheck)
    stream: StreamCheck = _section_key(StreamCheck)
    arena_bytes: int = _key(int)
    head_arena_bytes: int = _key(int)
    tflite_micro: MicroCheck = _section_key(MicroCheck)
    c_sources: list = _key(list)
    export_seconds: float = _key(int, float)
    frontend: Frontend = _section_key(Frontend)
    # An export of a Keras model (`zoo export MODEL.keras`): the file it came from, and its layers
    # as the export took them (zoo.export.layer_chain.LayerChain.describe).
    keras_model: str = _key(str)
    layers: list = _key(list)
    # Keys this version does not know (a card edited by hand): kept and written back.
    extra: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        # A JSON object given for a section (``ModelCard(files={"model": ...})``) is read as it.
        for f in dataclasses.fields(self):
            object.__setattr__(self, f.name, _section_of(getattr(self, f.name), f.metadata,
                                                         CARD_FILE, f.name))

    @classmethod
    def from_dict(cls, data, source=CARD_FILE):
        """The card in ``data`` (a parsed ``model_card.json``), validated; ``source`` names the
        file in errors. Raises `CardError` naming the file and the missing or bad key."""
        if not isinstance(data, dict):
            raise CardError(f"{source}: expected a JSON object")
        version = data.get("schema_version", 0)
        if not _is_int(version) or version < 0:
            raise CardError(f"{source}: schema_version must be a non-negative integer, got "
                            f"{version!r}")
        if version > CARD_SCHEMA_VERSION:
            raise CardError(f"{source}: schema_version {version} is newer than this script reads "
                            f"({CARD_SCHEMA_VERSION}); use the device_bench.py of the zoo that "
                            "wrote the export")
        fields = {f.name: f for f in dataclasses.fields(cls) if f.name != "extra"}
        card = cls(**{k: _section_of(v, fields[k].metadata, source, k)
                      for k, v in data.items() if k in fields},
                   extra={k: v for k, v in data.items() if k not in fields})
        card.schema_version = version
        card.validate(source)
        return card

    def to_dict(self):
        """The card as ``model_card.json`` holds it: ``schema_version`` first, absent (None)
        keys left out, unknown keys kept."""
        out = {"schema_version": self.schema_version}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name not in ("schema_version", "extra") and value is not None:
                out[f.name] = _plain(value)
        out.update(self.extra)
        return out

    def validate(self, source=CARD_FILE):
        """Raise `CardError` unless the keys a device needs are there and every key present
        has its type (and, for sizes and indices, its range)."""
        if self.form not in FORMS:
            raise CardError(f"{source}: " + ("missing key 'form'" if self.form is None else
                                             f"unknown form {self.form!r}")
                            + "; expected 'sequence' or 'step'")
        needed = MODEL_NAMES[self.form]
        files = self.files
        if not isinstance(files, ModelFiles) or any(not isinstance(files.of(k), str)
                                                    for k in needed):
            raise CardError(f"{source}: 'files' must name {', '.join(needed)}"
                            + (" (missing key)" if files is None else ""))
        for key in ("timesteps", "features"):
            value = getattr(self, key)
            if not _is_int(value) or value < 1:
                raise CardError(f"{source}: {key} must be a positive integer, got {value!r}"
                                + (" (missing key)" if value is None else ""))
        if self.timesteps * self.features > MAX_WINDOW_VALUES:
            raise CardError(f"{source}: timesteps {self.timesteps} x features {self.features} "
                            f"is {self.timesteps * self.features} values per window; valid: at "
                            f"most {MAX_WINDOW_VALUES}")
        if self.form == "step":
            _check_step_io(self.step_io, source)
        for f in dataclasses.fields(self):
            types, value = f.metadata.get("types"), getattr(self, f.name)
            if "section" in f.metadata:
                types = (f.metadata["section"],)
            if types and value is not None and not _has_type(value, types):
                raise CardError(f"{source}: {f.name} must be "
                                f"{' or '.join(t.__name__ for t in types)}, got "
                                f"{type(value).__name__} {str(value)[:60]!r}")
            if "section" in f.metadata and value is not None:  # built in code: checked as read
                value.from_dict(value.to_dict(), source, f.name)
        for key in ("arena_bytes", "head_arena_bytes", "state_size", "classes"):
            value = getattr(self, key)
            if value is not None and _is_int(value) and value < 1:
                raise CardError(f"{source}: {key} must be a positive integer, got {value!r}")
        layout = self.step_io.state_layout if self.form == "step" else None
        if layout and self.state_size is not None \
                and sum(part.size for part in layout) != self.state_size:
            raise CardError(f"{source}: step_io state_layout covers "
                            f"{sum(part.size for part in layout)} values; state_size is "
                            f"{self.state_size}")


def _section_of(value, metadata, source, key):
    """``value`` of the card's key ``key``, read as its `Section` if the key holds one."""
    if "section" in metadata and value is not None and not isinstance(value, Section):
        return metadata["section"].from_dict(value, source, key)
    return value


def _check_step_io(io, source):
    """``step_io`` of a step card: integer indices ``x``, ``h`` (two different inputs) and
    ``h_out``, none negative (Python would read -1 as the last tensor, silently)."""
    if not (isinstance(io, StepIO) and all(_is_int(getattr(io, k)) for k in STEP_IO_KEYS)):
        raise CardError(f"{source}: step_io must give integer x, h and h_out"
                        + (" (missing key)" if io is None else ""))
    negative = [k for k in STEP_IO_KEYS if getattr(io, k) < 0]
    if negative:
        raise CardError(f"{source}: step_io {negative[0]} is {getattr(io, negative[0])}; tensor "
                        "indices are >= 0")
    if io.x == io.h:
        raise CardError(f"{source}: step_io x and h are both input {io.x}; they must be the "
                        "step model's two different inputs")
    if "state_layout" in io.to_dict():
        _check_state_layout(io.state_layout, source)


def _check_state_layout(layout, source):
    """``step_io.state_layout``: parts with integer ``offset`` and ``size`` tiling the state
    vector from 0, in order."""
    valid = "a list of parts with integer offset and size >= 1, each starting where the last ends"
    if not isinstance(layout, list) or not layout:
        raise CardError(f"{source}: step_io state_layout must be {valid}")
    end = 0
    for i, part in enumerate(layout):
        if not (isinstance(part, StatePart) and _is_int(part.offset) and _is_int(part.size)
                and part.size >= 1 and part.offset == end):
            shown = part.to_dict() if isinstance(part, StatePart) else part
            raise CardError(f"{source}: step_io state_layout[{i}] is {str(shown)[:80]}; valid: "
                            f"{valid}")
        end += part.size


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _has_type(value, types):
    if isinstance(value, bool):
        return bool in types
    return isinstance(value, types)


# ------------------------------------------------------------------------------------- reading
def load_card_json(card_path):
    """The JSON object in ``card_path``, unchecked against the schema (`ModelCard.from_dict`
    does that); a missing or unreadable file is a `CardError`."""
    if not os.path.isfile(card_path):
        raise CardError(f"{card_path} not found: pass a folder written by `zoo export`")
    try:
        with open(card_path) as f:
            data = json.load(f)
    except (UnicodeDecodeError, ValueError) as err:
        raise CardError(f"{card_path}: not valid JSON ({err})") from None
    if not isinstance(data, dict):
        raise CardError(f"{card_path}: expected a JSON object")
    return data


def read_export_card(export_dir):
    """The `ModelCard` of ``export_dir``, checked: the schema, model files inside the folder."""
    card_path = os.path.join(export_dir, CARD_FILE)
    card = ModelCard.from_dict(load_card_json(card_path), card_path)
    for key in MODEL_NAMES[card.form]:
        inside_folder(export_dir, card.files.of(key), card_path)
    return card


def inside_folder(export_dir, name, card_path, must_exist=True):
    """``export_dir/name``, refused unless it is a relative path that stays in the folder."""
    if not isinstance(name, str) or not name or os.path.isabs(name):
        raise ExportFolderError(f"{card_path}: file entry {name!r} must be a relative path "
                                "inside the export folder")
    root = os.path.realpath(export_dir)
    path = os.path.realpath(os.path.join(export_dir, name))
    if os.path.commonpath([root, path]) != root:
        raise ExportFolderError(f"{card_path}: file entry {name!r} points outside the export "
                                "folder; refusing to open it")
    if must_exist and not os.path.isfile(path):
        raise ExportFolderError(f"{card_path}: file entry {name!r} does not exist in "
                                f"{export_dir}")
    return path
