"""Shared data plumbing for the tasks: locating official datasets (folder or archive), download
with a checksum, extraction, an on-disk cache of featurised arrays, strict text/wav readers whose
errors name the file and line, and the speech front end."""

from zoo.training.data.errors import DataError, DataNotFoundError

__all__ = ["DataError", "DataNotFoundError"]
