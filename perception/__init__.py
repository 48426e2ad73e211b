"""Perception: recorded clip folders -> sensory-context events (FORMATS.md section 2)."""
