"""Lives outside the library: reached only through -env."""
from mylib.models import Runner


def make():
    return Runner()
