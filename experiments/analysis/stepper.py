"""A trained model's recurrent cell as a step map ``s_t = f(s_{t-1}, x_t)``.

The *dynamic state* ``s`` is the concatenation of the cell's states whose size equals its width
(``[h]`` for most cells, ``[h, c]`` for the Keras LSTM). Other states (the iRNN's time counter
with a per-step eta table) are carried along unchanged and never differentiated.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf


def _flat_sizes(state_size) -> list[int]:
    sizes = state_size if isinstance(state_size, (list, tuple)) else [state_size]
    return [int(s) for s in sizes]


class CellStepper:
    """Step, trajectory and Jacobians of the recurrent layer of ``model``.

    ``model`` is ``input -> keras.layers.RNN -> head layers`` as `zoo.create_model` builds it.

    Args:
        model: a Keras model with one (forward) recurrent layer.

    Example:

    >>> stepper = CellStepper(zoo.create_model("lstm", (20, 3), 2, units=8))
    >>> stepper.state_dim  # h and c
    16
    """

    def __init__(self, model: keras.Model):
        rnns = [i for i, layer in enumerate(model.layers) if isinstance(layer, keras.layers.RNN)]
        if len(rnns) != 1:
            raise ValueError(f"model {model.name!r} must have exactly one recurrent layer, "
                             f"found {len(rnns)}")
        self.rnn = model.layers[rnns[0]]
        if self.rnn.go_backwards:
            raise ValueError(f"{self.rnn.name}: go_backwards=True is not supported")
        self.head_layers = model.layers[rnns[0] + 1:]
        self.cell = self.rnn.cell
        self.units = int(self.cell.units)
        self.sizes = _flat_sizes(self.cell.state_size)
        self.dynamic = [i for i, s in enumerate(self.sizes) if s == self.units]
        self.state_dim = sum(self.sizes[i] for i in self.dynamic)
        self.dtype = self.cell.compute_dtype or "float32"
        # Traced once per shape: pfor's vectorisation is the expensive part.
        self._jacobian_fn = tf.function(self._batch_jacobian, reduce_retracing=True)

    # ------------------------------------------------------------------ forward

    def initial_states(self, batch: int) -> list[tf.Tensor]:
        return [tf.zeros((batch, s), dtype=self.dtype) for s in self.sizes]

    def step(self, x, states):
        """One cell step: ``(output, new_states)`` with ``new_states`` a flat list."""
        out, new = self.cell(tf.cast(x, self.dtype), list(states), training=False)
        return out, tf.nest.flatten(new)

    def pack(self, states) -> tf.Tensor:
        """The dynamic state ``s`` (batch, state_dim) of a list of states."""
        return tf.concat([states[i] for i in self.dynamic], axis=-1)

    def unpack(self, s, template) -> list:
        """``template`` (a list of states) with its dynamic states replaced by the parts of s."""
        states, offset = list(template), 0
        for i in self.dynamic:
            states[i] = s[:, offset:offset + self.sizes[i]]
            offset += self.sizes[i]
        return states

    def trajectory(self, x: np.ndarray) -> list[list[np.ndarray]]:
        """States before each step: element t is the list of states s_{t-1} fed to step t
        (t = 0..T-1), plus a last element with the final states (length T + 1)."""
        states = self.initial_states(len(x))
        out = [[np.asarray(s) for s in states]]
        step = tf.function(self.step, reduce_retracing=True)
        for t in range(x.shape[1]):
            _, states = step(tf.constant(x[:, t], dtype=self.dtype), states)
            out.append([np.asarray(s) for s in states])
        return out

    def head(self, h) -> np.ndarray:
        """The head layers applied to the recurrent layer's output h (batch, units)."""
        for layer in self.head_layers:
            h = layer(h)
        return np.asarray(h)

    def logits(self, x) -> np.ndarray:
        """The model's output for the last step of ``x`` (any length), as a NumPy array."""
        h = self.rnn(tf.constant(x, dtype=self.dtype), training=False)
        if isinstance(h, (list, tuple)):
            h = h[0]
        if self.rnn.return_sequences:
            h = h[:, -1]
        return self.head(h)

    def window_outputs(self, x: np.ndarray, windows) -> np.ndarray:
        """The cell output at the last step when run from the zero state over only the last k
        inputs, for each k in ``windows``: (len(windows), n, units).

        All windows run in one batched pass over time: the copy of a sequence for window k
        keeps the zero initial state (and a zero step counter) until step T - k.
        """
        n, steps = x.shape[:2]
        starts = np.repeat([steps - int(k) for k in windows], n)
        xs = np.tile(x, (len(windows), 1, 1))
        states = self.initial_states(len(xs))
        step = tf.function(self.step, reduce_retracing=True)
        out = None
        for t in range(steps):
            out, new = step(tf.constant(xs[:, t], dtype=self.dtype), states)
            started = tf.constant((starts <= t)[:, None])
            states = [tf.where(started, a, b) for a, b in zip(new, states)]
        return np.asarray(out).reshape(len(windows), n, -1)

    def head_matrix(self) -> np.ndarray | None:
        """The Dense head's kernel (features, classes) when the head is one Dense layer."""
        dense = [layer for layer in self.head_layers if isinstance(layer, keras.layers.Dense)]
        if len(dense) != 1 or len(self.head_layers) != 1:
            return None
        return np.asarray(dense[0].kernel)

    # ------------------------------------------------------------------ Jacobians

    def jacobians(self, x_t: np.ndarray, states: list[np.ndarray], batch: int = 4096):
        """``(ds_t/ds_{t-1}, ds_t/dx_t)`` at each row: shapes (N, S, S) and (N, S, d).

        Computed with ``GradientTape.batch_jacobian`` in chunks of ``batch`` rows.
        """
        j_state, j_input = [], []
        for lo in range(0, len(x_t), batch):
            xs = tf.constant(x_t[lo:lo + batch], dtype=self.dtype)
            template = [tf.constant(s[lo:lo + batch], dtype=self.dtype) for s in states]
            s0 = self.pack(template)
            js, jx = self._jacobian_fn(xs, s0, template)
            j_state.append(np.asarray(js, dtype=np.float64))
            j_input.append(np.asarray(jx, dtype=np.float64))
        return np.concatenate(j_state), np.concatenate(j_input)

    def _batch_jacobian(self, xs, s0, template):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(xs)
            tape.watch(s0)
            _, new = self.step(xs, self.unpack(s0, template))
            s1 = self.pack(new)
        js = tape.batch_jacobian(s1, s0, experimental_use_pfor=True)
        jx = tape.batch_jacobian(s1, xs, experimental_use_pfor=True)
        del tape
        return js, jx


def flatten_steps(traj: list[list[np.ndarray]], x: np.ndarray):
    """Rows (sequence b, step t) of (x_t, states s_{t-1}), ordered b-major: row b * T + t."""
    n, steps = x.shape[:2]
    x_rows = x.reshape(n * steps, -1)
    states = [np.stack([traj[t][i] for t in range(steps)], axis=1).reshape(n * steps, -1)
              for i in range(len(traj[0]))]
    return x_rows, states
