import torch


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.zeros(2, device=device)


if __name__ == "__main__":
    main()
