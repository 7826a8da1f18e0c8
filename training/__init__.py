"""Layers 1 and 2 of the zoo: data, tasks and the train loop.

Layer 1 is `storage` (the one place that locks, marks and swaps run and export directories),
`data` (datasets, downloads, the cache) and `tasks` (what a task feeds a model). Layer 2 is the
train loop (`trainer`, `callbacks`, `augment`, `warm_start`), the run directory (`rundir`, `artifacts`,
`runs`), its settings (`config`, `flags`) and evaluation (`evaluate`).
"""

# Importing any part of the package keeps TensorFlow's native start-up lines off stderr, as
# ``import zoo`` does (`zoo.quiet`): scripts run as ``python -m`` print only what they mean to.
from zoo import quiet as _quiet

_quiet.install()
