"""Shared foundation of every stage: data formats, configuration, provider registry, I/O helpers.

Nothing in here imports perception, memory, reasoner, training, serve or bench.
"""
