"""User strings written into generated C and C++ (the C backend's and TensorFlow Lite Micro's
sources), so that none reaches the compiler as code.

Class names, model and task names never reach the compiler as text: `c_string` writes every
byte outside ``[A-Za-z0-9 _.,:-]`` as an octal escape (no ``?``, so no trigraph such as ``??/``
can close the string under ``-std=c99 -trigraphs``; no quote, no backslash, no newline), and
`comment_text` keeps only those characters and ``/ +`` in comments (a ``*/`` in a model, task
or tensor name would otherwise close the comment).
"""

from __future__ import annotations

_SAFE_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 _.,:-")


def c_string(text: str, what: str = "class name") -> str:
    """A C string literal of ``text``'s UTF-8 bytes that no compiler mode can read as code:
    bytes outside ``[A-Za-z0-9 _.,:-]`` as three-digit octal escapes. A NUL (it would end the
    string in C) or text that is not UTF-8 is refused naming it (``what``)."""
    if "\0" in str(text):
        raise ValueError(f"{what} {text!r} holds a NUL character, which would cut the C string "
                         "short; rename the class")
    try:
        data = str(text).encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError(f"{what} {text!r} is not valid Unicode text ({err.reason}); rename "
                         "the class") from None
    return '"' + "".join(chr(b) if b in _SAFE_BYTES else f"\\{b:03o}"
                         for b in data) + '"'


def comment_text(text) -> str:
    """``text`` for a C comment: characters outside ``[A-Za-z0-9 _.,:-/+()]`` as ``_`` (no ``*``,
    so neither ``*/`` nor ``/*``; no ``?``, no trigraph; no backslash, no line splice)."""
    return "".join(c if c.isascii() and (ord(c) in _SAFE_BYTES or c in "/+()") else "_"
                   for c in str(text))
