"""The sandbox's HTTP surface: the ASGI app, the server, the hot path, bodies, routes."""
