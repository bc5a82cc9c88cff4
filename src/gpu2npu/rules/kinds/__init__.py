"""The built-in rule kinds, one module each (a ``RuleKind`` subclass; see gpu2npu.rules.kind).

Every module here whose name does not start with ``_`` is imported when the kinds are first
needed, so adding a kind is adding a module. ``_common`` holds the helpers they share.
"""
