"""Rules: the in-memory model (``model``), rule files read and checked (``loader``), the rule
kinds (``kind``: the base class and registry; ``kinds/``: one module each), and the index
they compile into for one target version (``index``)."""
