def positive_rows(x):
    # the file opens with a def: its copy gains a line above it
    return x[x.sum(dim=1) > 0]
