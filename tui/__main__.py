"""`python -m tui`: the same as the `vramscope` command."""

import sys

from tui.cli import main

sys.exit(main())
