from mylib.ops import parallel


def ping(model, n):
    return pong(model, n - 1) if n else parallel(model)


def pong(model, n):
    return ping(model, n)


def countdown(n):
    return countdown(n - 1) if n else 0
