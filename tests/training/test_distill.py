"""``distill``: knowledge distillation (zoo.training.distill). The loss against a NumPy
re-implementation of Hinton et al.'s formula (one teacher and an ensemble, logits and softmax
teachers, teachers with their own normalisation; TensorFlow here, JAX in a subprocess), alpha = 0
against the ordinary loss and step, frozen teachers absent from the saved student, which loads,
evaluates and exports like any run, a resumed run, the settings' errors (in a config and
on the command line), and ``{fold}`` teachers in a CV sweep."""

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace

import h5py
import keras
import numpy as np
import pytest
import yaml

import zoo
from zoo.training import distill, trainer
from zoo.training.config import TrainConfig
from zoo.training.tasks import Normalization

REPO = Path(__file__).resolve().parents[2]
TASK = SimpleNamespace(name="har2", kind="classification", input_shape=(12, 3), num_classes=2)
STUDENT = {"units": 4}


# ----------------------------------------------------------------------------- NumPy oracle
def log_softmax(z):
    z = np.asarray(z, np.float64)
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def oracle(y, student_logits, teacher_outputs, kinds, alpha, temperature):
    """(1 - a) CE(y, s) + a T^2 KL(mean_i softmax(t_i / T) || softmax(s / T)), batch mean; a
    softmax teacher's softened distribution is p^(1/T) renormalised."""
    ce = -np.mean(log_softmax(student_logits)[np.arange(len(y)), y])
    soft = []
    for out, kind in zip(teacher_outputs, kinds):
        out = np.asarray(out, np.float64)
        if kind == "probabilities":
            powered = out ** (1 / temperature)
            soft.append(powered / powered.sum(-1, keepdims=True))
        else:
            soft.append(np.exp(log_softmax(out / temperature)))
    p = np.mean(soft, axis=0)
    kl = np.mean(np.sum(p * (np.log(p) - log_softmax(student_logits / temperature)), -1))
    return (1 - alpha) * ce + alpha * temperature ** 2 * kl


def student(seed=0, lr=0.05):
    keras.utils.set_random_seed(seed)
    config = TrainConfig(task="har2", model="gru", model_options=STUDENT, lr=lr,
                         early_stopping_patience=0)
    return trainer.build_model(config, TASK)


def teacher(seed, kind="logits", norm=None):
    keras.utils.set_random_seed(seed)
    model = zoo.create_model("gru", TASK.input_shape, 2, units=6,
                             head_activation="softmax" if kind == "probabilities" else None)
    norm = norm or Normalization(np.zeros(3), np.ones(3))
    return distill.Teacher(f"teacher{seed}", model, norm, kind)


def batch(n=16, seed=1):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 12, 3)).astype("float32"), rng.integers(0, 2, n)


def sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def numpy_of(weights):
    return [keras.ops.convert_to_numpy(w).copy() for w in weights]


OWN_NORM = Normalization(np.array([0.5, -1.0, 2.0]), np.array([2.0, 0.5, 3.0]))
CASES = {  # name -> (teachers as (seed, kind, normalization), alpha, temperature)
    "one teacher": ([(1, "logits", None)], 0.5, 2.0),
    "ensemble of two": ([(1, "logits", None), (2, "logits", None)], 0.7, 4.0),
    "softmax teacher": ([(3, "probabilities", None)], 0.3, 1.5),
    "own normalization": ([(4, "logits", OWN_NORM), (5, "probabilities", None)], 1.0, 3.0),
}


@pytest.mark.parametrize("case", CASES)
def test_the_training_loss_is_hinton_s_formula(case):
    specs, alpha, temperature = CASES[case]
    student_norm = Normalization(np.array([1.0, 0.0, -0.5]), np.array([1.5, 1.0, 0.25]))
    model, teachers = student(), [teacher(*spec) for spec in specs]
    distill.install(model, teachers, {"teacher": [t.path for t in teachers], "alpha": alpha,
                                      "temperature": temperature}, student_norm)
    x, y = batch()
    logits = keras.ops.convert_to_numpy(model(x))
    # Each teacher sees the same windows in its own normalisation: raw, then its z-score.
    raw = x * student_norm.std + student_norm.mean
    outputs = [t.model.predict((raw - t.normalization.mean) / t.normalization.std, verbose=0)
               for t in teachers]
    want = oracle(y, logits, outputs, [t.outputs for t in teachers], alpha, temperature)
    got = float(model.compute_loss(x, y, model(x), None, training=True))
    assert got == pytest.approx(want, rel=2e-5)
    # Validation and test score the task's loss alone.
    ordinary = float(model.compute_loss(x, y, model(x), None, training=False))
    assert ordinary == pytest.approx(oracle(y, logits, outputs, ["logits"] * len(outputs), 0,
                                            1.0), rel=2e-5)


