"""Optional extensions for the CIFAR ResNet example.

Nothing here is imported by ``train.py``; the package only holds
experimental or legacy helpers that are kept around for reference.
"""

__all__ = []
