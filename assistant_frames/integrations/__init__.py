"""Optional adapters that offer a model context to agent frameworks."""
