"""Fixtures for the task tests: small copies of the shared data to damage (caches: the root
conftest)."""

import shutil
from pathlib import Path

import pytest

HAR = "har/UCI HAR Dataset"


@pytest.fixture
def fresh_cache(monkeypatch, tmp_path) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("ZOO_CACHE_DIR", str(path))
    return path


def _head(src: Path, dst: Path, n: int) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open(src, "rb") as f:
        dst.write_bytes(b"".join(f.readline() for _ in range(n)))


@pytest.fixture
def mini_har(shared_data, tmp_path) -> Path:
    """The first 20 windows of each shared HAR split, official layout (fast to parse)."""
    src, dst = shared_data / HAR, tmp_path / "UCI HAR Dataset"
    for path in src.rglob("*.txt"):
        rel = path.relative_to(src)
        if rel.parts[0] in ("train", "test"):
            _head(path, dst / rel, 20)
        else:
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, dst / rel)
    return dst


@pytest.fixture
def mini_speech(shared_data, tmp_path) -> Path:
    """6 clips (2 train, 2 val, 2 test) of the shared Speech Commands subset plus one noise file."""
    src, dst = shared_data / "speech_commands_v0.01", tmp_path / "speech_commands_v0.01"
    val = (src / "validation_list.txt").read_text().split()[:2]
    test = (src / "testing_list.txt").read_text().split()[:2]
    held = set((src / "validation_list.txt").read_text().split()) | set(
        (src / "testing_list.txt").read_text().split())
    train = [p.relative_to(src).as_posix() for p in sorted(src.glob("*/*.wav"))
             if not p.parent.name.startswith("_") and p.relative_to(src).as_posix() not in held][:2]
    for rel in train + val + test + ["_background_noise_/white_noise.wav"]:
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src / rel, dst / rel)
    (dst / "validation_list.txt").write_text("\n".join(val) + "\n")
    (dst / "testing_list.txt").write_text("\n".join(test) + "\n")
    return dst
