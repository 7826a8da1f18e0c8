"""The model card's schema (`ModelCard`, defined in card_schema.py) and the export directory
module that writes it: cards from before the schema load unchanged, a bad card is named by file
and key, a card written is the card read back. No TensorFlow, no trained model."""

import json
from pathlib import Path

import numpy as np
import pytest

from zoo.export.card import card_markdown
from zoo.export.card_schema import CARD_SCHEMA_VERSION, CardError, ModelCard, read_export_card
from zoo.export.exportdir import ExportDirectory

PRETRAINED = Path(__file__).resolve().parents[2] / "models"  # installed tags and the archive
SHIPPED = sorted(PRETRAINED.glob("*/*/export-*/model_card.json"))
LEGACY = [p for p in SHIPPED if "schema_version" not in json.loads(p.read_text())]
VERSIONED = [p for p in SHIPPED if p not in LEGACY]


def minimal(**changes) -> dict:
    card = {"form": "step", "files": {"step": "step.tflite", "head": "head.tflite"},
            "timesteps": 128, "features": 9, "step_io": {"x": 1, "h": 0, "h_out": 0}}
    card.update(changes)
    return {k: v for k, v in card.items() if v is not None}


@pytest.mark.parametrize("path", LEGACY, ids=lambda p: p.parent.parent.name)
def test_cards_from_before_the_schema_load_and_write_back_unchanged(path):
    raw = json.loads(path.read_text())
    card = read_export_card(str(path.parent))
    assert card.schema_version == 0 and card.form == "step" and card.arena_bytes > 0
    assert card.extra == {}  # every key of a shipped card is in the schema
    assert card.to_dict() == {"schema_version": 0, **raw}


@pytest.mark.parametrize("path", VERSIONED, ids=lambda p: p.parent.parent.name)
def test_shipped_cards_with_the_schema_write_back_unchanged(path):
    raw = json.loads(path.read_text())
    card = read_export_card(str(path.parent))
    assert raw["schema_version"] == card.schema_version == CARD_SCHEMA_VERSION
    assert card.extra == {} and card.to_dict() == raw


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.parent.parent.name)
def test_typed_sections_write_every_committed_card_back_in_its_order(path):
    """The sections are typed records, yet a committed card read and written is the same JSON
    (nulls kept, absent keys left out) in the same key order, nested keys included, so the
    device script and the shipped tags read exactly what they read before; a card with the
    schema is the file's very text."""
    text = path.read_text()
    raw = json.loads(text)
    written = read_export_card(str(path.parent)).to_dict()
    assert json.dumps(written) == json.dumps({"schema_version": 0, **raw}
                                             if "schema_version" not in raw else raw)
    if "schema_version" in raw:
        assert json.dumps(written, indent=2) + "\n" == text


def test_sections_are_read_by_attribute():
    card = ModelCard.from_dict(shipped_card())
    raw = shipped_card()
    assert card.accuracy.tflite == raw["accuracy"]["tflite"]
    assert card.files.step == raw["files"]["step"] and card.bytes.of("head") == raw["bytes"]["head"]
    assert card.state_quantization.h_in.dtype == raw["state_quantization"]["h_in"]["dtype"]
    assert card.tflite_micro.single_step_vs_litert.pairs == \
        raw["tflite_micro"]["single_step_vs_litert"]["pairs"]
    with pytest.raises(AttributeError, match="no key 'tflite_acc'"):
        card.accuracy.tflite_acc = 0.9  # a misspelt key is refused, not written nowhere


@pytest.mark.parametrize("section, key, value, message", [
    ("accuracy", "tflite", "high", "accuracy.tflite must be int or float, got str 'high'"),
    ("accuracy", "passed", 1, "accuracy.passed must be bool, got int '1'"),
    ("tflite_micro", "single_step_vs_litert", {"pairs": "200"},
     "tflite_micro.single_step_vs_litert.pairs must be int, got str '200'"),
    ("state_quantization", "h_in", {"scale": 0.5, "zero_point": 0.5},
     "state_quantization.h_in.zero_point must be int, got float '0.5'"),
    ("step_io", "state_layout", [{"offset": 0, "size": "8"}],
     "step_io.state_layout[0].size must be int, got str '8'"),
    ("stream", None, [1], "stream must be a JSON object, got list '[1]'"),
])
def test_a_wrong_typed_nested_key_is_named_by_file_and_dotted_key(tmp_path, section, key, value,
                                                                  message):
    data = shipped_card()
    if key is None:
        data[section] = value
    else:
        data[section] = {**data[section], key: value}
    export = ExportDirectory(tmp_path)
    export.card.write_text(json.dumps(data))
    with pytest.raises(CardError) as err:
        read_export_card(str(export.root))
    assert str(err.value) == f"{export.card}: {message}"


