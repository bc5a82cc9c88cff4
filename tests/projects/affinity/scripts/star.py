from pkg.layers import *


def build():
    return DropPath(0.3), apply_rotary_pos_emb(1, 2, 3, 4)
