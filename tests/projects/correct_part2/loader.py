import json
import os

import torch


def patch_device(graph, device_node):
    # a TorchScript archive traced on CUDA: its constants say "cuda" whatever the machine
    for node in graph.findAllNodes("prim::Constant"):
        if "value" in node.attributeNames() and str(node["value"]).startswith("cuda"):
            node.copyAttributes(device_node)


def resume(path):
    ckpt = torch.load(path, map_location="cpu")
    saved_on_gpu = ckpt["device_type"] == "cuda"
    meta = json.load(open(path + ".json"))
    kind = meta.get("device")
    if kind in ("cuda", "cpu") and os.getenv("TRAIN_DEVICE", "") != "cuda":
        return torch.device("cuda" if saved_on_gpu else "cpu")
    return torch.device("cuda:0")


def helper_value(node):
    return str(_node_get(node, "value")).startswith("cuda:")
