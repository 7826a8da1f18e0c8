"""A sweep trial's settings read typed (`Trial.settings`, a `TrainConfig`), its plan format
unchanged: a plan from before a setting reads it at its default, and the trials `cv_trials`
plans hold the settings their fold asks for."""

import dataclasses

import pytest

from zoo.experiments.trials import Trial, base_config, cv_trials
from zoo.training.config import TrainConfig


def test_a_trial_planned_before_a_setting_reads_it_at_its_default(tmp_path):
    config = base_config("har2", "sirnn", None, {"init_from": "/runs/parent"})
    newer = ("ema_momentum", "lr_schedule", "qat_stage")
    old = {k: v for k, v in config.items() if k not in newer}
    trial = Trial.from_dict({"task": "har2", "label": "x", "variant": "v", "fold": 0, "folds": 5,
                             "config": old, "run_dir": str(tmp_path)})
    defaults = TrainConfig(task="har2", model="sirnn")
    assert trial.settings.ema_momentum == defaults.ema_momentum
    assert trial.settings.lr_schedule == defaults.lr_schedule
    assert trial.settings.init_from == "/runs/parent" and trial.config == old  # as planned


def test_a_trial_with_an_unknown_setting_is_named(tmp_path):
    config = {**base_config("har2", "sirnn", None, {}), "warp_speed": 9}
    trial = Trial(task="har2", label="x", variant="v", fold=0, folds=5, config=config,
                  run_dir=str(tmp_path))
    with pytest.raises(ValueError, match="warp_speed"):
        trial.settings


def test_cv_trials_hold_each_folds_settings(tmp_path):
    base = base_config("har2", "sirnn", None, {"task_options": {"val_fraction": 0.2}})
    variants = {"base": {}, "tuned": {"init_from": "variant:base", "lr": 0.005}}
    plan = cv_trials("har2", "sirnn", base, variants, folds=3, out=tmp_path, data_dir=None)
    assert len(plan) == 6
    for trial in plan:
        settings = trial.settings
        assert trial.config == settings.to_dict()  # the plan records the typed settings
        assert settings.seed == trial.fold and settings.early_stopping_patience == 0
        assert settings.task_options == {"val_fold": [trial.fold, 3]}  # val_fraction dropped
        if trial.variant == "tuned":
            parent = next(t for t in plan if (t.variant, t.fold) == ("base", trial.fold))
            assert settings.init_from == parent.run_dir and trial.parent == "base"
            assert settings.lr == 0.005
        else:
            assert settings.init_from is None and settings.lr == base["lr"]
    # the plan's settings are TrainConfig's fields, no others
    assert set(plan[0].config) == {f.name for f in dataclasses.fields(TrainConfig)}
