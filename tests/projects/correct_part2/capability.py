import torch


def use_flash_attention():
    if not torch.cuda.is_available():
        return False
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return props.major >= 8


def sm_version():
    return "%d.%d" % (torch.cuda.get_device_properties(0).major, torch.cuda.get_device_properties(0).minor)


def memory_gb(i):
    return torch.cuda.get_device_properties(i).total_memory / 2**30
