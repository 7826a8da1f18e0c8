"""Keep TensorFlow's native start-up lines off the terminal unless ``--verbose``.

``TF_CPP_MIN_LOG_LEVEL=3`` silences TensorFlow's C++ logs once absl's logging is initialised, but
not the lines written before that ("All log messages before absl::InitializeLog() ...", "Could not
find cuda drivers ...": tensorflow/tensorflow#100442). Those come while ``tensorflow`` is imported
and its devices are first listed, so that one moment runs with file descriptor 2 redirected to a
temporary file, which is replayed if the import fails (nothing an error says is lost).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile


def quiet_environment() -> None:
    """Set the log-level variables (a user's own setting wins). Call before TensorFlow loads."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")


@contextlib.contextmanager
def native_stderr_captured():
    """Run the body with the process's fd 2 in a temporary file; replay it if the body raises."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        except BaseException:
            os.dup2(saved, 2)
            sink.seek(0)
            sys.stderr.write(sink.read().decode(errors="replace"))
            raise
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def import_keras_quietly() -> None:
    """Import Keras (and TensorFlow with its device probe, when that is the backend) with the
    native start-up lines captured."""
    if "keras" in sys.modules:
        return
    with native_stderr_captured():
        import keras

        if keras.backend.backend() == "tensorflow":
            import tensorflow as tf

            tf.config.list_physical_devices()  # CUDA probing logs here, on first use
