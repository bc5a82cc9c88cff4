"""Evaluates: no torch import here, but the project module it imports uses torch."""
from lib.helpers import seed_all

if __name__ == "__main__":
    seed_all(1)
