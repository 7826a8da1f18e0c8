"""Task registry: ``get_task("har2").load(data_dir)`` -> train / val / test arrays.

Adding a task = one new module that decorates a `Task` subclass with ``@register_task(name)``,
plus one import line below. See ``docs/tasks.md`` for each task's data source and split.
"""

from zoo.training.tasks.base import (STD_FLOOR, Normalization, Split, Task, TaskData, describe_tasks,
                                 get_task, list_tasks, register_task)

# Importing a task module registers its tasks.
from zoo.training.tasks import dsa, har, mnist, speech, synthetic  # noqa: E402,F401
from zoo.training.tasks import regular  # noqa: E402,F401  (003's regular languages)
from zoo.training.tasks import speech_testset  # noqa: E402,F401
from zoo.training.tasks import audio_folder  # noqa: E402,F401  (the user's own words)
from zoo.training.tasks import windows  # noqa: E402,F401  (the user's own sensor windows)

__all__ = ["STD_FLOOR", "Normalization", "Split", "Task", "TaskData", "describe_tasks", "get_task",
           "list_tasks", "register_task"]
