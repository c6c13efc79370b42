"""Response and semantic caches, their backends, keys and savings."""
