"""edge-rnn-zoo's application layer: the ``zoo`` command.

The project is layered one way (each layer imports only the ones before it)::

    zoo (cells, registry, pretrained) | zoo.training.data, zoo.training.tasks  <-  training
        <-  export  <-  experiments  <-  command line (this package: the dispatcher ``cli`` and
        one ``*_cli`` module per subcommand family)

Each layer is a folder: a module's layer is the folder it lives in (``tests/test_architecture.py``).

``tests/test_architecture.py`` walks the imports and fails on one that goes upward. The cell
package ``zoo`` therefore cannot hold the command that drives training and export: it lives here.

Import names: the distribution installs the top-level packages ``zoo``, ``training``, ``export``,
``experiments`` and ``edge_rnn_zoo``. The first four keep the project's folder names (and every user script and
document); they are generic, so install the zoo in its own virtual environment (another PyPI
project also installs a top-level ``zoo``). This package carries the distribution's own name so
the command-line entry point can never be shadowed.
"""
