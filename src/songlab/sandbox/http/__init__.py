"""The sandbox's HTTP surface: the ASGI app, the server, the hot path, bodies, routes."""

__all__: list[str] = []  # its modules are imported by name; nothing is re-exported here
