"""CommAtlas front door: the ``commatlas`` command and the docs page generator."""
