"""The pretrained loader trusts its card no further than it checks it (issue 44 item 4): the card's
``files`` must cover ``model.keras`` and ``normalization.json`` and stay inside the tag folder,
``files: null`` is no card, the card's ``input_shape`` and ``num_classes`` must be the model's,
and a damaged model or normalization (its sha256 rewritten to match) is named. Every damage is a
one-line ValueError naming the file, never a traceback from deep inside Keras or a file read
outside the tag."""

import hashlib
import json
import shutil
from pathlib import Path

import pytest

import zoo
from zoo import pretrained

SHIPPED = Path(__file__).resolve().parents[2] / "models" / "pretrained"
TAG = "gru.har2"


@pytest.fixture
def tag(tmp_path, monkeypatch):
    """A copy of the shipped ``gru.har2`` as the only pretrained tag."""
    root = tmp_path / "pretrained"
    shutil.copytree(SHIPPED / TAG, root / TAG)
    monkeypatch.setattr(pretrained, "pretrained_root", lambda: root)
    return root / TAG


def _edit_card(folder: Path, **changes) -> Path:
    path = folder / "card.json"
    card = json.loads(path.read_text())
    card.update(changes)
    path.write_text(json.dumps(card))
    return path


def _files(folder: Path) -> dict:
    return json.loads((folder / "card.json").read_text())["files"]


def _refused(match: str) -> str:
    with pytest.raises(ValueError, match=match) as err:
        zoo.create_model("gru", pretrained="har2")
    message = str(err.value)
    assert "\n" not in message, message
    return message


@pytest.mark.parametrize("left_out", ["model.keras", "normalization.json"])
def test_files_must_cover_the_model_and_its_normalization(tag, left_out):
    files = {k: v for k, v in _files(tag).items() if k != left_out}
    card = _edit_card(tag, files=files)
    message = _refused(f"files does not list {left_out}")
    assert str(card) in message


@pytest.mark.parametrize("entry", ["/etc/hostname", "../../x", "export-step-int8/../../../x"])
def test_a_file_entry_outside_the_tag_folder_is_refused_unopened(tag, entry, monkeypatch):
    card = _edit_card(tag, files={**_files(tag), entry: "0" * 64})
    opened = []
    real_sha256 = pretrained.sha256
    monkeypatch.setattr(pretrained, "sha256", lambda p: opened.append(p) or real_sha256(p))
    message = _refused("outside the tag folder")
    assert str(card) in message and repr(entry) in message
    assert all(Path(p).resolve().is_relative_to(tag.resolve()) for p in opened)


def test_a_symlink_out_of_the_tag_folder_is_refused(tag, tmp_path):
    outside = tmp_path / "outside.json"
    shutil.copy(tag / "normalization.json", outside)
    (tag / "normalization.json").unlink()
    (tag / "normalization.json").symlink_to(outside)
    _refused("outside the tag folder")


@pytest.mark.parametrize("files", [None, [], {"model.keras": 5}])
def test_a_files_entry_that_is_no_file_list(tag, files):
    card = _edit_card(tag, files=files)
    message = _refused("files must map")
    assert str(card) in message
    assert zoo.list_pretrained() == []  # left out of the listing, with its warning


def test_an_input_shape_other_than_the_models(tag):
    card = _edit_card(tag, input_shape=[64, 9])
    message = _refused(r"input_shape \[64, 9\], but the model .* takes \(128, 9\)")
    assert str(card) in message


def test_a_num_classes_other_than_the_models(tag):
    card = _edit_card(tag, num_classes=6, class_names=list("abcdef"))
    message = _refused("num_classes 6, but the model .* has 2 outputs")
    assert str(card) in message


@pytest.mark.parametrize("value", [[128], ["a", 9], [0, 9], "128x9"])
def test_an_input_shape_that_is_no_shape(tag, value):
    card = _edit_card(tag, input_shape=value)
    assert str(card) in _refused("input_shape must be")


@pytest.mark.parametrize("value", [0, "2", 2.0, True])
def test_a_num_classes_that_is_no_count(tag, value):
    card = _edit_card(tag, num_classes=value)
    assert str(card) in _refused("num_classes must be")


def _rehash(folder: Path, name: str) -> None:
    files = _files(folder)
    files[name] = hashlib.sha256((folder / name).read_bytes()).hexdigest()
    _edit_card(folder, files=files)


@pytest.mark.parametrize("damage", [b"not a zip", None])
def test_a_damaged_model_whose_card_was_rehashed(tag, damage):
    model = tag / "model.keras"
    data = model.read_bytes()
    model.write_bytes(damage if damage is not None else data[: len(data) // 2])
    _rehash(tag, "model.keras")
    message = _refused("is not a loadable Keras model")
    assert str(model) in message


@pytest.mark.parametrize("text", ['{"mean": [0.0]}', "[1, 2]", "{not json", '{"mean": [1], "std": [1]}'])
def test_a_damaged_normalization_whose_card_was_rehashed(tag, text):
    (tag / "normalization.json").write_text(text)
    _rehash(tag, "normalization.json")
    message = _refused("normalization")
    assert str(tag / "normalization.json") in message