def test_a_section_built_in_code_is_checked_before_it_is_written(tmp_path):
    card = ModelCard.from_dict(shipped_card())
    card.tflite_micro.single_step_vs_litert.pairs = "200"
    export = ExportDirectory(tmp_path)
    with pytest.raises(CardError, match="tflite_micro.single_step_vs_litert.pairs must be int"):
        export.write_card(card, card_markdown(card))
    assert not export.card.exists()


def test_unknown_nested_keys_are_kept_and_written_back(tmp_path):
    """A card edited by hand or written by a newer zoo: the keys a section does not know
    survive a read and a write, where they were."""
    data = shipped_card()
    data["accuracy"]["note"] = "checked by hand"
    data["tflite_micro"]["single_step_vs_litert"]["newer"] = [1, 2]
    data["state_quantization"]["h_in"]["axis"] = None
    data["files"]["extra_model"] = "extra.tflite"
    data["bytes"]["extra_model"] = 5
    card = ModelCard.from_dict(data)
    assert card.accuracy.extra == {"note": "checked by hand"}
    assert card.files.of("extra_model") == "extra.tflite"
    export = ExportDirectory(tmp_path)
    export.write_models({"step": b"step", "head": b"head"})
    export.write_card(card, card_markdown(card))
    assert json.loads(export.card.read_text()) == {"schema_version": 0, **data}


def test_a_null_key_stays_null_and_an_absent_key_stays_absent():
    """The exporter writes ``"tflite": null`` for a test set without labels and a skipped
    TFLite Micro check as ``skipped`` alone: the typed record keeps the difference."""
    data = shipped_card()
    data["accuracy"].update(tflite=None, drop_points=None)
    data["tflite_micro"] = {"skipped": "TFLite Micro does not run float16 models"}
    card = ModelCard.from_dict(data)
    assert card.accuracy.tflite is None and card.tflite_micro.arena_bytes is None
    out = card.to_dict()
    assert out["accuracy"]["tflite"] is None and "tflite" in out["accuracy"]
    assert out["tflite_micro"] == data["tflite_micro"]

@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.parent.parent.name)
def test_shipped_markdown_is_what_its_json_card_writes_today(path):
    """A shipped model_card.md is regenerated (and its sha256 in the tag's card.json updated)
    whenever the card's wording changes, so a user reads the words the zoo prints now."""
    card = read_export_card(str(path.parent))
    assert (path.parent / "model_card.md").read_text() == card_markdown(card)


def test_shipped_cards_are_found():
    assert len(LEGACY) >= 4 and len(VERSIONED) >= 2, PRETRAINED


def shipped_card() -> dict:
    """A complete card as `zoo export` writes it (a shipped one, from before the schema)."""
    return json.loads(LEGACY[0].read_text())


def test_a_written_card_reads_back_equal(tmp_path):
    card = ModelCard.from_dict({**shipped_card(), "frontend": {"log": "ln"}, "note": "kept"})
    card.schema_version = CARD_SCHEMA_VERSION
    export = ExportDirectory(tmp_path)
    assert export.write_models({"step": b"step", "head": b"head"}) == card.files
    export.write_card(card, card_markdown(card))
    on_disk = json.loads(export.card.read_text())
    assert list(on_disk)[0] == "schema_version" and on_disk["schema_version"] == 1
    assert on_disk["note"] == "kept"  # a key this version does not know survives
    assert on_disk == {"schema_version": 1, **shipped_card(), "frontend": {"log": "ln"},
                       "note": "kept"}
    assert read_export_card(str(export.root)) == card
    assert export.card_markdown.read_text().startswith(f"# {card.model} on {card.task}")


