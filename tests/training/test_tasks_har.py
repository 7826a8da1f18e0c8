"""HAR-6 / HAR-2 on the shared UCI HAR subset; expected numbers from shared/data/README.md."""

import shutil
import zipfile

import numpy as np
import pytest

from zoo.training.tasks import get_task

HAR = "har/UCI HAR Dataset"
TRAIN6 = [279, 224, 201, 249, 277, 275]
TEST6 = [108, 111, 101, 119, 130, 132]


@pytest.fixture(scope="module")
def har6(shared_data):
    return get_task("har6", val_fraction=0).load(shared_data / HAR)


def test_har6_shapes_and_label_counts(har6):
    assert har6.train.x.shape == (1505, 128, 9) and har6.train.x.dtype == np.float32
    assert har6.test.x.shape == (701, 128, 9)
    assert len(har6.val) == 0
    assert np.bincount(har6.train.y, minlength=6).tolist() == TRAIN6
    assert np.bincount(har6.test.y, minlength=6).tolist() == TEST6
    assert har6.train.y.dtype == np.int64
    assert har6.info["train_subjects"] == [1, 3, 21, 25] and har6.info["test_subjects"] == [12, 24]


def test_har6_values_and_channel_order(har6, shared_data):
    # The README pins the value range; row 1 of total_acc_x / body_gyro_x starts with these.
    assert har6.train.x.min() == pytest.approx(-3.5370, abs=1e-4)
    assert har6.train.x.max() == pytest.approx(2.6840, abs=1e-4)
    assert har6.train.x[0, 0, 6] == pytest.approx(1.0128170)   # total_acc_x
    assert har6.train.x[0, 0, 3] == pytest.approx(3.0191220e-2)  # body_gyro_x
    ref = np.loadtxt(shared_data / HAR / "test/Inertial Signals/body_gyro_z_test.txt")
    np.testing.assert_array_equal(har6.test.x[:, :, 5], ref.astype(np.float32))


def test_har2_merge(shared_data):
    d = get_task("har2", val_fraction=0).load(shared_data / HAR)
    # UCI {2,4,6} = sitting, laying, walking upstairs -> class 1.
    assert int((d.train.y == 1).sum()) == 748 and int((d.train.y == 0).sum()) == 757
    assert int((d.test.y == 1).sum()) == 362 and int((d.test.y == 0).sum()) == 339
    y6 = np.loadtxt(shared_data / HAR / "train/y_train.txt").astype(int)
    np.testing.assert_array_equal(d.train.y, np.isin(y6, [2, 4, 6]).astype(int))
    assert d.info["train_subjects"] == [1, 3, 21, 25]


def test_validation_holds_out_whole_subjects(shared_data):
    task = get_task("har6")  # val_fraction 0.2 -> 1 of the 4 training subjects
    d = task.load(shared_data / HAR)
    subj = np.loadtxt(shared_data / HAR / "train/subject_train.txt").astype(int)
    (val_s,) = d.info["val_subjects"]
    assert len(d.val) == int((subj == val_s).sum()) and len(d.train) == int((subj != val_s).sum())
    assert set(d.info["train_subjects"]).isdisjoint(d.info["val_subjects"])
    # Seedable and explicit.
    picks = {tuple(get_task("har6", split_seed=s).load(shared_data / HAR).info["val_subjects"])
             for s in range(6)}
    assert len(picks) > 1
    e = get_task("har6", val_subjects=[3, 21]).load(shared_data / HAR)
    assert len(e.val) == 341 + 408 and len(e.train) == 347 + 409
    with pytest.raises(ValueError, match="val_subjects"):
        get_task("har6", val_subjects=[12]).load(shared_data / HAR)  # a test subject


def test_normalization_is_from_train_only(shared_data):
    d = get_task("har6", val_subjects=[25]).load(shared_data / HAR)
    flat = d.train.x.reshape(-1, 9).astype(np.float64)
    np.testing.assert_allclose(d.normalization.mean, flat.mean(0), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(d.normalization.std, flat.std(0), rtol=1e-5)
    z = d.normalization.apply(d.train.x)
    np.testing.assert_allclose(z.reshape(-1, 9).mean(0), 0, atol=1e-4)
    np.testing.assert_allclose(z.reshape(-1, 9).std(0), 1, atol=1e-4)


@pytest.mark.slow
def test_reads_the_zip_as_downloaded(shared_data, tmp_path, har6):
    """The official zip holds 'UCI HAR Dataset/...' (plus __MACOSX); the current UCI download
    wraps that zip in another one. Both load to the same arrays as the folder."""
    src = shared_data / HAR
    inner = tmp_path / "UCI HAR Dataset.zip"
    with zipfile.ZipFile(inner, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for p in sorted(src.rglob("*")):
            z.write(p, "UCI HAR Dataset/" + p.relative_to(src).as_posix())
        z.writestr("__MACOSX/UCI HAR Dataset/._README.txt", b"junk")
    d = get_task("har6", val_fraction=0).load(inner)
    assert d.source == str(inner)
    np.testing.assert_array_equal(d.train.x, har6.train.x)
    np.testing.assert_array_equal(d.test.y, har6.test.y)
    outer_dir = tmp_path / "root"
    outer_dir.mkdir()
    outer = outer_dir / "human+activity+recognition+using+smartphones.zip"
    with zipfile.ZipFile(outer, "w") as z:
        z.write(inner, "UCI HAR Dataset.zip")
        z.writestr("UCI HAR Dataset.names", b"names")
    d2 = get_task("har6", val_fraction=0).load(outer_dir)  # a root folder holding the archive
    np.testing.assert_array_equal(d2.test.x, har6.test.x)


def test_data_dir_from_environment(shared_data, monkeypatch):
    monkeypatch.setenv("ZOO_DATA_DIR", str(shared_data))  # root with har/UCI HAR Dataset
    d = get_task("har2").load()
    assert d.source.endswith("UCI HAR Dataset") and len(d.test) == 701
