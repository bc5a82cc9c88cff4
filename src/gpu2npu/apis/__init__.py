"""Read-only analysis of a project: which torch APIs it calls, and what that means on NPU."""
