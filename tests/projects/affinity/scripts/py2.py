import torch
print "python 2 syntax"
