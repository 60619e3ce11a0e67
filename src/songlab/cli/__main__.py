"""``python -m songlab.cli ARGS``: the same as the ``songlab`` command."""

from songlab.cli import main

raise SystemExit(main())
