"""``python -m fredfab.sim.cli``: the `fred` command."""

import sys

from fredfab.sim.console import main

sys.exit(main())
