"""HTTP route groups of the sandbox, one module each (native, compat, dedicated, files, account, admin)."""
