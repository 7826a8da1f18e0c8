"""What a run records about where it ran (``metrics.json``): the machine, the accelerators Keras
trains on, and the versions of the stack, so a figure can be traced to what produced it."""

from __future__ import annotations

import os
import platform
import sys

import keras
import numpy as np

import zoo


def hardware() -> dict:
    return {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(), "backend": keras.backend.backend(), "gpus": gpu_names()}


def gpu_names() -> list[str]:
    """The accelerators Keras trains on, by model name (e.g. "NVIDIA H100 80GB HBM3 (cuda:0)"),
    so that a run's metrics say which GPU made them; empty on CPU."""
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        return [f"{tf.config.experimental.get_device_details(d).get('device_name', '?')} ({d.name})"
                for d in tf.config.list_physical_devices("GPU")]
    if keras.backend.backend() == "jax":
        import jax

        return [f"{d.device_kind} ({d.platform}:{d.id})" for d in jax.devices()
                if d.platform in ("gpu", "cuda", "rocm")]
    return []


def versions() -> dict:
    import importlib.metadata as md

    out = {"python": sys.version.split()[0], "keras": keras.__version__,
           "numpy": np.__version__, "edge-rnn-zoo": zoo.__version__}
    for dist in ("tensorflow", "jax"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    return out


def data_fingerprint(source) -> dict | None:
    """What a run records of its data, to refuse resuming on other data: for a file its path,
    size, mtime and sha256; for a folder the sha256 of its files' relative paths, sizes and
    mtimes (hashing every byte of a 65k-file folder would take minutes). None for a source
    that is not on disk."""
    import hashlib
    from pathlib import Path

    path = Path(str(source)) if source is not None else None
    if path is None or not path.exists():
        return None
    if path.is_file():
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        stat = path.stat()
        return {"path": str(path.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns,
                "sha256": digest.hexdigest()}
    digest = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        stat = f.stat()
        digest.update(f"{f.relative_to(path).as_posix()}|{stat.st_size}|{stat.st_mtime_ns}\n"
                      .encode())
    return {"path": str(path.resolve()), "listing_sha256": digest.hexdigest()}


def same_data(recorded: dict | None, now: dict | None) -> bool:
    """Whether the data a run recorded is the data found now (a file by its bytes; a folder by
    its files' names, sizes and mtimes); True when either is unknown (older runs)."""
    if not recorded or not now:
        return True
    key = "sha256" if "sha256" in recorded else "listing_sha256"
    return recorded.get(key) == now.get(key)


def check_same_data(saved, data, checkpoint) -> dict | None:
    """The data's fingerprint (`provenance.data_fingerprint`); a resumed run (``saved``: its
    `zoo.training.run_record.RunConfig`) whose data changed
    since its checkpoint (replaced between a kill and the resume) is refused, naming the file:
    its epochs so far were fitted to other data, normalised otherwise."""
    now = data_fingerprint(data.source)
    if checkpoint is not None:
        recorded = None if saved is None else saved.data_fingerprint
        if not same_data(recorded, now):
            raise ValueError(f"{data.source} changed since {saved.path.parent} trained its first "
                             f"{checkpoint.epochs_done} epoch(s) on it (recorded "
                             f"{_fingerprint_text(recorded)}, now {_fingerprint_text(now)}); "
                             "the run cannot resume on other data: restore the file, or start "
                             "afresh with --overwrite or another --out")
    return now


def _fingerprint_text(fingerprint: dict) -> str:
    if "sha256" in fingerprint:
        return f"{fingerprint['size']:,} bytes, sha256 {fingerprint['sha256'][:12]}"
    return f"listing sha256 {fingerprint['listing_sha256'][:12]}"
