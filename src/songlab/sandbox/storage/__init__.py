"""What the sandbox keeps: the SQLite store, files, money and the clock."""

__all__: list[str] = []  # its modules are imported by name; nothing is re-exported here
