import os

DATA = os.path.join(os.path.dirname(__file__), "data")
