"""The card's ``frontend`` names the features the run was trained on (`zoo.export.exporter.
frontend_entry`): the integer front end for ``features=int_logmel``, the float one otherwise, none
for sensor tasks; every shipped KWS tag's export card agrees with its task options."""

import json
from pathlib import Path

import pytest

from zoo.export.exporter import frontend_entry
from zoo.training.tasks import get_task
from zoo.training.tasks import int_frontend

MODELS = Path(__file__).resolve().parents[2] / "models"  # installed tags and the archive
KWS_CARDS = sorted(MODELS.glob("*/*.*kws12*/export-*/model_card.json")) + \
    sorted(MODELS.glob("*/*.google12*/export-*/model_card.json"))


def test_the_integer_task_gets_the_integer_front_end_with_its_constants():
    entry = frontend_entry(get_task("google12_testset", features="int_logmel"))
    assert entry["features"] == "int_logmel"
    # the steps are the module's own: its constants appear as the code uses them
    assert f"{int_frontend.PREEMPH_Q15} * x[n-1]" in entry["steps"]
    assert f"P[k] >> {int_frontend.POWER_SHIFT}" in entry["steps"]
    assert f"{int_frontend.FRAME}-sample frames every {int_frontend.HOP}" in entry["input"]
    assert "normalization.json" in entry["normalisation"]


def test_the_float_task_gets_the_float_front_end_with_its_settings():
    entry = frontend_entry(get_task("google12_testset"))
    assert entry["features"] == "logmel" and "0.97 x[n-1]" in entry["pre_emphasis"]
    changed = frontend_entry(get_task("google12_testset", nfilt=40, preemph=0.9))
    assert "40 triangular" in changed["mel_filters"] and "0.9 x[n-1]" in changed["pre_emphasis"]


def test_a_sensor_task_has_no_front_end():
    assert frontend_entry(get_task("har2")) is None


def test_shipped_kws_cards_are_found():
    assert len(KWS_CARDS) >= 7


@pytest.mark.parametrize("path", KWS_CARDS, ids=lambda p: p.parent.parent.name)
def test_each_shipped_kws_card_names_the_front_end_it_was_trained_on(path):
    card = json.loads(path.read_text())
    trained_on = card["task_options"].get("features", "logmel")
    assert card["frontend"] == frontend_entry(get_task(card["task"], **card["task_options"]))
    assert card["frontend"]["features"] == trained_on
