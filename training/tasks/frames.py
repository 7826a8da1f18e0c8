"""The ``frames_per_step`` option of the fixed-window sensor tasks (HAR-2/6, DSA-19).

With ``frames_per_step = k`` the recurrent step reads k consecutive samples at once: a window of
T samples of C channels, (T, C), becomes T / k steps of k * C features, frame j's channels at
``j * C .. j * C + C - 1`` of the step (``x.reshape(N, T // k, k * C)``). The step runs k times
less often over the same seconds, so a cell whose state moves by ``eta * (...)`` per step can use
a k times larger eta for the same time constant, and its integer state moves by k times more
grid steps per step (docs/realscale.md §14 measures what that buys the int8 SiRNN). On a device
the step model then takes k samples, which the firmware buffers.

The normalization is fitted per channel on the samples (T, C) as before and tiled over the k
frames, so a channel is normalised the same in every frame. A rotation of a sensor turns its
triples in every frame by the same matrix (`sensors` lists each triple once per frame).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from zoo.training.tasks.base import Normalization, Split, TaskData

# A task's default (its DEFAULTS entry), and what a run's task options without the option mean:
# one sample per step. Written here only; readers of a config or card use `frames_per_step_of`.
DEFAULT_FRAMES_PER_STEP = 1


def frames_per_step_of(task_options: dict | None) -> int:
    """The ``frames_per_step`` of a run's (or card's) task options, ``task_options`` or
    ``task_options_resolved``: the option where it is set, `DEFAULT_FRAMES_PER_STEP` where the
    options are missing or do not set it (a task without the option, a run from before it)."""
    return int((task_options or {}).get("frames_per_step") or DEFAULT_FRAMES_PER_STEP)


def check_frames_per_step(value, steps: int) -> int:
    """The option's value as an int, or ValueError naming it and the valid values."""
    divisors = [k for k in range(1, steps + 1) if steps % k == 0]
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value not in divisors:
        raise ValueError(f"option frames_per_step must be a whole divisor of the window's "
                         f"{steps} samples ({', '.join(map(str, divisors))}), got {value!r}")
    return int(value)


def stack_frames(data: TaskData, k: int) -> TaskData:
    """``data`` with each split's windows (N, T, C) as (N, T / k, k * C) and the normalization
    tiled k times (k = 1: ``data`` itself)."""
    if k == 1:
        return data

    def stacked(split: Split) -> Split:
        n, steps, channels = split.x.shape
        return Split(split.x.reshape(n, steps // k, k * channels), split.y)

    norm = Normalization(np.tile(data.normalization.mean, k), np.tile(data.normalization.std, k))
    return TaskData(stacked(data.train), stacked(data.val), stacked(data.test), norm,
                    data.source, {**data.info, "frames_per_step": k})


class FramesPerStep:
    """Mixin of a `Task` with windows of ``window_shape`` samples and the ``frames_per_step``
    option (in its ``DEFAULTS``, 1): the task's ``input_shape`` and ``sensors`` follow it, and
    `Task.load` stacks the frames (`stack_frames`)."""

    window_shape: ClassVar[tuple[int, int]]
    window_sensors: ClassVar[tuple[tuple[tuple[int, int, int], ...], ...]] = ()

    @property
    def frames_per_step(self) -> int:
        return check_frames_per_step(self._options["frames_per_step"], self.window_shape[0])

    @property
    def input_shape(self) -> tuple[int, int]:
        steps, channels = self.window_shape
        return steps // self.frames_per_step, channels * self.frames_per_step

    @property
    def sensors(self):
        channels = self.window_shape[1]
        return tuple(tuple(tuple(j * channels + i for i in triple)
                           for j in range(self.frames_per_step) for triple in sensor)
                     for sensor in self.window_sensors)

    def _reshaped(self, data: TaskData) -> TaskData:
        return stack_frames(data, self.frames_per_step)
