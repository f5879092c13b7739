"""`python -m mcpgw` is the `mcpgw` command."""

from mcpgw.cli import main

raise SystemExit(main())
