"""`zoo export --form c` checks what it is given before it trusts it (issue 32): a shipped tag's
export, or a step export, whose card does not match its models (swapped ``step_io``, an absurd
``timesteps``, another cell's ``step.tflite``, a file edited after shipping), a failed export, a
damaged one, a tag without a step export: each is one line naming the file and field, never C
that computes another model, a traceback or a download. A shipped tag is checked against its
test windows when the data is at hand (issue 31).

The sources are copies of the shipped ``sirnn.har2_gen1`` (and ``gru.har2_gen1``) tags: real models whose
cards and sha256 are known, so every expectation is independent of the code under test."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from zoo.export.c_backend import CExportError, c_names
from zoo.export.c_backend.command import export_c

REPO = Path(__file__).resolve().parents[2]
PRETRAINED = REPO / "models" / "pretrained"
ARCHIVE = REPO / "models" / "archive"  # the earlier generations (not installed)


def copy_tag(tag: str, dest: Path, with_tag_card: bool = True) -> Path:
    """A copy of ``tag``'s card.json and export-step-int8 (the tag folder), or of the step export
    alone (a plain step export, no tag card). An installed tag or an archived one."""
    folder = (PRETRAINED if (PRETRAINED / tag).is_dir() else ARCHIVE) / tag
    if not with_tag_card:
        return Path(shutil.copytree(folder / "export-step-int8", dest))
    dest.mkdir()
    shutil.copy(folder / "card.json", dest / "card.json")
    shutil.copytree(folder / "export-step-int8", dest / "export-step-int8")
    return dest


def edit_card(step_dir: Path, **changes) -> None:
    path = step_dir / "model_card.json"
    card = json.loads(path.read_text())
    for key, value in changes.items():
        if value is None:
            card.pop(key, None)
        else:
            card[key] = value
    path.write_text(json.dumps(card))


def export_fails(source: Path, tmp_path: Path, **options) -> str:
    with pytest.raises(CExportError) as err:
        export_c(source, tmp_path / "c-out", check=False, **options)
    assert not (tmp_path / "c-out").exists()
    return str(err.value)


def swapped_step_io(step: Path) -> None:
    edit_card(step, step_io={"x": 0, "h": 1, "h_out": 0})


def absurd_timesteps(step: Path) -> None:
    edit_card(step, timesteps=10 ** 9)


def other_cell_no_bytes(step: Path) -> None:
    shutil.copy(ARCHIVE / "gru.har2_gen1" / "export-step-int8" / "step.tflite", step / "step.tflite")
    edit_card(step, bytes=None)


def other_cell_only_ops(step: Path) -> None:
    other_cell_no_bytes(step)
    edit_card(step, state_quantization=None)


def other_cell(step: Path) -> None:
    shutil.copy(ARCHIVE / "gru.har2_gen1" / "export-step-int8" / "step.tflite", step / "step.tflite")


def other_x_scale(step: Path) -> None:
    card = json.loads((step / "model_card.json").read_text())
    card["state_quantization"]["x"]["scale"] *= 2
    edit_card(step, state_quantization=card["state_quantization"])


def other_classes(step: Path) -> None:
    edit_card(step, classes=3, class_names=None)


# (edit of a plain step export, words the one-line error must hold)
CARD_VS_MODEL = {
    "swapped-step_io": (swapped_step_io, ["model_card.json", "features is 9", "step_io x",
                                          "swapped"]),
    "absurd-timesteps": (absurd_timesteps, ["model_card.json", "timesteps 1000000000",
                                            "values per window"]),
    "gru-step-under-sirnn-card": (other_cell, ["model_card.json", "bytes.step is 7856",
                                               "step.tflite has 28872 bytes"]),
    "gru-step-card-without-bytes": (other_cell_no_bytes, ["model_card.json",
                                                          "state_quantization.h_in.scale",
                                                          "step.tflite"]),
    "gru-step-card-with-only-ops": (other_cell_only_ops, ["model_card.json", "ops.step",
                                                          "LOGISTIC", "step.tflite"]),
    "x-scale-edited": (other_x_scale, ["state_quantization.x.scale", "step.tflite"]),
    "classes-edited": (other_classes, ["classes is 3", "head.tflite gives 2 logits"]),
}


def refused_naming(change, words, tmp_path) -> str:
    """A copy of the shipped step export, ``change``d, refused in one line naming ``words``."""
    step = copy_tag("sirnn.har2_gen1", tmp_path / "step", with_tag_card=False)
    change(step)
    message = export_fails(step, tmp_path)
    assert "\n" not in message and all(w in message for w in words), message
    return message


@pytest.mark.parametrize("case", list(CARD_VS_MODEL))
def test_a_card_that_does_not_match_its_models_is_refused(case, tmp_path):
    refused_naming(*CARD_VS_MODEL[case], tmp_path)


def test_a_shipped_tag_whose_model_was_replaced_is_refused_by_its_sha256(tmp_path):
    tag = copy_tag("sirnn.har2_gen1", tmp_path / "sirnn.har2_gen1")
    data = (ARCHIVE / "sirnn.har2_gen1" / "export-step-int8" / "step.tflite").read_bytes()
    (tag / "export-step-int8" / "step.tflite").write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    message = export_fails(tag, tmp_path)
    assert "step.tflite: sha256" in message and "card.json says" in message, message


def test_a_shipped_tag_whose_card_disagrees_with_its_input_shape_is_refused(tmp_path):
    tag = copy_tag("sirnn.har2_gen1", tmp_path / "sirnn.har2_gen1")
    card = tag / "card.json"
    data = json.loads(card.read_text())
    data["input_shape"] = [64, 9]
    card.write_text(json.dumps(data))
    message = export_fails(tag, tmp_path)
    assert "input_shape [64, 9]" in message and "128 x 9" in message, message


def test_a_failed_export_is_not_a_c_source_unless_the_drop_is_allowed(tmp_path):
    step = copy_tag("sirnn.har2_gen1", tmp_path / "step", with_tag_card=False)
    card = json.loads((step / "model_card.json").read_text())
    edit_card(step, accuracy={**card["accuracy"], "passed": False, "drop_points": 7.13})
    message = export_fails(step, tmp_path)
    assert "accuracy.passed false" in message and "--allow-drop" in message, message
    summary = export_c(step, tmp_path / "allowed", check=False, allow_drop=True)
    assert summary["units"] == 80


def truncated_step(step: Path) -> None:
    data = (step / "step.tflite").read_bytes()
    (step / "step.tflite").write_bytes(data[: len(data) // 3])


def step_io_missing(step: Path) -> None:
    edit_card(step, step_io=None)


def normalization_not_json(step: Path) -> None:
    (step / "normalization.json").write_text("{mean: ")


def std_underflows_float32(step: Path) -> None:
    norm = json.loads((step / "normalization.json").read_text())
    norm["std"][0] = 1e-300  # > 0 as a double, 0 as the float32 the C code divides by
    (step / "normalization.json").write_text(json.dumps(norm))


def normalization_too_short(step: Path) -> None:
    norm = json.loads((step / "normalization.json").read_text())
    (step / "normalization.json").write_text(json.dumps({**norm, "mean": norm["mean"][:5],
                                                         "std": norm["std"][:5]}))


def file_outside(step: Path) -> None:
    edit_card(step, files={"step": "../step.tflite", "head": "head.tflite"})


DAMAGED = {
    "truncated-step": (truncated_step, ["step.tflite", "damaged TFLite model"]),
    "step_io-missing": (step_io_missing, ["model_card.json", "step_io"]),
    "normalization-not-json": (normalization_not_json, ["normalization.json"]),
    "std-0-in-float32": (std_underflows_float32, ["normalization.json", "std[0]"]),
    "normalization-5-features": (normalization_too_short, ["normalization.json", "5 features"]),
    "file-outside-the-folder": (file_outside, ["model_card.json", "outside"]),
}


@pytest.mark.parametrize("case", list(DAMAGED))
def test_a_damaged_step_export_is_one_line_naming_the_file(case, tmp_path):
    assert "bug in the C backend" not in refused_naming(*DAMAGED[case], tmp_path)


def test_a_damaged_test_set_is_named_where_it_is(tmp_path):
    step = copy_tag("sirnn.har2_gen1", tmp_path / "step", with_tag_card=False)
    (step / "testset.npz").write_bytes(b"PK\x03\x04 not really a zip")
    edit_card(step, testset="testset.npz")
    message = export_fails(step, tmp_path)
    assert message.startswith(str(step / "testset.npz")) and "damaged" in message, message


def test_a_tag_without_a_step_export_is_refused_without_looking_for_its_data(tmp_path,
                                                                              monkeypatch):
    from zoo.training.data import download

    def no_download(*args, **kwargs):
        raise AssertionError("the C export tried to download a dataset")

    monkeypatch.setattr(download, "download", no_download)
    tag = tmp_path / "dscnn.kws12"
    tag.mkdir()
    shutil.copy(PRETRAINED / tag.name / "card.json", tag / "card.json")
    shutil.copytree(PRETRAINED / tag.name / "export-sequence-int8", tag / "export-sequence-int8")
    message = export_fails(tag, tmp_path)
    assert "shipped tag" in message and "export-sequence-int8" in message, message


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("make") is None,
                    reason="the check builds zoo_app with the host cc and make")
@pytest.mark.parametrize("tag", ["sirnn.har2_gen1", "gru.har2_gen1"])
def test_a_shipped_tag_is_checked_on_the_test_windows_of_the_data_at_hand(tag, tmp_path,
                                                                         shared_data,
                                                                         card_reads):
    """Through the command, as a user runs it; its export's model_card.json is parsed once in
    the whole command (issue 43 item 3: it was 6 times)."""
    from edge_rnn_zoo.cli import main

    source = copy_tag(tag, tmp_path / tag)
    assert main(["export", str(source), "--form", "c", "--out", str(tmp_path / "c"),
                 "--data-dir", str(shared_data / "har")]) == 0
    assert card_reads == [str(source / "export-step-int8" / "model_card.json")]
    summary = json.loads((tmp_path / "c" / "c_check.json").read_text())
    check = summary["check"]
    # HAR's official test split on the shared subset: 701 windows (tests/export/conftest.py)
    assert check["windows"] == 701, check
    assert check["identical_logits"] == check["identical_states"] == 701, check
    assert check["identical_logits_raw_float_input"] == 701, check
    assert "data" in check["windows_from"]


@pytest.mark.parametrize("tag", ["sirnn.har2", "gru.har2"])
def test_a_shipped_tag_s_test_windows_are_its_task_s_as_its_model_takes_them(tag, shared_data):
    """The windows the C check runs are the task's test windows normalized as the tag's model
    takes them: through the Keras model without its normalization layer they score exactly
    the visible test accuracy the card recorded at training time."""
    import numpy as np

    import zoo
    from zoo.export.c_backend.project import read_normalization, read_step_export
    from zoo.export.c_backend.shipped import test_windows
    from zoo.pretrained import load_pretrained

    step = PRETRAINED / tag / "export-step-int8"
    card = read_step_export(step)
    x, y, why = test_windows(card, read_normalization(step, card), shared_data / "har")
    assert why is None and len(x) == 701
    logits = load_pretrained(tag, normalize=False).predict(x, batch_size=256, verbose=0)
    accuracy = 100 * float(np.mean(logits.argmax(-1) == y))
    recorded = zoo.get_pretrained_cfg(tag).metrics.test_accuracy_visible
    assert accuracy == pytest.approx(recorded, abs=100 / 701 + 0.005)  # as test_pretrained.py


def test_a_shipped_tag_without_its_data_at_hand_says_so_and_downloads_nothing(tmp_path,
                                                                             monkeypatch, caplog):
    from zoo.training.data import download

    def no_download(*args, **kwargs):
        raise AssertionError("the C export tried to download a dataset")

    monkeypatch.setattr(download, "download", no_download)
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "empty"))
    (tmp_path / "empty").mkdir()
    source = copy_tag("sirnn.har2_gen1", tmp_path / "sirnn.har2_gen1")
    with caplog.at_level(logging.INFO, logger="zoo.export.c_backend.command"):
        summary = export_c(source, tmp_path / "c")
    assert "not at hand" in summary["check"]["skipped"] and "--data-dir" in summary["check"][
        "skipped"]
    assert "no C check on test windows" in caplog.text, caplog.text
    # ... and how to get it (issue 43 item 7: a newcomer was not told)
    assert "Download https://archive.ics.uci.edu" in summary["check"]["skipped"]
    assert "\n" not in summary["check"]["skipped"]
    assert np.all([(tmp_path / "c" / name).is_file() for name in (c_names(tmp_path / "c")[2], "main.c")])


def test_unroll_with_form_c_is_refused_not_dropped(tmp_path, capsys):
    """--unroll is a sequence-form option; with --form c it was silently ignored."""
    from edge_rnn_zoo.cli import main

    tag = Path(__file__).resolve().parents[2] / "models" / "pretrained" / "sirnn.har2"
    code = main(["export", str(tag), "--form", "c", "--unroll", "--out", str(tmp_path / "c")])
    assert code == 2
    assert "--unroll applies to --form sequence" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()
