"""Task execution: creates, the worker, its runners and the rules of a task's payload."""

__all__: list[str] = []  # its modules are imported by name; nothing is re-exported here
