"""Keep TensorFlow's native start-up lines off the terminal unless ``--verbose``.

The mechanism (and what does not work: ``TF_CPP_MIN_LOG_LEVEL`` alone, ``CUDA_VISIBLE_DEVICES``,
``TF_ENABLE_ONEDNN_OPTS``) lives in `zoo.quiet`, which ``import zoo`` uses too; the command line
adds the stricter level 3 and ``--verbose``, which asks TensorFlow for every log line.
"""

from __future__ import annotations

import os

from zoo.quiet import import_keras_quietly, native_stderr_captured, quiet_environment

__all__ = ["import_keras_quietly", "native_stderr_captured", "quiet_environment",
           "verbose_environment"]


def verbose_environment() -> None:
    """``zoo --verbose``: TensorFlow's C++ logs at every level and nothing captured (a user's
    own ``TF_CPP_MIN_LOG_LEVEL`` wins)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")
