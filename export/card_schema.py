"""The export contract: the file names of an export folder and its ``model_card.json`` schema
(`ModelCard`), read and checked.

Standard library only, on purpose: ``device_bench.py`` (and its ``device_runtime.py``) import it,
and the three files are copied to a device side by side (a Raspberry Pi with numpy and a TFLite
runtime, no TensorFlow, no zoo); the zoo's exporter, its readers and its tests import the same
module, so there is one contract.

Example:
    >>> card = ModelCard.from_dict({"form": "sequence", "files": {"model": "model.tflite"},
    ...                             "timesteps": 128, "features": 9})
    >>> card.schema_version, card.to_dict()["files"]
    (0, {'model': 'model.tflite'})
"""

from __future__ import annotations

import dataclasses
import json
import os

__all__ = ["CARD_FILE", "CARD_MARKDOWN_FILE", "NORMALIZATION_FILE", "TESTSET_FILE", "STREAM_FILE",
           "FORMS", "MODEL_NAMES", "CARD_SCHEMA_VERSION", "ExportFolderError", "CardError",
           "ModelCard", "model_file", "load_card_json", "read_export_card", "inside_folder"]

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


@dataclasses.dataclass
class ModelCard:
    """``model_card.json``: how to run an export (what ``device_bench.py`` reads) and what `zoo
    export` measured. Nested sections stay JSON objects; export/exporter.py documents their keys.

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
    files: dict = _key(dict)
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
    data: dict = _key(dict)
    weights: str = _key(str)
    bytes: dict = _key(dict)
    total_bytes: int = _key(int)
    ops: dict = _key(dict)
    step_io: dict = _key(dict)
    state_quantization: dict = _key(dict)
    accuracy: dict = _key(dict)
    stream: dict = _key(dict)
    arena_bytes: int = _key(int)
    head_arena_bytes: int = _key(int)
    tflite_micro: dict = _key(dict)
    c_sources: list = _key(list)
    export_seconds: float = _key(int, float)
    frontend: dict = _key(dict)
    # An export of a Keras model (`zoo export MODEL.keras`): the file it came from, and its layers
    # as the export took them (zoo.export.layer_chain.LayerChain.describe).
    keras_model: str = _key(str)
    layers: list = _key(list)
    # Keys this version does not know (a card edited by hand): kept and written back.
    extra: dict = dataclasses.field(default_factory=dict)

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
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        card = cls(**{k: v for k, v in data.items() if k in names},
                   extra={k: v for k, v in data.items() if k not in names})
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
                out[f.name] = value
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
        if not isinstance(files, dict) or any(not isinstance(files.get(k), str) for k in needed):
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
            if types and value is not None and not _has_type(value, types):
                raise CardError(f"{source}: {f.name} must be "
                                f"{' or '.join(t.__name__ for t in types)}, got "
                                f"{type(value).__name__} {str(value)[:60]!r}")
        for key in ("arena_bytes", "head_arena_bytes", "state_size", "classes"):
            value = getattr(self, key)
            if value is not None and _is_int(value) and value < 1:
                raise CardError(f"{source}: {key} must be a positive integer, got {value!r}")
        layout = (self.step_io or {}).get("state_layout") if self.form == "step" else None
        if layout and self.state_size is not None \
                and sum(part["size"] for part in layout) != self.state_size:
            raise CardError(f"{source}: step_io state_layout covers "
                            f"{sum(part['size'] for part in layout)} values; state_size is "
                            f"{self.state_size}")


def _check_step_io(io, source):
    """``step_io`` of a step card: integer indices ``x``, ``h`` (two different inputs) and
    ``h_out``, none negative (Python would read -1 as the last tensor, silently)."""
    if not (isinstance(io, dict) and all(_is_int(io.get(k)) for k in STEP_IO_KEYS)):
        raise CardError(f"{source}: step_io must give integer x, h and h_out"
                        + (" (missing key)" if io is None else ""))
    negative = [k for k in STEP_IO_KEYS if io[k] < 0]
    if negative:
        raise CardError(f"{source}: step_io {negative[0]} is {io[negative[0]]}; tensor indices "
                        "are >= 0")
    if io["x"] == io["h"]:
        raise CardError(f"{source}: step_io x and h are both input {io['x']}; they must be the "
                        "step model's two different inputs")
    if "state_layout" in io:
        _check_state_layout(io["state_layout"], source)


def _check_state_layout(layout, source):
    """``step_io.state_layout``: parts with integer ``offset`` and ``size`` tiling the state
    vector from 0, in order."""
    valid = "a list of parts with integer offset and size >= 1, each starting where the last ends"
    if not isinstance(layout, list) or not layout:
        raise CardError(f"{source}: step_io state_layout must be {valid}")
    end = 0
    for i, part in enumerate(layout):
        if not (isinstance(part, dict) and _is_int(part.get("offset"))
                and _is_int(part.get("size")) and part["size"] >= 1 and part["offset"] == end):
            raise CardError(f"{source}: step_io state_layout[{i}] is {str(part)[:80]}; valid: "
                            f"{valid}")
        end += part["size"]


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
        inside_folder(export_dir, card.files[key], card_path)
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