def test_alpha_zero_is_the_ordinary_loss_and_step():
    x, y = batch(32)
    plain, distilled = student(seed=3), student(seed=3)
    distill.install(distilled, [teacher(1)], {"teacher": "t", "alpha": 0.0, "temperature": 2.0},
                    Normalization(np.zeros(3), np.ones(3)))
    assert float(distilled.compute_loss(x, y, distilled(x), None, training=True)) == \
        float(plain.compute_loss(x, y, plain(x), None, training=True))
    for model in (plain, distilled):
        model.train_on_batch(x, y)
    for a, b in zip(numpy_of(plain.weights), numpy_of(distilled.weights)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert not np.allclose(numpy_of(plain.weights)[0], numpy_of(student(seed=3).weights)[0])


def test_the_teacher_sees_the_augmented_batch_the_student_sees():
    """Augmentation happens in the input pipeline (`trainer.epoch_batches`), so the batch the
    train step gets, which the teacher is fed, is the augmented one: the logged loss of a
    one-batch epoch is the formula on the augmented windows, not on the originals."""
    model, t = student(), teacher(1)
    distill.install(model, [t], {"teacher": "t", "alpha": 0.8, "temperature": 2.0},
                    Normalization(np.zeros(3), np.ones(3)))
    x, y = batch(32)

    def noise(windows, rng):
        return (windows + rng.normal(size=windows.shape)).astype("float32")

    start = model.get_weights()
    history = model.fit(trainer.epoch_batches(x, y, 32, 0, 0, 1, noise), steps_per_epoch=1,
                        epochs=1, shuffle=False, verbose=0)
    ((seen, labels),) = list(trainer.epoch_batches(x, y, 32, 0, 0, 1, noise))
    before = student()
    before.set_weights(start)
    logits = keras.ops.convert_to_numpy(before(seen))

    def expected(windows):
        return oracle(labels, logits, [t.model.predict(windows, verbose=0)], ["logits"], 0.8,
                      2.0)

    order = np.random.default_rng([0, 0]).permutation(32)  # epoch_batches' order of epoch 0
    assert history.history["loss"][0] == pytest.approx(expected(seen), rel=2e-5)
    assert history.history["loss"][0] != pytest.approx(expected(x[order]), rel=1e-3)


def saved_arrays(path) -> dict:
    """How many arrays a ``.keras`` archive holds, by group: ``layers`` (the model's weights)
    and ``optimizer`` (Adam: iterations, learning rate, two moments per trainable weight)."""
    names = []
    with zipfile.ZipFile(path) as archive, archive.open("model.weights.h5") as f, \
            h5py.File(f) as h5:
        h5.visititems(lambda name, item: names.append(name.split("/")[0])
                      if isinstance(item, h5py.Dataset) else None)
    return {group: names.count(group) for group in sorted(set(names))}


def arrays_of(model) -> dict:
    return {"layers": len(model.weights), "optimizer": 2 + 2 * len(model.trainable_weights)}


def test_the_teachers_are_frozen_and_not_saved_with_the_student(tmp_path):
    model, teachers = student(), [teacher(1), teacher(2, "probabilities")]
    before = [numpy_of(t.model.weights) for t in teachers]
    distill.install(model, teachers, {"teacher": ["a", "b"], "alpha": 0.9}, Normalization(
        np.zeros(3), np.ones(3)))
    x, y = batch(64)
    start = numpy_of(model.weights)
    history = model.fit(x, y, batch_size=16, epochs=1, verbose=0, validation_data=(x, y))
    assert np.isfinite(history.history["loss"][0])
    assert not np.allclose(start[0], numpy_of(model.weights)[0])  # the student learnt
    for t, weights in zip(teachers, before):
        for a, b in zip(weights, numpy_of(t.model.weights)):
            np.testing.assert_array_equal(a, b)
    model.save(tmp_path / "student.keras")
    assert saved_arrays(tmp_path / "student.keras") == arrays_of(student())
    loaded = keras.saving.load_model(tmp_path / "student.keras")
    assert type(loaded) is type(student()) and "compute_loss" not in vars(loaded)


@pytest.mark.slow
def test_the_loss_and_a_fit_on_jax():
    """The same oracle and a fit with the teachers inside the jitted train step, on JAX."""
    script = f"""
import sys; sys.path.insert(0, {str(REPO / 'tests' / 'training')!r})
import numpy as np, keras, pytest
import test_distill as t
assert keras.backend.backend() == "jax"
for case in t.CASES:
    t.test_the_training_loss_is_hinton_s_formula(case)
t.test_alpha_zero_is_the_ordinary_loss_and_step()
import tempfile, pathlib
t.test_the_teachers_are_frozen_and_not_saved_with_the_student(pathlib.Path(tempfile.mkdtemp()))
print("ok")
"""
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu",
           "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", script], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


