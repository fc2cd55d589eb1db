"""``python -m throttled_admin.cli``: the throttled-admin command line (as ``python -m throttled_admin``)."""

from throttled_admin.cli import run

raise SystemExit(run())
