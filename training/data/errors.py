"""Error types. Both subclass the built-in exception a caller would expect, so generic handlers
(``except ValueError`` / ``except FileNotFoundError``) still work."""


class DataError(ValueError):
    """Source data is malformed: the message names the file and the line, column or shape at fault."""


class DataNotFoundError(FileNotFoundError):
    """A dataset is not on disk and could not be downloaded; the message says what to fetch and
    where to put it."""