# ------------------------------------------------------------------------------ the settings
BAD = [
    ({"teacher": "r", "alpha": 1.5}, ["distill option alpha", "1.5", "[0, 1]"]),
    ({"teacher": "r", "alpha": -0.1}, ["distill option alpha", "[0, 1]"]),
    ({"teacher": "r", "alpha": True}, ["distill option alpha", "[0, 1]"]),
    ({"teacher": "r", "temperature": 0}, ["distill option temperature", "> 0"]),
    ({"teacher": "r", "temperature": -2.0}, ["distill option temperature", "> 0"]),
    ({"teacher": "r", "temperature": float("nan")}, ["distill option temperature", "> 0"]),
    ({"alpha": 0.5}, ["no teacher", "--distill teacher="]),
    ({"teacher": []}, ["distill option teacher", "non-empty list"]),
    ({"teacher": ["r", "r"]}, ["distill option teacher"]),
    ({"teacher": 3}, ["distill option teacher", "run directory"]),
    ({"teacher": "r", "T": 2}, ["unknown distill option", "'T'", "temperature"]),
    ("runs/x", ["invalid distill", "mapping"]),
]


@pytest.mark.parametrize("value,words", BAD, ids=[str(v) for v, _ in BAD])
def test_bad_settings_name_the_option_and_what_is_valid(value, words):
    with pytest.raises(ValueError) as err:
        TrainConfig(task="har2", model="gru", distill=value)
    for word in words:
        assert word in str(err.value), (word, str(err.value))


