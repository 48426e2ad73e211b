"""Reasoner: personal context + retrieved past + current event -> silence or assistance."""
