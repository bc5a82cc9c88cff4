from helpers import make


def serve(x):
    return make().predict(x)
