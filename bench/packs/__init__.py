"""Hand-written CPMBench test packs, kept apart from the generator and from every training path."""
