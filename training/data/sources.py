"""Find an official dataset on disk (extracted folder or archive file), or download it.

A data location is one of:

* the dataset's own folder (it contains the spec's ``marker``),
* a root folder holding that folder under one of its usual names (``UCI HAR Dataset``,
  ``speech_commands_v0.01``, ``dsa19/data``...) or holding the official archive file,
* the official archive file itself (zip or tar.gz; a zip nested in a zip, as the current UCI
  download is, also works).

Archives are extracted once into ``<cache>/extracted/`` (never next to the user's file, which
may be read-only); the extraction is reused while the archive's size and mtime are unchanged.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import tarfile
import zipfile
import zlib
from pathlib import Path

from zoo.training.data import download as _download
from zoo.training.data.errors import DataError, DataNotFoundError
from zoo.training.data.paths import DATA_ENV, cache_root, data_root, offline


@dataclasses.dataclass(frozen=True)
class Archive:
    filename: str
    url: str
    sha256: str | None  # None: no published checksum found; only the size is verified
    size: int | None = None
    checksum_source: str = ""  # where the sha256 was published (documentation only)


@dataclasses.dataclass(frozen=True)
class DatasetSpec:
    key: str  # short id, used for cache folders
    title: str
    marker: str  # a relative path that exists in the dataset folder and identifies it
    folders: tuple[str, ...]  # names the folder may have under a data root
    archives: tuple[Archive, ...]  # the first one is downloaded when data is missing
    homepage: str = ""

    def instructions(self, root: Path) -> str:
        a = self.archives[0]
        check = f"sha256 {a.sha256}" if a.sha256 else "no published sha256"
        return (f"Download {a.url} ({check}) and put the archive, or the folder it extracts to "
                f"(named {self.folders[0]!r}), in {root}; or point --data-dir / ${DATA_ENV} at "
                f"the folder or the archive. Dataset page: {self.homepage or a.url}")


@dataclasses.dataclass(frozen=True)
class Located:
    """A dataset found on disk: a folder, or an archive that is extracted on first use."""

    spec: DatasetSpec
    path: Path  # the dataset folder, or the archive file
    is_archive: bool

    @property
    def source(self) -> str:
        return str(self.path)

    def folder(self) -> Path:
        return extract(self.path, self.spec) if self.is_archive else self.path

    def archive_fingerprint(self) -> dict:
        st = self.path.stat()
        return {"archive": str(self.path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _has_marker(folder: Path, spec: DatasetSpec) -> bool:
    return (folder / spec.marker).exists()


def _find_local(root: Path, spec: DatasetSpec) -> Located | None:
    if root.is_file():
        return Located(spec, root, True)
    if not root.is_dir():
        return None
    if _has_marker(root, spec):
        return Located(spec, root, False)
    for name in spec.folders:
        if _has_marker(root / name, spec):
            return Located(spec, root / name, False)
    for a in spec.archives:
        if (root / a.filename).is_file():
            return Located(spec, root / a.filename, True)
    return None


def locate(spec: DatasetSpec, data_dir: str | os.PathLike | None = None, *,
           download: bool = True) -> Located:
    """Find ``spec`` under ``data_dir`` / ``$ZOO_DATA_DIR`` / the default root, or download it.

    Raises:
        DataNotFoundError: not on disk and offline (``ZOO_OFFLINE=1`` or the download failed);
            the message says what to download and where to put it.
    """
    root = data_root(data_dir)
    found = _find_local(root, spec)
    if found is not None:
        return found
    if data_dir is not None and not os.path.lexists(root):
        # A path the user typed: a typo or a file not there yet, never a download target.
        raise DataNotFoundError(f"--data-dir {data_dir}: no such file or folder. "
                                + spec.instructions(root.parent if str(root.parent) else Path(".")))
    if root.is_file() or (root.exists() and not root.is_dir()):
        raise DataNotFoundError(f"{root} is not a folder or an archive. {spec.instructions(root)}")
    if not download or offline():
        raise DataNotFoundError(f"{spec.title} not found in {root} (offline: not downloading). "
                                + spec.instructions(root))
    failures = []
    for a in spec.archives:  # official mirrors in order; a checksum mismatch is never skipped
        try:
            path = _download.download(a.url, root / a.filename, sha256=a.sha256, size=a.size)
            return Located(spec, path, True)
        except OSError as exc:  # URLError, timeouts, DNS, refused connections, a read-only root
            failures.append(f"{a.url}: {exc}")
    raise DataNotFoundError(f"{spec.title} not found in {root}, and downloading failed "
                            f"({'; '.join(failures)}). " + spec.instructions(root))


# ----------------------------------------------------------------------------- extraction

_CORRUPT = (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error, OSError)


def _archive_kind(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(".zip"):
        return "zip"
    if name.endswith((".tar.gz", ".tgz", ".tar")):
        return "tar"
    raise DataError(f"{path}: not a supported archive (expected .zip, .tar.gz, .tgz or .tar)")


def _check_member_path(archive: Path, name: str) -> None:
    """One rule for zip and tar members: an absolute path or a ".." component is refused."""
    parts = Path(name.replace("\\", "/")).parts
    if name.startswith(("/", "\\")) or (parts and parts[0].endswith(":")) or ".." in parts:
        raise DataError(f"{archive}: unsafe member path {name!r} (absolute or with '..'); "
                        "refusing to extract the archive")


def _extract_one(archive: Path, dest: Path) -> None:
    kind = _archive_kind(archive)
    try:
        if kind == "zip":
            with zipfile.ZipFile(archive) as zf:
                for info in zf.infolist():  # zip-slip
                    _check_member_path(archive, info.filename)
                zf.extractall(dest)  # checks each member's CRC
        else:
            with tarfile.open(archive, "r:*") as tf:
                for member in tf.getmembers():
                    _check_member_path(archive, member.name)
                tf.extractall(dest, filter="data")  # "data" refuses links out of dest, devices
    except DataError:
        raise
    except tarfile.FilterError as exc:  # a refusal, not damage: say which member and why
        raise DataError(f"{archive}: unsafe member refused ({type(exc).__name__}: {exc}); "
                        "refusing to extract the archive") from None
    except _CORRUPT as exc:
        raise DataError(f"{archive}: corrupt or truncated archive ({type(exc).__name__}: {exc})") from None


def _search_marker(folder: Path, spec: DatasetSpec, depth: int = 3) -> Path | None:
    if _has_marker(folder, spec):
        return folder
    if depth == 0:
        return None
    for child in sorted(p for p in folder.iterdir() if p.is_dir() and p.name != "__MACOSX"):
        hit = _search_marker(child, spec, depth - 1)
        if hit is not None:
            return hit
    return None


def extract(archive: Path, spec: DatasetSpec) -> Path:
    """Extract ``archive`` (once) into the cache and return the dataset folder inside it."""
    archive = Path(archive)
    st = archive.stat()
    tag = hashlib.sha256(f"{archive.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:16]
    dest = cache_root() / "extracted" / f"{archive.name}-{tag}"
    if not (dest / ".complete").exists():
        tmp = dest.with_name(dest.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            _extract_one(archive, tmp)
            if _search_marker(tmp, spec) is None:  # e.g. the UCI zip that wraps the real zip
                inner = [p for p in tmp.rglob("*") if p.is_file() and "__MACOSX" not in p.parts
                         and p.name.lower().endswith((".zip", ".tar.gz", ".tgz"))]
                for p in inner:
                    _extract_one(p, p.parent)
            (tmp / ".complete").touch()
            _publish(tmp, dest)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    folder = _search_marker(dest, spec)
    if folder is None:
        raise DataError(f"{archive}: does not contain the {spec.title} (no {spec.marker!r} inside)")
    return folder


def _publish(tmp: Path, dest: Path) -> None:
    """Move a finished extraction into place without touching one another process published
    first: that copy (of the same archive) may be being read right now, so it stays and ours is
    dropped. Only a leftover without its ``.complete`` marker is replaced."""
    try:
        os.rename(tmp, dest)  # atomic; refuses a non-empty existing folder
    except OSError:
        if (dest / ".complete").exists():
            return
        shutil.rmtree(dest, ignore_errors=True)
        os.rename(tmp, dest)


def fingerprint(files: list[Path], base: Path) -> str:
    """Hash of the folder's absolute path and the source files' relative paths, sizes and
    mtimes (cheap on 65k files).

    Editing a file changes its mtime, so the featurised cache is rebuilt; a change that keeps
    both size and mtime would not be noticed. The folder's own path is part of the hash: a
    second copy of a dataset (same relative paths, sizes and mtimes, other labels) must not
    reuse the first copy's cache.
    """
    h = hashlib.sha256(f"{Path(base).resolve()}\n".encode())
    for f in files:
        st = f.stat()
        h.update(f"{f.relative_to(base).as_posix()}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()
