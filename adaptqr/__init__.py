"""adaptqr: batched QR (``geqrf``) on NVIDIA GPUs that looks at each matrix first."""

__version__ = "0.1.0"
