"""torch-migrate: upgrade legacy PyTorch code, then prove behaviour did not change."""

__version__ = "0.1.0"
