"""``python -m throttled_admin.demo`` (what ``make demo`` runs)."""

from throttled_admin.demo import main

raise SystemExit(main())
