"""Task execution: creates, the worker, its runners and the rules of a task's payload."""
