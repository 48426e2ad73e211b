"""Training: recipes for the models trained here (cue encoder, linker, gate, LoRA SFT)."""
