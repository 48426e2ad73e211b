"""The independent test pack: hand-written timelines in a voice unlike the generator's seeds.

Never used for training, tuning or threshold choice; see README.md.
"""
