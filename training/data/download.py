"""Download an official archive with a progress bar and a checksum, and verify local files.

Only `locate()` in ``sources.py`` calls `download`; tests replace `urlopen` (the module
attribute) so they never touch the network.

Why not ``keras.utils.get_file`` (Keras 3.15, checked): it writes the final file name directly
(a killed download leaves a truncated archive that `locate` would then use; here ``dest.part``
is renamed only once checked), keeps a file whose sha256 does not match and says neither the
file, the URL nor the hash it got, has no timeout (``urlretrieve``), checks no published size
when there is no checksum (DSA-19, the Speech Commands test set), falls back to
``/tmp/.keras`` when the data root is not writable, and prints its progress bar on stdout
(where ``zoo eval --json`` prints JSON). Its extraction goes next to the archive; the zoo
extracts into its cache (`sources.extract`). Its cache (skip a file already there) is what
`locate` does before it calls `download`. The offline refusal is `locate`'s, before any of it.
"""

from __future__ import annotations

import hashlib
import os
import sys
import urllib.request
from pathlib import Path

from zoo.training.data.errors import DataError

# Looked up at call time so tests can monkeypatch it (``zoo.training.data.download.urlopen``).
urlopen = urllib.request.urlopen

CHUNK = 1 << 20
NO_CHECKSUM = "no published checksum; verifying size only"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def verify_file(path: Path, sha256: str | None, size: int | None = None, *, url: str = "") -> None:
    """Check a local file against its published sha256 (and size, when known).

    Raises:
        DataError: naming the file, the expected and the actual value.
    """
    path = Path(path)
    actual_size = path.stat().st_size
    where = f" (official copy: {url})" if url else ""
    if size is not None and actual_size != size:
        raise DataError(f"{path}: size {actual_size:,} bytes does not match the published "
                        f"{size:,} bytes; the file is truncated or not the official one{where}")
    if sha256 is None:
        print(f"{path.name}: {NO_CHECKSUM}", file=sys.stderr)
        return
    digest = sha256_file(path)
    if digest != sha256.lower():
        raise DataError(f"{path}: sha256 {digest} does not match the published {sha256}; "
                        f"delete it and download it again{where}")


def download(url: str, dest: Path, *, sha256: str | None, size: int | None = None,
             timeout: float = 60.0) -> Path:
    """Stream ``url`` to ``dest`` (via ``dest.part``), hashing on the fly, then verify it.

    Without a published sha256 only the size is checked (against ``size`` or the server's
    Content-Length) and a note says so. A failed check deletes the partial file.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    h = hashlib.sha256()
    req = urllib.request.Request(url, headers={"User-Agent": "edge-rnn-zoo"})
    try:
        with urlopen(req, timeout=timeout) as resp, open(part, "wb") as out:
            header = resp.headers.get("Content-Length") if getattr(resp, "headers", None) else None
            total = int(header) if header else size
            try:
                from tqdm import tqdm
                bar = tqdm(total=total, unit="B", unit_scale=True, desc=dest.name, file=sys.stderr)
            except ImportError:  # tqdm is a dependency, but a progress bar is not worth failing for
                bar = None
            written = 0
            for block in iter(lambda: resp.read(CHUNK), b""):
                out.write(block)
                h.update(block)
                written += len(block)
                if bar is not None:
                    bar.update(len(block))
            if bar is not None:
                bar.close()
        expected_size = size if size is not None else total
        if expected_size is not None and written != expected_size:
            raise DataError(f"{url}: received {written:,} bytes, expected {expected_size:,} "
                            "(interrupted download)")
        if sha256 is None:
            print(f"{dest.name}: {NO_CHECKSUM}", file=sys.stderr)
        elif h.hexdigest() != sha256.lower():
            raise DataError(f"{url}: downloaded file has sha256 {h.hexdigest()}, the published "
                            f"value is {sha256}; not using it")
        os.replace(part, dest)
    finally:
        if part.exists():
            part.unlink()
    return dest
