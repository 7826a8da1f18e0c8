"""DSA-19 on the shared 760-file subset (5 segments per activity and subject)."""

import numpy as np
import pytest

from zoo.training.tasks import get_task


@pytest.fixture(scope="module")
def dsa(shared_data):
    return get_task("dsa19", val_fraction=0).load(shared_data / "dsa19" / "data")


def test_subject_split_shapes(dsa):
    assert dsa.train.x.shape == (380, 125, 45) and dsa.test.x.shape == (380, 125, 45)
    assert np.bincount(dsa.train.y, minlength=19).tolist() == [20] * 19
    assert np.bincount(dsa.test.y, minlength=19).tolist() == [20] * 19
    assert dsa.info["train_subjects"] == [1, 2, 3, 4] and dsa.info["test_subjects"] == [5, 6, 7, 8]


def test_values_match_the_files(dsa, shared_data):
    allx = np.concatenate([dsa.train.x, dsa.test.x])
    assert allx.min() == pytest.approx(-80.885, abs=1e-3) and allx.max() == pytest.approx(87.985, abs=1e-3)
    # Order within a split: activity, subject, segment. First train row = a01/p1/s01.
    ref = np.loadtxt(shared_data / "dsa19/data/a01/p1/s01.txt", delimiter=",")
    np.testing.assert_array_equal(dsa.train.x[0], ref.astype(np.float32))
    ref = np.loadtxt(shared_data / "dsa19/data/a19/p8/s49.txt", delimiter=",")
    np.testing.assert_array_equal(dsa.test.x[-1], ref.astype(np.float32))


def test_validation_subject_and_root_lookup(shared_data):
    d = get_task("dsa19").load(shared_data)  # data root: finds dsa19/data
    assert len(d.info["val_subjects"]) == 1 and len(d.val) == 95 and len(d.train) == 285
    assert len(d.test) == 380
    with pytest.raises(ValueError, match="train_subjects"):
        get_task("dsa19", train_subjects=range(1, 9))
