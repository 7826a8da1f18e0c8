"""``card.json`` as one type (issue 43 item 3): every card in the repository reads back through
`zoo.pretrained_card.read_tag_card` and writes out as the same text (so `zoo ship`, which writes
`PretrainedCfg.to_json`, and every reader agree key for key); a key the type does not know, a
missing one or one of the wrong type is a one-line error naming the file and the key; the C
figures reach a card only through the type (`zoo.export.ship.record_c_figures`)."""

import json
import shutil
from pathlib import Path

import pytest

from zoo.pretrained_card import PretrainedError, read_tag_card

MODELS = Path(__file__).resolve().parents[2] / "models"
CARDS = sorted(MODELS.glob("*/*/card.json"))  # installed tags and the archive


@pytest.mark.parametrize("path", CARDS, ids=lambda p: f"{p.parents[1].name}/{p.parent.name}")
def test_every_card_reads_and_writes_back_as_the_same_text(path):
    card = read_tag_card(path)
    assert card.to_json() == path.read_text()
    assert card.tag == path.parent.name


@pytest.fixture
def card_path(tmp_path):
    folder = tmp_path / "gru.har2"
    folder.mkdir()
    shutil.copy(MODELS / "pretrained" / "gru.har2" / "card.json", folder / "card.json")
    return folder / "card.json"


def _refused(path: Path, match: str, **changes) -> str:
    card = json.loads(path.read_text())
    for dotted, value in changes.items():
        *parents, key = dotted.split("__")
        target = card
        for parent in parents:
            target = target[int(parent) if isinstance(target, list) else parent]
        key = int(key) if isinstance(target, list) else key
        if value is KeyError:
            del target[key]
        else:
            target[key] = value
    path.write_text(json.dumps(card))
    with pytest.raises(PretrainedError, match=match) as err:
        read_tag_card(path)
    message = str(err.value)
    assert message.startswith(f"{path}: ") and "\n" not in message, message
    return message


def test_an_unknown_key_is_named(card_path):
    _refused(card_path, "unknown key 'exprot'", exprot={})


def test_an_unknown_nested_key_is_named(card_path):
    _refused(card_path, "metrics: unknown key 'int8'", metrics__int8=97.0)


def test_a_missing_key_is_named(card_path):
    _refused(card_path, r"metrics is missing \['export_accuracy'\]", metrics__export_accuracy=KeyError)


@pytest.mark.parametrize("change, match", [
    ({"metrics__export_accuracy": "97"}, "metrics.export_accuracy must be a number"),
    ({"export__total_bytes": 0}, "export.total_bytes must be an integer >= 1"),
    ({"export__c__bit_exact_with": 1}, "export.c.bit_exact_with must be a string"),
    ({"data__seeds": {}}, "data.seeds must be a list"),
    ({"data__seeds__0": {"seed": 0}}, r"data.seeds\[0\] is missing"),
    ({"class_names": ["a"]}, "class_names has 1 names for num_classes 2"),
    ({"tag": "../gru.har2"}, "is not a tag name"),
    ({"version": 99}, "this zoo reads card version"),
    ({"cost__instructions_per_second": 1}, "are not its parts'"),
    ({"cost__runtime": "TFLite Micro"}, "is not export.c's"),
    ({"frames_per_step": 5}, "does not divide the window's 128 samples"),
    ({"cost__targets__cortex-m4__bit_exact": "yes"},
     "cost.targets.cortex-m4.bit_exact must be true or false"),
    ({"cost__targets__rv32imc__flash_bytes": 0}, "flash_bytes must be an integer >= 1"),
])
def test_a_value_of_the_wrong_kind_is_named(card_path, change, match):
    _refused(card_path, match, **change)


def test_a_card_under_another_folder_name(card_path, tmp_path):
    other = tmp_path / "mine"
    card_path.parent.rename(other)
    with pytest.raises(PretrainedError, match="differs from its folder name"):
        read_tag_card(other / "card.json")
    assert read_tag_card(other / "card.json", folder_is_tag=False).tag == "gru.har2"


def test_c_figures_reach_the_card_through_the_type(card_path):
    from zoo.export.ship import record_c_figures

    before = read_tag_card(card_path)
    figures = {**before.export.c.to_dict(), "cortex_m4_instructions_per_step_O2": 1234.5}
    after = record_c_figures(card_path.parent, figures)
    assert read_tag_card(card_path) == after
    assert after.export.c.cortex_m4_instructions_per_step_O2 == 1234.5
    # the cost follows: 50 samples per second, one per step, 2.56 s windows (gru.har2), and
    # the head once per window (the card's, from its Cortex-M4 target: 645 instructions)
    head = before.cost.head_instructions
    assert head == 645.0 and after.cost.head_instructions == head
    assert after.cost.instructions_per_step == 1234.5
    assert after.cost.instructions_per_window == round(50 * 1234.5 * 2.56 + head)
    assert after.cost.instructions_per_second == round((50 * 1234.5 * 2.56 + head) / 2.56)
    assert after.replace(export=before.export, cost=before.cost) == before  # nothing else
    with pytest.raises(ValueError, match="export.c.const_bytes must be an integer"):
        record_c_figures(card_path.parent, {**figures, "const_bytes": "big"})
    assert read_tag_card(card_path) == after  # a refused write leaves the card as it was


