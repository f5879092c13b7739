"""`python -m evaluator eval|audit ...`, the same commands the main mcpgw CLI registers."""

import sys

from evaluator.cli import main

sys.exit(main())
