# Legacy Python 2 helper kept for reference only; it is not imported anywhere and does not run under Python 3.
"""Old CIFAR-10 batch unpickler from the original Python 2 / Caffe era pipeline."""

import cPickle
import os


def unpickle(path):
    fo = open(path, 'rb')
    batch = cPickle.load(fo)
    fo.close()
    return batch


def describe_batches(root):
    for name in sorted(os.listdir(root)):
        if not name.startswith('data_batch'):
            continue
        batch = unpickle(os.path.join(root, name))
        print "loaded %s: %d images" % (name, len(batch['labels']))
        counts = {}
        for label in batch['labels']:
            counts[label] = counts.get(label, 0) + 1
        for label, n in sorted(counts.iteritems()):
            print "  class %d -> %d" % (label, n)


def check_gpu():
    try:
        import torch
        print "cuda available:", torch.cuda.is_available()
    except ImportError, e:
        print "torch not installed (%s)" % e


if __name__ == '__main__':
    import sys
    if len(sys.argv) < 2:
        print >>sys.stderr, "usage: python legacy_py2.py <cifar-10-batches-py dir>"
        sys.exit(1)
    describe_batches(sys.argv[1])
    check_gpu()
