"""Perception: recorded clip folders -> sensory-context events (docs/formats.md section 2)."""
