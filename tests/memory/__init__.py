"""The memory tests (ember.memory, the viewer, the profiler's memory columns)."""
