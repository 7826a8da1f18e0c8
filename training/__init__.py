# Importing any part of the package keeps TensorFlow's native start-up lines off stderr, as
# ``import zoo`` does (`zoo.quiet`): scripts run as ``python -m`` print only what they mean to.
from zoo import quiet as _quiet

_quiet.install()
