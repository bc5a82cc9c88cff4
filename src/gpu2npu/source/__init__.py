"""Reading Python source: the bottom layer every reader of a project's code stands on.

Parsing and the one wording for files that cannot be parsed (``parse``), dotted names of ast and
libcst nodes (``names``), the one import-binding table (``imports``), module names of files
(``modules``), Python's scoping rules (``scopes``, ``binder``), line counting (``lines``) and
argument lists of libcst calls (``arguments``). Nothing here imports the rest of gpu2npu but
``errors``.
"""
