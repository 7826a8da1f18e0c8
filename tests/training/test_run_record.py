"""A run's record (`zoo.training.run_record`, read by `RunDirectory.record`): a real run's
config.yaml and metrics.json read back typed, against what the run was trained with and the
files as JSON / YAML read them; a run from before the newer keys; damaged files named with the
key at fault; keys of another zoo version kept."""

import dataclasses
import json
import shutil

import pytest
import yaml

from zoo.training.config import TrainConfig
from zoo.training.rundir import RunDirectory, RunDirError
from zoo.training.tasks import get_task
from zoo.training.tasks.frames import DEFAULT_FRAMES_PER_STEP

# The float run tests/training/test_qat_train.py and tests/experiments/test_qat_points.py and
# test_fold_int8.py read too: one training per session (the root conftest's `trained_run`).
CONFIG = TrainConfig(task="har2", model="sirnn", epochs=1, batch_size=512, lr=0.02, seed=4,
                     early_stopping_patience=0,
                     model_options={"units": 8, "rank": 4, "state_clip": 1.0,
                                    "state_quant_bits": 8})
# What `zoo train` has added to config.yaml over time (a run from before has none of them).
NEWER_KEYS = ("task_options_resolved", "model_options_resolved", "data_source_resolved",
              "data_fingerprint_resolved", "lr_schedule", "ema_momentum", "qat_stage",
              "distill", "augment")


@pytest.fixture(scope="module")
def run(trained_run, shared_data):
    return trained_run(CONFIG, shared_data / "har")


@pytest.fixture
def files(run, tmp_path):
    """A writable copy of the run's config.yaml and metrics.json (all the record reads)."""
    copy = tmp_path / "run"
    copy.mkdir()
    for name in ("config.yaml", "metrics.json"):
        shutil.copy(run / name, copy / name)
    return RunDirectory(copy)


def _edit(path, **changes):
    data = yaml.safe_load(path.read_text())
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path.write_text(yaml.safe_dump(data))


def test_the_record_of_a_real_run_is_what_it_trained_with_and_scored(run, shared_data):
    record = RunDirectory(run).record()
    config, metrics = record.config, record.metrics
    assert config.settings == CONFIG  # every setting, as given
    assert (config.task, config.model, config.seed) == ("har2", "sirnn", 4)
    task = get_task("har2", **CONFIG.task_options)
    assert dict(config.task_options) == task.options()  # resolved, as the task resolves them
    assert config.model_options["units"] == 8 and config.model_options["state_quant_bits"] == 8
    assert config.frames_per_step == DEFAULT_FRAMES_PER_STEP
    assert config.extra == {} and config.unknown_settings == []
    # metrics.json as JSON reads it, field by field
    raw = json.loads((run / "metrics.json").read_text())
    assert metrics.test_accuracy == raw["test"]["accuracy"] and dict(metrics.test) == raw["test"]
    assert (metrics.parameters, metrics.best_epoch, metrics.epochs_run) == (
        raw["parameters"], raw["best_epoch"], raw["epochs_run"]) and metrics.epochs_run == 1
    assert dataclasses.asdict(metrics.data) == raw["data"]
    data = task.load(shared_data / "har", seed=4)
    assert (metrics.data.train, metrics.data.val, metrics.data.test) == (
        len(data.train), len(data.val), len(data.test))
    assert config.data_source == raw["data"]["source"] == str(data.source)
    assert RunDirectory(run).recorded_data_source() == str(data.source)


def test_the_record_is_read_only(run):
    config = RunDirectory(run).record().config
    with pytest.raises(TypeError, match="read-only"):
        config.task_options["val_fold"] = [0, 5]
    settings = config.settings
    settings.task_options["val_fold"] = [0, 5]  # a copy: the record does not change
    assert "val_fold" not in config.settings.task_options
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.path = None


