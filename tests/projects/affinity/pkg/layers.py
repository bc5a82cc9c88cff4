import torch
from torch import nn


class DropPath(nn.Module):
    def __init__(self, drop_prob):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x):
        return x


class Focus(nn.Module):
    # One parameter name differs from the entry (act): not a candidate.
    def __init__(self, c1, c2, k, s, p, g, activation):
        super().__init__()

    def forward(self, x):
        return x


class Mish(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, input):
        return input


class LlamaRMSNorm(nn.Module):
    def forward(self, hidden_states):
        return hidden_states


def channel_shuffle(x, groups):
    return x


def multiclass_nms(multi_bboxes, multi_scores, score_thr, nms_cfg, max_num, score_factors, return_indices):
    # One parameter name differs from the entry (return_inds): not a candidate.
    return multi_bboxes


def apply_rotary_pos_emb(q, k, cos, sin):
    return q, k


def shuffle_twice(x):
    return channel_shuffle(channel_shuffle(x, 2), 2)
