"""Issue 44, item 5: everything a run will refuse later is refused before the first epoch.

A ``zoo sweep cv --final`` with a junk, other-task or other-class ``--final-teacher``, or a variant
with ``qat_percentile: 20``, passed ``--dry-run`` and was refused only after every fold had
trained (the retrain, or each of that variant's trials, failing at its start). Each probe here is
the ``--dry-run`` of such a sweep (nothing trains): it must exit 2 with one line naming what is
wrong. And the options that mean something only with another: ``qat_percentile`` without
``qat`` was accepted silently; the cosine-with-step-decay message suggested a ``zoo train`` flag
that does not exist.
"""

import json
import re

import pytest
import yaml

import zoo
from edge_rnn_zoo.cli import main


def fake_run(folder, task="har2", classes=2):
    """A finished run directory as `zoo train` leaves one, its model untrained."""
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(yaml.safe_dump({"task": task, "model": "gru"}))
    (folder / "normalization.json").write_text(json.dumps({"mean": [0.0] * 9, "std": [1.0] * 9}))
    (folder / "metrics.json").write_text("{}")
    zoo.create_model("gru", (128, 9), classes, units=2).save(folder / "model.keras")
    return folder


@pytest.fixture(scope="module")
def teachers(tmp_path_factory):
    root = tmp_path_factory.mktemp("teachers")
    for fold in range(2):
        fake_run(root / f"fold{fold}")
    return {"folds": str(root / "fold{fold}"), "good": str(fake_run(root / "final")),
            "junk": str(root / "no-such-run"),
            "other-task": str(fake_run(root / "har6", task="har6", classes=6)),
            "other-class": str(fake_run(root / "six", classes=6))}


def _dry_run(shared_data, tmp_path, *extra, variants=None):
    variants = variants or {"base": {}}
    argv = ["sweep", "cv", "--task", "har2", "--model", "sirnn", "--data-dir",
            str(shared_data / "har"), "--folds", "2", "--epochs", "1", "--out",
            str(tmp_path / "sweep"), "--results", "none", "--dry-run"]
    for name, overrides in variants.items():
        argv += ["--variant", f"{name}={json.dumps(overrides)}"]
    return main(argv + list(extra))


def _kd(teachers):
    return {"base": {}, "kd": {"distill": {"teacher": teachers["folds"]}}}


@pytest.mark.parametrize("teacher, words", [
    ("junk", "no-such-run: .*no such directory"),
    ("other-task", "trained on task 'har6', this run is 'har2'"),
    ("other-class", "outputs 6 values, task har2 has 2 classes")])
def test_a_bad_final_teacher_is_refused_by_the_dry_run(teacher, words, teachers, shared_data,
                                                      tmp_path, capsys):
    code = _dry_run(shared_data, tmp_path, "--final", "--final-teacher", teachers[teacher],
                    variants=_kd(teachers))
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "--final-teacher (the retrain of variant kd)" in err, err
    assert re.search(words, err), err
    assert not (tmp_path / "sweep").exists()


def test_a_good_final_teacher_passes_and_one_is_needed_exactly_when_a_variant_distils(
        teachers, shared_data, tmp_path, capsys):
    assert _dry_run(shared_data, tmp_path, "--final", "--final-teacher", teachers["good"],
                    variants=_kd(teachers)) == 0
    capsys.readouterr()
    assert _dry_run(shared_data, tmp_path, "--final", variants=_kd(teachers)) == 2
    assert "needs its teacher named: add --final-teacher" in capsys.readouterr().err
    assert _dry_run(shared_data, tmp_path, "--final", "--final-teacher", teachers["good"]) == 2
    assert "no variant distils" in capsys.readouterr().err


def test_a_fold_teacher_with_other_classes_is_refused_by_the_dry_run(tmp_path, shared_data,
                                                                     capsys):
    for fold in range(2):
        fake_run(tmp_path / "t" / f"fold{fold}", classes=6)
    variants = {"kd": {"distill": {"teacher": str(tmp_path / "t" / "fold{fold}")}}}
    assert _dry_run(shared_data, tmp_path, variants=variants) == 2
    err = capsys.readouterr().err.strip()
    assert "har2 / sirnn / kd / fold 0: distill teacher" in err and "outputs 6 values" in err


@pytest.mark.parametrize("overrides, words", [
    ({"model_options": {"qat": "int8", "qat_percentile": 20}},
     r"invalid model option qat_percentile .*: 20; valid: a number in \(50, 100\]"),
    ({"model_options": {"qat_percentile": 98}},
     "qat_percentile .* applies only with qat"),
    ({"model_options": {"state_clip": None}},  # the recipe's state_quant_bits 8 needs it
     "fold 0: .*state_quant_bits needs state_clip")])
def test_a_variant_a_run_would_refuse_is_refused_by_the_dry_run(overrides, words, shared_data,
                                                                tmp_path, capsys):
    code = _dry_run(shared_data, tmp_path, variants={"base": {}, "bad": overrides})
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert re.search(words, err), err


def test_zoo_train_refuses_qat_percentile_without_qat_before_anything(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["train", "--task", "har2", "--model", "sirnn", "--option",
                 "qat_percentile=98", "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "applies only with qat" in err and not out.exists(), err


def test_the_cosine_message_names_no_flag_that_does_not_exist():
    """`zoo train` has no flag that unsets a recipe's lr_decay_epochs (a flag left out keeps
    the recipe's): the message must not suggest one, and says what works."""
    from zoo.training.config import resolve

    with pytest.raises(ValueError) as err:
        resolve("har2", "sirnn", None, {"lr_schedule": "cosine"})
    message = str(err.value)
    assert "har2-sirnn.yaml" in message and "--recipe none" in message, message
    assert "`zoo train` has no flag that unsets a recipe's setting" in message