def test_a_run_from_before_the_newer_keys_reads_with_their_defaults(files, run):
    _edit(files.config, **dict.fromkeys(NEWER_KEYS))
    record = files.record()
    defaults = TrainConfig(task="har2", model="sirnn")
    for name in ("lr_schedule", "ema_momentum", "qat_stage", "distill", "augment"):
        assert getattr(record.config.settings, name) == getattr(defaults, name)
    assert record.config.task_options_resolved is None
    assert dict(record.config.task_options) == CONFIG.task_options  # as given
    assert dict(record.config.model_options) == CONFIG.model_options
    assert record.config.frames_per_step == DEFAULT_FRAMES_PER_STEP
    assert record.config.data_source is None
    # where the run found its data: metrics.json recorded it before config.yaml did
    assert files.recorded_data_source() == json.loads(files.metrics.read_text())["data"]["source"]


def test_frames_per_step_as_given_when_nothing_was_resolved(files):
    _edit(files.config, task_options={"frames_per_step": 4}, task_options_resolved=None)
    assert files.record().config.frames_per_step == 4
    _edit(files.config, task_options_resolved={"frames_per_step": 8})
    assert files.record().config.frames_per_step == 8  # what the run resolved wins


def test_an_unfinished_run_has_no_metrics(files):
    files.metrics.unlink()
    record = files.record()
    assert record.metrics is None and not record.finished and record.config.task == "har2"


def test_keys_of_another_zoo_version_are_kept(files):
    _edit(files.config, future_setting=3, future_resolved={"a": 1})
    raw = json.loads(files.metrics.read_text())
    files.metrics.write_text(json.dumps({**raw, "energy_joules": 0.5}))
    record = files.record()
    assert dict(record.config.extra) == {"future_setting": 3, "future_resolved": {"a": 1}}
    assert record.config.unknown_settings == ["future_setting"]
    assert record.metrics.extra == {"energy_joules": 0.5}
    written = record.config.as_written(task_options={"val_fold": [1, 5]})
    assert written["future_setting"] == 3 and written["future_resolved"] == {"a": 1}
    assert "task_options_resolved" not in written and "model_options_resolved" in written
    assert yaml.safe_load(yaml.safe_dump(written)) == written


def test_resuming_a_run_of_another_zoo_version_is_refused(files):
    from zoo.training.workdir import _same_settings

    files.metrics.unlink()
    _edit(files.config, future_setting=3)
    with pytest.raises(RunDirError, match=r"config\.yaml .*future_setting.*choose another --out"):
        _same_settings(files.root, CONFIG, refuse=True)


@pytest.mark.parametrize("name, text, named", [
    ("config.yaml", "task: [unclosed", "is not valid YAML"),
    ("config.yaml", "- a\n- b\n", "is not a zoo run config (a YAML list"),
    ("config.yaml", "model: sirnn\n", "missing setting 'task'"),
    ("config.yaml", "task: har2\nmodel: sirnn\nepochs: many\n", "epochs"),
    ("config.yaml", "task: har2\nmodel: sirnn\ntask_options_resolved: [1]\n",
     "task_options_resolved is [1]; valid: a mapping"),
    ("config.yaml", "task: har2\nmodel: sirnn\ndata_source_resolved: 3\n",
     "data_source_resolved is 3"),
    ("metrics.json", "garbage{", "not a valid metrics file"),
    ("metrics.json", "[1, 2]", "not a valid metrics file"),
    ("metrics.json", '{"best_epoch": "1"}', "best_epoch is '1'; valid: an integer >= 1"),
    ("metrics.json", '{"test": {"accuracy": "high"}}', "test is"),
    ("metrics.json", '{"data": {"train": -3}}', "data.train is -3"),
])
def test_a_damaged_file_is_named_with_its_key(files, name, text, named):
    (files.root / name).write_text(text)
    with pytest.raises(ValueError) as caught:
        files.record()
    assert str(files.root / name) in str(caught.value) and named in str(caught.value)
