"""``python -m mcp_ref``: the same as the ``mcp-ref`` command."""

import sys

from .workbench.cli import main

sys.exit(main())
