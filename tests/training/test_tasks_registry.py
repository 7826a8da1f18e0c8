"""Registry, options, describe_tasks (zoo list), Normalization, and MNIST with a local mnist.npz."""

import numpy as np
import pytest

from zoo.training.tasks import (STD_FLOOR, Normalization, Task, describe_tasks, get_task, list_tasks,
                            register_task)
from zoo.training.tasks import mnist as mnist_module

EXPECTED = {"har2": ((128, 9), 2), "har6": ((128, 9), 6), "google30": ((99, 32), 30),
            "google12": ((99, 32), 12), "google12_testset": ((99, 32), 12), "dsa19": ((125, 45), 19), "adding": ((200, 2), 1),
            "copy": ((220, 10), 10), "pixel_mnist": ((784, 1), 10),
            "permuted_mnist": ((784, 1), 10)}
EXPECTED.update({name: ((32, 3), 2) for name in [f"tomita{i}" for i in range(1, 8)] + [
    "dl1", "parity", "pattern"]})  # 003's regular languages, default lengths 16 / test 32
EXPECTED["audio_folder"] = ((99, 32), 0)  # its classes are the user's folders, fixed at load
EXPECTED["windows"] = ((None, None), 0)  # the user's data: its shape and classes come with it


def test_list_and_describe():
    assert list_tasks() == sorted(EXPECTED)
    rows = {r["name"]: r for r in describe_tasks()}
    for name, (shape, classes) in EXPECTED.items():
        r = rows[name]
        assert {"name", "input_shape", "num_classes", "kind", "description"} <= set(r)
        assert (r["input_shape"], r["num_classes"]) == (shape, classes)
        assert r["description"] and get_task(name).paper_split
        assert len(get_task(name).class_names) == (classes if name != "adding" else 1)
    assert rows["adding"]["kind"] == "regression" and rows["copy"]["kind"] == "sequence"


def test_names_are_forgiving_and_options_resolve():
    assert get_task("HAR-2").name == "har2" and get_task("Google_12").name == "google12"
    t = get_task("adding", timesteps=400)
    assert t.input_shape == (400, 2)
    assert t.options() == {"timesteps": 400, "n_train": 10000, "n_val": 1000, "n_test": 1000,
                           "split_seed": 1}
    assert get_task("permuted_mnist").options()["permutation_seed"] == 42
    assert get_task("google12").options()["split_seed"] == 59185
    with pytest.raises(ValueError, match="val_fraction"):
        get_task("har6", val_fraction=1.5)


def test_register_task_adds_a_task():
    @register_task("toy_registry_test")
    class Toy(Task):
        description = "toy"
        input_shape = (3, 1)
        class_names = ["a", "b"]

    try:
        assert "toy_registry_test" in list_tasks() and get_task("toy-registry-test").num_classes == 2
        with pytest.raises(ValueError, match="already registered"):
            register_task("toy_registry_test")(Toy)
    finally:
        from zoo.training.tasks import base

        base._REGISTRY.pop("toy_registry_test")


def test_normalization_roundtrip_and_floor(tmp_path):
    x = np.random.default_rng(0).normal(3, 2, size=(50, 7, 3)).astype(np.float32)
    x[:, :, 2] = 5.0  # a constant feature
    n = Normalization.fit(x)
    assert n.std[2] == 1.0 and STD_FLOOR == 1e-6
    z = n.apply(x)
    assert z.dtype == np.float32 and np.all(z[:, :, 2] == 0)
    np.testing.assert_allclose(z[:, :, :2].reshape(-1, 2).mean(0), 0, atol=1e-5)
    n.save(tmp_path / "norm.json")
    m = Normalization.load(tmp_path / "norm.json")
    np.testing.assert_array_equal(m.mean, n.mean)
    np.testing.assert_array_equal(m.std, n.std)
    assert Normalization.from_dict(n.to_dict()).to_dict() == n.to_dict()
    with pytest.raises(ValueError, match="expected 3 features"):
        n.apply(np.zeros((2, 4)))


@pytest.fixture
def fake_mnist(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {"x_train": rng.integers(0, 256, (100, 28, 28), dtype=np.uint8),
              "y_train": rng.integers(0, 10, 100).astype(np.uint8),
              "x_test": rng.integers(0, 256, (30, 28, 28), dtype=np.uint8),
              "y_test": rng.integers(0, 10, 30).astype(np.uint8)}
    np.savez(tmp_path / "mnist.npz", **arrays)
    return tmp_path, arrays


def test_pixel_and_permuted_mnist(fake_mnist):
    root, a = fake_mnist
    px = get_task("pixel_mnist").load(root)
    assert px.train.x.shape == (80, 784, 1) and px.val.x.shape == (20, 784, 1)
    assert px.test.x.shape == (30, 784, 1) and px.test.y.dtype == np.int64
    np.testing.assert_allclose(px.test.x[3, :, 0], a["x_test"][3].reshape(-1) / 255.0, rtol=1e-6)
    perm = np.random.RandomState(42).permutation(784)
    pm = get_task("permuted_mnist").load(root / "mnist.npz")
    np.testing.assert_array_equal(pm.test.x[:, :, 0], px.test.x[:, perm, 0])
    flat = px.train.x.reshape(-1).astype(np.float64)
    assert px.normalization.mean[0] == pytest.approx(flat.mean(), rel=1e-5)


def test_mnist_offline_message(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="mnist.npz not found .*offline.*storage.googleapis"):
        get_task("pixel_mnist").load(tmp_path)
    monkeypatch.delenv("ZOO_OFFLINE")

    def fail():
        raise Exception("URL fetch failure: no network")

    monkeypatch.setattr(mnist_module, "_keras_mnist", fail)
    with pytest.raises(FileNotFoundError, match="could not download it .*no network.*731c5ac6"):
        get_task("pixel_mnist").load(tmp_path)