def test_zoo_profile_figures_reach_the_card_per_target(card_path):
    """`record_profile`: every target's record in ``cost.targets``, the Cortex-M4's as
    ``export.c`` and the cost; a keyword result's front end goes to the cost's front-end part,
    so that per second is the whole hop; a target that was not bit-exact is refused."""
    from zoo.export.ship import record_profile

    figures = {"instructions_per_step": 30_000.0, "instructions_per_window": 3_000_000,
               "instructions_per_second": 3_000_000, "flash_bytes": 17_000, "ram_bytes": 7_000,
               "bit_exact": True}
    result = {"targets": {"cortex-m4": {**figures, "frontend_instructions_per_hop": 20_000.0},
                          "rv32imc": {**figures, "instructions_per_step": 60_000.0}},
              "c_export": {"const_bytes": 7472, "state_bytes": 80, "bit_exact_with": "tflite-micro"}}
    before = read_tag_card(card_path)
    after = record_profile(card_path.parent, result, "zoo profile (test)")
    assert read_tag_card(card_path) == after
    assert set(after.cost.targets) == {"cortex-m4", "rv32imc"}
    assert after.cost.targets["rv32imc"].instructions_per_step == 60_000.0
    assert after.export.c.cortex_m4_instructions_per_step_O2 == 10_000.0  # the hop's model part
    assert after.cost.frontend_instructions_per_second == before.cost.steps_per_second * 20_000
    assert after.cost.instructions_per_second == round(before.cost.steps_per_second * 30_000)
    result["targets"]["rv32imc"]["bit_exact"] = False
    with pytest.raises(ValueError, match="rv32imc is not bit-exact"):
        record_profile(card_path.parent, result, "zoo profile (test)")
    assert read_tag_card(card_path) == after


def test_a_cards_cost_per_window_includes_the_head_as_its_targets_do(card_path):
    """Issue: ``cost.instructions_per_window`` left the classifier head out while every
    ``cost.targets[...]`` included it. The head is the Cortex-M4 target's window less its steps
    (`head_instructions_of`), and the totals are computed with it; a keyword tag's head runs
    inside its hop (0)."""
    from zoo.pretrained_card import Cost, TargetCost, head_instructions_of

    m4 = TargetCost(instructions_per_step=47002.0, instructions_per_window=6016901,
                    instructions_per_second=2350352, flash_bytes=26940, ram_bytes=1000,
                    bit_exact=True)
    assert head_instructions_of(m4, 128.00000000000003) == 6016901 - 47002 * 128 == 645
    hop = TargetCost(instructions_per_step=37424.7, instructions_per_window=3742470,
                     instructions_per_second=3742470, flash_bytes=16020, ram_bytes=4896,
                     bit_exact=True, frontend_instructions_per_step=18028.0)
    assert head_instructions_of(hop, 100) == 0.0
    # A card written before the head was counted: the totals without it, as shipped then.
    card = json.loads(card_path.read_text())
    cost = dict(card["cost"])
    cost.pop("head_instructions")
    cost.update(instructions_per_second=2350100, instructions_per_window=6016256)
    old = Cost.from_dict(cost, "cost")
    old.check()  # its totals were its parts' then (no head)
    new = old.with_head_from_targets()
    new.check()
    assert new.head_instructions == 645.0
    assert new.instructions_per_window == old.targets["cortex-m4"].instructions_per_window
    assert new.instructions_per_second == old.targets["cortex-m4"].instructions_per_second
    assert new.with_head_from_targets() == new  # idempotent
    without_targets = Cost.from_dict({k: v for k, v in cost.items() if k != "targets"}, "cost")
    assert without_targets.with_head_from_targets() == without_targets


def test_recompute_cost_rewrites_only_the_card(card_path, capsys):
    from zoo.export.ship import main

    card = json.loads(card_path.read_text())
    card["cost"].pop("head_instructions")
    card["cost"].update(instructions_per_second=2350100, instructions_per_window=6016256)
    card_path.write_text(json.dumps(card, indent=2) + "\n")
    assert main(["--tag", "gru.har2", "--dest", str(card_path.parent.parent),
                 "--recompute-cost"]) == 0
    assert capsys.readouterr().out == ("gru.har2: 6,016,901 instructions / window, 2,350,352 / s "
                                       "(head 645.0)\n")
    assert card_path.read_text() == (MODELS / "pretrained" / "gru.har2" / "card.json").read_text()
    assert sorted(p.name for p in card_path.parent.iterdir()) == ["card.json"]


def _profiled_tags() -> list[str]:
    """The installed tags whose card has zoo profile figures (all but the DS-CNN, which has no
    C backend: its cost is TensorFlow Lite Micro's, measured elsewhere)."""
    cards = sorted((MODELS / "pretrained").glob("*/card.json"))
    return [c.parent.name for c in cards if (read_tag_card(c).cost.targets or {}).get("cortex-m4")]


def test_every_installed_tag_but_the_dscnn_has_profile_figures():
    installed = {c.parent.name for c in (MODELS / "pretrained").glob("*/card.json")}
    assert installed - set(_profiled_tags()) == {"dscnn.kws12"}


@pytest.mark.parametrize("tag", _profiled_tags())
def test_every_installed_cards_cost_per_window_is_its_cortex_m4_targets(tag):
    """A sensor tag's per window and per second are its Cortex-M4 target's, head included; a
    keyword tag's differ by the rounding of its step to 0.1 instruction, 100 hops a window."""
    cost = read_tag_card(MODELS / "pretrained" / tag / "card.json").cost
    m4 = cost.targets["cortex-m4"]
    slack = 0 if m4.frontend_instructions_per_step is None else 0.05 * 100 + 0.5
    assert abs(cost.instructions_per_window - m4.instructions_per_window) <= slack, cost
    assert abs(cost.instructions_per_second - m4.instructions_per_second) <= slack, cost
