"""The project service: what ``migrate``, ``analyse`` and ``check`` share.

``plan`` walks the input tree once; ``worker`` processes one Python file (rewrite and API uses)
and ``parallel`` runs it over the tree in worker processes; ``scan`` reads what the whole tree
says before any file is processed; ``output`` builds an output tree atomically; ``paths``
checks input and output; ``service`` puts these together into a ``ProjectRun``.
"""
