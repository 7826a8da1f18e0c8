"""The export directory ``zoo export`` writes: the one place its file names are used, with its
readers and writers (see `ExportDirectory`).

The names a device reads (card, models, test set, normalization) and the card's schema
(`ModelCard`) are defined in ``export/card_schema.py`` (standard library only: it is copied to
devices beside ``device_bench.py``); they are re-exported here, beside the names only the zoo
writes (C sources, the ownership marker).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from zoo.export.card_schema import (CARD_FILE, CARD_MARKDOWN_FILE, CARD_SCHEMA_VERSION, FORMS,
                                MODEL_NAMES, NORMALIZATION_FILE, STREAM_FILE, TESTSET_FILE,
                                CardError, ModelCard, ModelFiles, load_card_json, model_file,
                                read_export_card)
from zoo.export.device_bench import load_testset
from zoo.core import storage

__all__ = ["ExportDirectory", "ModelCard", "CardError", "CARD_SCHEMA_VERSION", "FORMS",
           "MODEL_NAMES", "C_ARRAY_STEM", "C_ARRAY_FILES", "MAIN_SOURCE", "STREAM_HEADER",
           "SELF_TEST_SOURCE", "MAKEFILE", "DEVICE_SOURCES", "MARKER", "CARD_FILE",
           "TESTSET_FILE", "NORMALIZATION_FILE", "STREAM_FILE", "model_file"]

# TFLite Micro C arrays of the models (`zoo.export.micro.c_array_sources`).
C_ARRAY_STEM = "model_data"
C_ARRAY_FILES = (f"{C_ARRAY_STEM}.h", f"{C_ARRAY_STEM}.cc")
# The C++ streaming loop of a step export and its host build (`zoo.export.device_sources`).
MAIN_SOURCE = "main.cc"
STREAM_HEADER = "zoo_stream.h"
SELF_TEST_SOURCE = "self_test.cc"
MAKEFILE = "Makefile"
DEVICE_SOURCES = (MAIN_SOURCE, SELF_TEST_SOURCE, STREAM_HEADER, MAKEFILE)
MARKER = storage.EXPORT_MARKER


@dataclass(frozen=True)
class ExportDirectory:
    """The files of an export directory::

        model.tflite                   form "sequence"
        step.tflite, head.tflite       form "step", and stream.tflite (both as signatures)
        normalization.json, testset.npz
        model_card.json / .md          the `ModelCard`, and the same for people
        model_data.h / .cc             the models as C arrays
        main.cc, zoo_stream.h, self_test.cc, Makefile   form "step": the C++ loop
        .zoo-export                    the marker: the zoo wrote this folder

    Example:
        >>> ExportDirectory("runs/har2-sirnn/export-step-int8").card.name
        'model_card.json'
    """

    root: Path

    def __post_init__(self):
        object.__setattr__(self, "root", Path(self.root))

    card = property(lambda self: self.root / CARD_FILE)
    card_markdown = property(lambda self: self.root / CARD_MARKDOWN_FILE)
    normalization = property(lambda self: self.root / NORMALIZATION_FILE)
    testset = property(lambda self: self.root / TESTSET_FILE)
    stream = property(lambda self: self.root / STREAM_FILE)

    def model(self, name: str) -> Path:
        """The file of model ``name`` (``"model"``, ``"step"``, ``"head"``)."""
        return self.root / model_file(name)

    def has_card(self) -> bool:
        """Whether the directory holds a card (a finished export: the card is written last)."""
        return self.card.is_file()

    # ------------------------------------------------------------------------------ reading
    def read_card_json(self) -> dict:
        """The card's JSON object, not yet checked against the schema (for a caller whose
        first question is one key, e.g. the form)."""
        return load_card_json(str(self.card))

    def read_testset(self, card: ModelCard) -> tuple[np.ndarray, np.ndarray]:
        """(x float32 [N, T, d], already normalised; y [N], or None without labels) of the
        card's test set."""
        x, y = load_testset(str(self.root), card)
        if x is None:
            raise FileNotFoundError(f"{self.testset}: the export has no test set")
        return x, y

    # ------------------------------------------------------------------------------ writing
    def write_models(self, models: dict[str, bytes]) -> ModelFiles:
        """Write each TFLite model; returns the card's ``files`` (model name -> file name)."""
        for name, tflite in models.items():
            self.model(name).write_bytes(tflite)
        return ModelFiles(**{name: self.model(name).name for name in models})

    def write_stream(self, tflite: bytes) -> str:
        self.stream.write_bytes(tflite)
        return self.stream.name

    def write_normalization(self, norm) -> str:
        """``norm`` (a `zoo.training.tasks.Normalization`) as ``normalization.json``."""
        norm.save(self.normalization)
        return self.normalization.name

    def write_testset(self, x: np.ndarray, y: np.ndarray | None) -> str:
        """``x`` (normalised) and the labels ``y`` (left out when there are none)."""
        labels = {} if y is None else {"y": y.astype(np.int64)}
        np.savez_compressed(self.testset, x=x, **labels)
        return self.testset.name

    def write_sources(self, texts: dict[str, str]) -> list[str]:
        """Write generated sources (file name -> text); returns their names in order."""
        for name, text in texts.items():
            (self.root / name).write_text(text)
        return list(texts)

    def write_card(self, card: ModelCard, markdown: str) -> None:
        """``model_card.json`` and ``model_card.md`` (``markdown``, from
        `zoo.export.card.card_markdown`, which reads this module's names: so the text is passed in
        rather than rendered here), each replaced atomically (a card may be rewritten in a
        finished export, e.g. with a front-end description added)."""
        card.validate(str(self.card))
        storage.write_json_atomic(self.card, card.to_dict())
        storage.write_text_atomic(self.card_markdown, markdown)

    def write_marker(self, atomic: bool = True) -> None:
        """Mark the directory as the zoo's (only such a directory is replaced by --overwrite).
        The marker is always written atomically; ``atomic`` is kept for older callers."""
        storage.write_marker(self.root, MARKER)

    def has_marker(self) -> bool:
        return storage.owned(self.root, MARKER)
