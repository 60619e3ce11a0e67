"""What the sandbox keeps: the SQLite store, files, money and the clock."""
