"""HTTP route groups of the sandbox, one module each (native, compat, dedicated, files, account, admin)."""

__all__: list[str] = []  # its modules are imported by name; nothing is re-exported here
