"""``augment.mixup``: the mixed batch as Keras trains on it (sample weights) against the mixup
loss written out in NumPy, and the trainer's wiring."""

import numpy as np
import pytest

from zoo.training.augment import mixup
from zoo.training.trainer import epoch_batches


def _cross_entropy(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return -log_p[np.arange(len(labels)), labels]


def test_the_weighted_batch_is_the_mixed_targets_cross_entropy():
    """Keras's sparse cross-entropy with the sample weights over the doubled batch equals the
    mean over windows of lam CE(y_i) + (1 - lam) CE(y_j), computed here from the windows
    mixed by hand."""
    import keras

    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 5, 3)).astype(np.float32)
    y = rng.integers(0, 4, size=16)
    x2, y2, w2 = mixup(x, y, np.random.default_rng(7), 0.4)
    check = np.random.default_rng(7)
    partner = check.permutation(16)
    lam = check.beta(0.4, 0.4, size=16).astype(np.float32)
    mixed = lam[:, None, None] * x + (1 - lam[:, None, None]) * x[partner]
    np.testing.assert_allclose(x2, np.concatenate([mixed, mixed]), rtol=1e-6)
    np.testing.assert_array_equal(y2, np.concatenate([y, y[partner]]))
    head = rng.normal(size=(15, 4)).astype(np.float32)
    logits = mixed.reshape(16, 15) @ head
    expected = np.mean(lam * _cross_entropy(logits, y) + (1 - lam) * _cross_entropy(logits, y[partner]))
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    got = loss(y2, np.concatenate([logits, logits]), sample_weight=w2)
    assert float(keras.ops.convert_to_numpy(got)) == pytest.approx(expected, rel=1e-5)


def test_mixup_batches_depend_only_on_seed_and_epoch():
    """A resumed run (first_epoch 2) sees the mixed batches an uninterrupted run does."""
    x = np.arange(40 * 3, dtype=np.float32).reshape(40, 3, 1)
    y = np.arange(40) % 3
    whole = list(epoch_batches(x, y, 16, 5, 0, 4, mixup=0.2))
    resumed = list(epoch_batches(x, y, 16, 5, 2, 4, mixup=0.2))
    assert len(whole) == 12 and len(resumed) == 6
    for a, b in zip(whole[6:], resumed):
        for u, v in zip(a, b):
            np.testing.assert_array_equal(u, v)
    assert all(len(batch) == 3 for batch in whole)
    assert len(list(epoch_batches(x, y, 16, 5, 0, 1))[0]) == 2  # off: (x, y)


@pytest.mark.parametrize("alpha", [-0.1, "0.2", True])
def test_a_bad_alpha_names_the_option(alpha):
    from zoo.training.augment import check_options

    with pytest.raises(ValueError, match=r"invalid augment option mixup: .*alpha of Beta"):
        check_options({"mixup": alpha})


def test_a_run_with_mixup_trains_and_records_it(shared_data, tmp_path):
    import yaml

    from edge_rnn_zoo.cli import main

    run = tmp_path / "run"
    assert main(["train", "--task", "har2", "--model", "sirnn", "--units", "16", "--epochs", "1",
                 "--augment", "mixup=0.2", "--task-option", "frames_per_step=8",
                 "--data-dir", str(shared_data / "har/UCI HAR Dataset"), "--out", str(run),
                 "-q"]) == 0
    assert yaml.safe_load((run / "config.yaml").read_text())["augment"]["mixup"] == 0.2


def test_mixup_is_refused_for_a_regression_task_and_with_distillation(tmp_path, capsys,
                                                                       shared_data):
    from edge_rnn_zoo.cli import main

    assert main(["train", "--task", "adding", "--model", "sirnn", "--augment", "mixup=0.2",
                 "--out", str(tmp_path / "a")]) == 2
    assert "augment mixup mixes class labels; task adding is a regression task" in \
        capsys.readouterr().err
    assert main(["train", "--task", "har2", "--model", "sirnn", "--augment", "mixup=0.2",
                 "--distill", f"teacher={tmp_path}", "--data-dir",
                 str(shared_data / "har/UCI HAR Dataset"), "--out", str(tmp_path / "b")]) == 2
    assert "augment mixup and distill together are not supported" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