def test_the_cli_takes_distill_options_and_refuses_bad_ones_in_one_line(tmp_path, capsys):
    from edge_rnn_zoo.cli import build_parser, main

    base = ["train", "--task", "har2", "--model", "gru", "--recipe", "none", "--epochs", "1",
            "--out", str(tmp_path / "run")]
    args = build_parser("train").parse_args([*base, "--distill", "teacher=[runs/a, runs/b]",
                                             "--distill", "alpha=0.25"])
    assert dict(args.distill) == {"teacher": ["runs/a", "runs/b"], "alpha": 0.25}
    for extra, word in [(["--distill", "teacher=runs/a", "--distill", "temperature=0"],
                         "distill option temperature"),
                        (["--distill", f"teacher={tmp_path / 'none'}"],
                         f"distill teacher {tmp_path / 'none'}")]:
        assert main([*base, *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and word in err, err
    assert list(tmp_path.iterdir()) == []


# -------------------------------------------------------------------- teachers on disk (HAR)
def fake_run(folder: Path, task="har2", classes=2, finished=True) -> Path:
    """A run directory as `zoo train` leaves one, with an untrained model of ``classes``."""
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(yaml.safe_dump({"task": task, "model": "gru"}))
    (folder / "normalization.json").write_text(json.dumps({"mean": [0.0] * 9, "std": [1.0] * 9}))
    zoo.create_model("gru", (128, 9), classes, units=2).save(folder / "model.keras")
    if finished:
        (folder / "metrics.json").write_text("{}")
    return folder


def test_a_teacher_must_be_a_finished_run_of_the_task_and_its_classes(tmp_path):
    from zoo.training.tasks import get_task

    har2 = get_task("har2")
    cases = [(tmp_path / "missing", FileNotFoundError, "no such directory"),
             (fake_run(tmp_path / "unfinished", finished=False), ValueError, "unfinished run"),
             (fake_run(tmp_path / "har6", task="har6", classes=6), ValueError,
              "trained on task 'har6', this run is 'har2'"),
             (fake_run(tmp_path / "six", classes=6), ValueError,
              "outputs 6 values, task har2 has 2 classes")]
    for path, kind, words in cases:
        with pytest.raises(kind) as err:
            distill.load_teachers({"teacher": str(path)}, har2)
        assert f"distill teacher {path}" in str(err.value) and words in str(err.value), err.value
    with pytest.raises(ValueError, match=r"\{fold\} placeholder is filled in only by `zoo "
                                         r"sweep cv`"):
        distill.load_teachers({"teacher": str(tmp_path / "fold{fold}")}, har2)
    (teacher,) = distill.load_teachers({"teacher": str(fake_run(tmp_path / "ok"))}, har2)
    assert teacher.outputs == "logits" and not teacher.model.trainable


@pytest.fixture(scope="module")
def runs(tmp_path_factory, shared_data, log_lines):
    """A tiny GRU teacher trained for one epoch on the HAR subset, and a SiRNN student
    distilled from it (alpha 0.5, T 2), one epoch."""
    root, har = tmp_path_factory.mktemp("distill"), shared_data / "har"
    quiet = {"data_dir": har, "verbose": 0}
    common = dict(task="har2", epochs=1, batch_size=512, early_stopping_patience=0, seed=2)
    with log_lines() as lines:
        trainer.train(TrainConfig(model="gru", model_options={"units": 8}, **common),
                      root / "teacher", **quiet)
        teacher_sha = sha256(root / "teacher" / "model.keras")
        config = TrainConfig(model="sirnn", model_options={"units": 8, "rank": 4},
                             distill={"teacher": str(root / "teacher"), "temperature": 2},
                             **common)
        trainer.train(config, root / "student", **quiet)
    return SimpleNamespace(root=root, har=har, teacher=root / "teacher", sha=teacher_sha,
                           student=root / "student", config=config, lines=lines)


@pytest.mark.slow
def test_a_distilled_run_records_its_teacher_and_saves_a_plain_student(runs):
    from zoo.training.evaluate import evaluate_run
    from zoo.training.tasks import get_task

    assert f"distilling from {runs.teacher} (alpha 0.5, temperature 2)" in runs.lines
    saved = yaml.safe_load((runs.student / "config.yaml").read_text())
    assert saved["distill"] == {"teacher": str(runs.teacher), "temperature": 2}
    assert saved["distill_resolved"] == {
        "alpha": 0.5, "temperature": 2,
        "teachers": [{"run": str(runs.teacher), "sha256": runs.sha, "outputs": "logits"}]}
    assert sha256(runs.teacher / "model.keras") == runs.sha  # the teacher untouched
    plain = trainer.build_model(runs.config, get_task("har2"))
    assert saved_arrays(runs.student / "model.keras") == arrays_of(plain)
    with zipfile.ZipFile(runs.student / "model.keras") as archive:
        layers = json.loads(archive.read("config.json"))["config"]["layers"]
    assert [layer["class_name"] for layer in layers] == [type(la).__name__ for la in plain.layers]
    report = evaluate_run(runs.student)
    metrics = json.loads((runs.student / "metrics.json").read_text())
    assert report["accuracy"] == pytest.approx(metrics["test"]["accuracy"], abs=1e-6)


@pytest.mark.slow
def test_a_resumed_run_distils_again_and_its_checkpoint_holds_the_student_alone(
        runs, tmp_path, monkeypatch, log_lines):
    """Killed after epoch 1's checkpoint, the same call resumes: the checkpoint's model is a
    plain student (the loss is set on it again when it is loaded), the run finishes."""
    from zoo.core import storage
    from zoo.training.tasks import get_task

    class Killed(Exception):
        pass

    def kill(label):
        if label == "checkpoint epoch-0001: committed":
            raise Killed(label)

    config = TrainConfig(**{**runs.config.to_dict(), "epochs": 2})
    out = tmp_path / "student"
    quiet = {"data_dir": runs.har, "verbose": 0}
    with monkeypatch.context() as m:
        m.setattr(storage, "crash_point", kill)
        with pytest.raises(Killed):
            trainer.train(config, out, **quiet)
    checkpoint = out / "checkpoints" / "epoch-0001" / "model.keras"
    assert saved_arrays(checkpoint) == arrays_of(trainer.build_model(config, get_task("har2")))
    with log_lines() as lines:
        trainer.train(config, out, **quiet)
    assert any(line.startswith("resuming") for line in lines), lines
    assert any(line.startswith("distilling from") for line in lines), lines
    assert json.loads((out / "metrics.json").read_text())["epochs_run"] == 2


@pytest.mark.slow
def test_a_distilled_student_exports_like_any_run(runs, tmp_path):
    from zoo.export.exporter import export_run

    card = export_run(runs.student, tmp_path / "float", quantize="none", form="sequence",
                      data_dir=runs.har, micro=False)
    assert card.accuracy.argmax_agreement == 1.0


# --------------------------------------------------------------------------------- sweeps
def fold_teachers(root: Path, folds: int) -> Path:
    for k in range(folds):
        fake_run(root / "har2" / "gru" / "rot35_e30" / f"fold{k}")
    return root / "har2" / "gru" / "rot35_e30" / "fold{fold}"


def cv(tmp_path, teacher, folds=2):
    from zoo.experiments import trials

    base = trials.base_config("har2", "sirnn", None, {"epochs": 1})
    variants = {"base": {}, "kd": {"distill": {"teacher": teacher, "alpha": 0.5}}}
    return trials.cv_trials("har2", "sirnn", base, variants, folds, tmp_path / "sweep", None)


def test_a_fold_placeholder_gives_each_fold_its_own_teacher(tmp_path):
    template = fold_teachers(tmp_path / "baselines", 3)
    planned = [t for t in cv(tmp_path, str(template), folds=3) if t.variant == "kd"]
    assert [t.config["distill"]["teacher"] for t in planned] == [
        str(template).replace("{fold}", str(k)) for k in range(3)]
    assert all(t.config["distill"]["alpha"] == 0.5 for t in planned)
    assert all(t.config["distill"] is None for t in cv(tmp_path, str(template), folds=3)
               if t.variant == "base")


def test_a_relative_teacher_is_resolved_against_the_working_folder(tmp_path, monkeypatch):
    fold_teachers(tmp_path / "baselines", 2)
    monkeypatch.chdir(tmp_path)
    planned = [t for t in cv(tmp_path, "baselines/har2/gru/rot35_e30/fold{fold}")
               if t.variant == "kd"]
    assert planned[1].config["distill"]["teacher"] == str(
        tmp_path / "baselines" / "har2" / "gru" / "rot35_e30" / "fold1")


def test_a_missing_fold_teacher_fails_when_the_sweep_is_planned(tmp_path):
    template = fold_teachers(tmp_path / "baselines", 2)
    with pytest.raises(FileNotFoundError, match=r"distill teacher .*fold2: .*no such directory"):
        cv(tmp_path, str(template), folds=3)


def test_results_files_name_teachers_relative_to_the_sweep(tmp_path):
    """A results file written in one clone matches the same trial in another when both keep
    the teacher sweep in the same place beside theirs."""
    from zoo.experiments import trials

    kd = [t for t in cv(tmp_path, str(fold_teachers(tmp_path / "baselines", 2)))
          if t.variant == "kd"][0]
    mine = trials.portable(kd.config, kd.run_dir)
    assert mine["distill"]["teacher"] == "../baselines/har2/gru/rot35_e30/fold0"
    elsewhere = Path("/elsewhere/clone")
    theirs = {**kd.config, "distill": {**kd.config["distill"], "teacher": str(
        elsewhere / "baselines/har2/gru/rot35_e30/fold0")}}
    run_dir = elsewhere / "sweep" / Path(kd.run_dir).relative_to(tmp_path / "sweep")
    assert trials.portable(theirs, run_dir) == mine
    older = {k: v for k, v in kd.config.items() if k != "distill"}  # from before the setting
    assert trials.portable(older, kd.run_dir)["distill"] is None


def test_the_final_retrain_needs_its_own_teacher(tmp_path):
    from zoo.experiments import trials

    kd, base = [t for t in cv(tmp_path, str(fold_teachers(tmp_path / "baselines", 2)))
                if t.fold == 0][::-1]
    with pytest.raises(ValueError, match=r"variant kd distils.*--final-teacher RUN_DIR"):
        trials.final_trial(kd, 5, tmp_path / "sweep")
    final_teacher = fake_run(tmp_path / "baselines" / "har2" / "gru" / "final-rot35_e30-e30")
    final = trials.final_trial(kd, 5, tmp_path / "sweep", teacher=str(final_teacher))
    assert final.config["distill"] == {"teacher": str(final_teacher), "alpha": 0.5}
    with pytest.raises(ValueError, match=r"no fold to fill \{fold\} in"):
        trials.final_trial(kd, 5, tmp_path / "sweep", teacher="baselines/fold{fold}")
    assert trials.final_trial(base, 5, tmp_path / "sweep").config["distill"] is None


def test_the_final_teacher_goes_to_the_stage_that_distils_only(tmp_path):
    """``--final`` of a QAT stage of a distilled variant (``rot35_kd_gru_qat``): the distilled
    parent's retrain learns from ``--final-teacher``; the stage fine-tunes that retrain, as its
    CV trials fine-tuned each fold's distilled run, without a teacher of its own."""
    from zoo.experiments import sweep, trials

    base = trials.base_config("har2", "sirnn", None, {"epochs": 1})
    variants = {"kd": {"distill": {"teacher": str(fold_teachers(tmp_path / "baselines", 2)),
                                   "alpha": 0.5}},
                "kd_qat": {"model_options": {"qat": "int8"}, "init_from": "variant:kd"}}
    todo = trials.cv_trials("har2", "sirnn", base, variants, 2, tmp_path / "sweep", None)
    rows = [{"task": "har2", "label": "sirnn", "variant": v, "planned": 2, "runs": [{}, {}],
             "epoch": e, "val_at_epoch": [90.0, 91.0]} for v, e in (("kd", 3), ("kd_qat", 1))]
    teacher = fake_run(tmp_path / "baselines" / "har2" / "gru" / "final-rot35_e30-e30")
    (_, kd), (_, qat) = sweep.final_chain(rows[1], rows, todo, tmp_path / "sweep", [str(teacher)])
    assert kd.config["distill"]["teacher"] == [str(teacher)] and kd.config["epochs"] == 3
    assert qat.config["distill"] is None and qat.config["init_from"] == kd.run_dir
    with pytest.raises(ValueError, match=r"variant kd distils.*--final-teacher RUN_DIR"):
        sweep.final_chain(rows[1], rows, todo, tmp_path / "sweep")


def test_zoo_sweep_plans_fold_teachers_and_refuses_a_missing_one(tmp_path, shared_data, capsys):
    from edge_rnn_zoo.cli import main

    template = str(fold_teachers(tmp_path / "baselines", 2))

    def sweep(folds, *extra, **distill_options):
        variant = {"distill": {"teacher": template, **distill_options}}
        return main(["sweep", "cv", "--task", "har2", "--model", "sirnn", "--data-dir",
                     str(shared_data / "har"), "--epochs", "1", "--folds", str(folds),
                     "--variant", f"kd={json.dumps(variant)}", "--out", str(tmp_path / "sweep"),
                     "--results", "none", "--dry-run", *extra])

    assert sweep(2, temperature=3) == 0
    assert capsys.readouterr().out.count("har2 / sirnn / kd / fold") == 2
    assert sweep(3) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("zoo sweep cv: error: distill teacher ") and "fold2" in err, err
    assert sweep(2, "--final-teacher", "runs/x") == 2
    assert "--final-teacher is the teacher of the --final retrain" in capsys.readouterr().err
    assert sweep(2, alpha=2) == 2
    assert "distill option alpha" in capsys.readouterr().err
    assert not (tmp_path / "sweep").exists()
