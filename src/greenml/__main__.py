"""``python -m greenml`` runs the CLI."""

from greenml.cli import main

raise SystemExit(main())