@pytest.mark.parametrize("data, message", [
    (minimal(timesteps=None), "timesteps must be a positive integer, got None (missing key)"),
    (minimal(files={"step": "step.tflite"}), "'files' must name step, head"),
    (minimal(step_io={"x": 1, "h": 0}), "step_io must give integer x, h and h_out"),
    (minimal(form="window"), "unknown form 'window'"),
    (minimal(form=None), "missing key 'form'"),
    (minimal(arena_bytes="4096"), "arena_bytes must be int, got str '4096'"),
    (minimal(unroll=1), "unroll must be bool, got int"),
    (minimal(parameters=True), "parameters must be int, got bool"),
    (minimal(schema_version=CARD_SCHEMA_VERSION + 1), "newer than this script reads"),
    (minimal(schema_version="1"), "schema_version must be a non-negative integer"),
    ([1, 2], "expected a JSON object"),
])
def test_a_bad_card_is_named_by_file_and_key(data, message):
    with pytest.raises(CardError, match="^exports/a/model_card.json: ") as err:
        ModelCard.from_dict(data, "exports/a/model_card.json")
    assert message in str(err.value)
    assert isinstance(err.value, ValueError)  # the zoo's commands report it as a usage error


def test_read_card_names_the_file_of_a_damaged_card(tmp_path):
    export = ExportDirectory(tmp_path)
    export.card.write_text("{not json")
    with pytest.raises(CardError, match=f"{export.card}: not valid JSON"):
        read_export_card(str(export.root))
    export.card.write_text(json.dumps(minimal(features=0)))
    with pytest.raises(CardError, match=f"{export.card}: features must be a positive integer"):
        read_export_card(str(export.root))


def test_testset_round_trip(tmp_path):
    export = ExportDirectory(tmp_path)
    x, y = np.zeros((3, 128, 9), np.float32), np.array([0, 1, 1])
    card = ModelCard.from_dict(minimal(testset=export.write_testset(x, y)))
    got_x, got_y = export.read_testset(card)
    assert got_x.dtype == np.float32 and got_x.shape == x.shape and got_y.tolist() == [0, 1, 1]


def test_a_failed_export_says_failed_in_the_first_line_of_its_markdown():
    from zoo.export.card import card_markdown

    card = ModelCard.from_dict(shipped_card())
    assert "FAILED" not in card_markdown(card)
    card.accuracy.drop_points, card.accuracy.max_drop_points = 2.5, 1.0
    card.accuracy.passed = False
    first = card_markdown(card).splitlines()[0]
    assert first.startswith("# FAILED: ") and f"{card.model} on {card.task}" in first
    assert "2.50 points below" in first and "allowed 1.0" in first


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.parent.parent.name)
def test_markdown_says_above_or_below_the_float_model_in_words(path):
    """Issue 22: "drop -0.98 points" read as a loss where int8 was better. The row says how far
    and on which side, as the card's own accuracies put it."""
    card = read_export_card(str(path.parent))
    acc = card.accuracy
    points = 100 * (acc.tflite - acc.keras_float)
    row = next(line for line in card_markdown(card).splitlines()
               if line.startswith("| TFLite accuracy"))
    if round(points, 2) == 0:
        assert "the same as the float model" in row, row
    else:
        side = "above" if points > 0 else "below"
        assert f"{abs(points):.2f} points {side} the float model" in row, row
    assert "drop -" not in row and "drop +" not in row


def test_a_better_int8_model_reads_above_not_a_negative_drop():
    from zoo.export.card import versus_float

    card = ModelCard.from_dict(shipped_card())
    card.accuracy.keras_float, card.accuracy.tflite = 0.78, 0.80
    card.accuracy.drop_points = 100 * (0.78 - 0.80)
    assert "2.00 points above the float model" in card_markdown(card)
    assert versus_float(0.5) == "0.50 points below the float model"


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.parent.parent.name)
def test_markdown_puts_micro_and_litert_accuracy_on_the_same_sequences(path):
    """Issue 22: TFLite Micro's accuracy on the first 200 windows beside LiteRT's on all 410 read
    as a 7-point loss. Each accuracy says which windows it is on, and LiteRT's on TFLite Micro's
    windows stands beside it; the numbers are the card's, the count its test set's."""
    card = read_export_card(str(path.parent))
    total = card.data.test  # the test split's size, as write_artifacts recorded it
    micro, rows = card.tflite_micro, card_markdown(card).splitlines()
    lite_row = next(r for r in rows if r.startswith("| TFLite accuracy"))
    micro_row = next(r for r in rows if r.startswith("| TFLite Micro accuracy"))
    assert f"{100 * card.accuracy.tflite:.2f}% on all {total} test sequences" in lite_row
    n = micro.test_sequences
    assert n < total
    assert (f"{100 * micro.accuracy:.2f}% on the first {n} of {total} test sequences "
            f"(LiteRT {100 * micro.litert_accuracy_same_sequences:.2f}% on the same {n}"
            ) in micro_row, micro_row
