"""``python -m throttled_admin``: the throttled-admin command line."""

from throttled_admin.cli import run

raise SystemExit(run())
