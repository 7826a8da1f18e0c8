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
# ``frames_per_step=auto``: the fewest samples per step that bring a window to at most
# AUTO_MAX_STEPS steps. Windows of 25-32 steps kept the accuracy of one sample a step in the
# zoo's subject CVs at a quarter to a fifth of the instructions (HAR-2 at 32 steps, DSA-19 at 25:
# docs/realscale.md §16-17; the windows defaults on both: docs/your-data.md), while 16 steps cost
# HAR-2 0.5 points and 5 steps cost DSA-19 8.8. A window that only a divisor leaving fewer than
# AUTO_MIN_STEPS steps would shorten enough (a prime length, say) keeps one sample a step.
AUTO = "auto"
AUTO_MAX_STEPS = 32
AUTO_MIN_STEPS = 16


def frames_per_step_of(task_options: dict | None) -> int:
    """The ``frames_per_step`` of a run's (or card's) task options, ``task_options`` or
    ``task_options_resolved``: the option where it is set, `DEFAULT_FRAMES_PER_STEP` where the
    options are missing or do not set it (a task without the option, a run from before it)."""
    value = (task_options or {}).get("frames_per_step") or DEFAULT_FRAMES_PER_STEP
    if value == AUTO:  # resolved once the window length is known: read the resolved options
        raise ValueError("frames_per_step 'auto' is resolved when the data is loaded; read the "
                         "run's task_options_resolved (RunRecord.task_options)")
    return int(value)


def auto_frames_per_step(steps: int) -> int:
    """``frames_per_step=auto`` for windows of ``steps`` samples: the smallest divisor k with
    steps / k <= AUTO_MAX_STEPS, or 1 where that leaves fewer than AUTO_MIN_STEPS steps."""
    k = next(k for k in range(1, steps + 1) if steps % k == 0 and steps // k <= AUTO_MAX_STEPS)
    return k if steps // k >= AUTO_MIN_STEPS else 1


def check_frames_per_step(value, steps: int) -> int:
    """The option's value as an int ('auto': `auto_frames_per_step`), or ValueError naming it
    and the valid values."""
    if value == AUTO:
        return auto_frames_per_step(steps)
    divisors = [k for k in range(1, steps + 1) if steps % k == 0]
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value not in divisors:
        raise ValueError(f"option frames_per_step must be a whole divisor of the window's "
                         f"{steps} samples ({', '.join(map(str, divisors))}) or 'auto', got "
                         f"{value!r}")
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
