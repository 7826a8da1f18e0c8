"""``python -m edge_rnn_zoo ...`` is the ``zoo`` command."""

import sys

from edge_rnn_zoo.cli import main

sys.exit(main())
