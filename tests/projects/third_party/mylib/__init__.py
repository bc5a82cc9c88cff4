"""A small model library: its public names are re-exported here."""
from .models import Net
from .train import fit as train_model
