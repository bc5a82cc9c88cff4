# Re-export: `from pkg import DropPath` reaches pkg.layers.DropPath.
from .layers import DropPath
