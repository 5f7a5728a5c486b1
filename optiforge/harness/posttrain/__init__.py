"""Post-training the embedded model: verified training data (``data``), the weights
between GGUF and torch (``weights``), and SFT with HALO then GRPO (``train``)."""
