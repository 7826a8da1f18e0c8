"""One damaged pretrained ``card.json`` does not break the other tags (issue 23, item 10): asking
for it names the file; `zoo list --pretrained` lists the others and names it; the others load."""

import logging
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import zoo
from zoo import pretrained

SHIPPED = Path(__file__).resolve().parents[2] / "models" / "pretrained"


@pytest.fixture
def one_card_damaged(tmp_path, monkeypatch):
    """A copy of two shipped tags, sirnn.har2's card cut after its first key."""
    root = tmp_path / "pretrained"
    for tag in ("sirnn.har2", "gru.har2"):
        shutil.copytree(SHIPPED / tag, root / tag)
    (root / "sirnn.har2" / "card.json").write_text('{"tag": ')
    monkeypatch.setattr(pretrained, "pretrained_root", lambda: root)
    return root / "sirnn.har2" / "card.json"


def test_asking_for_the_damaged_tag_names_its_file(one_card_damaged):
    with pytest.raises(ValueError, match="not valid JSON") as err:
        zoo.create_model("sirnn", pretrained="har2")
    assert str(one_card_damaged) in str(err.value)


def test_other_tags_keep_working(one_card_damaged, caplog):
    with caplog.at_level(logging.WARNING, logger="zoo.pretrained"):
        assert zoo.list_pretrained() == ["gru.har2"]
    assert str(one_card_damaged) in caplog.text
    model = zoo.create_model("gru", pretrained="har2")
    assert model.output_shape[-1] == 2


def test_zoo_list_pretrained_names_the_damaged_card(one_card_damaged):
    """In a process of its own, as a user runs it: the warning reaches stderr (no handler is
    configured there, unlike under pytest)."""
    root = one_card_damaged.parents[1]
    code = ("import sys; from zoo import pretrained; "
            f"pretrained.pretrained_root = lambda: __import__('pathlib').Path({str(root)!r}); "
            "from edge_rnn_zoo.cli import main; sys.exit(main(['list', '--pretrained']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=SHIPPED.parents[1])
    assert done.returncode == 0, done.stderr
    assert "gru.har2" in done.stdout and "sirnn.har2" not in done.stdout
    assert str(one_card_damaged) in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("text, why", [('["a list"]', "expected a JSON object"),
                                       ('{"tag": "sirnn.har2"}', "missing")])
def test_a_card_that_is_json_but_not_a_card(one_card_damaged, text, why):
    one_card_damaged.write_text(text)
    with pytest.raises(ValueError, match=why) as err:
        zoo.get_pretrained_cfg("sirnn.har2")
    assert str(one_card_damaged) in str(err.value)
